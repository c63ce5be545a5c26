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


def _pages():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_man", REPO / "scripts" / "make_man.py")
    make_man = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_man)
    return make_man


def test_every_page_has_what_help_shows():
    """Each option's `[default: ...]` and every option name `--help` lists (-h too) is on
    the command's page: the pages are made with the command's own context settings."""
    import re

    from click.testing import CliRunner

    from rhmmtk.cli import cli

    make_man = _pages()
    for name, page in make_man.walk(cli, "rhmmtk"):
        argv = name.split("-", 1)[1:] if name != "rhmmtk" else []
        argv = argv[0].replace("quantize-", "quantize ").split() if argv else []
        help_text = CliRunner().invoke(cli, [*argv, "--help"]).output
        flat = " ".join(help_text.split())
        roff = " ".join(page.replace("\\e", "\\").split())
        # --help wraps at hyphens too (no-mean- direction): compare without white space
        defaults = [re.sub(r"\s", "", d) for d in re.findall(r"\[default: ([^\]]*)\]", flat)]
        assert [re.sub(r"\s", "", d) for d in re.findall(r"\[default: ([^\]]*)\]", roff)] \
            == defaults, name
        for opt in re.findall(r"(?:^|\s)(-{1,2}[a-z][a-z0-9-]*)", help_text.split("Options:")[-1]):
            assert opt in roff, (name, opt)
        assert "-h, --help" in roff, name


def test_pages_are_installed_where_man_finds_them():
    """setup.cfg installs man/*.1 and man/*.5 under PREFIX/share/man (man(1) looks there
    for a program in PREFIX/bin)."""
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    files = cfg["options.data_files"]
    assert files["share/man/man1"].split() == ["man/*.1"]
    assert files["share/man/man5"].split() == ["man/*.5"]
    assert (REPO / "man" / "rhmmtk.1").exists() and (REPO / "man" / "rhmmtk-formats.5").exists()
