"""Scoring: HResults-style segment counts, per-position/sequence accuracy, mapping, errors, CLI."""
import functools
import json
import re

import numpy as np
import pytest

from cli_helpers import fails, run
from rhmmtk import scoring
from rhmmtk.errors import InputError
from rhmmtk.scoring import SegmentCounts, collapse, edit_counts


def ali(text):
    """'u1 a b\\nu2 c' -> {'u1': ['a', 'b'], 'u2': ['c']} (as read_alignment gives)."""
    return {p[0]: p[1:] for p in (line.split() for line in text.strip().splitlines())}


def write(path, text):
    path.write_text(text.strip() + "\n")
    return path


# --- edit distance: hand-worked examples -------------------------------------------

@pytest.mark.parametrize("ref, hyp, expected", [
    ("a b c", "a b c", dict(H=3, D=0, S=0, I=0)),
    ("a b c", "a x c", dict(H=2, D=0, S=1, I=0)),      # one sub (10) beats del+ins (14)
    ("a b", "c d", dict(H=0, D=0, S=2, I=0)),          # 20 < 28
    ("a b", "b a", dict(H=1, D=1, S=0, I=1)),          # del+ins 14 beats two subs 20
    ("a b c d", "a c d e", dict(H=3, D=1, S=0, I=1)),  # 14 beats three subs 30
    ("a", "a b a b a", dict(H=1, D=0, S=0, I=4)),      # all insertions
    ("a b a b a", "a", dict(H=1, D=4, S=0, I=0)),      # all deletions
    ("a b", "", dict(H=0, D=2, S=0, I=0)),
    ("", "a b", dict(H=0, D=0, S=0, I=2)),
    ("a", "b c d", dict(H=0, D=0, S=1, I=2)),          # 10 + 14 = 24 < 7 + 21 = 28
])
def test_edit_counts_hand_worked(ref, hyp, expected):
    got = edit_counts(ref.split(), hyp.split())
    assert got == SegmentCounts(**expected, N=len(ref.split()))


def test_rates_all_insertions_and_all_deletions_through_collapse():
    # frame-level: equal lengths, but the hypothesis flickers, so its runs are 5 segments
    rep = scoring.score(ali("u a a a a a"), ali("u a b a b a"))
    assert rep.segments == SegmentCounts(H=1, D=0, S=0, I=4, N=1)
    assert rep.segments.corr == 100.0 and rep.segments.acc == -300.0 and rep.segments.per == 400.0
    assert rep.position_accuracy == pytest.approx(60.0)

    rep = scoring.score(ali("u a b a b a"), ali("u a a a a a"))
    assert rep.segments == SegmentCounts(H=1, D=4, S=0, I=0, N=5)
    assert rep.segments.corr == pytest.approx(20.0) and rep.segments.acc == pytest.approx(20.0)
    assert rep.segments.per == pytest.approx(80.0)


def test_collapse():
    assert collapse(np.array([3, 3, 1, 1, 1, 3, 2])).tolist() == [3, 1, 3, 2]
    assert collapse(np.array([5])).tolist() == [5]


# --- edit distance: against brute-force enumeration of every alignment ---------------

def all_alignments(ref, hyp):
    """Every alignment of ref and hyp as a set of (H, D, S, I), by recursion on both prefixes."""

    @functools.lru_cache(maxsize=None)
    def rec(i, j):
        if i == 0 and j == 0:
            return {(0, 0, 0, 0)}
        out = set()
        if i and j:  # pair ref[i-1] with hyp[j-1]: a hit or a substitution
            hit = ref[i - 1] == hyp[j - 1]
            out |= {(h + hit, d, s + (not hit), n) for h, d, s, n in rec(i - 1, j - 1)}
        if i:  # delete ref[i-1]
            out |= {(h, d + 1, s, n) for h, d, s, n in rec(i - 1, j)}
        if j:  # insert hyp[j-1]
            out |= {(h, d, s, n + 1) for h, d, s, n in rec(i, j - 1)}
        return out

    return rec(len(ref), len(hyp))


@pytest.mark.parametrize("weights", [(10, 7, 7), (1, 1, 1), (4, 2, 5), (3, 5, 2)])
def test_edit_counts_vs_brute_force(rng, weights):
    sub, dele, ins = weights
    for _ in range(150):
        ref = tuple(rng.choice(list("abc"), size=rng.integers(0, 7)))
        hyp = tuple(rng.choice(list("abc"), size=rng.integers(0, 7)))
        got = edit_counts(list(ref), list(hyp), sub=sub, dele=dele, ins=ins)
        every = all_alignments(ref, hyp)
        cost = {c: sub * c[2] + dele * c[1] + ins * c[3] for c in every}
        best = min(cost.values())
        assert got.cost(sub, dele, ins) == best, (ref, hyp)
        assert (got.H, got.D, got.S, got.I) in every, (ref, hyp)  # a real alignment
        assert got.H + got.D + got.S == got.N == len(ref)
        assert got.H + got.S + got.I == len(hyp)


def test_edit_counts_on_ids_and_long_strings(rng):
    # integer ids (what score() passes) and a size like a real utterance
    ref = collapse(rng.integers(0, 40, 600))
    hyp = collapse(np.where(rng.random(600) < 0.2, rng.integers(0, 40, 600), np.repeat(ref, 2)[:600]))
    got = edit_counts(ref, hyp)
    assert got.H + got.D + got.S == len(ref) and got.H + got.S + got.I == len(hyp)
    assert edit_counts(ref, ref) == SegmentCounts(H=len(ref), N=len(ref))


# --- positions, sequences, labels --------------------------------------------------

REF = """
u1 a a b b c
u2 x y y
u3 a b
"""
HYP = """
u3 a b
u2 x x y
u1 a b b b d
"""


def test_position_sequence_and_label_accuracy():
    rep = scoring.score(ali(REF), ali(HYP))
    assert rep.keys == ["u1", "u2", "u3"]  # reference order, paired by key not by line
    assert (rep.positions, rep.positions_correct) == (10, 7)
    assert rep.position_accuracy == pytest.approx(70.0)
    assert (rep.sequences, rep.sequences_correct) == (3, 1)
    assert rep.sequence_accuracy == pytest.approx(100 / 3)
    assert rep.lengths.tolist() == [5, 3, 2] and rep.correct.tolist() == [3, 2, 2]
    # segments: u1 [a b c] vs [a b d]: S=1; u2 [x y] vs [x y]; u3 [a b] vs [a b]
    assert rep.segments == SegmentCounts(H=6, D=0, S=1, I=0, N=7)
    assert rep.per_label() == {"a": (3, 2, pytest.approx(200 / 3)), "b": (3, 3, 100.0),
                               "c": (1, 0, 0.0), "x": (1, 1, 100.0), "y": (2, 1, 50.0)}
    assert rep.labels == ["a", "b", "c", "d", "x", "y"]
    conf = dict(zip(rep.labels, rep.confusion.tolist()))
    assert conf["a"] == [2, 1, 0, 0, 0, 0] and conf["c"] == [0, 0, 0, 1, 0, 0]
    assert conf["y"] == [0, 0, 0, 0, 1, 1] and conf["d"] == [0] * 6
    assert rep.confusion.sum() == rep.positions
    assert np.trace(rep.confusion) == rep.positions_correct


def test_mapping_folds_both_sides_before_scoring():
    ref = ali("u1 pcl p ah ax h#")
    hyp = ali("u1 sil p ax ah sil")
    fold = {"pcl": "sil", "h#": "sil", "sil": "sil", "p": "p", "ah": "ah", "ax": "ah"}
    rep = scoring.score(ref, hyp, mapping=fold)
    assert rep.position_accuracy == 100.0 and rep.sequence_accuracy == 100.0
    assert rep.labels == ["ah", "p", "sil"]
    # folded ref: sil p ah ah sil -> segments sil p ah sil
    assert rep.segments == SegmentCounts(H=4, N=4)
    unfolded = scoring.score(ref, hyp)
    assert unfolded.positions_correct == 1


def test_library_errors_name_file_utterance_and_what():
    with pytest.raises(InputError, match=r"hyp\.txt: utterance u2: in reference ref\.txt but missing"):
        scoring.score(ali("u1 a\nu2 b"), ali("u1 a"), "ref.txt", "hyp.txt")
    with pytest.raises(InputError, match=r"hyp\.txt: utterance u9: not in reference ref\.txt"):
        scoring.score(ali("u1 a"), ali("u1 a\nu9 b"), "ref.txt", "hyp.txt")
    with pytest.raises(InputError, match=r"utterance u2: length mismatch: 2 labels in .*, 3 in"):
        scoring.score(ali("u1 a\nu2 b b"), ali("u1 a\nu2 b b b"), "ref.txt", "hyp.txt")
    with pytest.raises(InputError, match=r"map\.txt: utterance u2: label 'zz' \(in hyp\.txt\)"):
        scoring.score(ali("u1 a\nu2 b b"), ali("u1 a\nu2 b zz"), "ref.txt", "hyp.txt",
                      mapping={"a": "a", "b": "b"}, mapping_path="map.txt")


# --- the command line ---------------------------------------------------------------

def report_numbers(out):
    sent = re.search(r"^SENT: %Correct=([\d.]+) \[H=(\d+), S=(\d+), N=(\d+)\]$", out, re.M)
    pos = re.search(r"^POS:  %Acc=([\d.]+) \[H=(\d+), N=(\d+)\]$", out, re.M)
    phone = re.search(r"^PHONE: %Corr=([\d.]+), Acc=(-?[\d.]+) "
                      r"\[H=(\d+), D=(\d+), S=(\d+), I=(\d+), N=(\d+)\]$", out, re.M)
    assert sent and pos and phone, out
    return sent.groups(), pos.groups(), phone.groups()


def test_cli_report_and_json(tmp_path):
    ref, hyp = write(tmp_path / "ref.txt", REF), write(tmp_path / "hyp.txt", HYP)
    out = run("score", "-q", ref, hyp).stdout
    assert out.startswith("=") and "Overall Results" in out and out.rstrip().endswith("=" * 67)
    assert f"Ref : {ref}" in out and f"Hyp : {hyp}" in out
    assert report_numbers(out) == (("33.33", "1", "2", "3"), ("70.00", "7", "10"),
                                   ("85.71", "85.71", "6", "0", "1", "0", "7"))

    data = json.loads(run("score", "--json", "--per-label", "--confusion", "--per-utt",
                          ref, hyp).stdout)
    assert data["position_accuracy"] == pytest.approx(70.0)
    assert data["sequence_accuracy"] == pytest.approx(100 / 3)
    assert (data["positions"], data["sequences"]) == (10, 3)
    assert data["segments"] == {"H": 6, "D": 0, "S": 1, "I": 0, "N": 7,
                                "corr": pytest.approx(600 / 7), "acc": pytest.approx(600 / 7),
                                "per": pytest.approx(100 / 7)}
    assert data["per_label"]["y"] == {"N": 2, "correct": 1, "accuracy": 50.0}
    assert data["confusion"]["labels"] == ["a", "b", "c", "d", "x", "y"]
    assert data["confusion"]["counts"][0] == [2, 1, 0, 0, 0, 0]
    assert data["per_utt"]["u1"]["correct"] == 3 and data["per_utt"]["u3"]["sequence_correct"]
    plain = json.loads(run("score", "--json", ref, hyp).stdout)
    assert not {"per_label", "confusion", "per_utt"} & set(plain)


def test_cli_optional_sections(tmp_path):
    ref, hyp = write(tmp_path / "ref.txt", REF), write(tmp_path / "hyp.txt", HYP)
    out = run("score", "-q", "--per-label", "--confusion", "--per-utt", ref, hyp).stdout
    assert re.search(r"^u1:\s+POS %Acc= 60\.00 \[H=3, N=5\]", out, re.M), out
    assert re.search(r"^y\s+50\.00\s+1\s+2$", out, re.M), out  # per-label row
    assert re.search(r"^a\s+2\s+1\s+0\s+0\s+0\s+0\s+\[ 66\.7\]$", out, re.M), out  # confusion row


def test_cli_reads_hyp_or_ref_from_stdin(tmp_path):
    ref, hyp = write(tmp_path / "ref.txt", REF), write(tmp_path / "hyp.txt", HYP)
    from_files = run("score", "--json", ref, hyp).stdout
    piped = run("score", "--json", ref, "-", input=hyp.read_text()).stdout
    assert json.loads(piped)["segments"] == json.loads(from_files)["segments"]
    out = run("score", "-q", "-", hyp, input=ref.read_text()).stdout
    assert "POS:  %Acc=70.00" in out
    out = run("score", "-q", ref, "-", input="u1 a a b b c\nu2 x y y\nu3 a b\n").stdout
    assert "POS:  %Acc=100.00" in out and "Hyp : (stdin)" in out


def test_cli_mapping(tmp_path):
    ref = write(tmp_path / "ref.txt", "u1 pcl p ah ax h#")
    hyp = write(tmp_path / "hyp.txt", "u1 sil p ax ah sil")
    fold = write(tmp_path / "fold.txt", "# 48 -> 39 style\npcl sil\nh# sil\nsil sil\np p\nah ah\nax ah")
    data = json.loads(run("score", "--json", "--mapping", fold, ref, hyp).stdout)
    assert data["position_accuracy"] == 100.0 and data["segments"]["N"] == 4


def test_cli_several_hypotheses_score_as_separate_runs(tmp_path):
    """score REF H1 H2 H3: each report equals the one-HYP run's, in order (JSON: a list);
    a bad hypothesis among them fails the whole run, naming it."""
    ref = write(tmp_path / "ref.txt", REF)
    hyps = [write(tmp_path / "h1.txt", HYP), write(tmp_path / "h2.txt", REF),
            write(tmp_path / "h3.txt", "u1 a a b b x\nu2 x x x\nu3 b b")]
    together = json.loads(run("score", "--json", "--per-utt", ref, *hyps).stdout)
    alone = [json.loads(run("score", "--json", "--per-utt", ref, h).stdout) for h in hyps]
    assert together == alone
    assert [d["position_accuracy"] for d in together] == [70.0, 100.0, pytest.approx(60.0)]
    text = run("score", "-q", ref, *hyps).stdout
    assert text == "".join(run("score", "-q", ref, h).stdout for h in hyps)
    err = fails("score", ref, hyps[0], write(tmp_path / "short.txt", "u1 a b"))
    assert "short.txt: utterance" in err


def test_cli_errors(tmp_path):
    ref = write(tmp_path / "ref.txt", "u1 a b\nu2 b b")
    err = fails("score", ref, write(tmp_path / "short.txt", "u1 a b"))
    assert "short.txt: utterance u2" in err and "missing" in err
    err = fails("score", ref, write(tmp_path / "extra.txt", "u1 a b\nu2 b b\nu3 a"))
    assert "extra.txt: utterance u3" in err and "not in reference" in err
    err = fails("score", ref, "-", input="u1 a b\nu2 b b b\n")
    assert "utterance u2" in err and "2 labels" in err and "3 in the hypothesis" in err
    fold = write(tmp_path / "fold.txt", "a a\nb b")
    err = fails("score", "--mapping", fold, ref, write(tmp_path / "odd.txt", "u1 a q\nu2 b b"))
    assert "fold.txt: utterance u1: label 'q' (in" in err and "odd.txt" in err
    err = fails("score", "--mapping", write(tmp_path / "bad.txt", "a a a"), ref, ref)
    assert "bad.txt: line 1" in err
    err = fails("score", "-", "-", input="u1 a\n")
    assert "stdin" in err
    assert "no such file" in fails("score", ref, tmp_path / "nope.txt")


# --- edit distance: HResults' tie order, against a plain DP with a backtrace -------------

def hresults_dp(ref, hyp, sub, dele, ins):
    """(H, D, S, I) of the alignment HResults picks: a full cost grid, each cell choosing
    diagonal if no worse than both others, else insertion if strictly cheaper than
    deletion, else deletion; then a backtrace from the corner."""
    n, m = len(ref), len(hyp)
    cost = [[0] * (m + 1) for _ in range(n + 1)]
    move = [[""] * (m + 1) for _ in range(n + 1)]
    for j in range(1, m + 1):
        cost[0][j], move[0][j] = j * ins, "I"
    for i in range(1, n + 1):
        cost[i][0], move[i][0] = i * dele, "D"
        for j in range(1, m + 1):
            d = cost[i - 1][j - 1] + (0 if ref[i - 1] == hyp[j - 1] else sub)
            h, v = cost[i][j - 1] + ins, cost[i - 1][j] + dele
            if d <= h and d <= v:
                cost[i][j], move[i][j] = d, "S"
            elif h < v:
                cost[i][j], move[i][j] = h, "I"
            else:
                cost[i][j], move[i][j] = v, "D"
    H = D = S = I = 0  # noqa: E741
    i, j = n, m
    while i or j:
        mv = move[i][j]
        if mv == "S":
            H, S = H + (ref[i - 1] == hyp[j - 1]), S + (ref[i - 1] != hyp[j - 1])
            i, j = i - 1, j - 1
        elif mv == "I":
            I, j = I + 1, j - 1  # noqa: E741
        else:
            D, i = D + 1, i - 1
    return H, D, S, I


@pytest.mark.parametrize("weights", [(10, 7, 7), (1, 1, 1), (2, 1, 1), (4, 2, 5)])
def test_edit_counts_follow_hresults_tie_order(rng, weights):
    """Among equally cheap alignments the counts are HResults' (the brute-force test above
    accepts any optimal one): with (1, 1, 1) about 1 pair in 30 has a tie that changes them."""
    differ = 0
    for _ in range(400):
        ref = list(rng.choice(list("abc"), size=rng.integers(0, 7)))
        hyp = list(rng.choice(list("abc"), size=rng.integers(0, 7)))
        got = edit_counts(ref, hyp, *weights)
        assert (got.H, got.D, got.S, got.I) == hresults_dp(ref, hyp, *weights), (ref, hyp)
        every = all_alignments(tuple(ref), tuple(hyp))
        cost = {c: weights[0] * c[2] + weights[1] * c[1] + weights[2] * c[3] for c in every}
        best = min(cost.values())
        differ += len({c for c in every if cost[c] == best}) > 1
    if weights in ((1, 1, 1), (2, 1, 1)):
        assert differ > 0          # ties with different counts occurred: the order mattered
