"""The non-convex cutting-plane (bundle) method of Do & Artieres (ICML 2009), paper 004.

Minimises f(u) = lambda/2 ||u||^2 + R(u) for a risk R that may be non-convex and
non-differentiable, given an oracle returning R(u) and one subgradient a of R at u.
Each iteration adds the cutting plane c(v) = <a, v> + b, b = R(u) - <a, u>, and
minimises the model g_t(v) = lambda/2 ||v||^2 + max_j c_j(v) through its dual

    v_t = max_{alpha in simplex} -1/(2 lambda) ||alpha A||^2 + alpha . B,
    u_{t+1} = -alpha A / lambda

(a QP over t variables: `solve_dual`, an active-set method started from the previous
iteration's solution, quadprog as its fallback). A non-convex R can make a plane overshoot
R elsewhere; the paper's rule checks the new plane only against the best point so far
u* (condition 14: c(u*) <= R(u*)) and, on a conflict, lowers its offset to
L = f(u*) - lambda/2 ||u_t||^2 - <a, u_t> when that is at most U = R(u*) - <a, u*>,
else replaces the plane by a = -lambda u*, b = L (algorithm 2). Either way condition
15 holds: lambda/2 ||u_t||^2 + c(u_t) >= f(u*). The gap f(u*) - v_t then shrinks at
rate O(1/(lambda eps)) and the method stops when it is at most `tol` times |f(u*)|.
The best point u* is what is returned; f(u*) never increases.

With a non-convex R the gap is not a bound on f(u*) - min f, and a normal plane taken
near u* makes the model's minimum f(u*) - lambda/2 ||u_t - u*||^2: the model can close
around a u* that has barely left the start. `restarts` (0: the paper's method as
written) then begins a new model at u* when the gap is met: its first plane is exact at
u*, so a descent direction there is seen again. The run stops when a model meets the gap
having lowered f(u*) by at most `tol` times |f(u*)| since it began, or when no restarts
are left.
"""
import numpy as np

from .progress import log


class Bundle:
    """The method's state between oracle calls: ask `u` (the next point), give `step`
    R(u) and a subgradient there. The state is plain arrays (`state`, `from_state`), so
    the oracle calls can run elsewhere (train-largemargin over --job shards: acc at u,
    est steps)."""

    def __init__(self, dim, lam, tol=0.01, restarts=0):
        self.lam, self.tol = float(lam), float(tol)
        self.restarts, self.restarts_done = int(restarts), 0
        self.u = np.zeros(dim)
        self._empty_model()
        self.best_u = None
        self.best_f = np.inf
        self.best_R = None
        self.best_iter = 0
        self.converged = False
        self.history = []     # one dict per iteration
        self.planes = []      # (a, b) as used, after conflict resolution (with `keep`)
        self.points = []      # (u_t, R(u_t)) as evaluated (with `keep`)

    def _empty_model(self):
        """No planes yet (A: slopes, B: offsets, K = A A^T) and no dual point (alpha: the
        last dual solution, the next QP's starting point)."""
        dim = len(self.u)
        self.A, self.B, self.K = np.zeros((0, dim)), np.zeros(0), np.zeros((0, 0))
        self.alpha = None

    ARRAYS = ("u", "A", "B", "K", "best_u")
    SCALARS = ("lam", "tol", "best_f", "best_R", "best_iter", "converged", "restarts",
               "restarts_done")

    def state(self):
        """(arrays, scalars, history): everything needed to continue."""
        return ({k: getattr(self, k) for k in self.ARRAYS},
                {k: getattr(self, k) for k in self.SCALARS}, list(self.history))

    @classmethod
    def from_state(cls, arrays, scalars, history):
        b = cls(len(arrays["u"]), scalars["lam"], scalars["tol"])
        for k in cls.ARRAYS:
            setattr(b, k, np.asarray(arrays[k], dtype=np.float64))
        for k in cls.SCALARS:   # states written before restarts existed: none
            setattr(b, k, scalars.get(k, 0))
        b.best_iter, b.converged = int(b.best_iter), bool(b.converged)
        b.restarts, b.restarts_done = int(b.restarts), int(b.restarts_done)
        b.history = list(history)
        return b

    def step(self, R, a, callback=None, keep=False):
        """One iteration at the current point u with risk R and subgradient a: add the
        (conflict-checked) plane, solve the dual, move u to the model's minimiser.
        Returns the iteration's history entry; sets `converged` when the gap is at most
        `tol` times |f(u*)| (with `restarts`: and restarting would not be useful)."""
        lam, u = self.lam, self.u
        t = len(self.history) + 1
        a = np.asarray(a, dtype=np.float64)
        uu = float(u @ u)
        R = float(R)
        f = 0.5 * lam * uu + R
        if f < self.best_f:
            self.best_u, self.best_f, self.best_R, self.best_iter = u.copy(), f, R, t
        a, b, conflict = cutting_plane(a, R - float(a @ u), u, self.best_u, self.best_R,
                                       self.best_f, lam)
        row = self.A @ a
        self.K = np.block([[self.K, row[:, None]], [row[None, :], np.array([[a @ a]])]])
        self.A = np.vstack([self.A, a])
        self.B = np.append(self.B, b)
        if keep:
            self.planes.append((a.copy(), b))
            self.points.append((u.copy(), R))
        alpha = self.alpha = solve_dual(self.K, self.B, lam, self.alpha)
        w = alpha @ self.A
        v = -0.5 / lam * float(w @ w) + float(alpha @ self.B)
        gap = self.best_f - v
        entry = {"iter": t, "objective": f, "risk": R, "best_objective": self.best_f,
                 "lower_bound": v, "gap": gap, "conflict": conflict,
                 "norm_u": float(np.sqrt(uu)), "restart": self.restarts_done}
        if callback is not None:
            entry.update(callback(t, u, entry) or {})
        self.history.append(entry)
        log.info("bundle iteration %d: objective %.6g (best %.6g), gap %.4g (%.3g%%), "
                 "conflict %s%s", t, f, self.best_f, gap,
                 100 * gap / max(abs(self.best_f), 1e-300), conflict,
                 "".join(f", {k} {v:.4g}" for k, v in entry.items()
                         if k not in ("iter", "objective", "risk", "best_objective",
                                      "lower_bound", "gap", "conflict", "norm_u",
                                      "restart")
                         and isinstance(v, float)))
        met = bool(gap <= self.tol * abs(self.best_f))
        if met and self._restart_useful():
            self._restart(t)
        else:
            self.converged = met
            if not met:
                self.u = -w / lam
        return entry

    def _restart_useful(self):
        """A new model is begun only while restarts are left and the current one has
        lowered f(u*) by more than `tol` times |f(u*)| (else u* is where it stays)."""
        if self.restarts_done >= self.restarts:
            return False
        began = next(h["best_objective"] for h in self.history
                     if h["restart"] == self.restarts_done)
        return began - self.best_f > self.tol * abs(self.best_f)

    def _restart(self, t):
        """Drop every plane and begin a new model at u* (its next oracle call)."""
        log.info("bundle: gap met at iteration %d; new cutting-plane model at the best "
                 "point (iteration %d; restart %d of %d)", t, self.best_iter,
                 self.restarts_done + 1, self.restarts)
        self._empty_model()
        self.u = self.best_u.copy()
        self.restarts_done += 1


def solve_dual(K, B, lam, start=None):
    """max over the simplex of -1/(2 lam) alpha K alpha + alpha B (K = A A^T): alpha.
    `start`: the previous iteration's alpha (one plane fewer), where the search begins."""
    if len(B) == 1:
        return np.ones(1)
    G, a = simplex_qp(K, B, lam)
    alpha = _simplex_active_set(G, a, start)
    if alpha is None:       # out of steps or singular (never seen in our runs): quadprog
        alpha = _simplex_quadprog(G, a)
    alpha = np.maximum(alpha, 0.0)
    return alpha / alpha.sum()


def simplex_qp(K, B, lam):
    """The dual as min 1/2 x G x - a x over the simplex: (G, a), rescaled to unit size,
    with a tiny ridge (G must be positive definite: planes can be collinear). A ridge only
    lowers the dual value found, so the gap reported stays an upper bound of the true one."""
    G = K / lam
    s = max(np.abs(np.diag(G)).max(), np.abs(B).max(), 1e-300)
    return G / s + 1e-10 * np.eye(len(B)), B / s


def _simplex_quadprog(G, a):
    """quadprog's dual method (Goldfarb-Idnani): exact, but it starts from the unconstrained
    minimum and adds the t bounds alpha_i >= 0 one at a time, O(t^3) per call, so the bundle
    slows as t grows (6.7 s at t = 900, against 0.37 s at 300)."""
    import quadprog

    t = len(a)
    C = np.hstack([np.ones((t, 1)), np.eye(t)])
    b = np.concatenate([[1.0], np.zeros(t)])
    return quadprog.solve_qp(G, a, C, b, 1)[0]


def _simplex_active_set(G, a, start=None, tol=1e-12):
    """min 1/2 x G x - a x over the simplex (G positive definite) by the primal active-set
    method: on the free set F, the equality-constrained minimiser (G_FF x_F - mu 1 = a_F,
    sum x_F = 1); a step to it stopped by the first bound that would be crossed, which then
    leaves F; else the bound with the most negative multiplier g_j - mu (g = G x - a)
    joins F, until none is below -tol. The bundle's solutions have few nonzero weights and
    each iteration adds one plane, so from the last solution a call takes a few steps of
    O(t |F| + |F|^3). None if the step budget runs out or a system is singular."""
    t = len(a)
    x = np.zeros(t)
    if start is not None and len(start) == t - 1 and np.all(np.isfinite(start)):
        x[:-1] = np.maximum(start, 0.0)
    if x.sum() <= 0:
        x[:] = 0.0
        x[np.argmin(0.5 * np.diag(G) - a)] = 1.0
    x /= x.sum()
    free = x > 0
    for _ in range(4 * t + 50):
        idx = np.flatnonzero(free)
        n = len(idx)
        kkt = np.empty((n + 1, n + 1))
        kkt[:n, :n] = G[np.ix_(idx, idx)]
        kkt[:n, n] = -1.0
        kkt[n, :n] = 1.0
        kkt[n, n] = 0.0
        try:
            sol = np.linalg.solve(kkt, np.append(a[idx], 1.0))
        except np.linalg.LinAlgError:       # singular (the ridge should prevent it)
            return None
        target, mu = sol[:n], sol[n]
        d = target - x[idx]
        blocking = d < 0
        if np.any(target[blocking] <= 0):       # a bound is crossed: stop at the first
            cand = np.flatnonzero(blocking & (target <= 0))
            ratios = x[idx[cand]] / -d[cand]
            k = cand[np.argmin(ratios)]
            x[idx] += ratios.min() * d
            x[idx[k]] = 0.0
            x[x < 0] = 0.0
            free &= x > 0       # the blocking bound (and any other that reached 0) leaves F
            if not free.any():      # cannot happen with sum x = 1; guard the loop
                return None
            continue
        x[:] = 0.0
        x[idx] = target
        nu = G[:, idx] @ target - a - mu
        nu[idx] = 0.0
        j = np.argmin(nu)
        if nu[j] >= -tol * max(1.0, abs(mu)):
            return x
        free[j] = True
    return None


def cutting_plane(a, b, u, u_best, R_best, f_best, lam):
    """The plane (a, b) taken at u, checked against the best point (algorithms 1-2):
    returns (a, b, "none" | "offset" | "normal"), satisfying conditions (14) and (15)."""
    # condition (14) fails (beyond rounding: in the convex case it never does)
    if float(a @ u_best) + b <= R_best + 1e-10 * max(1.0, abs(R_best), abs(b)):
        return a, b, "none"
    L = f_best - 0.5 * lam * float(u @ u) - float(a @ u)
    U = R_best - float(a @ u_best)
    if L <= U:
        return a, L, "offset"
    a = -lam * u_best
    return a, f_best - 0.5 * lam * float(u @ u) - float(a @ u), "normal"


def minimise(oracle, dim, lam, tol=0.01, max_iter=100, callback=None, keep=False,
             restarts=0):
    """Run the non-convex bundle method from u = 0. `oracle(u)` -> (R(u), subgradient).
    `callback(t, u, info)` is called after every oracle call (e.g. to score a dev set;
    whatever it returns is stored in the iteration's history). With `keep`, the planes
    and points are kept on the result (for checking the method's conditions). Returns
    the Bundle (best_u, best_f, best_iter, history, ...). `restarts`: see the module."""
    b = Bundle(dim, lam, tol, restarts)
    for _ in range(max_iter):
        R, a = oracle(b.u)
        b.step(R, a, callback, keep)
        if b.converged:
            break
    return b
