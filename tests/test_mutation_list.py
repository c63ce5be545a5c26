"""The mutation check's list (scripts/mutation_check.py) still applies to the source:
every original snippet occurs exactly once in its file, every test file it names exists.
Fast; the mutation run itself is slow and not part of the suite (tests/README.md)."""
import importlib.util

from conftest import REPO


def _harness():
    spec = importlib.util.spec_from_file_location("mutation_check",
                                                  REPO / "scripts" / "mutation_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_mutation_still_applies():
    mc = _harness()
    assert len(mc.MUTATIONS) >= 20
    problems = mc.check_list(str(REPO))
    assert not problems, ("scripts/mutation_check.py no longer matches the code; update the "
                          "snippets with the change:\n" + "\n".join(problems))


def test_check_list_notices_a_stale_snippet(tmp_path, monkeypatch):
    """The rot check itself can fail: a snippet missing from its file is reported."""
    mc = _harness()
    stale = mc.Mutation("stale", "rhmmtk/models/rhmm/spectral.py", "this text is not in the file", "x",
                        ["tests/test_spectral.py"])
    monkeypatch.setattr(mc, "MUTATIONS", [stale])
    assert mc.check_list(str(REPO)) == ["stale: original snippet occurs 0 times in "
                                        "rhmmtk/models/rhmm/spectral.py"]
