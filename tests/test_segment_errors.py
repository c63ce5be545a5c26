"""recipes/timit/local/segment_errors.py: run statistics of a hypothesis against the
reference, on a hand-counted example (every figure differs from its neutral value)."""
import importlib.util
import subprocess
import sys

from conftest import REPO

SCRIPT = REPO / "recipes" / "timit" / "local" / "segment_errors.py"


def _module():
    spec = importlib.util.spec_from_file_location("segment_errors", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


REF = {"u1": "a a a a b b b b".split(),        # a spurious c at the a|b boundary
       "u2": "a a a a a a a a a".split(),      # a spurious d inside one phone
       "u3": "a a b c c".split()}              # b missed (absorbed by a)
HYP = {"u1": "a a c a b b b b".split(),
       "u2": "a a a a d a a a a".split(),
       "u3": "a a a c c".split()}


def test_hand_counted_example():
    got = _module().segment_errors(REF, HYP)
    # PER: u1 [a b] -> [a c a b] 2 insertions, u2 [a] -> [a d a] 2, u3 [a b c] -> [a c]
    # 1 deletion: 5 errors over 6 reference phones
    assert got == {"per": 83.33, "I": 4, "D": 1, "S": 0, "runs": 9, "runs1": 3, "runs2": 2,
                   "runs3": 1, "spurious": 2, "spurious_short": 2, "at_boundary": 1,
                   "missed": 1}


def test_mapping_merges_labels_and_bad_input_is_one_line(tmp_path):
    # folding d into a removes u2's spurious run
    got = _module().segment_errors(REF, HYP, {"a": "a", "b": "b", "c": "c", "d": "a"})
    assert got["spurious"] == 1 and got["I"] == 2
    ref = tmp_path / "ref"
    ref.write_text("u1 a a\n")
    p = subprocess.run([sys.executable, str(SCRIPT), str(ref), str(tmp_path / "missing")],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "missing" in p.stderr
