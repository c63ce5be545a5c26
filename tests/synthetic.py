"""A small synthetic corpus for command-line tests: text files sampled from a random R-HMM.

Writes `utt-id sym sym ...` files (observations and labels) for train, dev and test,
and a template config, into a directory. Utterance ids are deliberately not in sorted
order, so tests can check that tools keep the input order.
"""
import os

import numpy as np

from rhmmtk.models.rhmm.params import random_rhmm

LABELS = ["sil", "ah", "k"]          # sorted table: ah, k, sil (ids differ from sampling ids)
OBS = ["o3", "o1", "o4", "o0", "o5", "o2"]

TEMPLATES = """\
# view     template
future   x[0]
future   a[+1]*x[+1]
future   np*runend
past     a[-1]*x[-1]
past     pp*runstart
present  x[0]
destiny  a[-1]*a[+1]
destiny  x[-1]*x[+1]
destiny  pos
"""

OTHER_TEMPLATES = """\
future   x[0]
past     a[-1]
present  x[0]
destiny  x[-1]
"""


def write_table(path, table):
    with open(path, "w") as f:
        for k, syms in table.items():
            f.write(k + " " + " ".join(syms) + "\n")
    return path


# every test's seed (printed; RHMMTK_TEST_SEED replays another)
SEED = int(os.environ.get("RHMMTK_TEST_SEED", "20131"))


def corpus_dir(tmp_path_factory, name, sizes=(200, 40, 40), seed=SEED):
    """(directory, paths) of a fresh make_corpus for a module's fixture; prints the seed."""
    print(f"[seed] {name}: {seed}")
    d = tmp_path_factory.mktemp(name)
    return d, make_corpus(d, seed, sizes)


def make_corpus(directory, seed, sizes=(200, 40, 40)):
    """Write {train,dev,test}.{txt,ali} and templates.conf into `directory`; return paths."""
    rng = np.random.default_rng(seed)
    model = random_rhmm(len(LABELS), 2, len(OBS), rng, stop=0.15, concentration=0.5)
    paths = {}
    vocab = set()
    for part, count in zip(("train", "dev", "test"), sizes):
        obs, ali = {}, {}
        samples = model.sample(count, rng)
        for i, (a, x, _) in enumerate(samples):
            syms = [OBS[j] for j in x]
            if part != "train" and not set(syms) <= vocab:
                continue                      # keep dev/test inside the training vocabulary
            key = f"{part}-{(i * 7919) % 1000:03d}-{len(a)}"
            obs[key] = syms
            ali[key] = [LABELS[j] for j in a]
        if part == "train":
            vocab = {s for syms in obs.values() for s in syms}
        paths[f"{part}_txt"] = write_table(directory / f"{part}.txt", obs)
        paths[f"{part}_ali"] = write_table(directory / f"{part}.ali", ali)
        paths[f"{part}_keys"] = list(obs)
    paths["model"] = model                    # the true model (sampling ids: LABELS, OBS)
    paths["templates"] = directory / "templates.conf"
    paths["templates"].write_text(TEMPLATES)
    paths["other_templates"] = directory / "other.conf"
    paths["other_templates"].write_text(OTHER_TEMPLATES)
    return paths


def true_decode(paths, part="test"):
    """Labels the true model decodes (max-marginal) for a part's utterances, as
    {utt: [label, ...]}: the best any estimator can do on average."""
    from rhmmtk.models.rhmm.decoder import decode

    obs = read_table(paths[f"{part}_txt"])
    seqs = [np.array([OBS.index(s) for s in syms]) for syms in obs.values()]
    labels, _, _ = decode(paths["model"].operators(), seqs)
    return {k: [LABELS[j] for j in lab] for k, lab in zip(obs, labels)}


def read_table(path):
    out = {}
    for line in open(path):
        parts = line.split()
        if parts:
            out[parts[0]] = parts[1:]
    return out


def h5_datasets(path):
    """{name: array} of every dataset in an HDF5 file."""
    import h5py

    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out[name] = obj[()]
        f.visititems(visit)
    return out


def archive_arrays(path):
    """{utterance id: array} of an rhmmtk archive, in stored order."""
    from rhmmtk.io.archive import Archive

    with Archive(path) as ar:
        return dict(ar.items())


def h5_attrs(path):
    import h5py

    with h5py.File(path, "r") as f:
        return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}


def sample_fast(model, count, rng):
    """Draw `count` sequences from an RHMM like RHMM.sample (same distribution, another
    random stream), one time step at a time for all running sequences at once, so the
    consistency tests can afford 10^4-10^5 sequences. Returns [(labels, obs, hidden)]."""
    l, m, n = model.shape
    first = model.pi.ravel() / model.pi.sum()
    nxt = np.concatenate([model.t.transpose(0, 3, 1, 2).reshape(l, m, l * m),
                          model.f[:, :, None]], axis=2)
    cum_next = np.cumsum(nxt, axis=2)
    cum_next /= cum_next[:, :, -1:]
    cum_emit = np.cumsum(model.o.transpose(0, 2, 1), axis=2)
    cum_emit /= cum_emit[:, :, -1:]
    idx = np.arange(count)
    A, H = np.divmod(rng.choice(l * m, size=count, p=first), m)
    seq, lab, hid, obs = [], [], [], []
    while idx.size:
        X = np.minimum((cum_emit[A, H] <= rng.random(idx.size)[:, None]).sum(1), n - 1)
        seq.append(idx)
        lab.append(A)
        hid.append(H)
        obs.append(X)
        k = (cum_next[A, H] <= rng.random(idx.size)[:, None]).sum(1)
        go = k < l * m                        # k = l * m: the sequence stops
        idx = idx[go]
        A, H = np.divmod(k[go], m)
    seq = np.concatenate(seq)
    order = np.argsort(seq, kind="stable")    # by sequence, steps in order within each
    lengths = np.bincount(seq, minlength=count)
    cuts = np.cumsum(lengths)[:-1]
    parts = [np.split(np.concatenate(v)[order], cuts) for v in (lab, obs, hid)]
    return list(zip(*parts))
