#!/usr/bin/env python3
"""NETtalk speed targets of rhmmtk, each against a lower bound computed in the same run.

  python bench/bench_core.py [--data nettalk.data] [--work DIR] [--json out.json]
  python bench/bench_core.py --smoke       # seconds: a small generated dictionary

Steps and targets (2-core machine):
  train-spectral -m 24 on the 15,000 training words        < 15 s  (CLI wall time)
  one EM iteration at m = 4 (e_step + m_step, in-process)   <  2 s
  decode the ~3,974 test words with the m = 24 model         < 10 s  (CLI wall time)
The spectral and decode steps are also timed in-process (the library call alone).

Lower bound = floating-point work that the step cannot avoid, counted from the actual
model (per-label m_a, label pairs) and data (positions, active (sequence, label) pairs),
divided by a numpy GEMM rate measured in this run on a matrix of similar shape (the best
of measurements taken before and after the timings). CLI lower bounds add the measured
time to start Python and import what the command imports. See bench/README.md.

Inputs are prepared from the NETtalk dictionary the way a user would prepare them
(recipes/nettalk/local/prepare_nettalk.py, rhmmtk make-obs, rhmmtk featurize).
"""
import argparse
import json
import os
import platform
import sys
import time

import options  # bench/options.py: the options every benchmark shares
from timing import REPO, best_of, blas_info, loadavg, rhmmtk_command, run  # bench/timing.py

TEMPLATES = REPO / "recipes" / "nettalk" / "conf" / "templates.conf"
PREPARE = REPO / "recipes" / "nettalk" / "local" / "prepare_nettalk.py"

# (the in-process spectral.estimate takes its defaults, which are train-spectral's)
EM_FLOOR, EM_NOISE, EM_SEED = 1e-3, 0.5, 0
# the recipe cases' EM iteration rows: at least this many calls (see em_case)
EM_REPEATS = 10

# Seconds each GEMM rate measurement runs for (--smoke: less)
GEMM_SECONDS = 0.1


def cli_imports(command):
    """What `rhmmtk <command>` imports before it can start work (for the CLI floor): the
    command's module (as the registry names it) and the library modules of the functions
    it calls, found from those functions, so that a module moved or renamed is followed."""
    import rhmmtk.cli
    from rhmmtk.training_data import read_featurized, read_observations
    from rhmmtk.io.text import read_alignment
    from rhmmtk.models.rhmm.decoder import decode
    from rhmmtk.models.rhmm.operators import Operators
    from rhmmtk.models.rhmm.spectral import estimate
    from rhmmtk.provenance import record

    library = {"train-spectral": (read_featurized, estimate, Operators, record),
               "decode": (decode, Operators, read_observations, read_alignment, record)}
    modules = [rhmmtk.cli.COMMANDS[command].split(":")[0],
               *sorted({f.__module__ for f in library[command]}), "h5py", "tqdm"]
    return "import rhmmtk.cli, " + ", ".join(modules)


CLI_COMMANDS = ("train-spectral", "decode")


# --------------------------------------------------------------------------- utilities
def gemm_rate(shape, min_time=None, repeats=3):
    """Best flop rate (flop/s) of numpy A @ B with A (M, K), B (K, N), over `repeats`
    runs of >= min_time each, with the BLAS's default thread count and (if threadpoolctl
    is installed and the default is more) with one thread: on a busy 2-core machine one
    thread is often faster, and a lower bound should use the best rate the machine gives."""
    import numpy as np

    min_time = GEMM_SECONDS if min_time is None else min_time
    M, K, N = (max(1, int(round(v))) for v in shape)
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((M, K)), rng.standard_normal((K, N))

    def measure():
        A @ B
        best = float("inf")
        for _ in range(repeats):
            calls, t0 = 0, time.perf_counter()
            while True:
                A @ B
                calls += 1
                el = time.perf_counter() - t0
                if el >= min_time:
                    break
            best = min(best, el / calls)
        return 2.0 * M * K * N / best

    rate = measure()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return rate
    with threadpool_limits(limits=1, user_api="blas"):
        return max(rate, measure())


# --------------------------------------------------------------------------- preparation
def prepare(data, work, reuse, words):
    """The user's recipe: split, observation archives, featurized training archive;
    `words` training words and dev words in the recipe's proportion (15,000: 1,034)."""
    rh = rhmmtk_command()
    sizes = ",".join(map(str, options.nettalk_sizes(words)))
    steps = [
        ("prepare_nettalk.py", [sys.executable, str(PREPARE), "--seed", "1", "--sizes", sizes,
                                str(data), str(work / "data")], work / "data" / "test" / "ali"),
        ("make-obs train", rh + ["make-obs", "--write-symbols", str(work / "obs.syms"),
                                 str(work / "data/train/letters"), str(work / "train.obs.h5")],
         work / "train.obs.h5"),
        ("make-obs test", rh + ["make-obs", "--symbols", str(work / "obs.syms"),
                                str(work / "data/test/letters"), str(work / "test.obs.h5")],
         work / "test.obs.h5"),
        ("featurize train", rh + ["featurize", "--templates", str(TEMPLATES),
                                  str(work / "train.obs.h5"), str(work / "data/train/ali"),
                                  str(work / "train.feats.h5")], work / "train.feats.h5"),
    ]
    return run_steps(steps, reuse, 20)


def run_steps(steps, reuse, width):
    """Run (name, command, product) steps, skipping those whose product exists when
    `reuse`; a command is an argument list or a function called in-process; returns
    name -> seconds (None when skipped)."""
    times = {}
    for name, cmd, product in steps:
        if reuse and product.exists():
            times[name] = None
            continue
        if callable(cmd):
            t0 = time.perf_counter()
            cmd()
            times[name] = time.perf_counter() - t0
        else:
            times[name], _ = run(cmd, name)
        print(f"  prepared: {name:<{width}s} {times[name]:7.2f} s", flush=True)
    return times


# --------------------------------------------------------------------------- work counts
def count_decode(op, seqs, batch_mb=None, groups=None):
    """Flops of the batched max-marginal decoder (rhmmtk/models/rhmm/forward_backward.py), from the
    model's per-label m_a and successor lists and the batch's active (position, label)
    pairs (label a is active at a position if it can emit the observation there and has
    forward mass, i.e. is reachable through active labels and the model's label pairs:
    the exact decoder extends exactly these). A pair whose emission is the model's floor
    alone counts m_a, not m_a^2, multiply-adds per successor state. Also the shapes of the
    per-position GEMMs over the sequences of a batch, for the rate. groups (lists of
    sequence indices; `Decoder._product_groups`): also the flops of the products with
    C^{b|a}(c^a_x) precomputed once per distinct (group, label, observation)."""
    import numpy as np

    from rhmmtk.models.rhmm.decoder import DEFAULT_BATCH_MB

    batch_mb = DEFAULT_BATCH_MB if batch_mb is None else batch_mb
    l, m, general = op.num_labels, op.m, op.form == "general"
    M = int(m.max())
    support = np.stack([np.any(e != 0, axis=1) for e in op.emit])            # (l, n)
    succ = [[] for _ in range(l)]
    pair_bool = np.zeros((l, l), dtype=bool)
    for (a, b) in op.trans:
        succ[a].append(b)
        pair_bool[a, b] = True
    init_nz = np.array([np.any(v != 0) for v in op.init])
    floor = getattr(op, "floor", None)
    floor_unseen = None if floor is None else ~floor.seen                  # (l, n)
    ncols = np.array([sum(int(m[b]) for b in s) for s in succ], dtype=np.float64)
    has_succ = ncols > 0
    K = m.astype(np.float64) ** 2 if general else m.astype(np.float64)         # z width
    # per (position, label): forward  z = alpha (x) c (K mults) and z @ stack (2 K ncols),
    # scatter-add (ncols); backward  y = beta @ stack^T (2 K ncols) and y . c (2 K);
    # last position: the stop operator (2 K); every active pair: mu and two rescales (8 m_a).
    stop_per = 2 * K
    misc_per = 8 * m.astype(np.float64)
    # tighter variant: only successors b that can emit the next observation
    tight_cols = np.zeros((l, support.shape[1]))
    for a in range(l):
        for b in succ[a]:
            tight_cols[a] += m[b] * support[b]
    flops = dict(gemm=0.0, other=0.0)
    tight_gemm = 0.0
    active_pairs = 0
    gemm_w = np.zeros(4)              # flop-weighted sums of rows, K, N, and total weight
    calls = 0
    # the blocked schedule's arithmetic (one sequence at a time, one block): per kept
    # (position, label) with successors m_a, not K_a, multiply-adds per successor state
    # each way, after C^{b|a}(c^a_x) = c^a_x (m_a) times the stack (2 K_a ncols) once
    # per distinct (sequence, label, observation) whose emission is not the floor alone
    blocked_flops = 0.0
    built = []                        # (sequence, label, observation) of those products
    # replicate the decoder's batching (Decoder.marginals) to get its GEMM shapes
    per_pos = 8 * 2 * l * M + 8 * l
    order = np.argsort([-len(s) for s in seqs], kind="stable")
    i = 0
    while i < len(order):
        T = len(seqs[order[i]])
        B = max(1, int(batch_mb * 2**20 // (per_pos * T)))
        idx = order[i: i + B]
        i += B
        L = np.array([len(seqs[j]) for j in idx])
        X = np.zeros((len(idx), T), dtype=np.int64)
        for r, j in enumerate(idx):
            X[r, : L[r]] = seqs[j]
        # labels the exact decoder (beam 0) extends: those that can emit the observation
        # and have forward mass, i.e. are reachable from a label with c^1 != 0 through
        # kept labels and label pairs of the model (exact zeros by cancellation aside)
        reach = np.repeat(init_nz[:, None], len(idx), axis=1)              # (l, B)
        for t in range(T):
            live, cont, end = L > t, L > t + 1, L == t + 1
            sup = support[:, X[:, t]] & reach                             # (l, B)
            reach = (pair_bool.T.astype(np.int64) @ sup.astype(np.int64)) > 0
            n_cont = (sup & cont).sum(axis=1).astype(np.float64)
            n_end = (sup & end).sum(axis=1).astype(np.float64)
            n_live = (sup & live).sum(axis=1)
            active_pairs += int(n_live.sum())
            g = n_cont * has_succ
            if floor_unseen is not None:
                # rows whose c^a_x is the floor alone (EmissionFloor): m_a, not K_a, per
                # successor state (the decoder's rank-one path)
                n_fl = (sup & cont & floor_unseen[:, X[:, t]]).sum(axis=1) * has_succ
            else:
                n_fl = np.zeros(l)
            Kt = K * (g - n_fl) + m * n_fl                                # sum of K over rows
            blocked_flops += (4 * m * g * ncols).sum() + (3 * m * g + ncols * g).sum() \
                + (stop_per * n_end).sum() + (misc_per * n_live).sum()
            own = sup & cont[None, :] & has_succ[:, None]
            if floor_unseen is not None:
                own &= ~floor_unseen[:, X[:, t]]
            a_, r_ = np.nonzero(own)
            built.append(np.stack([idx[r_], a_, X[r_, t]], axis=1))
            gemm = 2 * 2 * Kt * ncols                                     # forward + backward
            flops["gemm"] += gemm.sum()
            # z = alpha (x) c (K), the scatter (ncols), y . c (2 K)
            flops["other"] += (3 * Kt + ncols * g).sum() \
                + (stop_per * n_end).sum() + (misc_per * n_live).sum()
            if t + 1 < T:
                nx = X[:, t + 1]
                for a in np.flatnonzero(has_succ & (n_cont > 0)):
                    rows = sup[a] & cont
                    tight_gemm += 2 * 2 * K[a] * tight_cols[a, nx[rows]].sum()
            w = gemm                                                      # 2 calls (fwd, bwd)
            gemm_w += [(w * g).sum(), (w * Kt / np.maximum(g, 1)).sum(), (w * ncols).sum(),
                       w.sum()]
            calls += 2 * int((g > 0).sum())
    shape = tuple(gemm_w[:3] / gemm_w[3]) if gemm_w[3] else (1, 1, 1)
    if floor_unseen is not None:
        blocked_flops += float((2 * K * ncols).sum())           # C(g_a), once per decoder
    precomputed_flops = blocked_flops
    if built:
        built = np.concatenate(built)
        a_ = np.unique(built, axis=0)[:, 1]
        blocked_flops += float((2 * K[a_] * ncols[a_]).sum())
        if groups is not None:
            group_of = np.zeros(len(seqs), dtype=np.int64)
            for k, g in enumerate(groups):
                group_of[g] = k
            a_ = np.unique(np.stack([group_of[built[:, 0]], built[:, 1], built[:, 2]], axis=1),
                           axis=0)[:, 1]
            precomputed_flops += float((2 * K[a_] * ncols[a_]).sum())
    # For comparison (not the bound): with n small, C^{b|a}(c^a_x) can be cached per x as one
    # (rows of labels emitting x) x (sum_b m_b) transfer matrix (docs/RHMM.md: l^2 m^2 per
    # position), so each position costs 2 * 2 * rows_x * sum_b m_b (forward + backward).
    offs = np.concatenate([[0], np.cumsum(m)])
    rows_x = (support * m[:, None]).sum(axis=0).astype(np.float64)           # (n,)
    all_x = np.concatenate(seqs)
    last = np.cumsum([len(s) for s in seqs]) - 1
    cont_x = np.delete(all_x, last)
    cached = float((4.0 * rows_x[cont_x] * offs[-1]).sum())
    cached_build = float(sum(2.0 * K[a] * ncols[a] * m[a] * support[a].sum() for a in range(l)))
    return {"flops": flops, "total_flops": sum(flops.values()),
            "blocked_flops": blocked_flops if general else None,
            "precomputed_flops": precomputed_flops if general and groups is not None else None,
            "gemm_flops_if_only_next_emitting_successors": tight_gemm,
            "gemm_flops_if_cached_per_observation": cached,
            "cache_build_flops": cached_build,
            "active_pairs": active_pairs, "positions": int(sum(len(s) for s in seqs)),
            "gemm_calls": calls, "gemm_shape": shape,
            "labels": l, "m": m.tolist(), "label_pairs": len(op.trans), "form": op.form}


def count_spectral(corpus, F, slices, m_req, m):
    """Flops of spectral estimation (figure 4, every position) for the per-label m_a the
    estimator chose. Returns per-component flops and the moment GEMM shape."""
    import numpy as np

    lab = F[:, 0].astype(np.int64)
    l = len(corpus.label_table)
    n = len(corpus.obs_table)
    lengths = np.array([len(x) for x in corpus.obs])
    ends = np.cumsum(lengths) - 1
    starts = ends - lengths + 1
    nxt = np.full(len(lab), -1, dtype=np.int64)
    nxt[:-1] = lab[1:]
    nxt[ends] = -1
    cols = {}
    for v, (lo, hi) in slices.items():
        _, inv = np.unique(F[:, lo:hi], return_inverse=True)
        cols[v] = inv.reshape(len(F), hi - lo)
    order = np.argsort(lab, kind="stable")
    bounds = np.searchsorted(lab[order], np.arange(l + 1))
    comp = dict(omega=0.0, svd_truncated=0.0, svd_dense_as_implemented=0.0, projections=0.0,
                sigma_lambda=0.0, d_accumulation=0.0, backoff_and_operators=0.0,
                emissions=0.0)
    mom_w = np.zeros(4)
    omegas = []
    for a in range(l):
        rows = order[bounds[a]: bounds[a + 1]]
        Na, ka = rows.size, int(m[a])
        if Na == 0:
            continue
        for v1, v2 in (("future", "past"), ("present", "destiny")):
            c1, c2 = cols[v1][rows], cols[v2][rows]
            t1, t2 = c1.shape[1], c2.shape[1]
            comp["omega"] += 2.0 * Na * t1 * t2
            u1, i1 = np.unique(c1, return_inverse=True)
            u2, i2 = np.unique(c2, return_inverse=True)
            r, c = len(u1), len(u2)
            pairs = (i1.reshape(Na, t1)[:, :, None] * c + i2.reshape(Na, t2)[:, None, :]).ravel()
            z = len(np.unique(pairs))
            k = min(m_req, r, c)
            # cheapest reasonable top-k SVD: one randomized range-finder pass
            comp["svd_truncated"] += 4.0 * z * k + 4.0 * max(r, c) * k * k \
                + 6.0 * min(r, c) * k * k + 20.0 * k ** 3
            p, q = max(r, c), min(r, c)
            comp["svd_dense_as_implemented"] += min(14.0 * p * q * q + 8.0 * q ** 3,
                                                    6.0 * p * q * q + 20.0 * q ** 3)
            comp["projections"] += 2.0 * Na * (t1 + t2) * ka
            omegas.append((a, v1 + "/" + v2, r, c, z))
        comp["sigma_lambda"] += 2 * 2.0 * Na * ka * ka
        comp["emissions"] += 2.0 * Na * ka + 2.0 * n * ka * ka + 4.0 * ka ** 3
        nb = nxt[rows]
        bs, Nab = np.unique(nb, return_counts=True)
        for b, cnt in zip(bs, Nab):
            kb = 1 if b < 0 else int(m[b])
            f = cnt * ka * ka + 2.0 * cnt * kb * ka * ka        # p (x) r, then f2^T (p (x) r)
            comp["d_accumulation"] += f
            comp["backoff_and_operators"] += 2.0 * cnt * kb * ka + 3.0 * kb * ka * ka \
                + 2.0 * kb * ka ** 3
            mom_w += [f * kb, f * min(cnt, 16384), f * ka * ka, f]
    lb_comp = {k: v for k, v in comp.items() if k != "svd_dense_as_implemented"}
    shape = tuple(mom_w[:3] / mom_w[3])
    return {"flops": comp, "total_flops": sum(lb_comp.values()), "moment_gemm_shape": shape,
            "positions": int(len(lab)), "labels": l, "m_requested": m_req, "m": list(map(int, m)),
            "mean_m": float(np.mean(m)), "largest_omega": max(omegas, key=lambda o: o[2] * o[3]),
            "first_positions": int(len(starts))}


def count_em(buckets, support, m, visited=None):
    """Flops of one EM iteration at m states (rhmmtk/models/rhmm/em.py): per transition 2m^2 forward,
    2m^2 backward, 4m^2 for xi and m^2 to accumulate its counts; per position ~4m
    (emission, normalisation, gamma, emission counts); the M-step's normalisations, of
    the `visited` (label, observation) pairs' emission rows (default: all l n)."""
    import numpy as np

    K = sum(int(b.valid.sum()) for b in buckets)
    Kt = sum(int(b.trans_valid.sum()) for b in buckets)
    S = sum(b.B for b in buckets)
    e = 9.0 * m * m * Kt + 4.0 * m * K + 4.0 * m * S
    P = len(support.pairs)
    emit_rows = support.l * support.n if visited is None else visited
    mstep = 3.0 * (P * m * m + emit_rows * m + 2 * support.l * m)
    rows = float(np.average([b.B for b in buckets], weights=[b.trans_valid.sum() + 1
                                                             for b in buckets]))
    return {"flops": {"e_step": e, "m_step": mstep}, "total_flops": e + mstep,
            "positions": K, "transitions": Kt, "sequences": S, "m": m, "label_pairs": P,
            "gemm_shape": (rows, m, m)}


# --------------------------------------------------------------------------- the steps
def import_floor(cmd_name, repeats):
    code = cli_imports(cmd_name)
    best, _, _ = best_of(lambda: run([sys.executable, "-c", code], "import floor"), repeats)
    return best


def bench(args, work):
    import numpy as np

    import logging
    logging.getLogger("rhmmtk").setLevel(logging.ERROR)   # in-process: keep output clean

    from rhmmtk.training_data import read_corpus, read_featurized, read_observations
    from rhmmtk.models.rhmm.em import Support, e_step, initial_model, m_step, make_buckets
    from rhmmtk.models.rhmm.decoder import decode
    from rhmmtk.io.text import read_alignment
    from rhmmtk.models.rhmm.operators import Operators
    from rhmmtk.models.rhmm.spectral import estimate

    R = args.repeats
    rh = rhmmtk_command()
    res = {"steps": {}, "rates": {}, "counts": {}}
    feats, model = work / "train.feats.h5", work / "sp24.h5"

    # ---- (1) spectral estimation
    print("timing train-spectral (CLI) ...", flush=True)
    log_times = []

    def cli_spectral():
        _, err = run(rh + ["train-spectral", "-m", str(args.m_spectral), str(feats), str(model)],
                     "train-spectral")
        log_times.append(err)
    t_cli_sp, all_cli_sp, _ = best_of(cli_spectral, R)
    fastest_log = log_times[all_cli_sp.index(t_cli_sp)]
    print("timing spectral.estimate (in-process) ...", flush=True)
    corpus, F, attrs = read_featurized(feats)
    slices = {k: tuple(v) for k, v in json.loads(attrs["view_slices"]).items()}
    t_sp, all_sp, op_sp = best_of(
        lambda: estimate(corpus, F, slices, args.m_spectral), R)

    # ---- (2) one EM iteration
    print("timing one EM iteration (in-process) ...", flush=True)
    tc = read_corpus(work / "train.obs.h5", work / "data" / "train" / "ali")
    t0 = time.perf_counter()
    support = Support(tc)
    buckets = make_buckets(tc, support, args.m_em)
    em_model, tp = initial_model(tc, support, args.m_em, np.random.default_rng(EM_SEED),
                                 EM_NOISE, EM_FLOOR)
    t_em_setup = time.perf_counter() - t0
    split = {"e": [], "m": []}

    def em_iter():
        t0 = time.perf_counter()
        stats = e_step(em_model, tp, buckets, support)
        t1 = time.perf_counter()
        new = m_step(stats, support, EM_FLOOR)
        split["e"].append(t1 - t0)
        split["m"].append(time.perf_counter() - t1)
        return new, stats.loglik
    t_em, all_em, (_, em_ll) = best_of(em_iter, R)

    # ---- (3) decode
    print("timing decode (CLI) ...", flush=True)
    hyp = work / "test.hyp.ali"
    t_cli_dec, all_cli_dec, _ = best_of(
        lambda: run(rh + ["decode", str(model), str(work / "test.obs.h5"), str(hyp)], "decode"),
        R)
    print("timing forward_backward.decode (in-process) ...", flush=True)
    op = Operators.load(model)
    _, seqs, _ = read_observations(work / "test.obs.h5")
    t_dec, all_dec, (labels, dstats, _) = best_of(lambda: decode(op, seqs), R)
    ref = read_alignment(work / "data" / "test" / "ali")
    hyp_ali = read_alignment(hyp)
    hits = sum(sum(r == h for r, h in zip(ref[k], hyp_ali[k])) for k in ref)
    accuracy = hits / sum(len(v) for v in ref.values())

    # ---- work counts and GEMM rates (rates measured after the timings, and before: best)
    print("counting work and measuring GEMM rates ...", flush=True)
    c_sp = count_spectral(corpus, F, slices, args.m_spectral, op_sp.m)
    c_em = count_em(buckets, support, args.m_em)
    c_dec = count_decode(op, seqs)
    shapes = {"peak (square)": (args.peak_n,) * 3,
              "spectral moments": c_sp["moment_gemm_shape"],
              "em (rows, m) @ (m, m)": c_em["gemm_shape"],
              "decode (rows, m_a^2) @ (m_a^2, sum_b m_b)": c_dec["gemm_shape"]}
    floors = {}
    for rnd in range(2):                # two rounds, separated by the import floors: best
        for name, shp in shapes.items():
            r = max(gemm_rate(shp), args._rates_before.get(name, 0.0),
                    res["rates"].get(name, {}).get("flop_per_s", 0.0))
            res["rates"][name] = {"shape": [round(float(s), 1) for s in shp], "flop_per_s": r}
        if rnd == 0:
            floors = {k: import_floor(k, R) for k in CLI_COMMANDS}
    rate = {k: v["flop_per_s"] for k, v in res["rates"].items()}

    # lower bounds
    f = c_sp["flops"]
    lb_sp_parts = {
        "omega + svd (truncated) + projections @ peak":
            (f["omega"] + f["svd_truncated"] + f["projections"]) / rate["peak (square)"],
        "moments (sigma, lambda, D, backoff, emissions) @ moment shape":
            (f["sigma_lambda"] + f["d_accumulation"] + f["backoff_and_operators"]
             + f["emissions"]) / rate["spectral moments"],
    }
    lb_sp = sum(lb_sp_parts.values())
    lb_em = c_em["total_flops"] / rate["em (rows, m) @ (m, m)"]
    lb_dec = c_dec["total_flops"] / rate["decode (rows, m_a^2) @ (m_a^2, sum_b m_b)"]

    def step(name, t, times, target, lb, **extra):
        res["steps"][name] = {"time_s": t, "times_s": times, "target_s": target,
                              "lower_bound_s": lb, "ratio": t / lb if lb else None, **extra}

    step("train-spectral -m %d (CLI, wall)" % args.m_spectral, t_cli_sp, all_cli_sp, 15.0,
         floors["train-spectral"] + lb_sp, import_floor_s=floors["train-spectral"],
         logged=_timer_lines(fastest_log))
    step("  spectral.estimate (in-process)", t_sp, all_sp, None, lb_sp, lb_parts_s=lb_sp_parts)
    step("EM iteration m=%d (e_step + m_step)" % args.m_em, t_em, all_em, 2.0, lb_em,
         e_step_s=min(split["e"]), m_step_s=min(split["m"]), setup_s=t_em_setup,
         loglik=em_ll)
    step("decode m=%d test (CLI, wall)" % args.m_spectral, t_cli_dec, all_cli_dec, 10.0,
         floors["decode"] + lb_dec, import_floor_s=floors["decode"])
    step("  forward_backward.decode (in-process)", t_dec, all_dec, None, lb_dec,
         accuracy=accuracy, decode_stats=dstats)
    res["counts"] = {"spectral": c_sp, "em": c_em, "decode": c_dec}
    res["import_floor_s"] = floors
    return res


def _timer_lines(stderr):
    return [ln.split(": ", 1)[1] for ln in stderr.splitlines() if " took " in ln]


# --------------------------------------------------------------------------- issue 10 cases
# The configurations the recipes select, beside the cases above: NETtalk letter windows
# (make-obs --context WINDOW_CONTEXT --min-count 2, as recipes/nettalk/run.sh) at m = 32 for both estimators, TIMIT-layout frames
# (rhmmtk.corpora.synthetic: l = 39, n = 10,000 codes) at m = 32, one long utterance, and
# scoring a 100,000-position utterance. Every time is the best of --repeats; every bound
# is flops / a GEMM rate measured in this run (see bench/README.md).
WINDOW_CONTEXT = 2      # recipes/nettalk/run.sh's context (letters i-2..i+2)


def prepare_recipe(work, reuse, frames, dev_frames, codes):
    """Letter-window observations and features as recipes/nettalk/run.sh makes them, and
    synthetic frames; returns the front end's wall times (make-obs, featurize)."""
    from rhmmtk.corpora.synthetic import SyntheticOptions, make_corpus

    rh = rhmmtk_command()
    d = work / "data"
    steps = [
        ("make-obs windows train", rh + ["make-obs", "-q", "--context", str(WINDOW_CONTEXT),
                                         "--min-count", "2", "--write-symbols",
                                         str(work / "win.syms"), str(d / "train/letters"),
                                         str(work / "train.win.h5")],
         work / "train.win.h5"),
        ("make-obs windows dev", rh + ["make-obs", "-q", "--symbols", str(work / "win.syms"),
                                       str(d / "dev/letters"), str(work / "dev.win.h5")],
         work / "dev.win.h5"),
        ("featurize windows train", rh + ["featurize", "-q", "--templates", str(TEMPLATES),
                                          str(work / "train.win.h5"), str(d / "train/ali"),
                                          str(work / "train.win.feats.h5")],
         work / "train.win.feats.h5"),
        ("train-spectral -m 32 windows", rh + ["train-spectral", "-q", "-m", "32", "--smooth", "100",
                                               str(work / "train.win.feats.h5"),
                                               str(work / "sp32win.h5")], work / "sp32win.h5"),
        ("make_synthetic frames", lambda: make_corpus(work / "syn", SyntheticOptions(
            frames=frames, dev_frames=dev_frames, codes=codes)), work / "syn" / "obs.h5"),
        ("featurize frames", rh + ["featurize", "-q", "--templates",
                                   str(work / "syn" / "templates.conf"), str(work / "syn/obs.h5"),
                                   str(work / "syn/ali"), str(work / "syn/feats.h5")],
         work / "syn" / "feats.h5"),
        ("train-spectral -m 32 frames", rh + ["train-spectral", "-q", "-m", "32",
                                              str(work / "syn/feats.h5"), str(work / "syn/sp32.h5")],
         work / "syn" / "sp32.h5"),
    ]
    return run_steps(steps, reuse, 30)


def synthetic_alignment(N, rng, l=39, run=8):
    """A frame-like reference of N positions (runs of `run` frames) and a hypothesis with
    realistic errors: half the boundaries shifted by a frame, 15% of the segments
    substituted, 1% single-frame insertions (about 80% of frames correct)."""
    import numpy as np

    seg = rng.integers(0, l, size=N // run + 1)
    ref = np.repeat(seg, run)[:N]
    hyp = ref.copy()
    b = np.flatnonzero(np.diff(ref))
    sh = b[rng.random(len(b)) < 0.5]
    hyp[sh] = hyp[sh + 1]
    sub = np.repeat(rng.random(len(seg)) < 0.15, run)[:N]
    hyp = np.where(sub, np.repeat(rng.integers(0, l, size=len(seg)), run)[:N], hyp)
    ins = rng.random(N) < 0.01
    hyp[ins] = rng.integers(0, l, size=int(ins.sum()))
    return ref, hyp


def bench_recipe_cases(args, work, res):
    """The issue-10 rows: decode (short and long), EM at m = 4 and 32, scoring."""
    import numpy as np

    from rhmmtk.training_data import read_corpus, read_observations
    from rhmmtk.models.rhmm.em import (Counts, EmissionRows, Support, em_iteration,
                                       initial_stats, m_step_rows, make_buckets,
                                       visited_rows)
    from rhmmtk.models.rhmm.decoder import Decoder, decode
    from rhmmtk.models.rhmm.operators import Operators
    from rhmmtk.scoring import score

    R = args.repeats
    res.setdefault("recipe_cases", {})
    rows = res["recipe_cases"]
    rate_cache = {}

    def rate(shape):
        key = tuple(round(float(s), 1) for s in shape)
        if key not in rate_cache:
            rate_cache[key] = gemm_rate(shape)
        return rate_cache[key]

    def dec_case(name, op, seqs, strict_shape=None):
        dec = Decoder(op, 0.0)
        # compile / warm with the timed call itself: a shorter batch may take another
        # schedule, whose kernels are not the timed ones (a first call compiles, which
        # with --repeats 1 was timed: 7 s instead of 0.7 for the windows as words)
        decode(op, seqs)
        t, times, _ = best_of(lambda: decode(op, seqs), R)
        # the groups as Decoder.batch forms them: on the sequences sorted by length, as
        # `marginals` passes them (these cases are one batch each)
        order = np.argsort([-len(s) for s in seqs], kind="stable")
        ordered = [seqs[i] for i in order]
        groups = dec._product_groups(ordered) if op.form == "general" else None
        how = dec._schedule(ordered, groups)
        groups = None if groups is None else [order[g] for g in groups]
        c = count_decode(op, seqs, groups=groups if how == "gemm" else None)
        if c["precomputed_flops"] is not None:
            how += f", C(c) precomputed in {len(groups)} group{'s' * (len(groups) > 1)}"
        r_own = rate(c["gemm_shape"])
        r = max(r_own, rate(strict_shape)) if strict_shape is not None else r_own
        lb = c["total_flops"] / r
        rows[name] = {"time_s": t, "times_s": times, "lower_bound_s": lb, "ratio": t / lb,
                      "lower_bound_at_own_shape_s": c["total_flops"] / r_own,
                      "positions": c["positions"], "schedule": how,
                      "gemm_shape": c["gemm_shape"], "flops": c["total_flops"],
                      "rate": r, "mean_m": float(np.mean(op.m))}
        if c["blocked_flops"] is not None:
            # the schedule's own (fewer) multiply-adds at the same rate: the blocked one's,
            # or those of the products with C(c) precomputed
            own = c["precomputed_flops"] or c["blocked_flops"]
            rows[name]["own_flops"] = own
            rows[name]["ratio_to_own_flops"] = t / (own / r)
        print(f"  {name}: {t:.3f} s, ratio {t / lb:.2f} ({rows[name]['schedule']})", flush=True)
        return c["gemm_shape"]

    def em_case(name, corpus, m):
        """One iteration as em.train runs it (em_iteration: E-step + M-step on the rows
        the corpus visits); returns the dense RHMM of the start, for the decode rows."""
        counts = Counts.from_corpus(corpus)
        sup = Support.from_counts(counts, True)
        bks = make_buckets(corpus, sup, m)
        ids, row_of = visited_rows(counts)
        vrows = EmissionRows(ids, sup.emit)                             # once, as em.train
        cur = m_step_rows(initial_stats(counts, sup, m, np.random.default_rng(EM_SEED),
                                        EM_NOISE), sup, EM_FLOOR, vrows)
        em_iteration(cur, bks[:1], sup, vrows, row_of, EM_FLOOR)          # compile / warm
        # at m = 4 an iteration takes a few ms and the first calls after the decode rows
        # run on cold caches (4.3-4.9 ms against 3.6-3.9 for the next ones, measured):
        # at least EM_REPEATS calls
        t, times, _ = best_of(lambda: em_iteration(cur, bks, sup, vrows, row_of, EM_FLOOR),
                              max(R, EM_REPEATS))
        model = cur.rhmm()
        c = count_em(bks, sup, m, len(ids))
        lb = c["total_flops"] / rate(c["gemm_shape"])
        rows[name] = {"time_s": t, "times_s": times, "lower_bound_s": lb, "ratio": t / lb,
                      "positions": c["positions"], "gemm_shape": c["gemm_shape"]}
        print(f"  {name}: {t:.3f} s, ratio {t / lb:.2f}", flush=True)
        return model

    def dev_decode_time(name, model, corpus, seqs):
        op = model.operators(corpus.label_table, corpus.obs_table)
        decode(op, seqs[:2])
        t, times, _ = best_of(lambda: decode(op, seqs, beam=1e-8), R)
        rows[name] = {"time_s": t, "times_s": times, "positions": int(sum(map(len, seqs)))}
        print(f"  {name}: {t:.3f} s", flush=True)

    print("issue-10 cases: NETtalk letter windows, m = 32 ...", flush=True)
    _, wdev, _ = read_observations(work / "dev.win.h5")
    sp32 = Operators.load(work / "sp32win.h5")
    short = wdev[: args.win_words]
    shape = dec_case("decode SPECTRAL(32) windows, dev words", sp32, short)
    dec_case("decode SPECTRAL(32) windows, the same words as one utterance", sp32,
             [np.concatenate(short[: args.win_long_words])], shape)
    _, test1, _ = read_observations(work / "test.obs.h5")
    sp24 = Operators.load(work / "sp24.h5")
    long_x = np.concatenate(test1)[: args.long_positions]
    words = []
    at = 0
    for s in test1:
        if at >= len(long_x):
            break
        words.append(s)
        at += len(s)
    shape = dec_case(f"decode SPECTRAL(24) letters, {len(long_x)} positions as words", sp24,
                     words)
    dec_case(f"decode SPECTRAL(24) letters, {len(long_x)} positions as one utterance", sp24,
             [long_x], shape)

    wtrain = read_corpus(work / "train.win.h5", work / "data" / "train" / "ali")
    em_models = {}
    for m in (4, 32):
        em_models[m] = em_case(f"EM iteration m={m} windows (em_iteration)", wtrain, m)
    _, wdev_all, _ = read_observations(work / "dev.win.h5")
    dev_decode_time(f"decode dev ({len(wdev_all):,} words) with EM(32), as train-em "
                    "--dev-every does",
                    em_models[32], wtrain, wdev_all)
    for m in (4, 32):
        op = em_models[m].operators(wtrain.label_table, wtrain.obs_table)
        shape = dec_case(f"decode EM({m}) windows, dev words", op, wdev_all[: args.win_words])
        dec_case(f"decode EM({m}) windows, the same words as one utterance", op,
                 [np.concatenate(wdev_all[: args.win_words])], shape)

    print("issue-10 cases: TIMIT-layout frames (synthetic), m = 32 ...", flush=True)
    syn = work / "syn"
    ftrain = read_corpus(syn / "obs.h5", syn / "ali")
    em_case("EM iteration m=32 frames (em_iteration)", ftrain, 32)
    spf = Operators.load(syn / "sp32.h5")
    _, fdev, _ = read_observations(syn / "dev" / "obs.h5")
    fdev = fdev[: args.frame_utts]
    dec_case("decode SPECTRAL(32) frames, dev utterances", spf, fdev)
    # (no long-utterance row for frames: the generator's utterances run sil ... sil, and
    # their concatenation has no path under the model, so it would time a dead lattice)

    print("issue-10 cases: scoring ...", flush=True)
    rng = np.random.default_rng(0)
    ref, hyp = synthetic_alignment(args.score_positions, rng)
    labs = [f"p{i}" for i in range(39)]
    R_ = {"utt": [labs[i] for i in ref]}
    H_ = {"utt": [labs[i] for i in hyp]}
    score({"u": ["a", "b"]}, {"u": ["a", "a"]})             # compile / warm
    t, times, rep = best_of(lambda: score(R_, H_), R)
    rows[f"score one {args.score_positions:,}-position utterance"] = {
        "time_s": t, "times_s": times, "position_accuracy": rep.position_accuracy,
        "segments_ref": rep.segments.N, "per": rep.segments.per}
    print(f"  score: {t:.3f} s (accuracy {rep.position_accuracy:.1f}%, PER "
          f"{rep.segments.per:.1f}%)", flush=True)


def report_recipe_cases(res):
    rows = res.get("recipe_cases")
    if not rows:
        return
    w = max(len(k) for k in rows) + 2
    print(f"\n{'issue-10 case':<{w}}| {'time (s)':>9} | {'lower bound (s)':>15} | {'ratio':>6} | "
          "notes")
    for k, r in rows.items():
        lb = r.get("lower_bound_s")
        note = ""
        if "schedule" in r:
            note = (f"{r['positions']} positions, {r['schedule']}, mean m_a {r['mean_m']:.1f}, "
                    f"bound at own shape {r['lower_bound_at_own_shape_s']:.3f} s")
            if "ratio_to_own_flops" in r:
                note += f", ratio to its own flops {r['ratio_to_own_flops']:.2f}"
        elif "position_accuracy" in r:
            note = f"{r['segments_ref']} ref segments, PER {r['per']:.1f}%"
        elif "positions" in r:
            note = f"{r['positions']} positions"
        ratio_s = "-" if lb is None else f"{r['ratio']:.2f}"
        print(f"{k:<{w}}| {r['time_s']:9.3f} | "
              f"{'-' if lb is None else f'{lb:15.4f}':>15} | "
              f"{ratio_s:>6} | {note}")
    if res.get("prepare_recipe_s"):
        print("front end and training (wall, s): " + ", ".join(
            f"{k} {v:.2f}" for k, v in res["prepare_recipe_s"].items() if v is not None))


# --------------------------------------------------------------------------- report
def report(res):
    w = max(len(k) for k in res["steps"]) + 2
    head = f"{'step':<{w}}| {'time (s)':>9} | {'target (s)':>10} | {'lower bound (s)':>15} | " \
           f"{'ratio':>8} | target met"
    print("\n" + head + "\n" + "-" * len(head))
    for name, s in res["steps"].items():
        tgt = "-" if s["target_s"] is None else f"{s['target_s']:.0f}"
        met = "" if s["target_s"] is None else ("yes" if s["time_s"] < s["target_s"] else "NO")
        print(f"{name:<{w}}| {s['time_s']:9.3f} | {tgt:>10} | {s['lower_bound_s']:15.4f} | "
              f"{s['ratio']:8.1f} | {met}")
    print("every repeat (s): " + "; ".join(
        f"{k.strip().split(' (')[0]} " + ", ".join(f"{t:.2f}" for t in s["times_s"])
        for k, s in res["steps"].items()))
    print("\nGEMM rates measured in this run (numpy A @ B, best of before/after the timings):")
    for name, r in res["rates"].items():
        print(f"  {name:<44s} shape {'x'.join(str(round(s)) for s in r['shape']):>16s}"
              f"  {r['flop_per_s'] / 1e9:7.2f} GFLOP/s")
    cs, ce, cd = (res["counts"][k] for k in ("spectral", "em", "decode"))
    print(f"\nspectral (m={cs['m_requested']}, mean m_a {cs['mean_m']:.2f}, "
          f"{cs['positions']} positions) flops:")
    for k, v in cs["flops"].items():
        note = "  (not in the bound: what the dense SVD does)" if k == "svd_dense_as_implemented" \
            else ""
        print(f"  {k:<28s} {v / 1e6:12.2f} MFLOP{note}")
    a, view, r, c, z = cs["largest_omega"]
    print(f"  largest Omega: label {a} {view} {r} x {c}, nnz {z}")
    print(f"EM (m={ce['m']}, {ce['transitions']} transitions, {ce['positions']} positions) flops: "
          f"E-step {ce['flops']['e_step'] / 1e6:.2f} MFLOP "
          f"({ce['flops']['e_step'] / ce['transitions']:.0f} per transition), "
          f"M-step {ce['flops']['m_step'] / 1e6:.2f} MFLOP")
    emx = next(s for k, s in res["steps"].items() if k.startswith("EM"))
    print(f"  measured: e_step {emx['e_step_s']:.3f} s, m_step {emx['m_step_s']:.3f} s "
          f"(setup: Support + make_buckets + initial_model {emx['setup_s']:.3f} s, untimed)")
    print(f"decode ({cd['positions']} positions, {cd['active_pairs']} active (position, label) "
          f"pairs, {cd['label_pairs']} label pairs, {cd['gemm_calls']} GEMM calls) flops: "
          f"GEMM {cd['flops']['gemm'] / 1e6:.2f} MFLOP, other {cd['flops']['other'] / 1e6:.2f} "
          f"MFLOP; GEMM if only successors that can emit the next observation: "
          f"{cd['gemm_flops_if_only_next_emitting_successors'] / 1e6:.2f} MFLOP; "
          f"with C^{{b|a}}(c^a_x) cached per observation x: "
          f"{cd['gemm_flops_if_cached_per_observation'] / 1e6:.2f} MFLOP "
          f"(+ {cd['cache_build_flops'] / 1e6:.2f} MFLOP to build the cache)")
    dx = next(s for k, s in res["steps"].items() if "forward_backward" in k)
    print(f"  test accuracy {100 * dx['accuracy']:.2f}%, non-positive best marginal at "
          f"{dx['decode_stats']['nonpositive_best']} positions")
    print(f"CLI import floors: " + ", ".join(f"{k} {v:.2f} s" for k, v in
                                               res["import_floor_s"].items()))
    sx = next(s for k, s in res["steps"].items() if k.startswith("train-spectral"))
    if sx.get("logged"):
        print("train-spectral's own log (fastest run): " + "; ".join(sx["logged"]))
    print(f"load average before / after: {res['env']['loadavg_before']} / "
          f"{res['env']['loadavg_after']}; BLAS: {res['env']['blas']}")


def profile_targets(res, choice):
    """Which steps to profile. auto: if any step misses its target or is > 20x its lower
    bound (CLI or in-process row), the slowest of the three plus every such step."""
    main = {k: s for k, s in res["steps"].items() if s["target_s"] is not None}
    if choice == "all":
        return list(main)
    if choice != "auto":
        return [k for k in main if k.lower().startswith(choice.lower())]
    worst, parent = {}, None                 # a step's worst ratio, its in-process row's too
    for k, s in res["steps"].items():
        parent = k if s["target_s"] is not None else parent
        worst[parent] = max(worst.get(parent, 0.0), s["ratio"])
    bad = [k for k, s in main.items() if s["time_s"] >= s["target_s"] or worst[k] > 20]
    if not bad:
        return []
    slowest = max(main, key=lambda k: main[k]["time_s"])
    return [slowest] + [k for k in bad if k != slowest]


def profile(res, work, args, top=15):
    """cProfile the in-process work of the chosen steps; print the top functions."""
    import cProfile
    import io
    import pstats

    import numpy as np

    from rhmmtk.training_data import read_corpus, read_featurized, read_observations
    from rhmmtk.models.rhmm.em import Support, e_step, initial_model, m_step, make_buckets
    from rhmmtk.models.rhmm.decoder import decode
    from rhmmtk.models.rhmm.operators import Operators
    from rhmmtk.models.rhmm.spectral import estimate

    names = profile_targets(res, args.profile)
    if not names:
        print("\nprofile: every step meets its target within 20x of its lower bound")
    out_all = []
    for name in names:
        if name.startswith("train-spectral"):
            corpus, F, attrs = read_featurized(work / "train.feats.h5")
            slices = {k: tuple(v) for k, v in json.loads(attrs["view_slices"]).items()}
            fn = lambda: estimate(corpus, F, slices, args.m_spectral)  # noqa
            what, tag = "rhmmtk.models.rhmm.spectral.estimate", "spectral"
        elif name.startswith("EM"):
            tc = read_corpus(work / "train.obs.h5", work / "data" / "train" / "ali")
            sup = Support(tc)
            bk = make_buckets(tc, sup, args.m_em)
            mod, tp = initial_model(tc, sup, args.m_em, np.random.default_rng(EM_SEED),
                                    EM_NOISE, EM_FLOOR)
            e_step(mod, tp, bk, sup)                       # warm (first touch of its arrays)
            fn = lambda: m_step(e_step(mod, tp, bk, sup), sup, EM_FLOOR)  # noqa: E731
            what, tag = "rhmmtk.models.rhmm.em.e_step + m_step", "em"
        else:
            op = Operators.load(work / "sp24.h5")
            _, seqs, _ = read_observations(work / "test.obs.h5")
            fn = lambda: decode(op, seqs)  # noqa: E731
            what, tag = "rhmmtk.models.rhmm.decoder.decode", "decode"
        pr = cProfile.Profile()
        t0 = time.perf_counter()
        pr.runcall(fn)
        dt = time.perf_counter() - t0
        path = work / f"profile-{tag}.prof"
        pr.dump_stats(str(path))
        buf = io.StringIO()
        st = pstats.Stats(pr, stream=buf).strip_dirs()
        st.sort_stats("tottime").print_stats(top)
        st.sort_stats("cumulative").print_stats(top)
        print(f"\nprofile of {what} (step '{name.strip()}'; {dt:.2f} s under cProfile; "
              f"saved to {path}):")
        print("\n".join(ln for ln in buf.getvalue().splitlines()
                        if ln.strip() and "function calls" not in ln and "Ordered by" not in ln
                        and "List reduced" not in ln))
        out_all.append({"step": name, "function": what, "seconds_under_profiler": dt,
                        "file": str(path)})
    return out_all


# --------------------------------------------------------------------------- main
# The cases' sizes: option, default, --smoke's value (a generated dictionary of 4 x 200
# words, small synthetic frames, one repeat), help; one row each, so that an option's
# smoke value is written where the option is.
SIZES = (
    ("--peak-n", 1024, 128, "Size of the square GEMM"),
    ("--win-words", 300, 12, "dev words decoded with SPECTRAL(32) on letter windows"),
    ("--win-long-words", 40, 4, "of them, how many form the one long utterance"),
    ("--long-positions", 20000, 1000, "positions of the long single-letter utterance"),
    ("--frames", 100000, 2000, "synthetic training frames"),
    ("--dev-frames", 20000, 800, "synthetic dev frames"),
    ("--codes", 10000, 1500, "observation symbols of the synthetic frames (>= 1500)"),
    ("--frame-utts", 32, 2, "synthetic dev utterances decoded with SPECTRAL(32)"),
    ("--score-positions", 100_000, 5000, "positions of the one utterance scored"),
)
SMOKE = dict(words=200, **{flag[2:].replace("-", "_"): smoke for flag, _, smoke, _ in SIZES})


def parse_args(argv=None):
    ap = options.parser(__doc__, work=True, reuse=True, blas_threads=True, nettalk=15000)
    ap.add_argument("--profile", default="none",
                    help="auto: if a step misses its target or is > 20x its lower bound, "
                    "cProfile the slowest step and each such step; all; one of "
                    "train-spectral, em, decode; none (default)")
    ap.add_argument("--m-spectral", type=int, default=24, help=argparse.SUPPRESS)
    ap.add_argument("--m-em", type=int, default=4, help=argparse.SUPPRESS)
    ap.add_argument("--cases", default="all", choices=["all", "core", "recipe"],
                    help="core: the original three targets; recipe: the issue-10 cases "
                    "(recipe configurations, long utterances, EM at m = 4 and 32, scoring)")
    for flag, default, _, text in SIZES:
        ap.add_argument(flag, type=int, default=default, help=text)
    return options.parse(ap, SMOKE, argv)


def main():
    global GEMM_SECONDS
    args = parse_args()
    if args.smoke:
        GEMM_SECONDS = 0.01
    import numpy as np

    env = {"python": sys.version.split()[0], "numpy": np.__version__, "cpus": os.cpu_count(),
           "machine": platform.machine(), "blas": blas_info(), "loadavg_before": loadavg(),
           "blas_threads_env": os.environ.get("OPENBLAS_NUM_THREADS"), "repeats": args.repeats,
           "rhmmtk": rhmmtk_command()}
    with options.work_dir(args, "rhmmtk-bench-") as work:
        data = options.nettalk_data(args, work)
        print(f"work dir {work}; data {data}", flush=True)
        reuse = args.reuse and bool(args.work)
        prep = prepare(data, work, reuse, args.words)
        # reference GEMM rates before the timings too (the bounds use the best of both)
        print("measuring GEMM rates ...", flush=True)
        args._rates_before = {"peak (square)": gemm_rate((args.peak_n,) * 3)}
        if args.cases in ("all", "core"):
            res = bench(args, work)
        else:
            res = {"steps": {}}
        if args.cases in ("all", "recipe"):
            if not (work / "sp24.h5").exists():
                run(rhmmtk_command() + ["train-spectral", "-q", "-m", "24",
                                        str(work / "train.feats.h5"), str(work / "sp24.h5")],
                    "train-spectral -m 24")
            res["prepare_recipe_s"] = prepare_recipe(work, reuse, args.frames, args.dev_frames,
                                                     args.codes)
            bench_recipe_cases(args, work, res)
        env["loadavg_after"] = loadavg()
        res["env"], res["prepare_s"] = env, prep
        if res["steps"]:
            report(res)
        report_recipe_cases(res)
        print(f"load average before / after: {env['loadavg_before']} / {env['loadavg_after']}")
        if args.profile != "none":
            res["profile"] = profile(res, work, args)
        options.write_json(args, res, default=_jsonable)


def _jsonable(x):
    import numpy as np

    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)


if __name__ == "__main__":
    main()
