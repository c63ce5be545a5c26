"""The man pages in man/ are generated from the click definitions and must be current."""
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]


def test_man_pages_match_the_click_definitions(tmp_path):
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_man.py"), str(tmp_path)],
                   check=True)
    generated = sorted(p.name for p in tmp_path.glob("*.1"))
    committed = sorted(p.name for p in (REPO / "man").glob("*.1"))
    assert generated == committed, "run: python scripts/make_man.py"
    for name in generated:
        assert (tmp_path / name).read_text() == (REPO / "man" / name).read_text(), (
            f"man/{name} is stale: run python scripts/make_man.py")
    assert "train-spectral" in (REPO / "man" / "rhmmtk.1").read_text()


def test_formats_page_exists_and_documents_every_file_kind():
    text = (REPO / "man" / "rhmmtk-formats.5").read_text()
    for word in ("codes", "features", "featurized", "alignment", "symbol table", "model",
                 "templates", "codebook"):
        assert word in text, word
