import os
import pathlib

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]


def shared_dir():
    """../shared beside the repository, or $RHMMTK_SHARED."""
    return pathlib.Path(os.environ.get("RHMMTK_SHARED", REPO.parent / "shared"))


@pytest.fixture
def nettalk():
    """The NETtalk dictionary in ../shared (skips when absent)."""
    data = shared_dir() / "data" / "nettalk" / "nettalk.data"
    if not data.is_file():
        pytest.skip(f"NETtalk not found at {data}")
    return data


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


@pytest.fixture(scope="session")
def shard_corpus(tmp_path_factory):
    """The synthetic corpus the --job / shard tests split (tests/shards.py); read-only."""
    from shards import build_corpus

    return build_corpus(tmp_path_factory.mktemp("shards"))


@pytest.fixture(scope="session")
def shard_spectral(shard_corpus):
    """Its spectral statistics over 3 shards and the one-process model; read-only."""
    from shards import build_spectral

    return build_spectral(shard_corpus)


# The slowest files (recipe smokes, the README's examples, the benchmarks' smokes) are
# collected first, longest first: under two workers (scripts/setup_and_test.sh, --dist
# loadfile --no-loadscope-reorder, which hands files out in this order) they then start
# first, and the many short files fill the other worker, instead of one long file
# starting last and running alone. The two recipe smokes of test_recipes.py and
# test_recipe_timit.py were one file until 2026-11-28: one worker's 500 s.
SLOW_FIRST = ("test_recipe_timit.py", "test_recipe_competitors.py", "test_recipes.py",
              "test_bench.py", "test_readme.py", "test_recipe_g2p.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FIRST)))  # stable
