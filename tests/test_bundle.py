"""The non-convex bundle method (paper 004): convex optimum vs an independent solver,
monotone best objective, the cutting-plane conditions, huge lambda."""
import numpy as np
import pytest
from scipy.optimize import minimize

from rhmmtk.bundle import Bundle, cutting_plane, minimise


def svm_problem(rng, n=60, d=5):
    X = rng.normal(size=(n, d))
    w_true = rng.normal(size=d)
    y = np.sign(X @ w_true + 0.5 * rng.normal(size=n))
    return X, y


def hinge_oracle(X, y):
    def oracle(u):
        m = 1 - y * (X @ u)
        act = m > 0
        return float(m[act].sum()), -(y[act, None] * X[act]).sum(axis=0)
    return oracle


def svm_primal_qp(X, y, lam):
    """Independent solver: the SVM's QP in (w, xi) by scipy's SLSQP."""
    n, d = X.shape

    def obj(z):
        return 0.5 * lam * z[:d] @ z[:d] + z[d:].sum()

    cons = [{"type": "ineq", "fun": lambda z: y * (X @ z[:d]) - 1 + z[d:],
             "jac": lambda z: np.hstack([y[:, None] * X, np.eye(n)])},
            {"type": "ineq", "fun": lambda z: z[d:],
             "jac": lambda z: np.hstack([np.zeros((n, d)), np.eye(n)])}]
    z0 = np.concatenate([np.zeros(d), np.ones(n)])
    r = minimize(obj, z0, jac=lambda z: np.concatenate([lam * z[:d], np.ones(n)]),
                 constraints=cons, method="SLSQP", options={"maxiter": 500, "ftol": 1e-12})
    return r.fun, r.x[:d]


@pytest.mark.parametrize("lam", [0.1, 1.0, 10.0])
def test_linear_svm_reaches_independent_optimum(rng, lam):
    X, y = svm_problem(rng)
    res = minimise(hinge_oracle(X, y), X.shape[1], lam, tol=1e-5, max_iter=300)
    f_ref, w_ref = svm_primal_qp(X, y, lam)
    assert res.history[-1]["gap"] <= 1e-5 * abs(res.best_f)
    assert res.best_f == pytest.approx(f_ref, rel=1e-5, abs=1e-6)
    # strongly convex: the minimiser is unique
    np.testing.assert_allclose(res.best_u, w_ref, atol=1e-3 * max(1, np.abs(w_ref).max()))
    # in the convex case the planes are lower bounds: no conflict ever
    assert all(h["conflict"] == "none" for h in res.history)


def nonconvex_oracle(rng, d=4, k=6):
    """R(u) = sum_i max(0, max_j <p_ij, u> + c_ij - max_l <q_il, u>): a difference of
    convex piecewise-linear functions, like the large-margin risk (max minus max)."""
    P = rng.normal(size=(k, 3, d))
    Q = rng.normal(size=(k, 3, d))
    c = rng.normal(size=(k, 3)) + 1.0

    def oracle(u):
        R, g = 0.0, np.zeros(d)
        for i in range(k):
            sp = P[i] @ u + c[i]
            sq = Q[i] @ u
            jp, jq = sp.argmax(), sq.argmax()
            h = sp[jp] - sq[jq]
            if h > 0:
                R += h
                g += P[i, jp] - Q[i, jq]
        return R, g

    return oracle


@pytest.mark.parametrize("lam", [0.05, 0.5, 5.0])
def test_nonconvex_conditions_and_monotone_best(rng, lam):
    oracle = nonconvex_oracle(rng)
    res = minimise(oracle, 4, lam, tol=1e-5, max_iter=150, keep=True)
    best = [h["best_objective"] for h in res.history]
    assert all(b <= a + 1e-12 for a, b in zip(best, best[1:]))
    f_star, R_star, u_star = np.inf, None, None
    conflicts = 0
    for t, ((a, b), (u, R)) in enumerate(zip(res.planes, res.points)):
        f = 0.5 * lam * u @ u + R
        if f < f_star:
            f_star, R_star, u_star = f, R, u
        # (14) the plane does not overestimate R at the best point so far
        assert a @ u_star + b <= R_star + 1e-9 * max(1, abs(R_star))
        # (15) the model at the current point reaches the best objective
        assert 0.5 * lam * u @ u + a @ u + b >= f_star - 1e-9 * max(1, abs(f_star))
        conflicts += res.history[t]["conflict"] != "none"
    # the best objective is what the oracle says at the returned point
    R, _ = oracle(res.best_u)
    assert res.best_f == pytest.approx(0.5 * lam * res.best_u @ res.best_u + R)
    assert res.best_f <= res.history[0]["objective"]
    print(f"[bundle] lambda {lam}: {len(res.history)} iterations, {conflicts} conflicts, "
          f"final gap {res.history[-1]['gap']:.3g}")


def test_conflict_resolution_meets_both_conditions(rng):
    """Algorithm 2 on planes that overestimate R at the best point: both branches
    (offset lowered; normal replaced) give planes satisfying (14) and (15)."""
    seen = set()
    for _ in range(400):
        d = 3
        lam = rng.uniform(0.1, 5)
        u_best, u = rng.normal(size=d), rng.normal(size=d) * 2
        R_best = rng.uniform(0, 3)
        f_best = 0.5 * lam * u_best @ u_best + R_best
        # the current point is worse than the best, as when a conflict can occur
        R = f_best - 0.5 * lam * u @ u + rng.uniform(0, 3)
        a = rng.normal(size=d) * 3
        b = R - a @ u
        a2, b2, kind = cutting_plane(a, b, u, u_best, R_best, f_best, lam)
        seen.add(kind)
        assert a2 @ u_best + b2 <= R_best + 1e-9                      # (14)
        assert 0.5 * lam * u @ u + a2 @ u + b2 >= f_best - 1e-9       # (15)
        if kind == "none":
            assert b2 == b and np.array_equal(a2, a)
    assert seen == {"none", "offset", "normal"}


@pytest.mark.parametrize("lam", [0.05, 0.5, 5.0])
def test_restarts_escape_early_stops_and_never_lose(lam):
    """The early stop of the real runs, in small: on difference-of-max risks the method as
    written often meets its gap near the start after a normal-plane conflict. A restart
    repeats the run up to that stop exactly, then only lowers f(u*); it stops when a
    model gains at most tol, or when no restarts are left."""
    tol, lowered = 0.01, 0
    for seed in range(40):
        oracle = nonconvex_oracle(np.random.default_rng(seed))
        plain = minimise(oracle, 4, lam, tol=tol, max_iter=500)
        again = minimise(oracle, 4, lam, tol=tol, max_iter=500, restarts=5)
        assert plain.converged and again.converged
        n = len(plain.history)
        assert again.history[:n - 1] == plain.history[:n - 1]
        assert again.history[n - 1]["objective"] == plain.history[n - 1]["objective"]
        assert again.best_f <= plain.best_f
        lowered += again.best_f < 0.9 * plain.best_f
        R, _ = oracle(again.best_u)
        assert again.best_f == pytest.approx(0.5 * lam * again.best_u @ again.best_u + R)
        assert again.restarts_done == max(h["restart"] for h in again.history)
        if again.restarts_done < 5:       # the last model gained at most tol
            first = next(h for h in again.history if h["restart"] == again.restarts_done)
            assert first["objective"] - again.best_f <= tol * abs(again.best_f) + 1e-12
    print(f"[bundle] lambda {lam}: restarts lowered f(u*) by over 10% in {lowered} of 40")
    assert lowered >= 10


def test_restarts_on_a_convex_risk_stop_after_one(rng):
    """Convex: the first model ends within tol of the optimum, so the one restart it earns
    gains at most tol and the run stops there, at the independent QP's optimum."""
    X, y = svm_problem(rng)
    lam = 0.1
    res = minimise(hinge_oracle(X, y), X.shape[1], lam, tol=1e-3, max_iter=400, restarts=3)
    assert res.converged and res.restarts_done == 1
    f_opt = svm_primal_qp(X, y, lam)[0]
    assert res.best_f == pytest.approx(f_opt, rel=2e-3)


def test_restarts_survive_the_state_round_trip():
    """est-largemargin keeps the bundle in a file between iterations: stepping through
    state()/from_state() (as JSON) gives the run minimise gives, restarts included; a
    state written before restarts existed loads as the method as written."""
    import json

    oracle, lam = nonconvex_oracle(np.random.default_rng(0)), 0.05
    ref = minimise(oracle, 4, lam, tol=0.01, max_iter=200, restarts=5)
    assert ref.restarts_done >= 2
    b = Bundle(4, lam, 0.01, restarts=5)
    while not b.converged and len(b.history) < 200:
        b.step(*oracle(b.u))
        arrays, scalars, history = b.state()
        b = Bundle.from_state(arrays, json.loads(json.dumps(scalars)),
                              json.loads(json.dumps(history)))
    assert b.history == ref.history
    assert np.array_equal(b.best_u, ref.best_u)
    arrays, scalars, history = b.state()
    old = {k: v for k, v in scalars.items()
           if k not in ("restarts", "restarts_done")}
    assert Bundle.from_state(arrays, old, history).restarts == 0


def test_huge_lambda_stays_at_the_start(rng):
    X, y = svm_problem(rng)
    res = minimise(hinge_oracle(X, y), X.shape[1], 1e12, tol=1e-3, max_iter=50)
    assert np.abs(res.best_u).max() < 1e-9


def simplex_qp_problem(rng, t, d, collinear=False):
    """A bundle-like dual: G = A A^T / lam rescaled with the solver's ridge, a = B / s."""
    A = rng.normal(size=(t, d))
    if collinear:       # repeated directions, as when the oracle returns similar planes
        A[t // 2:] = A[: t - t // 2] * rng.uniform(0.5, 2.0, size=(t - t // 2, 1))
    B = rng.normal(size=t) * 10.0
    G = A @ A.T
    s = max(np.abs(np.diag(G)).max(), np.abs(B).max())
    return G / s + 1e-10 * np.eye(t), B / s


def brute_force_simplex_qp(G, a):
    """Every support: its equality-constrained minimiser, kept if feasible; the best."""
    from itertools import combinations

    t, best = len(a), (np.inf, None)
    for n in range(1, t + 1):
        for idx in combinations(range(t), n):
            idx = list(idx)
            kkt = np.block([[G[np.ix_(idx, idx)], -np.ones((n, 1))], [np.ones((1, n)), 0]])
            x_f = np.linalg.solve(kkt, np.append(a[idx], 1.0))[:n]
            if x_f.min() < -1e-12:
                continue
            x = np.zeros(t)
            x[idx] = x_f
            f = 0.5 * x @ G @ x - a @ x
            best = min(best, (f, x), key=lambda p: p[0])
    return best[1]


@pytest.mark.parametrize("collinear", [False, True])
def test_active_set_dual_matches_brute_force(rng, collinear):
    from rhmmtk.bundle import _simplex_active_set

    for _ in range(20):
        t = int(rng.integers(2, 8))
        G, a = simplex_qp_problem(rng, t, int(rng.integers(1, 5)), collinear)
        x = _simplex_active_set(G, a)
        ref = brute_force_simplex_qp(G, a)
        assert x.min() >= 0 and x.sum() == pytest.approx(1.0, abs=1e-12)
        f = lambda z: 0.5 * z @ G @ z - a @ z       # noqa: E731
        assert f(x) <= f(ref) + 1e-12


@pytest.mark.parametrize("collinear", [False, True])
def test_active_set_dual_kkt_and_quadprog(rng, collinear):
    """Against quadprog (the former solver, kept as the fallback) on larger problems: never
    a worse objective, the same primal point w = x A, and the KKT conditions to rounding,
    from a cold start and from the previous problem's solution alike."""
    from rhmmtk.bundle import _simplex_active_set, _simplex_quadprog

    for _ in range(30):
        t, d = int(rng.integers(10, 80)), int(rng.integers(2, 30))
        G, a = simplex_qp_problem(rng, t, d, collinear)
        q = np.maximum(_simplex_quadprog(G, a), 0.0)
        q /= q.sum()
        cold = _simplex_active_set(G, a)
        warm = _simplex_active_set(G, a, _simplex_active_set(G[:-1, :-1], a[:-1]))
        f = lambda z: 0.5 * z @ G @ z - a @ z       # noqa: E731
        for x in (cold, warm):
            assert f(x) <= f(q) + 1e-12
            g = G @ x - a
            on = x > 0
            mu = g[on].mean()
            assert np.abs(g[on] - mu).max() < 1e-9 and (g - mu).min() > -1e-9
        np.testing.assert_allclose(G @ warm, G @ cold, atol=1e-7)


def test_active_set_budget_falls_back_to_quadprog(rng, monkeypatch):
    from rhmmtk import bundle

    G, a = simplex_qp_problem(rng, 30, 10)
    K, B = G - 1e-10 * np.eye(30), a
    want = bundle.solve_dual(K, B, 1.0)
    monkeypatch.setattr(bundle, "_simplex_active_set", lambda G, a, start=None: None)
    got = bundle.solve_dual(K, B, 1.0)
    np.testing.assert_allclose(got @ G, want @ G, atol=1e-6)


def test_singular_system_falls_back_to_quadprog(rng, monkeypatch):
    from rhmmtk import bundle

    G, a = simplex_qp_problem(rng, 20, 5)
    K = G - 1e-10 * np.eye(20)
    want = bundle.solve_dual(K, a, 1.0)

    def singular(*args):
        raise np.linalg.LinAlgError("Singular matrix")
    monkeypatch.setattr(np.linalg, "solve", singular)
    assert bundle._simplex_active_set(G, a) is None
    np.testing.assert_allclose(bundle.solve_dual(K, a, 1.0) @ G, want @ G, atol=1e-6)
