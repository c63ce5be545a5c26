"""scripts/oldest-constraints.txt pins the lower bounds setup.cfg allows, so CI's run on the
oldest releases (scripts/test_oldest.sh) tests what a user may really get."""
import configparser
import re

from conftest import REPO


def test_pins_are_setup_cfg_lower_bounds():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    floors = dict(re.match(r"([\w-]+)>=([\d.]+)", line.strip()).groups()
                  for line in cfg["options"]["install_requires"].split("\n") if ">=" in line)
    pins = dict(line.split("==") for line in
                (REPO / "scripts" / "oldest-constraints.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    assert set(pins) == {"numpy", "scipy", "scikit-learn"}
    withdrawn = {"scipy": "1.11.0"}          # yanked from PyPI: the next release is pinned
    for name, pin in pins.items():
        first = floors[name] + ".0" * (2 - floors[name].count("."))
        assert pin == first or (withdrawn.get(name) == first and
                                pin.rsplit(".", 1)[0] == first.rsplit(".", 1)[0]), (name, pin)
