"""Feature templates: parse errors (the view rules of docs/RHMM.md) and atom values on
hand-worked sequences, plus no leakage across sequence boundaries in featurize_many."""
import itertools

import numpy as np
import pytest

from rhmmtk.errors import InputError
from rhmmtk.models.rhmm.templates import VIEWS, Templates

# one harmless template per view, so a test can add the line it is about
BASE = {"future": "x[0]", "past": "a[-1]", "present": "x[0]", "destiny": "x[-1]"}


def conf(**extra):
    """A template config: BASE, with each view's template replaced by extra[view]."""
    lines = [f"{v} {extra.get(v, BASE[v])}" for v in VIEWS]
    return "\n".join(lines) + "\n"


# --- parse errors ---------------------------------------------------------------------

@pytest.mark.parametrize("view, spec", [
    ("future", "x[-1]"),      # the future starts at x_i
    ("future", "a[-1]"),
    ("future", "pp"),         # previous phone type is in the past
    ("future", "runstart"),   # reads a_{i-1}
    ("future", "pos"),        # "begin/middle/..." reads a_{i-1}
    ("past", "x[0]"),         # the past ends at x_{i-1}
    ("past", "x[+1]"),
    ("past", "a[+1]"),
    ("past", "np"),
    ("past", "runend"),
    ("past", "pos"),
    ("present", "x[+1]"),
    ("present", "x[-1]"),
    ("present", "a[-1]"),
    ("present", "a[+1]"),
    ("present", "pp"),
    ("present", "np"),
    ("destiny", "x[0]"),      # the destiny is everything but x_i
    ("destiny", "x[+0]"),
    ("destiny", "a[+1]*x[0]"),  # one forbidden atom spoils a conjunction
    ("future", "x[0]*a[+1]*x[-1]"),
    ("future", "since"),      # how long the run has lasted reads a_{i-1}, a_{i-2}, ...
    ("future", "third"),      # needs both ends of the run
    ("past", "until"),        # how long it will last reads a_{i+1}, ...
    ("past", "third"),
    ("present", "since"),
    ("present", "until"),
])
def test_forbidden_reads_are_refused(view, spec):
    with pytest.raises(InputError) as e:
        Templates(conf(**{view: spec}), "tpl.conf")
    msg = str(e.value)
    assert "tpl.conf" in msg and view in msg and "may not see" in msg, msg


@pytest.mark.parametrize("view, spec", [
    ("future", "x[0]*a[+1]*x[+2]*np*runend*until*bias"),
    ("future", "a[0]"),
    ("past", "a[0]*a[-2]*x[-1]*x[-3]*pp*runstart*since*bias"),
    ("present", "x[0]*a[0]*bias"),
    ("destiny", "a[-1]*a[0]*a[+1]*x[-1]*x[+2]*np*pp*pos*runstart*runend*bias"),
    ("destiny", "since*until*third"),
])
def test_allowed_reads_are_accepted(view, spec):
    t = Templates(conf(**{view: spec}))
    assert t.views[view][0][0] == spec


@pytest.mark.parametrize("text, fragment", [
    ("futur x[0]\n", "unknown view"),
    ("Future x[0]\n", "unknown view"),
    ("future y[0]\n", "unknown atom"),
    ("future x[a]\n", "unknown atom"),
    ("future x0\n", "unknown atom"),
    ("future nextphone\n", "unknown atom"),
    ("future x[0]*\n", "unknown atom"),
    ("future x[0] a[+1]\n", "expected"),      # two templates on one line
    ("future\n", "expected"),
])
def test_syntax_errors(text, fragment):
    full = text + "".join(f"{v} {BASE[v]}\n" for v in VIEWS)
    with pytest.raises(InputError) as e:
        Templates(full, "bad.conf")
    assert fragment in str(e.value) and "bad.conf" in str(e.value) and "line 1" in str(e.value)


def test_every_view_needs_a_template():
    text = "".join(f"{v} {BASE[v]}\n" for v in VIEWS if v != "present")
    with pytest.raises(InputError, match="present"):
        Templates(text)


def test_comments_and_blank_lines():
    t = Templates("# header\n\n" + conf().replace("\n", "   # trailing\n", 1))
    assert [len(t.views[v]) for v in VIEWS] == [1, 1, 1, 1]


def test_read_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        Templates.read(tmp_path / "nope.conf")


# --- atom values on a hand-worked sequence ----------------------------------------------

#  position   1  2  3  4  5  6
#  label      a  a  b  b  b  c      ids 0 0 1 1 1 2   (l = 3, boundary value 3)
#  obs        x0 x1 x2 x0 x1 x2     ids 0 1 2 0 1 2   (n = 3, boundary value 3)
LAB = np.array([0, 0, 1, 1, 1, 2])
OBS = np.array([0, 1, 2, 0, 1, 2])
L, N = 3, 3
EXPECTED = {
    "runstart": [1, 0, 1, 0, 0, 1],
    "runend":   [0, 1, 0, 0, 1, 1],
    "pos":      [0, 2, 0, 1, 2, 3],        # begin, end, begin, middle, end, single
    "pp":       [3, 3, 0, 0, 0, 1],        # no run before the first: boundary
    "np":       [1, 1, 2, 2, 2, 3],        # no run after the last: boundary
    "a[+1]":    [0, 1, 1, 1, 2, 3],        # * past the end
    "a[-1]":    [3, 0, 0, 1, 1, 1],
    "a[0]":     [0, 0, 1, 1, 1, 2],
    "a[+2]":    [1, 1, 1, 2, 3, 3],
    "x[-1]":    [3, 0, 1, 2, 0, 1],
    "x[+1]":    [1, 2, 0, 1, 2, 3],
    "x[-2]":    [3, 3, 0, 1, 2, 0],
    "x[0]":     [0, 1, 2, 0, 1, 2],
    "bias":     [0, 0, 0, 0, 0, 0],
    "since":    [0, 1, 0, 1, 2, 0],        # positions since the run began
    "until":    [1, 0, 2, 1, 0, 0],        # positions until it ends
    "third":    [0, 1, 0, 1, 2, 0],        # floor(3 since / run length): runs of 2, 3, 1
}
CARD = {"runstart": 2, "runend": 2, "pos": 4, "pp": L + 1, "np": L + 1, "bias": 1,
        "since": 8, "until": 8, "third": 3}


def card(atom):
    if atom in CARD:
        return CARD[atom]
    return (L if atom[0] == "a" else N) + 1


def test_atom_values_hand_worked():
    # destiny may read every atom except x[0]: one template per atom, ids offset by the
    # cardinalities of the templates before it in the view
    atoms = [a for a in EXPECTED if a != "x[0]"]
    text = "future x[0]\npast a[-1]\npresent x[0]\n" + "".join(f"destiny {a}\n" for a in atoms)
    t = Templates(text)
    F = t.featurize(LAB, OBS, L, N)
    assert F.shape == (6, 2 + 3 + len(atoms))
    np.testing.assert_array_equal(F[:, 0], LAB)
    np.testing.assert_array_equal(F[:, 1], OBS)
    lo, hi = t.view_slices()["destiny"]
    assert hi - lo == len(atoms)
    offset = 0
    for j, atom in enumerate(atoms):
        np.testing.assert_array_equal(F[:, lo + j] - offset, EXPECTED[atom], err_msg=atom)
        offset += card(atom)
    # the other views: one template each, offset 0
    np.testing.assert_array_equal(F[:, t.view_slices()["future"][0]], EXPECTED["x[0]"])
    np.testing.assert_array_equal(F[:, t.view_slices()["past"][0]], EXPECTED["a[-1]"])
    np.testing.assert_array_equal(F[:, t.view_slices()["present"][0]], EXPECTED["x[0]"])


def test_view_slices_and_columns():
    t = Templates("future x[0]\nfuture a[+1]*x[+1]\npast pp\npresent x[0]\n"
                  "destiny pos\ndestiny np\ndestiny a[-1]\n")
    assert t.view_slices() == {"future": (2, 4), "past": (4, 5), "present": (5, 6),
                               "destiny": (6, 9)}
    assert t.columns() == ["future:x[0]", "future:a[+1]*x[+1]", "past:pp", "present:x[0]",
                           "destiny:pos", "destiny:np", "destiny:a[-1]"]


def test_conjunction_ids_are_distinct(rng):
    """A conjunction's id is injective in its atoms' values, and templates of one view never
    share an id (mixed-radix values offset by each template's place)."""
    l, n = 4, 5
    labels = [rng.integers(0, l, size=k) for k in rng.integers(1, 12, size=60)]
    # and long runs, so that since/until reach their cap and third takes every value
    labels += [np.repeat(rng.integers(0, l, size=4), rng.integers(1, 12, size=4))
               for _ in range(20)]
    obs = [rng.integers(0, n, size=len(a)) for a in labels]
    specs = ["a[+1]*x[+1]", "x[-1]*pp*pos", "np*x[+2]", "runstart*runend", "a[-1]",
             "since*until*third", "third*pos"]
    t = Templates("future x[0]\npast a[-1]\npresent x[0]\n"
                  + "".join(f"destiny {s}\n" for s in specs))
    F = np.concatenate(t.featurize_many(labels, obs, l, n))
    # the same tuples from the single-atom templates
    col = {}   # atom -> its value at every position (a template of its own: offset 0)
    for a in sorted({a for s in specs for a in s.split("*")}):
        ts = Templates(f"future x[0]\npast a[-1]\npresent x[0]\ndestiny {a}\n")
        col[a] = np.concatenate(ts.featurize_many(labels, obs, l, n))[:, -1]
    dlo = t.view_slices()["destiny"][0]
    ranges = []
    for j, s in enumerate(specs):
        ids = F[:, dlo + j]
        tuples = list(zip(*(col[a] for a in s.split("*"))))
        pairs = set(zip(tuples, ids))
        # a function both ways: same tuple <-> same id
        assert len(pairs) == len(set(tuples)) == len(set(ids)), s
        ranges.append((ids.min(), ids.max()))
    # id ranges of different templates of the view do not overlap
    for (a0, a1), (b0, b1) in itertools.combinations(ranges, 2):
        assert a1 < b0 or b1 < a0, ranges
    # and the two-atom conjunction covers its full grid with distinct ids
    lab_vals, obs_vals = np.arange(l + 1), np.arange(n + 1)
    got = {}
    for tup, i in zip(zip(col["a[+1]"], col["x[+1]"]), F[:, dlo]):
        got[tup] = i
    assert len(set(got.values())) == len(got)
    assert set(got) <= set(itertools.product(lab_vals, obs_vals))


ALL_TEMPLATES = """
future   x[0]
future   a[+1]*x[+1]
future   np*runend
future   a[+2]*x[+2]
past     a[-1]*x[-1]
past     pp*runstart
past     x[-2]*a[-2]
present  x[0]
present  a[0]*x[0]
destiny  a[-1]*a[+1]
destiny  x[-1]*x[+1]
destiny  pp*np*pos
destiny  runstart*runend*x[-2]*x[+2]
destiny  bias
destiny  since*until*third
future   until*a[+1]
past     since*pp
"""


def test_featurize_many_equals_featurize_each(rng):
    """No leakage across sequence boundaries: neighbours, runs, pp/np and pos are computed
    within each sequence. The sequences include length 1 and sequences whose first label
    equals the previous sequence's last (a run must not continue across them)."""
    l, n = 3, 4
    t = Templates(ALL_TEMPLATES)
    labels = [np.array([0, 0, 1]), np.array([1, 1, 2]), np.array([2]), np.array([2, 2]),
              np.array([0]), np.array([0, 1, 1, 1, 0])]
    labels += [rng.integers(0, l, size=k) for k in rng.integers(1, 9, size=30)]
    obs = [rng.integers(0, n, size=len(a)) for a in labels]
    many = t.featurize_many(labels, obs, l, n)
    assert len(many) == len(labels)
    for a, x, got in zip(labels, obs, many):
        np.testing.assert_array_equal(got, t.featurize(a, x, l, n))
    # and with the order reversed (nothing depends on the neighbouring sequences)
    rev = t.featurize_many(labels[::-1], obs[::-1], l, n)
    for got, want in zip(rev, many[::-1]):
        np.testing.assert_array_equal(got, want)


def test_single_position_sequence():
    t = Templates("future a[+1]*np*runend\npast pp*runstart*a[-1]*x[-1]\npresent x[0]\n"
                  "destiny pos\n")
    F = t.featurize(np.array([1]), np.array([2]), 3, 4)
    future, past, _, pos = F[0, 2:]
    # a[+1] = *, np = boundary, runend = 1 -> ((3 * 4) + 3) * 2 + 1
    assert future == ((3 * 4) + 3) * 2 + 1
    # pp = boundary 3, runstart = 1, a[-1] = 3, x[-1] = 4 -> mixed radix (4, 2, 4, 5)
    assert past == ((3 * 2 + 1) * 4 + 3) * 5 + 4
    assert pos == 3


def test_fingerprint_depends_on_templates_not_layout():
    a = Templates(conf())
    b = Templates("# same templates, other layout\n" + conf().replace(" ", "     "))
    c = Templates(conf(future="a[+1]"))
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()


def test_run_place_atoms_by_brute_force(rng):
    """since / until / third against a loop over each sequence's positions, with runs
    long enough to reach the cap (7). (Runs restarting at every sequence:
    test_featurize_many_equals_featurize_each.)"""
    labels = [np.repeat(rng.integers(0, 3, size=k), rng.integers(1, 14, size=k))
              for k in rng.integers(1, 6, size=40)]
    obs = [np.zeros(len(a), dtype=np.int64) for a in labels]
    t = Templates("future until\npast since\npresent x[0]\ndestiny third\n")
    F = np.concatenate(t.featurize_many(labels, obs, 3, 1))
    want = []
    for a in labels:
        for i in range(len(a)):
            s = i
            while s > 0 and a[s - 1] == a[i]:
                s -= 1
            e = i
            while e + 1 < len(a) and a[e + 1] == a[i]:
                e += 1
            want.append((min(e - i, 7), min(i - s, 7), (3 * (i - s)) // (e - s + 1)))
    np.testing.assert_array_equal(F[:, [2, 3, 5]], np.array(want))
    assert F[:, 2].max() == 7 and F[:, 3].max() == 7      # the cap was reached
