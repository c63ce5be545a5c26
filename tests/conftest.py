import os
import pathlib

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]


def shared_dir():
    """../shared beside the repository, or $RHMMTK_SHARED."""
    return pathlib.Path(os.environ.get("RHMMTK_SHARED", REPO.parent / "shared"))


@pytest.fixture
def shared():
    d = shared_dir()
    if not d.is_dir():
        pytest.skip(f"shared data not found at {d} (set RHMMTK_SHARED)")
    return d


@pytest.fixture
def seed(request):
    """A fixed seed per test, printed so a failure can be replayed (override: RHMMTK_TEST_SEED)."""
    s = int(os.environ.get("RHMMTK_TEST_SEED", "20131"))
    print(f"[seed] {request.node.name}: {s}")
    return s


@pytest.fixture
def rng(seed):
    return np.random.default_rng(seed)
