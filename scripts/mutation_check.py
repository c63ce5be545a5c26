#!/usr/bin/env python
"""Mutation check: do the tests fail when the numeric core, a shard sum or a clean-up is wrong?

Each entry of MUTATIONS below is a small, plausible bug -- a (file, exact original
snippet, replacement) triple plus the test files that should catch it. For every
mutation the script copies the working tree (without .git) to a temporary directory,
applies that one replacement, and runs the listed tests there with the copy first on
PYTHONPATH (and as the working directory, so `python -m rhmmtk` subprocesses of CLI
tests run the mutant too). A mutation is *killed* when the tests fail, *survived* when
they pass. The kill rate over the list is the result; the list must stay >= 95% killed.
Besides the numeric core, the list plants bugs in the sums over --job shards (shard-*)
and in the clean-up paths of the one writer, rhmmtk/io/output.py (writer-*).

Run it before closing numeric work (it is slow, so it is not part of the test suite):

    python scripts/mutation_check.py                 # every mutation, current tests
    python scripts/mutation_check.py -k spectral     # ids containing "spectral"
    python scripts/mutation_check.py --list          # the documented list
    python scripts/mutation_check.py --tests-rev REV # the same mutants, tests of REV
                                                     # (what the old tests caught)

Before the mutants, each distinct test selection is run once on the unmutated copy: a
selection that fails there would "kill" everything and is reported as an error instead.
tests/test_mutation_list.py (fast, in the suite) checks that every original snippet
still occurs exactly once in its file, so the list cannot silently rot when the code
changes: update the snippet with the code. Every new model family adds mutations of its
gradient, its dynamic program and its update rule here (see tests/README.md).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FB = ["tests/test_forward_backward.py", "tests/test_kernels.py"]
SPEC = ["tests/test_spectral_formulas.py", "tests/test_spectral.py"]
EM = ["tests/test_em.py", "tests/test_kernels.py"]
# the generated E-step recursions: the numerics must catch an edit, not only the check
# that the file is what its generator writes
EM_STEPS = EM + ["-k", "not generator_writes"]
SCORE = ["tests/test_scoring.py", "tests/test_kernels.py", "-k", "not cli"]
SIG = ["tests/test_significance.py", "-k", "not cli"]
TPL = ["tests/test_templates.py"]
HCRF = ["tests/test_hcrf.py"]
SHARDS_SP = ["tests/test_shards_spectral.py"]
SHARDS_EM = ["tests/test_shards_em.py"]
# the writer's clean-up paths, through the writer itself (seconds; test_full_disk and
# test_os_errors_mid_write see the same through every command, in minutes), then a real
# process killed mid-write
# the Kaldi and HTK specifiers (rhmmtk/io/specifiers.py, io/htk.py, io/labels.py)
SPECIFIERS = ["tests/test_specifiers.py"]
HTK_IO = ["tests/test_features.py", "tests/test_labels.py"]
CLEANUP = [f"tests/test_faults.py::{t}" for t in (
    "test_transaction_is_all_or_nothing_in_python", "test_write_and_fsync_errors_in_python",
    "test_failed_rename_leaves_no_temporary", "test_signal_mid_write")]
G2P_ALIGN = ["tests/test_g2p_align.py", "-k", "not command and not bad and not nettalk"]
G2P_METRICS = ["tests/test_g2p_metrics.py", "-k", "not command"]
RVIT = ["tests/test_rhmm_viterbi.py"]
BUNDLE_QP = ["tests/test_bundle.py", "-k", "active_set"]
SPLIT = ["tests/test_corpora_nettalk.py"]
RESTART = ["tests/test_bundle.py", "-k", "restart"]


@dataclass
class Mutation:
    id: str
    file: str
    original: str
    replacement: str
    tests: list = field(default_factory=list)
    why: str = ""


M = Mutation
MUTATIONS = [
    # --- the decoder (decoder/) -----------------------------------------------------
    M("fb-backward-starts-one-step-late", "rhmmtk/models/rhmm/decoder/gemm.py",
      "ending, cont = L == t + 1, L > t + 1", "ending, cont = L == t + 2, L > t + 2", FB,
      "beta initialised one position after the last"),
    M("fb-blocked-reuses-the-wrong-block", "rhmmtk/models/rhmm/decoder/blocked.py",
      "if (t0, t1) != blocks[-1]:", "if (t0, t1) != blocks[0]:", FB,
      "blocked schedule: the backward pass reuses the forward pass's products for a block "
      "other than the last one computed"),
    M("fb-sign-correction-dropped", "rhmmtk/models/rhmm/decoder/decoder.py",
      "post = mu * np.where(z < 0, -1.0, 1.0)", "post = mu", FB,
      "argmax of mu when the estimated p(x) is negative picks the worst label"),
    M("fb-backward-tensor-indices-swapped", "rhmmtk/models/rhmm/decoder/common.py",
      'np.einsum("kjl,kl->kj", y.reshape(-1, ma, ma), v)',
      'np.einsum("klj,kl->kj", y.reshape(-1, ma, ma), v)', FB,
      "backward contracts c^a_x with the alpha index of C^{b|a}"),
    M("fb-forward-tensor-indices-swapped", "rhmmtk/models/rhmm/decoder/common.py",
      "return (al[:, :, None] * v[:, None, :]).reshape(len(al), -1)",
      "return (v[:, :, None] * al[:, None, :]).reshape(len(al), -1)", FB,
      "forward contracts alpha with the emission index of C^{b|a}"),
    M("fb-stop-operator-transposed", "rhmmtk/models/rhmm/decoder/common.py",
      'return v @ s.T if self.form == "general" else v * s',
      'return v @ s if self.form == "general" else v * s', FB,
      "C^{*|a} applied transposed"),
    M("fb-loglik-scale-sign", "rhmmtk/models/rhmm/decoder/gemm.py",
      "np.log(np.where(total > 0, total, 1)) + logscale",
      "np.log(np.where(total > 0, total, 1)) - logscale", FB,
      "log p(x) with the rescaling constants subtracted"),
    M("fb-rescale-logs-dropped", "rhmmtk/models/rhmm/decoder/kernels.py",
      "    return np.log(s)\n", "    return 0 * np.log(s)\n", FB,
      "rescaling constants forgotten in the likelihood"),
    M("fb-dead-decoder", "rhmmtk/models/rhmm/decoder/kernels.py",
      "            oi[a] = s\n", "            oi[a] = 0 * s\n", FB,
      "all-zero marginals (normalised rows NaN)"),
    M("fb-beam-ignores-emission", "rhmmtk/models/rhmm/decoder/kernels.py",
      "mass[a] = s * enorm_x[a]", "mass[a] = s", FB,
      "beam mass without |c^a_x|"),
    M("fb-beam-relative-to-sum", "rhmmtk/models/rhmm/decoder/kernels.py",
      "keep_row[a] = mass[a] > beam * best or", "keep_row[a] = mass[a] > beam * mass.sum() or",
      FB,
      "beam threshold relative to the total, not the best label"),
    M("fb-beam-last-position-unpruned", "rhmmtk/models/rhmm/decoder/gemm.py",
      "kernels.keep_rows(alpha[T - 1], self.off, enorm, Xc[:, T - 1], float(self.beam),\n"
      "                          keep[T - 1])", "keep[T - 1] = True", FB,
      "the beam is not applied at the last position"),
    # --- the spectral estimator (spectral.py) ---------------------------------------
    M("sp-ridge-shift-not-tikhonov", "rhmmtk/models/rhmm/spectral.py",
      "return (vt.T * (sv / (sv * sv + t * t))) @ u.T, cond, False",
      "return (vt.T * (1 / (sv + t))) @ u.T, cond, False", ["tests/test_spectral_ridge.py"],
      "the ridge as 1/(s + t) instead of s/(s^2 + t^2)"),
    M("sp-ridge-absolute", "rhmmtk/models/rhmm/spectral.py",
      "t = ridge * sv[0]", "t = ridge", ["tests/test_spectral_ridge.py"],
      "the ridge not scaled by the largest singular value"),
    M("sp-ridge-transposed", "rhmmtk/models/rhmm/spectral.py",
      "return (vt.T * (sv / (sv * sv + t * t))) @ u.T, cond, False",
      "return (u * (sv / (sv * sv + t * t))) @ vt, cond, False", ["tests/test_spectral_ridge.py"],
      "the regularised inverse of S^T instead of S"),
    M("sp-ridge-lambda-unregularised", "rhmmtk/models/rhmm/spectral.py",
      "Linv, c2, bad2 = _guarded_inverse(Lam, max_cond, ridge)",
      "Linv, c2, bad2 = _guarded_inverse(Lam, max_cond)", ["tests/test_spectral_ridge.py"],
      "the ridge applied to Sigma only"),
    M("sp-ridge-sigma-unregularised", "rhmmtk/models/rhmm/spectral.py",
      "Sinv, c1, bad1 = _guarded_inverse(Sigma, max_cond, ridge)",
      "Sinv, c1, bad1 = _guarded_inverse(Sigma, max_cond)", ["tests/test_spectral_ridge.py"],
      "the ridge applied to Lambda only"),
    M("sp-ridge-api-dropped", "rhmmtk/models/rhmm/estimators.py",
      "svd.mean_direction,\n                      est.ridge)",
      "svd.mean_direction,\n                      0.0)", ["tests/test_spectral_ridge.py"],
      "the Python API records the ridge but does not estimate with it"),
    # the Python API (rhmmtk/estimator.py): one validation path with the commands, load,
    # the unknown-symbol policy, the frame checks
    M("api-hyperparameters-unchecked", "rhmmtk/estimator.py",
      "out[name] = check_value(types[key][1], value, name, types[key][0])",
      "out[name] = value", ["tests/test_estimator.py"],
      "hyperparameters reach the trainers without the command's checks"),
    M("api-load-forgets-hyperparameters", "rhmmtk/estimator.py",
      "return {k: _rebuilt(v) for k, v in recorded[\"params\"].items() if k in names}",
      "return {}", ["tests/test_estimator.py"],
      "load gives the default hyperparameters, not the recorded ones"),
    M("api-unknown-symbols-kept", "rhmmtk/estimator.py",
      "return [t if t in table else frequent for t in tokens]",
      "return list(tokens)", ["tests/test_estimator.py"],
      "unknown='frequent' does not replace unseen symbols"),
    M("api-frames-nan-unchecked", "rhmmtk/estimator_checks.py",
      "bad = ~np.isfinite(a).all(axis=1)",
      "bad = np.zeros(len(a), dtype=bool)", ["tests/test_estimator_frames.py"],
      "NaN frames reach the library (refused there without the frame's index)"),
    M("sp-smoothing-weight-linear", "rhmmtk/models/rhmm/spectral.py",
      "lam = np.sqrt(Nab) / (smooth + np.sqrt(Nab)) if smooth > 0 else 1.0",
      "lam = Nab / (smooth + Nab) if smooth > 0 else 1.0", SPEC,
      "lam = N/(C+N) instead of sqrt(N)/(C+sqrt(N))"),
    M("sp-smoothing-backoff-indices-swapped", "rhmmtk/models/rhmm/spectral.py",
      "backoff = (moments.B[(a, b)] / Na)[:, :, None] * rbar[None, None, :]",
      "backoff = (moments.B[(a, b)] / Na)[:, None, :] * rbar[None, :, None]", SPEC,
      "E[r|a] on the past index, E[f2 p^T] on the present one"),
    M("sp-emission-floor-uniform", "rhmmtk/models/rhmm/spectral.py",
      "scale = emission_floor * px", "scale = emission_floor * np.full(len(px), 1 / len(px))",
      SPEC, "floor with a uniform p(x)"),
    M("sp-emission-floor-no-lambda-inverse", "rhmmtk/models/rhmm/spectral.py",
      "g.append(dbar @ Linv)", "g.append(dbar)", SPEC,
      "the floor added as E[d|a], not E[d|a] Lambda^-1 (d-space, not c-space)"),
    M("sp-emission-floor-before-smoothing", "rhmmtk/models/rhmm/spectral.py",
      "lam_x = np.sqrt(nx) / (smooth_emission + np.sqrt(nx))",
      "lam_x = np.sqrt(nx) / (smooth_emission + np.sqrt(nx)); scale = scale * (nx > 0)", SPEC,
      "the old bug: emission smoothing scales the floor of unseen pairs away"),
    M("sp-emission-smoothing-weight", "rhmmtk/models/rhmm/spectral.py",
      "lam_x = np.sqrt(nx) / (smooth_emission + np.sqrt(nx))",
      "lam_x = nx / (smooth_emission + nx)", SPEC,
      "emission smoothing weight N/(C+N)"),
    M("sp-scaling-no-sqrt", "rhmmtk/models/rhmm/spectral_svd.py",
      "np.sqrt(Na / (omega.counts[a][v] + kappa))", "(Na / (omega.counts[a][v] + kappa))",
      SPEC, "feature scaling N/(c+kappa) without the square root"),
    M("sp-scaling-kappa-outside", "rhmmtk/models/rhmm/spectral_svd.py",
      "np.sqrt(Na / (omega.counts[a][v] + kappa))", "np.sqrt(Na / omega.counts[a][v] + kappa)",
      SPEC, "kappa added outside the ratio"),
    M("sp-scaling-not-folded-into-projections", "rhmmtk/models/rhmm/spectral_svd.py",
      'rows = {"future": w["future"][:, None] * U1[:, :k - lead]',
      'rows = {"future": U1[:, :k - lead]', SPEC,
      "future projections without the scaling weights"),
    # each view's weights where the code names the view (the projection rows), and on
    # each side of the two Omegas (rows: future, present; columns: past, destiny)
    M("sp-scaling-past-not-folded-into-projections", "rhmmtk/models/rhmm/spectral_svd.py",
      '"past": w["past"][:, None] * V1', '"past": V1', SPEC,
      "past projections without the scaling weights"),
    M("sp-scaling-present-not-folded-into-projections", "rhmmtk/models/rhmm/spectral_svd.py",
      '"present": w["present"][:, None] * U2', '"present": U2', SPEC,
      "present projections without the scaling weights"),
    M("sp-scaling-destiny-not-folded-into-projections", "rhmmtk/models/rhmm/spectral_svd.py",
      '"destiny": w["destiny"][:, None] * V2', '"destiny": V2', SPEC,
      "destiny projections without the scaling weights"),
    M("sp-scaling-rows-unscaled-before-the-svd", "rhmmtk/models/rhmm/spectral_svd.py",
      "om = (sp.diags(w[u]) @ C", "om = (C", SPEC,
      "Omega's rows (future, present features) not scaled before the SVD"),
    M("sp-scaling-columns-unscaled-before-the-svd", "rhmmtk/models/rhmm/spectral_svd.py",
      "C.astype(np.float64) @ sp.diags(w[v])", "C.astype(np.float64)", SPEC,
      "Omega's columns (past, destiny features) not scaled before the SVD"),
    M("sp-scaling-mean-rows-unscaled", "rhmmtk/models/rhmm/spectral_svd.py",
      "shift = ((w[u] * omega.counts[a][u] / Na,", "shift = ((omega.counts[a][u] / Na,", SPEC,
      "--mean-direction centres the scaled Omega with the unscaled row means"),
    M("sp-scaling-mean-columns-unscaled", "rhmmtk/models/rhmm/spectral_svd.py",
      "w[v] * omega.counts[a][v] / Na)", "omega.counts[a][v] / Na)", SPEC,
      "--mean-direction centres the scaled Omega with the unscaled column means"),
    M("sp-sigma-inverse-transposed", "rhmmtk/models/rhmm/spectral.py",
      'C = np.einsum("hjk,jJ->hJk", D, Sinv)', 'C = np.einsum("hjk,Jj->hJk", D, Sinv)', SPEC,
      "D Sigma^-T instead of D Sigma^-1"),
    M("sp-lambda-inverse-transposed", "rhmmtk/models/rhmm/spectral.py",
      "c = dx @ Linv", "c = dx @ Linv.T", SPEC,
      "d_x Lambda^-T"),
    M("sp-init-over-label-count", "rhmmtk/models/rhmm/spectral.py",
      "init.append(moments.init[a] / nseq)", "init.append(moments.init[a] / Na)", SPEC,
      "c^1_a divided by N_a instead of the number of sequences"),
    M("sp-init-at-last-positions", "rhmmtk/models/rhmm/spectral.py",
      "first[starts] = True", "first[ends] = True", SPEC,
      "initial-state moments from the last positions"),
    M("sp-skip-future-off-by-one", "rhmmtk/models/rhmm/spectral.py",
      "f2 = np.ones((grp.size, 1)) if b == l else f1[grp + 1, : m[b]]",
      "f2 = np.ones((grp.size, 1)) if b == l else f1[grp, : m[b]]", SPEC,
      "F2 at i taken at i instead of i+1"),
    M("sp-rank-cap-ignores-omega2", "rhmmtk/models/rhmm/spectral_svd.py",
      "k = max(1, min(m, lead + numerical_rank(s1, rank_tol), lead + numerical_rank(s2, rank_tol)))",
      "k = max(1, min(m, lead + numerical_rank(s1, rank_tol)))", SPEC,
      "m_a not capped at the rank of Omega2"),
    M("sp-accumulator-drops-a-block", "rhmmtk/models/rhmm/spectral.py",
      "parts = ([self.done] if self.done is not None else []) + self.pending",
      "parts = ([self.done] if self.done is not None else []) + self.pending[1:]",
      ["tests/test_spectral.py"], "a block of pass-1 counts lost when merging"),
    M("sp-est-skips-shards", "rhmmtk/models/rhmm/spectral_files.py",
      "mom = part if mom is None else mom.add(part)", "mom = part if mom is None else mom",
      ["tests/test_shards_spectral.py", "-k", "spectral_shards_equal"],
      "est-spectral sums only the first moments file"),
    # --- templates ------------------------------------------------------------------
    M("tpl-shift-off-by-one", "rhmmtk/models/rhmm/templates.py",
      "j = self.offset + k\n", "j = self.offset + k + 1\n", TPL,
      "x[k] / a[k] read one position too far right"),
    M("tpl-past-may-read-present", "rhmmtk/models/rhmm/templates.py",
      '(atom == "x" and k <= -1)', '(atom == "x" and k <= 0)', TPL,
      "the past view may read x_i (breaks the independence the estimator needs)"),
    M("tpl-until-off-by-one", "rhmmtk/models/rhmm/templates.py",
      "self.until = length_here - 1 - self.since", "self.until = length_here - self.since",
      TPL, "until counts the current position too"),
    M("tpl-past-may-read-until", "rhmmtk/models/rhmm/templates.py",
      '"pp", "runstart", "since")', '"pp", "runstart", "since", "until")', TPL,
      "the past view may read how long the run lasts (reads labels after i)"),
    M("svd-pool-workers-left-to-sigterm", "rhmmtk/models/rhmm/spectral_svd.py",
      "                pool.close()\n                pool.join()", "                pass",
      ["tests/test_faults.py", "-k", "svd_workers_exit"],
      "svd-spectral's pool stops its workers by SIGTERM (lost by a worker still starting)"),
    M("tpl-third-radix-too-small", "rhmmtk/models/rhmm/templates.py",
      "return self.third, 3", "return self.third, 2", TPL,
      "third's value count is 2: conjunctions with it collide"),
    # --- scoring and significance ------------------------------------------------------
    M("score-edit-distance-off-by-one", "tests/references.py",
      "diag = score[:-1] + np.where(match, 0, sub)",
      "diag = score[1:] + np.where(match, 0, sub)", SCORE,
      "diagonal move from the wrong column"),
    M("score-tie-prefers-insertion", "tests/references.py",
      "is_ins = ~is_diag & (horiz < vert)", "is_ins = ~is_diag & (horiz <= vert)", SCORE,
      "HResults' deletion-before-insertion tie order lost"),
    M("sig-p-value-reversed", "rhmmtk/significance.py",
      "np.abs(draws - diff) >= abs(diff)", "np.abs(draws - diff) <= abs(diff)", SIG,
      "bootstrap p-value counts the wrong tail"),
    M("sig-interval-quantiles", "rhmmtk/significance.py",
      "lo, hi = np.quantile(draws, [tail, 1.0 - tail])",
      "lo, hi = np.quantile(draws, [tail / 2, 1.0 - tail / 2])", SIG,
      "a 97.5% interval reported as 95%"),
    # --- EM (em.py) -----------------------------------------------------------------------
    M("em-mstep-normalised-over-next-state", "rhmmtk/models/rhmm/em.py",
      "tp = t / out[support.pairs[:, 0]][:, None, :]",
      "tp = t / out[support.pairs[:, 0]][:, :, None]", EM,
      "transitions normalised over the wrong hidden-state axis"),
    M("em-mstep-pi-per-label", "rhmmtk/models/rhmm/em.py",
      "return Iterate(pi / pi.sum(), em, tp, f / out, support.pairs)",
      "return Iterate(pi / pi.sum(axis=1, keepdims=True), em, tp, f / out, support.pairs)", EM,
      "pi(a, h) normalised within each label"),
    M("em-mstep-transition-totals-shifted", "rhmmtk/models/rhmm/em.py",
      "out[support.pair_from] +=", "out[: len(support.pair_from)] +=", EM,
      "the transition totals of labels after one without successors land on the wrong label"),
    M("em-estep-beta-wrong-emission", "tests/references.py",
      'np.einsum("bi,bij->bj", beta[:, t + 1] * em[:, t + 1], Tm[:, t])',
      'np.einsum("bi,bij->bj", beta[:, t + 1] * em[:, t], Tm[:, t])', EM,
      "backward pass multiplies by the emission of the wrong position"),
    M("em-estep-loglik-without-stop", "tests/references.py",
      "stats.loglik += float(np.log(c).sum() + np.log(z_end).sum())",
      "stats.loglik += float(np.log(c).sum())", EM,
      "log-likelihood without the stop probabilities"),
    M("em-estep-xi-alpha-shifted", "tests/references.py",
      "alpha[:, :-1, None, :]", "alpha[:, 1:, None, :]", EM,
      "expected transitions with alpha of the wrong position"),
    M("em-floor-doubled-on-transitions", "rhmmtk/models/rhmm/em.py",
      "t = stats.t + floor\n", "t = stats.t + 2 * floor\n", EM,
      "MAP pseudo-count on transitions differs from the prior the objective uses"),
    M("em-compact-default-dropped", "rhmmtk/models/rhmm/em.py",
      "o = np.where(allowed[:, :, None], self.default[:, None, :], 0.0)",
      "o = np.where(allowed[:, :, None], 0.0, 0.0)", EM,
      "pairs the corpus never visits lose their floor mass when the model is built"),
    M("em-compact-prior-without-defaults", "rhmmtk/models/rhmm/em.py",
      "others = self.layout.others\n", "others = 0 * self.layout.others\n", EM,
      "the objective's prior leaves out the unvisited pairs' logs"),
    M("sel-stalled-counts-the-best", "rhmmtk/selection.py",
      "for r in history[best + 1:]", "for r in history[best:]",
      ["tests/test_selection.py", "tests/test_em.py", "-k", "stalled or patience"],
      "early stopping counts the best evaluation as one without a gain"),
    M("mm-patience-off-by-one", "rhmmtk/models/maxmargin.py",
      "stalled(self.records, self.patience)", "stalled(self.records, self.patience + 1)",
      ["tests/test_maxmargin.py", "-k", "patience"],
      "max-margin runs one dev scoring more than --patience allows"),
    M("subpat-trigram-unread", "rhmmtk/models/subpat.py",
      "y, yp, clab[jj - 2, o])", "y, yp, clab[jj - 1, o])",
      ["tests/test_subpat.py", "-k", "brute_force"],
      "the sub-pattern Viterbi reads the wrong label as y_{i-2}"),
    M("subpat-average-off-by-one", "rhmmtk/models/subpat.py",
      "add_path(u, mask, keys, bounds, tlen, gold, lo, hi, L, c)",
      "add_path(u, mask, keys, bounds, tlen, gold, lo, hi, L, c + 1.0)",
      ["tests/test_subpat.py", "-k", "averaging"],
      "the lazy average weighs the gold side of an update by the next word's count"),
    M("subcrf-backward-drops-the-trigram", "rhmmtk/models/subpat_crf.py",
      "ss += np.exp(pair[jj, q, p] + triple[jj, q, p, o] + beta[jj, q, p] - mm)",
      "ss += np.exp(pair[jj, q, p] + beta[jj, q, p] - mm)",
      ["tests/test_subpat.py", "-k", "crf_log_z"],
      "the second-order CRF's backward pass sums without the label-trigram factor"),
    M("subcrf-gradient-gold-sign", "rhmmtk/models/subpat_crf.py",
      "add_path(g, mask, keys, bounds, tlen, gold, lo, hi, L, -step)",
      "add_path(g, mask, keys, bounds, tlen, gold, lo, hi, L, step)",
      ["tests/test_subpat.py", "-k", "finite_differences"],
      "the CRF gradient adds the gold features where it should subtract them"),
    M("subcrf-l2-shrink-dropped", "rhmmtk/models/subpat_crf.py",
      "new_scale = scale * (1.0 - eta * l2 / N)", "new_scale = scale",
      ["tests/test_subpat.py", "-k", "sgd_step"],
      "SGD never applies the L2 shrink (the lazy scale stays 1)"),
    M("rhmm-change-penalty-ignored", "rhmmtk/models/rhmm/viterbi.py",
      "jump = d[j] - penalty", "jump = d[j]",
      ["tests/test_rhmm_viterbi.py", "-k", "penalised"],
      "decode --change-penalty lets labels change for free (max-marginal decoding)"),
    M("rhmm-change-penalty-backtrace", "rhmmtk/models/rhmm/viterbi.py",
      "out[i - 1] = back[i, out[i]]", "out[i - 1] = out[i]",
      ["tests/test_rhmm_viterbi.py", "-k", "penalised"],
      "the change-penalty pass never follows its back-pointers"),
    M("mm-average-decay-ignored", "rhmmtk/models/maxmargin.py",
      "Ac += (Hc - Ac) / ((step + average_decay) / (average_decay + 1))",
      "Ac += (Hc - Ac) / step",
      ["tests/test_maxmargin.py", "-k", "average"],
      "--average-decay g keeps the plain mean of the iterates"),
    M("subcrf-average-scale-unfolded", "rhmmtk/models/subpat_crf.py",
      "                a /= scale", "                a /= 1.0",
      ["tests/test_subpat.py", "-k", "crf_averaging"],
      "the CRF's lazy average forgets to rescale its summed scales when the scale is folded"),
    M("hcrf-patience-off-by-one", "rhmmtk/models/hcrf/train.py",
      "if stalled(history, patience):",
      "if stalled(history, patience + 1):",
      ["tests/test_hcrf.py", "-k", "patience"],
      "RPROP runs one dev scoring more than --patience allows"),
    M("em-patience-off-by-one", "rhmmtk/models/rhmm/em.py",
      "elif stalled(history, patience):", "elif stalled(history, patience + 1):", EM,
      "EM runs one scored iteration more than --patience allows"),
    # --- EM's emission backoff (operators.py, em.py, decoder/) -----------------------
    M("backoff-not-normalised", "rhmmtk/models/rhmm/operators.py",
      "[(e + eps * px[:, None]) / (1 + eps) for e in self.emit]",
      "[e + eps * px[:, None] for e in self.emit]", ["tests/test_emission_backoff.py"],
      "the interpolated emissions no longer sum to one (likelihoods change, labels do not)"),
    M("decoder-ignores-backoff", "rhmmtk/models/rhmm/decoder/common.py",
      "self.emit = op.decoding_emit", "self.emit = op.emit", ["tests/test_emission_backoff.py"],
      "the decoder uses EM's raw emissions: --emission-floor does nothing"),
    M("est-em-drops-backoff", "rhmmtk/models/rhmm/em_files.py",
      "new.backoff = model.backoff", "new.backoff = None", ["tests/test_emission_backoff.py"],
      "sharded EM loses the backoff after the first M-step"),
    # --- the spectral emission floor's rank-one path (decoder/) -----------------------
    M("dec-floor-m-wrong-index", "rhmmtk/models/rhmm/decoder/common.py",
      'np.einsum("njk,k->jn"', 'np.einsum("nkj,k->jn"', FB + ["tests/test_spectral.py"],
      "M_a contracts g_a with the alpha index of C^{b|a}, not the c^a_x one"),
    M("dec-floor-backward-not-transposed", "rhmmtk/models/rhmm/decoder/gemm.py",
      "self._floor_z(beta[rows] @ Mf.T,", "self._floor_z(beta[rows] @ Mf,",
      FB + ["tests/test_spectral.py"], "the floor rows' backward step uses M, not M^T"),
    M("dec-floor-takes-seen-rows", "rhmmtk/models/rhmm/decoder/gemm.py",
      "                floor = full & ~self._floor.seen[:, xt].T\n                full &= ~floor\n"
      "                rows = np.flatnonzero(floor.any(axis=1))\n                if rows.size:\n"
      "                    nxt[rows]",
      "                floor = full.copy()\n                full &= ~floor\n"
      "                rows = np.flatnonzero(floor.any(axis=1))\n                if rows.size:\n"
      "                    nxt[rows]", FB + ["tests/test_spectral.py"],
      "forward: seen pairs too go through the floor's rank-one path"),
    M("dec-floor-blocked-unscaled", "rhmmtk/models/rhmm/decoder/blocked.py",
      "wscale[ts[fl], a] = self._floor.scale[xs[fl]]", "wscale[ts[fl], a] = 1.0",
      FB + ["tests/test_spectral.py"], "blocked schedule: C(scale g) taken as C(g)"),
    M("kern-backward-ignores-position-scale", "rhmmtk/models/rhmm/decoder/kernels.py",
      "nw[j] = y[j] * sc", "nw[j] = y[j]", FB + ["tests/test_spectral.py"],
      "compiled backward: a floor-only row's beta without its scale"),
    # --- the compiled kernels (kernels.py): what the decoder, E-step and scoring run ----
    M("kern-backward-general-tensor-indices-swapped", "rhmmtk/models/rhmm/decoder/kernels.py",
      "s += y[j * ma + k] * ex[k]", "s += y[k * ma + j] * ex[k]", FB,
      "compiled backward contracts c^a_x with the alpha index of C^{b|a}"),
    M("kern-backward-general-stop-transposed", "rhmmtk/models/rhmm/decoder/kernels.py",
      "s += stop[sp + j * ma + k] * E[xt, o + k]", "s += stop[sp + k * ma + j] * E[xt, o + k]",
      FB, "compiled C^{*|a} applied transposed"),
    M("kern-mu-wrong-position", "rhmmtk/models/rhmm/decoder/kernels.py",
      "s += new[j] * alpha[t, j]", "s += new[j] * alpha[t - 1, j]", FB,
      "compiled marginals pair beta_t with alpha_{t-1}"),
    M("kern-scatter-overwrites", "rhmmtk/models/rhmm/decoder/kernels.py",
      "d[c] += s[c]", "d[c] = s[c]", FB,
      "a label's products overwrite its successors' states instead of adding to them "
      "(gemm's scatter and the compiled forward share the loop)"),
    M("kern-gather-wrong-column", "rhmmtk/models/rhmm/decoder/kernels.py",
      "d[c] = s[c]", "d[c] = s[0]", FB,
      "the backward pass reads every state of a run of successors from its first one"),
    M("kern-keep-drops-the-best", "rhmmtk/models/rhmm/decoder/kernels.py",
      "keep_row[a] = mass[a] > beam * best or (mass[a] == best and best > 0.0)",
      "keep_row[a] = mass[a] > beam * best", FB + ["tests/test_faults.py", "-k", "keep or beam"],
      "the beam rule without its best label: --beam 1 extends nothing"),
    M("kern-label-sums-wrong-state", "rhmmtk/models/rhmm/decoder/kernels.py",
      "s += ui[j] * vi[j]", "s += ui[j] * vi[off[a]]", FB,
      "the gemm schedule's marginals pair every state of beta with alpha's first"),
    M("kern-rescale-rows-logs-dropped", "rhmmtk/models/rhmm/decoder/kernels.py",
      "logs[i] += _rescale_row(v[i])", "_rescale_row(v[i])", FB,
      "the gemm schedule's backward scales left out of the log-likelihood"),
    M("kern-extendable-stops-at-the-first-position", "rhmmtk/models/rhmm/decoder/kernels.py",
      "                    nxt[succ[k]] = True", "                    nxt[a] = True", FB,
      "blocked schedule: C(c) precomputed only for labels reachable in one step"),
    M("dec-blocked-one-c-for-all-observations", "rhmmtk/models/rhmm/decoder/blocked.py",
      "wptr[ts, a] = at + inv.reshape(-1) * size[a]", "wptr[ts, a] = at", FB,
      "blocked schedule: every position reads the first distinct observation's C(c)"),
    M("dec-diag-keep-mask-dropped", "rhmmtk/models/rhmm/decoder/gemm.py",
      "return self.E[self.Xc[rows, t]] * keep_t[rows][:, self.state_label]",
      "return self.E[self.Xc[rows, t]]", FB,
      "diagonal gemm: the labels the beam pruned are extended anyway"),
    M("dec-diag-stop-wrong-position", "rhmmtk/models/rhmm/decoder/gemm.py",
      "new[e] = diag.stop * diag.c(t, e, keep[t])",
      "new[e] = diag.stop * diag.c(t - 1, e, keep[t])", FB,
      "diagonal gemm: the last position's beta takes the previous emission"),
    M("dec-diag-backward-without-emission", "rhmmtk/models/rhmm/decoder/gemm.py",
      "new[run] = Y * diag.c(t, run, keep)", "new[run] = Y", FB,
      "diagonal gemm: beta_t without c^a_x"),
    M("dec-cc-rows-indices-swapped", "rhmmtk/models/rhmm/decoder/common.py",
      "rows = self.op.trans[(a, b)].reshape(mb * ma, ma)",
      "rows = self.op.trans[(a, b)].transpose(0, 2, 1).reshape(mb * ma, ma)", FB,
      "blocked schedule without the copy: C(c) contracts c with the alpha index"),
    M("kern-cc-copy-indices-swapped", "rhmmtk/models/rhmm/decoder/kernels.py",
      "                o[at + n] = src[n, j, k]", "                o[at + n] = src[n, k, j]", FB,
      "blocked schedule with the copy: C(c) contracts c with the alpha index"),
    M("kern-cached-floor-unscaled", "rhmmtk/models/rhmm/decoder/kernels.py",
      "        sc = fscale[xt[i]]\n        for j in range(ma):\n            Z[r, j]",
      "        sc = 1.0\n        for j in range(ma):\n            Z[r, j]", FB,
      "precomputed products: the floor rows' forward step forgets scale[x]"),
    M("kern-cached-bwd-floor-untransposed", "rhmmtk/models/rhmm/decoder/kernels.py",
      "reshape(ma, na).T)", "reshape(na, ma))", FB,
      "precomputed products: the floor rows' backward step multiplies by C(g_a), not its "
      "transpose"),
    M("kern-cached-seen-as-floor", "rhmmtk/models/rhmm/decoder/kernels.py",
      "        if p == fptr[a]:\n            floor[nf] = i",
      "        if p >= 0:\n            floor[nf] = i", FB,
      "precomputed products: every row uses the floor product"),
    M("kern-cached-dense-row-to-acc", "rhmmtk/models/rhmm/decoder/kernels.py",
      "_add_row_times_block(cur[i, o: o + ma], ma, buf, p, na, nxt[i])\n            continue",
      "_add_row_times_block(cur[i, o: o + ma], ma, buf, p, na, acc)\n            continue", FB,
      "precomputed products: a label whose successors are all states adds nothing"),
    M("kern-cached-bwd-skips-runs", "rhmmtk/models/rhmm/decoder/kernels.py",
      "        _read_runs(beta[i], st, ln, g)\n", "        g[:na] = beta[i, :na]\n", FB,
      "precomputed products: the backward step reads beta's first states, not the successors'"),
    M("dec-cached-own-ignores-cont", "rhmmtk/models/rhmm/decoder/products.py",
      "        own &= at_cont[None, :]\n", "", FB,
      "precomputed products also for observations seen only at a sequence's last "
      "position (wasted work and memory; the products are counted)"),
    M("dec-cached-builds-the-stack", "rhmmtk/models/rhmm/decoder/gemm.py",
      "W, koff = self._dense_ops() if cache is None else (None, None)",
      "W, koff = self._dense_ops()", FB,
      "precomputed products: the stacked operators (a copy of all of them) built anyway"),
    M("dec-groups-own-buffers", "rhmmtk/models/rhmm/decoder/decoder.py",
      "out.append(self._run(self._schedule(part, [np.arange(len(g))]), part, scratch))",
      "out.append(self._run(self._schedule(part, [np.arange(len(g))]), part, {}))", FB,
      "each group of a batch allocates its own products' buffer (fresh pages each time)"),
    M("dec-group-of-one-not-blocked", "rhmmtk/models/rhmm/decoder/decoder.py",
      "out.append(self._run(self._schedule(part, [np.arange(len(g))]), part, scratch))",
      "out.append(self._run(\"gemm\", part, scratch))", FB,
      "a group of one sequence takes the products (a Python step per position) instead "
      "of the blocked loops"),
    M("dec-groups-overlap", "rhmmtk/models/rhmm/decoder/products.py",
      "return np.split(np.arange(len(seqs)), ends[: nb - 1])",
      "return np.split(np.arange(len(seqs)), ends[: nb - 1] + 1)", FB,
      "product groups cut one sequence late (past the budget)"),
    M("kern-blocks-past-the-budget", "rhmmtk/models/rhmm/decoder/kernels.py",
      "if used > 0 and used + need > cap:", "if used > 0 and used > cap:", FB,
      "blocked schedule: a block grows past BLOCK_BYTES before it closes"),
    M("kern-blocks-no-sharing", "rhmmtk/models/rhmm/decoder/kernels.py",
      "                stamp[a, x] = nb\n", "                stamp[a, x] = -1\n", FB,
      "blocked schedule: repeated observations counted again (blocks too short)"),
    M("kern-em-beta-wrong-emission", "rhmmtk/models/rhmm/kernels_em.py",
      "v[g, i] = beta[t + 1, g, i] * em[t + 1, g, i] * r",
      "v[g, i] = beta[t + 1, g, i] * em[t, g, i] * r", EM,
      "compiled EM backward pass multiplies by the emission of the wrong position"),
    M("kern-em-xi-alpha-shifted", "rhmmtk/models/rhmm/kernels_em.py",
      "Xi[i, j] += p * alpha[t, g, j]", "Xi[i, j] += p * alpha[t + 1, g, j]", EM,
      "compiled expected transitions use alpha of the wrong position"),
    M("kern-em-lane-runs-past-its-end", "rhmmtk/models/rhmm/kernels_em.py",
      "if t >= lens[s0 + g] - 1:", "if t >= lens[s0 + g]:", EM,
      "lockstep E-step: a shorter sequence's backward pass runs over its last position "
      "(a transition into the next sequence)"),
    M("kern-em-steps-forward-wrong-emission", "rhmmtk/models/rhmm/kernels_em_steps.py",
      "x3 = (P[3, 0] * a0 + P[3, 1] * a1 + P[3, 2] * a2 + P[3, 3] * a3) * emt[3]",
      "x3 = (P[3, 0] * a0 + P[3, 1] * a1 + P[3, 2] * a2 + P[3, 3] * a3) * emt[2]", EM_STEPS,
      "written-out forward step (m = 4) weights its last state by another state's emission"),
    M("kern-em-steps-xi-alpha-shifted", "rhmmtk/models/rhmm/kernels_em_steps.py",
      "Xi[3, 2] + p3_2 * a2", "Xi[3, 2] + p3_2 * a3", EM_STEPS,
      "written-out backward step (m = 4) takes alpha of the wrong state for one expected "
      "transition"),
    M("kern-em-steps-hash-not-in-the-cache-key", "rhmmtk/models/rhmm/kernels_em.py",
      "    steps_hash = _STEPS_HASH\n", "    steps_hash = 1\n",
      ["tests/test_kernels.py", "-k", "hidden_by"],
      "numba's disk cache serves the E-step compiled with the old written-out steps after "
      "kernels_em_steps.py changes"),
    M("kern-em-normalise-wrong-label", "rhmmtk/models/rhmm/kernels_em.py",
      "values[r, h] *= inv[label[r], h]", "values[r, h] *= inv[label[0], h]", EM,
      "emission M-step divides every row by the first label's total"),
    M("kern-edit-diagonal-wrong-column", "rhmmtk/edit_distance.py",
      "diag, dh = score[j - 1] + sub, hs[j - 1] + one_sub",
      "diag, dh = score[j] + sub, hs[j] + one_sub", SCORE,
      "compiled edit distance: substitution from the wrong column"),
    # --- HCRFs (rhmmtk/models/hcrf): lattice kernel, gradient, spline basis --------------
    M("hcrf-backward-wrong-frame-emission", "rhmmtk/models/hcrf/lattice.py",
      "eb[n, c] = ex[t + 1, n, c] * beta[t + 1, n, c] / lsc[t + 1, c]",
      "eb[n, c] = ex[t, n, c] * beta[t + 1, n, c] / lsc[t + 1, c]", HCRF,
      "backward pass multiplies by the emission of the wrong frame"),
    M("hcrf-gradient-sign-of-expectation", "rhmmtk/models/hcrf/lattice.py",
      "w = (1.0 if c == y[b] else 0.0) - k[c] / s", "w = (1.0 if c == y[b] else 0.0) + k[c] / s",
      HCRF, "expected counts added instead of subtracted"),
    # --- G2P (rhmmtk/g2p): the aligner's lattices and EM, PER ----------------------------
    M("g2p-backward-wrong-chunk", "rhmmtk/g2p/align.py",
      "beta[src[e]] += p[chunk[e]] * beta[dst[e]]", "beta[src[e]] += beta[dst[e]]",
      G2P_ALIGN, "backward pass without the chunk pair's probability"),
    M("g2p-counts-unnormalised", "rhmmtk/g2p/align.py",
      "counts[chunk[e]] += alpha[src[e]] * p[chunk[e]] * beta[dst[e]] / z",
      "counts[chunk[e]] += alpha[src[e]] * p[chunk[e]] * beta[dst[e]]", G2P_ALIGN,
      "expected counts not divided by p(entry): long words weigh less"),
    M("g2p-silent-chunk-of-two-letters", "rhmmtk/g2p/align.py",
      "return [(1, 0)] + [(i, j)", "return [(1, 0), (2, 0)] + [(i, j)", G2P_ALIGN,
      "two letters may go silent as one chunk: the lattice differs from the documented one"),
    M("g2p-per-compounds-not-split", "rhmmtk/g2p/labels.py",
      "out.extend(lab.split(JOIN))", "out.append(lab)", G2P_METRICS,
      "a compound label counts as one phoneme"),
    M("g2p-nbest-log-partition-without-emission", "rhmmtk/kbest.py",
      "alpha = logsumexp(alpha[:, None] + trans, axis=0) + emit[t]",
      "alpha = logsumexp(alpha[:, None] + trans, axis=0)",
      ["tests/test_g2p_pronounce.py", "-k", "brute_force"],
      "the CRF's n-best scores normalised by a partition function missing later letters"),
    M("hcrf-spline-not-natural", "rhmmtk/models/hcrf/spline.py",
      'bc_type="natural"', 'bc_type="not-a-knot"', HCRF,
      "the paper's natural boundary condition replaced"),
    # --- shard sums: acc-* statistics of --job K/N shards added by svd-/est-/init-* -------
    # (one process adds no shards: these change only the sharded result)
    M("shard-split-overlaps", "rhmmtk/jobs.py",
      "self.index * count // self.total\n", "self.index * count // self.total + 1\n",
      ["tests/test_jobs.py", "-k", "partitions"],
      "each --job shard also takes the next shard's first utterance (counted twice)"),
    M("shard-check-accepts-a-file-twice", "rhmmtk/io/stats.py",
      "if key in seen:", "if False:", SHARDS_SP,
      "a statistics file (the same shard) given twice is summed twice"),
    M("shard-check-accepts-a-missing-shard", "rhmmtk/io/stats.py",
      "missing = sorted(set(range(1, n + 1)) - set(got))", "missing = []", SHARDS_SP,
      "a failed accumulation job's shard missing from the sum goes unnoticed"),
    M("shard-check-accepts-mixed-splits", "rhmmtk/io/stats.py",
      "if len(totals) > 1:", "if False:", SHARDS_SP,
      "shards of a 2-way and a 3-way split summed (utterances dropped or counted twice)"),
    M("shard-check-positions-of-the-last-file", "rhmmtk/io/stats.py",
      "positions += s.positions", "positions = s.positions", SHARDS_SP,
      "the recorded training positions are the last shard's, not the sum"),
    M("shard-svd-sums-the-last-file-twice", "rhmmtk/models/rhmm/spectral_files.py",
      "            acc.add(OmegaStats.from_file(sf, len(tables[0])))\n",
      "            acc.add(OmegaStats.from_file(sf, len(tables[0])))\n"
      "            if p == paths[-1]:\n"
      "                acc.add(OmegaStats.from_file(sf, len(tables[0])))\n", SHARDS_SP,
      "svd-spectral adds the last pass-1 shard twice"),
    M("shard-omega-label-counts-of-the-last-shard", "rhmmtk/models/rhmm/spectral.py",
      "out.n += p.n", "out.n = p.n.copy()", SHARDS_SP,
      "N_a (the scaling's and the projections' label counts) from the last shard only"),
    M("shard-omega-feature-counts-of-the-last-shard", "rhmmtk/models/rhmm/spectral.py",
      "c[mp] += p.counts[a][v]", "c[mp] = p.counts[a][v]", SHARDS_SP,
      "count_a(f) of a feature seen in several shards is the last shard's (wrong scaling)"),
    M("shard-omega-drops-the-first-shard", "rhmmtk/models/rhmm/spectral.py",
      "for i, p in enumerate(have):", "for i, p in list(enumerate(have))[1:]:", SHARDS_SP,
      "Omega's co-occurrence counts of the first shard lost in the sum"),
    M("shard-est-sums-a-file-twice", "rhmmtk/models/rhmm/spectral_files.py",
      "mom = part if mom is None else mom.add(part)",
      "mom = part if mom is None else mom.add(part).add(part)", SHARDS_SP,
      "est-spectral adds every pass-2 shard after the first twice"),
    M("shard-moments-of-the-last-shard", "rhmmtk/models/rhmm/spectral.py",
      "getattr(self, name)[a] += getattr(other, name)[a]",
      "getattr(self, name)[a][...] = getattr(other, name)[a]", SHARDS_SP,
      "Sigma, Lambda, E[r], E[d], init, d_x summed as the last shard's"),
    M("shard-moments-tensor-of-the-last-shard", "rhmmtk/models/rhmm/spectral.py",
      "self.D[key] += D", "self.D[key] = D.copy()", SHARDS_SP,
      "D^{b|a} of a pair seen in several shards is the last shard's"),
    M("shard-moments-pair-counts-of-the-last-shard", "rhmmtk/models/rhmm/spectral.py",
      "self.nab += other.nab", "self.nab = other.nab.copy()", SHARDS_SP,
      "N_ab (smoothing weights, stop counts) from the last shard only"),
    M("shard-moments-observation-counts-dropped", "rhmmtk/models/rhmm/spectral.py",
      "self.nx += other.nx", "self.nx += 0", SHARDS_SP,
      "N_ax (the emission floor's p(x)) of every shard after the first lost"),
    M("shard-moments-sequences-of-the-last-shard", "rhmmtk/models/rhmm/spectral.py",
      "self.nseq += other.nseq", "self.nseq = other.nseq", SHARDS_SP,
      "the initial-state operator divided by the last shard's number of sequences"),
    M("shard-em-stats-of-the-last-shard", "rhmmtk/models/rhmm/em.py",
      "mine += theirs", "mine[...] = theirs", SHARDS_EM,
      "est-em's expected counts are the last shard's"),
    M("shard-em-loglik-of-the-last-shard", "rhmmtk/models/rhmm/em.py",
      "self.loglik += other.loglik", "self.loglik = other.loglik", SHARDS_EM,
      "the recorded training log-likelihood (and objective) is the last shard's"),
    M("shard-em-est-drops-the-first-file", "rhmmtk/models/rhmm/em_files.py",
      'for p in progress(paths, desc="sum", unit="file"):',
      'for p in progress(paths[1:], desc="sum", unit="file"):', SHARDS_EM,
      "est-em sums every E-step shard but the first"),
    M("shard-em-counts-of-the-last-shard", "rhmmtk/models/rhmm/em.py",
      "getattr(self, name).__iadd__(getattr(other, name))",
      "getattr(self, name)[...] = getattr(other, name)", SHARDS_EM,
      "init-em's label counts (support and initial model) are the last shard's"),
    M("shard-em-counts-positions-of-the-last-shard", "rhmmtk/models/rhmm/em.py",
      "self.utts += other.utts\n        self.positions += other.positions",
      "self.utts += other.utts\n        self.positions = other.positions", SHARDS_EM,
      "init-em records the last shard's positions (p(x) of the backoff, est-em's check)"),
    M("shard-em-init-sums-the-last-file-twice", "rhmmtk/models/rhmm/em_files.py",
      "for p in paths:", "for p in paths + paths[-1:]:", SHARDS_EM,
      "init-em adds the last counts shard twice"),
    # --- clean-up paths of the one writer (rhmmtk/io/output.py) ---------------------------
    M("writer-error-keeps-the-temporary", "rhmmtk/io/output.py",
      "    except BaseException:\n        _remove(tmp)\n        raise",
      "    except BaseException:\n        raise", CLEANUP,
      "an output failing mid-write leaves its temporary behind"),
    M("writer-abort-keeps-staged-temporaries", "rhmmtk/io/output.py",
      "            _remove(tmp)\n        self.staged = []",
      "            pass\n        self.staged = []", CLEANUP,
      "a failed command leaves the temporaries of its outputs already complete"),
    M("writer-transaction-error-skips-abort", "rhmmtk/io/output.py",
      "        tx.abort()\n        raise", "        raise", CLEANUP,
      "an error after an output was staged leaves it behind (never aborted)"),
    M("writer-rename-skipped", "rhmmtk/io/output.py",
      "                        os.replace(tmp, t.real)\n", "", CLEANUP,
      "commit never renames: outputs stay hidden temporaries"),
    M("writer-failed-rename-leaves-temporaries", "rhmmtk/io/output.py",
      "self.staged = self.staged[i:]\n                    self.abort()",
      "self.staged = self.staged[i:]", CLEANUP,
      "a rename that fails leaves the temporaries of the outputs not yet renamed"),
    M("writer-failed-rename-keeps-its-temporary", "rhmmtk/io/output.py",
      "self.staged = self.staged[i:]", "self.staged = self.staged[i + 1:]", CLEANUP,
      "a rename that fails leaves its own temporary behind"),
    M("writer-signal-leaves-temporaries", "rhmmtk/io/output.py",
      "        remove_temporaries()\n        name = signal.Signals(signum).name",
      "        name = signal.Signals(signum).name", CLEANUP,
      "SIGINT/SIGTERM/SIGHUP mid-write leave the half-written temporary"),
    M("writer-probe-leaves-its-temporary", "rhmmtk/io/output.py",
      "        os.close(fd)\n        _remove(tmp)\n", "        os.close(fd)\n", CLEANUP,
      "the writability probe of every output leaves an empty temporary behind"),
    M("writer-hdf5-error-never-raised", "rhmmtk/io/output.py",
      "            guard.finish()\n", "", CLEANUP,
      "an HDF5 write error recorded but not raised: a half-written model is renamed on"),
    M("writer-hdf5-write-error-ignored", "rhmmtk/io/output.py",
      "            except OSError as e:\n                self._fail(e)\n        if self.error",
      "            except OSError as e:\n                pass\n        if self.error", CLEANUP,
      "HDF5 bulk writes that fail are dropped silently: a half-written archive"),
    M("writer-text-write-error-ignored", "rhmmtk/io/output.py",
      "            return os.write(self.fd, b)\n        except OSError as e:\n"
      "            raise OutputError(f\"cannot write: {os_reason(e)}\", self.path) from None",
      "            return os.write(self.fd, b)\n        except OSError as e:\n"
      "            return len(b)", CLEANUP,
      "text writes that fail are dropped silently: a half-written text output"),
    M("writer-text-fsync-skipped", "rhmmtk/io/output.py",
      "        if sync:\n            raw.finish()", "        if False:\n            raw.finish()",
      CLEANUP, "text outputs renamed on without fsync: a full disk reported at fsync is lost"),
    # --- Kaldi and HTK specifiers (rhmmtk/io/specifiers.py, htk.py, labels.py) ------------
    M("spec-scp-offset-off-by-one", "rhmmtk/io/specifiers.py",
      'self.sf.write(f"{key} {self.out.ark}:{self.pos + len(head)}\\n")',
      'self.sf.write(f"{key} {self.out.ark}:{self.pos + len(head) - 1}\\n")', SPECIFIERS,
      "ark,scp: offsets point at the space before each value"),
    M("spec-scp-paths-not-swapped", "rhmmtk/io/specifiers.py",
      "(parts if first_ark else parts[::-1])", "parts", SPECIFIERS,
      "scp,ark:S,A writes the archive into the script file's name"),
    M("spec-unknown-form-taken-as-a-file", "rhmmtk/io/specifiers.py",
      '    if not set(words) & {"ark", "scp", "htk", "mlf"}:\n        return None',
      '    if True:\n        return None', SPECIFIERS,
      "every specifier is a plain file name again: a file named `ark:-`"),
    M("spec-binary-alignment-output-allowed", "rhmmtk/io/specifiers.py",
      'if kind == "alignment" and not text:', 'if False:', SPECIFIERS,
      "decode's symbols written as a `binary` archive that holds text"),
    M("spec-matrix-dims-swapped", "rhmmtk/io/specifiers.py",
      "    rows, cols = x.shape\n", "    cols, rows = x.shape\n", SPECIFIERS,
      "the binary matrix header gives columns for rows"),
    M("spec-int-vector-size-dropped", "rhmmtk/io/specifiers.py",
      'return b"\\0B\\4" + np.int32(len(v))', 'return b"\\0B\\4" + np.int32(0)', SPECIFIERS,
      "integer vectors written with size 0"),
    M("spec-failed-output-command-ignored", "rhmmtk/io/specifiers.py",
      "        if code != 0:\n            raise InputError(f\"output command failed",
      "        if False:\n            raise InputError(f\"output command failed", SPECIFIERS,
      "`ark:| CMD` that fails is a success"),
    M("spec-wave-offset-unchecked", "rhmmtk/io/specifiers.py",
      "    if offset >= size:", "    if False:", SPECIFIERS,
      "a wave-archive offset past the end is read as whatever kaldiio makes of it"),
    M("spec-stdout-closed-exits-1", "rhmmtk/cli/common.py",
      "                raise StdoutClosed() from None", "                raise", SPECIFIERS,
      "`rhmmtk decode ... - | head` exits 1 with click's handler, not 141"),
    M("htk-kind-not-carried", "rhmmtk/io/features.py",
      "self.kind = USER if parm_kind is None else kind_code(parm_kind, uncompressed=True)",
      "self.kind = USER", HTK_IO, "HTK output always USER, whatever the input's kind"),
    M("htk-little-endian-not-tried", "rhmmtk/io/htk.py",
      'for order in (">", "<"):', 'for order in (">",):', HTK_IO,
      "little-endian parameter files refused"),
    M("mlf-shortest-pattern-wins", "rhmmtk/io/labels.py",
      "return max(fits, key=len)", "return min(fits, key=len)", HTK_IO,
      "a file takes the most general MLF pattern, not the longest that fits"),
    M("mlf-ids-by-base-name-only", "rhmmtk/io/htk.py",
      "if all(depth[i] >= len(parts[i]) for i in g):", "if True:", HTK_IO,
      "TIMIT's */FESZ1/SA1.lab and */FMLP0/SA1.lab are one utterance again"),
    # --- the bundle's dual QP (bundle.py) and the NETtalk split's record --------------
    M("qp-most-negative-multiplier-skipped", "rhmmtk/bundle.py",
      "        if nu[j] >= -tol * max(1.0, abs(mu)):", "        if True:", BUNDLE_QP,
      "the active set stops at the first equality-constrained point, bounds unchecked"),
    M("qp-blocking-bound-stays-free", "rhmmtk/bundle.py",
      "            free &= x > 0 ", "            free &= True ", BUNDLE_QP,
      "the bound that stopped the step stays in the free set: the method cycles"),
    M("qp-multiplier-sign-flipped", "rhmmtk/bundle.py",
      "        kkt[:n, n] = -1.0", "        kkt[:n, n] = 1.0", BUNDLE_QP,
      "the simplex constraint's multiplier enters with the wrong sign"),
    M("restart-keeps-old-planes", "rhmmtk/bundle.py",
      "        self._empty_model()\n        self.u = self.best_u.copy()",
      "        self.u = self.best_u.copy()", RESTART,
      "a restart keeps the old model's planes and dual point: it closes again at once"),
    M("restart-gain-unchecked", "rhmmtk/bundle.py",
      "        return began - self.best_f > self.tol * abs(self.best_f)",
      "        return True", RESTART,
      "restarts go on after a model that gained nothing, until none are left"),
    M("split-record-never-compared", "rhmmtk/corpora/nettalk.py",
      "            if f.read() != record:", "            if False:", SPLIT,
      "a data/ made with another seed or sizes is kept (run_competitors.sh's old bug)"),
    # --- the R-HMM's refined-state Viterbi (models/rhmm/viterbi.py) --------------------
    M("rvit-stop-weights-ignored", "rhmmtk/models/rhmm/viterbi.py",
      "v = delta[s] + log_stop[s]", "v = delta[s]", RVIT,
      "the best path ends anywhere, whatever C^{*|a}"),
    M("rvit-transition-transposed", "rhmmtk/models/rhmm/viterbi.py",
      "trans[off[b]:off[b + 1], off[a]:off[a + 1]] = T",
      "trans[off[b]:off[b + 1], off[a]:off[a + 1]] = T.T if T.shape[0] == T.shape[1] else T",
      RVIT, "T^{b|a}[h', h] read as [h, h'] (square blocks)"),
    M("rvit-pairs-reversed", "rhmmtk/models/rhmm/viterbi.py",
      "pairs = sorted((b, a) for a, b in op.trans)", "pairs = sorted((a, b) for a, b in op.trans)",
      RVIT, "label b's predecessors taken as its successors"),
    M("rvit-backtrace-off-by-one", "rhmmtk/models/rhmm/viterbi.py",
      "            path[s0 + t - 1] = arg", "            path[s0 + t] = arg", RVIT,
      "the backtrace writes each state one position late"),
]


def check_list(root=REPO):
    """Problems with the list against the source: each original must occur exactly once
    and differ from its replacement; ids unique; test files exist."""
    problems = []
    ids = [m.id for m in MUTATIONS]
    if len(set(ids)) != len(ids):
        problems.append("duplicate mutation ids")
    for m in MUTATIONS:
        path = os.path.join(root, m.file)
        if not os.path.exists(path):
            problems.append(f"{m.id}: {m.file} does not exist")
            continue
        n = open(path).read().count(m.original)
        if n != 1:
            problems.append(f"{m.id}: original snippet occurs {n} times in {m.file}")
        if m.original == m.replacement:
            problems.append(f"{m.id}: replacement equals the original")
        for t in m.tests:
            if t.startswith("tests/") and not os.path.exists(os.path.join(root, t.split("::")[0])):
                problems.append(f"{m.id}: test file {t} does not exist")
    return problems


def _copy_tree(dst, tests_rev=None):
    ignore = shutil.ignore_patterns(".git", "__pycache__", ".pytest_cache", "*.egg-info")
    shutil.copytree(REPO, dst, ignore=ignore)
    if tests_rev:
        shutil.rmtree(os.path.join(dst, "tests"))
        archive = subprocess.run(["git", "-C", REPO, "archive", tests_rev, "tests"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", dst], input=archive, check=True)


def _selection(tests, root):
    """The pytest arguments, without test files missing from `root` (old revisions)."""
    out, files = [], 0
    for t in tests:
        if t.startswith("tests/"):
            if not os.path.exists(os.path.join(root, t.split("::")[0])):
                continue
            files += 1
        out.append(t)
    return out if files else None


def _pytest(root, args, timeout):
    env = dict(os.environ, PYTHONPATH=root, PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-rfE", "-p", "no:cacheprovider", *args]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True,
                           timeout=timeout)
        lines = (p.stdout + p.stderr).strip().splitlines()
        # the test that killed the mutant (pytest -q's summary), else the last line
        failed = [ln.split(" - ")[0] for ln in lines if ln.startswith(("FAILED ", "ERROR "))]
        rc, tail = p.returncode, failed[:1] or lines[-1:]
    except subprocess.TimeoutExpired:
        rc, tail = "timeout", ["timeout"]
    return rc, time.time() - t0, tail[0] if tail else ""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", dest="pattern", help="only mutations whose id contains this")
    ap.add_argument("--list", action="store_true", help="print the list and exit")
    ap.add_argument("--tests-rev", help="use tests/ of this git revision")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per test run")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--no-baseline", action="store_true")
    args = ap.parse_args(argv)
    problems = check_list()
    if problems:
        print("the mutation list does not apply to the source:", *problems, sep="\n  ")
        return 2
    todo = [m for m in MUTATIONS if not args.pattern or args.pattern in m.id]
    if args.list:
        for m in todo:
            print(f"{m.id:42s} {m.file:28s} {m.why}")
        return 0
    work = tempfile.mkdtemp(prefix="rhmmtk-mut-")
    results = []
    try:
        clean = os.path.join(work, "clean")
        _copy_tree(clean, args.tests_rev)
        if not args.no_baseline:
            for sel in sorted({tuple(m.tests) for m in todo}):
                s = _selection(sel, clean)
                if s is None:
                    continue
                rc, secs, tail = _pytest(clean, s, args.timeout)
                print(f"baseline {' '.join(s)}: {'ok' if rc == 0 else 'FAILS'} ({secs:.0f} s)",
                      flush=True)
                if rc != 0:
                    print(f"  the unmutated tests fail ({tail}): fix them first")
                    return 2
        for m in todo:
            root = os.path.join(work, m.id)
            shutil.copytree(clean, root)
            path = os.path.join(root, m.file)
            src = open(path).read()
            with open(path, "w") as f:
                f.write(src.replace(m.original, m.replacement, 1))
            sel = _selection(m.tests, root)
            if sel is None:
                status, secs, tail = "survived", 0.0, "no test file of the selection exists"
            else:
                rc, secs, tail = _pytest(root, sel, args.timeout)
                status = "survived" if rc == 0 else "killed"
            results.append({"id": m.id, "status": status, "seconds": round(secs, 1),
                            "tests": " ".join(m.tests), "detail": tail, "why": m.why})
            print(f"{status:8s} {m.id:42s} {secs:6.0f} s  {tail}", flush=True)
            shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    killed = sum(r["status"] == "killed" for r in results)
    rate = killed / len(results) if results else 0.0
    print(f"\nkilled {killed} of {len(results)} mutations: {100 * rate:.1f}%"
          + (f" (tests of {args.tests_rev})" if args.tests_rev else ""))
    for r in results:
        if r["status"] != "killed":
            print(f"  SURVIVED {r['id']}: {r['why']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"tests_rev": args.tests_rev, "killed": killed, "total": len(results),
                       "results": results}, f, indent=1)
    return 0 if rate >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
