"""The examples/ scripts run as a new user would run them (small inputs)."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO


def test_nettalk_example(tmp_path, shared):
    lines = (shared / "data" / "nettalk" / "nettalk.data").read_text().splitlines(True)[:600]
    data = tmp_path / "nettalk.data"
    data.write_text("".join(lines))
    p = subprocess.run([sys.executable, str(REPO / "examples" / "nettalk.py"), str(data)],
                       cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    acc = float(p.stdout.split("accuracy ")[1].split("%")[0])
    assert 40 < acc <= 100, p.stdout          # well above chance on 150 test words
    assert "phonemes of 'rhythm':" in p.stdout
    assert (tmp_path / "nettalk_spectral32.h5").exists()


@pytest.mark.skipif(shutil.which("rhmmtk") is None, reason="rhmmtk not on PATH")
def test_scoring_example(tmp_path):
    (tmp_path / "ref.ali").write_text("u1 sil sil aa aa k\nu2 k k aa\n")
    (tmp_path / "hyp.ali").write_text("u1 sil aa aa aa k\nu2 k k k\n")
    p = subprocess.run(["bash", str(REPO / "examples" / "score_htk_sclite.sh"), "ref.ali",
                        "hyp.ali"], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ})
    assert p.returncode == 0, p.stderr
    assert "%Acc=75.00 [H=6, N=8]" in p.stdout, p.stdout
