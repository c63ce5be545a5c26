"""Paired bootstrap and sign test between two systems; `rhmmtk compare`."""
import json
import re

import numpy as np
import pytest

from cli_helpers import fails, run
from rhmmtk import significance
from rhmmtk.significance import paired_bootstrap, sign_test


def noisy(ref, error_rate, rng, labels=8):
    """A copy of integer labels `ref` with about `error_rate` of positions changed."""
    flip = rng.random(ref.shape) < error_rate
    return np.where(flip, (ref + rng.integers(1, labels, ref.shape)) % labels, ref)


def systems(rng, n_utt=80, length=25, err_a=0.1, err_b=0.3):
    """Per-utterance correct counts of two systems on a shared random reference."""
    ref = rng.integers(0, 8, (n_utt, length))
    a, b = noisy(ref, err_a, rng), noisy(ref, err_b, rng)
    return (a == ref).sum(1), (b == ref).sum(1), np.full(n_utt, length)


def test_identical_systems(rng):
    ca, _, n = systems(rng)
    bs = paired_bootstrap(ca, ca, n, resamples=2000, seed=1)
    assert bs.difference == 0.0 and bs.p_value > 0.4 and bs.p_value == 1.0
    assert bs.ci_low == bs.ci_high == 0.0
    st = sign_test(ca, ca)
    assert (st.a_better, st.b_better, st.ties) == (0, 0, len(ca)) and st.p_value == 1.0


def test_equally_good_systems_are_not_significant(rng):
    # different errors, same total: each utterance one wins, a mirror utterance the other
    ca, cb, n = systems(rng, n_utt=40, err_a=0.2, err_b=0.2)
    ca, cb, n = np.r_[ca, cb], np.r_[cb, ca], np.r_[n, n]
    bs = paired_bootstrap(ca, cb, n, resamples=2000, seed=3)
    # d = 0 exactly: every resample is at least as far from d as d is from 0, so p = 1
    assert bs.difference == 0.0 and bs.p_value == 1.0
    assert bs.ci_low < 0 < bs.ci_high
    st = sign_test(ca, cb)
    # a perfectly even split: the two-sided binomial p-value is exactly 1
    assert st.a_better == st.b_better > 0 and st.p_value == pytest.approx(1.0, abs=1e-12)


def test_clearly_better_system(rng):
    ca, cb, n = systems(rng, err_a=0.1, err_b=0.3)
    bs = paired_bootstrap(ca, cb, n, resamples=10_000, seed=0)
    assert bs.difference == pytest.approx(100.0 * (ca.sum() - cb.sum()) / n.sum())
    assert 10 < bs.difference < 30
    assert bs.p_value < 0.01 and bs.p_value == pytest.approx(1 / 10_001)
    assert 0 < bs.ci_low < bs.difference < bs.ci_high
    st = sign_test(ca, cb)
    assert st.a_better > 60 and st.p_value < 0.01
    # the other way round: the same draws, so everything mirrors exactly
    rev = paired_bootstrap(cb, ca, n, resamples=10_000, seed=0)
    assert rev.difference == -bs.difference and rev.p_value == bs.p_value
    assert (rev.ci_low, rev.ci_high) == pytest.approx((-bs.ci_high, -bs.ci_low))


def test_bootstrap_is_reproducible_and_blockwise(rng, monkeypatch):
    ca, cb, n = systems(rng, err_a=0.25, err_b=0.28)
    one = paired_bootstrap(ca, cb, n, resamples=3000, seed=7)
    assert paired_bootstrap(ca, cb, n, resamples=3000, seed=7) == one
    assert paired_bootstrap(ca, cb, n, resamples=3000, seed=8) != one
    # small blocks (as for a large test set) give the same distribution
    monkeypatch.setattr(significance, "_DRAWS_PER_BLOCK", 1000)
    blocked = paired_bootstrap(ca, cb, n, resamples=3000, seed=7)
    assert blocked.difference == one.difference
    assert blocked.p_value == pytest.approx(one.p_value, abs=0.05)
    assert blocked.ci_low == pytest.approx(one.ci_low, abs=0.3)


def test_bootstrap_interval_matches_normal_theory(rng):
    # many utterances: the bootstrap standard error approaches the delta-method one
    ca, cb, n = systems(rng, n_utt=400, err_a=0.2, err_b=0.22)
    bs = paired_bootstrap(ca, cb, n, resamples=4000, seed=0)
    d = (ca - cb) / n  # per-utterance differences (equal lengths: a plain mean)
    se = 100 * d.std(ddof=0) / np.sqrt(len(d))
    assert (bs.ci_high - bs.ci_low) / (2 * 1.96) == pytest.approx(se, rel=0.1)


def test_sign_test_hand_worked():
    a = np.array([5] * 9 + [1] + [3] * 4)
    b = np.array([1] * 9 + [5] + [3] * 4)
    st = sign_test(a, b)
    assert (st.a_better, st.b_better, st.ties) == (9, 1, 4)
    assert st.p_value == pytest.approx(22 / 1024)  # 2 * P(X >= 9), X ~ Bin(10, 1/2)


def test_compare_library_pairs_by_key():
    ref = {"u1": list("aabb"), "u2": list("ccdd")}
    a = {"u2": list("ccdd"), "u1": list("aabb")}
    b = {"u1": list("abbb"), "u2": list("cddd")}
    c = significance.compare(ref, a, b, resamples=500)
    assert c.keys == ["u1", "u2"] and c.positions == 8
    assert (c.accuracy_a, c.accuracy_b) == (100.0, 75.0)
    assert c.bootstrap.difference == 25.0
    assert (c.sign.a_better, c.sign.b_better) == (2, 0)


# --- the command line ---------------------------------------------------------------

def write_system(path, keys, rows):
    path.write_text("".join(f"{k} " + " ".join(f"s{x}" for x in r) + "\n" for k, r in zip(keys, rows)))
    return path


def test_cli_compare(tmp_path, rng):
    ref = rng.integers(0, 8, (60, 20))
    keys = [f"utt{i:03d}" for i in range(60)]
    ref_f = write_system(tmp_path / "ref.txt", keys, ref)
    a_f = write_system(tmp_path / "a.txt", keys[::-1], noisy(ref, 0.1, rng)[::-1])  # other order
    b_f = write_system(tmp_path / "b.txt", keys, noisy(ref, 0.3, rng))
    data = json.loads(run("compare", "--json", "--bootstrap", 2000, "--seed", 5,
                          ref_f, a_f, b_f).stdout)
    assert data["a"]["position_accuracy"] > data["b"]["position_accuracy"]
    assert data["difference"] == pytest.approx(data["a"]["position_accuracy"]
                                               - data["b"]["position_accuracy"])
    assert data["bootstrap"]["p_value"] < 0.01 and data["bootstrap"]["resamples"] == 2000
    assert data["bootstrap"]["seed"] == 5 and data["bootstrap"]["ci"][0] > 0
    assert data["sign_test"]["p_value"] < 0.01
    assert data["sequences"] == 60 and data["positions"] == 1200

    out = run("compare", "-q", "--bootstrap", 2000, "--seed", 5, ref_f, "-", b_f,
              input=a_f.read_text()).stdout
    assert re.search(r"^A:\s+%Acc=[\d.]+ \[H=\d+, N=1200\]$", out, re.M), out
    assert re.search(r"^A-B:\s+\+[\d.]+ points, 95% CI \[\+[\d.]+, \+[\d.]+\]$", out, re.M), out
    assert re.search(r"^Bootstrap: p=0\.0004998 ", out, re.M), out  # 1 / 2001
    assert re.search(r"^Sign test: p=[\d.e-]+ .*A better on \d+, B better on \d+, tied on \d+", out, re.M)
    assert "A   : (stdin)" in out


def test_cli_compare_errors(tmp_path):
    ref = tmp_path / "ref.txt"
    ref.write_text("u1 a b\nu2 a a\n")
    (tmp_path / "a.txt").write_text("u1 a b\nu2 a a\n")
    (tmp_path / "b.txt").write_text("u1 a b\n")
    err = fails("compare", ref, tmp_path / "a.txt", tmp_path / "b.txt")
    assert "b.txt: utterance u2" in err and "missing" in err
    err = fails("compare", ref, tmp_path / "a.txt", "-", input="u1 a b\nu2 a\n")
    assert "utterance u2" in err and "2 labels" in err and "1 in the hypothesis" in err


# --- phone error rate -----------------------------------------------------------------

# frame labels -> phone strings (runs): hand-worked errors per utterance
PER_REF = {"u1": list("aabbcc"), "u2": list("aabb"), "u3": list("ccc"), "u4": list("bbaa")}
PER_A = {"u1": list("aabbcc"),   # [a b c]: 0 errors
         "u2": list("aabb"),     # [a b]: 0
         "u3": list("cac"),      # [c a c] vs [c]: 2 insertions
         "u4": list("bbbb")}     # [b] vs [b a]: 1 deletion
PER_B = {"u1": list("aaaacc"),   # [a c] vs [a b c]: 1 deletion
         "u2": list("abbb"),     # [a b]: 0 (frame errors, no phone error)
         "u3": list("ccc"),      # 0
         "u4": list("ccaa")}     # [c a] vs [b a]: 1 substitution


def test_per_comparison_hand_worked():
    c = significance.compare(PER_REF, PER_A, PER_B, resamples=20_000, seed=3)
    assert list(c.phones) == [3, 2, 1, 2]
    assert list(c.errors_a) == [0, 0, 2, 1] and list(c.errors_b) == [1, 0, 0, 1]
    assert (c.per_a, c.per_b) == (37.5, 25.0)
    assert c.per_bootstrap.difference == 12.5
    ps = c.per_sign      # A fewer errors on u1, B fewer on u3: an even split
    assert (ps.a_better, ps.b_better, ps.ties) == (1, 1, 2) and ps.p_value == 1.0
    # the bootstrap p-value against the exact bootstrap distribution: all 4^4 equally
    # likely resamples of the 4 utterances
    import itertools

    d = c.errors_a - c.errors_b
    exact = [100.0 * d[list(i)].sum() / c.phones[list(i)].sum()
             for i in itertools.product(range(4), repeat=4)]
    p_exact = np.mean(np.abs(np.array(exact) - 12.5) >= 12.5 - 1e-12)
    assert c.per_bootstrap.p_value == pytest.approx(p_exact, abs=0.015)
    # frame accuracy on the same systems is separate: A 14/17, B 12/17 frames right
    assert (c.accuracy_a, c.accuracy_b) == (100 * 14 / 17, 100 * 12 / 17)


def test_per_comparison_detects_a_better_system(rng):
    """Many utterances where B drops a phone A keeps: PER(A) < PER(B), significantly,
    while identical systems give p = 1."""
    ref, a, b = {}, {}, {}
    for i in range(60):
        phones = rng.choice(list("abcdef"), size=8)
        phones = [p for k, p in enumerate(phones) if k == 0 or p != phones[k - 1]]
        frames = [p for p in phones for _ in range(3)]
        ref[f"u{i}"] = a[f"u{i}"] = frames
        hb = list(frames)
        hb[3:6] = hb[0:3] if rng.random() < 0.8 else hb[3:6]     # delete phone 2 mostly
        b[f"u{i}"] = hb
    c = significance.compare(ref, a, b, resamples=5000, seed=0)
    assert c.per_a == 0.0 and c.per_b > 5
    assert c.per_bootstrap.difference < 0 and c.per_bootstrap.ci_high < 0
    assert c.per_bootstrap.p_value < 0.01 and c.per_sign.p_value < 0.01
    assert c.per_sign.a_better > 30 and c.per_sign.b_better == 0
    same = significance.compare(ref, b, b, resamples=500, seed=0)
    assert same.per_bootstrap.p_value == 1.0 and same.per_sign.p_value == 1.0


def test_cli_compare_reports_per(tmp_path):
    files = []
    for name, sys_ in (("ref", PER_REF), ("a", PER_A), ("b", PER_B)):
        p = tmp_path / f"{name}.txt"
        p.write_text("".join(f"{k} " + " ".join(v) + "\n" for k, v in sys_.items()))
        files.append(p)
    data = json.loads(run("compare", "--json", "--bootstrap", 1000, *files).stdout)
    assert data["per"]["a"] == {"per": 37.5, "errors": 3}
    assert data["per"]["difference"] == 12.5 and data["per"]["phones"] == 8
    assert data["per"]["sign_test"]["ties"] == 2
    out = run("compare", "-q", "--bootstrap", 1000, *files).stdout
    assert re.search(r"^A:\s+PER=37\.50 \[E=3, N=8\]$", out, re.M), out
    assert re.search(r"^A-B:\s+\+12\.50 points, 95% CI", out, re.M), out
    # a mapping folding b into a changes the phone strings
    (tmp_path / "map").write_text("a a\nb a\nc c\n")
    data = json.loads(run("compare", "--json", "--mapping", tmp_path / "map",
                          "--bootstrap", 100, *files).stdout)
    # ref [a c] [a] [c] [a] (5 phones); A [a c] [a] [c a c] [a]: 2; B [a c] [a] [c] [c a]: 1
    assert data["per"]["phones"] == 5 and data["per"]["a"]["errors"] == 2
    assert data["per"]["b"]["errors"] == 1
