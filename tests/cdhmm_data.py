"""Frame-aligned data sampled from a known CDHMM, for the CDHMM tests."""
import numpy as np

from rhmmtk.io.archive import ArchiveWriter
from rhmmtk.models.cdhmm import CDHMM, natural_from_gaussians
from rhmmtk.provenance import record
from rhmmtk.symbols import SymbolTable


def true_model(rng, P=3, S=2, M=2, D=3, sep=4.0):
    """A CDHMM with well-separated phone means and positive transition probabilities."""
    means = rng.normal(size=(P, S, M, D)) + sep * rng.normal(size=(P, S, 1, D))
    variances = rng.uniform(0.5, 1.5, size=(P, S, M, D))
    w = rng.uniform(0.3, 1.0, size=(P, S, M))
    w /= w.sum(axis=2, keepdims=True)
    trans = np.empty((P, S, 3))
    for p in range(P):
        for j in range(S):
            probs = rng.dirichlet([6, 3, 1]) if j < S - 1 else rng.dirichlet([6, 1e-9, 3])
            if j == S - 1:
                probs = np.array([probs[0], 0.0, probs[2]]) / (probs[0] + probs[2])
            trans[p, j] = np.log(np.where(probs > 0, probs, 1.0))
    big = rng.dirichlet(np.ones(P + 1), size=P)
    labels = SymbolTable([f"ph{i}" for i in range(P)])
    return CDHMM(labels, natural_from_gaussians(means, variances, np.log(w)), trans,
                 np.log(np.full(P, 1.0 / P)), np.log(big[:, :P]), np.log(big[:, P]), "sum",
                 {"means": means, "variances": variances, "logw": np.log(w)})


def sample(model, rng, n_utts=30, min_len=20):
    """(features list, label-id list) sampled from `model`'s HMMs; consecutive phones
    differ so frame labels show every segment."""
    P = model.gaussians["means"].shape[0]
    feats, labels = [], []
    for _ in range(n_utts):
        xs, ys = [], []
        p = rng.integers(P)
        while len(ys) < min_len:
            emit_phone(model, p, rng, xs, ys)
            p = (p + 1 + rng.integers(P - 1)) % P
        feats.append(np.array(xs, dtype=np.float32))
        labels.append(np.array(ys))
    return feats, labels


def emit_phone(model, p, rng, xs, ys):
    """Frames of one visit to phone p (entered at state 0, left by an exit move),
    appended to xs with their label p to ys."""
    g = model.gaussians
    P, S, M, D = g["means"].shape
    j = 0
    while True:
        m = rng.choice(M, p=np.exp(g["logw"][p, j]))
        xs.append(g["means"][p, j, m] + np.sqrt(g["variances"][p, j, m]) * rng.normal(size=D))
        ys.append(p)
        move = rng.choice(3, p=np.exp(model.trans[p, j]) * ([1, 1, 1] if j < S - 1 else [1, 0, 1]))
        if move == 1:
            j += 1
        elif move == 2:
            return


def sample_loop(model, rng, n):
    """n utterances [(features, frame phone ids)] from `model` run as the generative
    phone loop: the first phone from init; after leaving phone q, the end with
    probability final[q], else phone p with bigram[q, p] (q itself included)."""
    P = model.gaussians["means"].shape[0]
    after = np.concatenate([np.exp(model.lm_bigram), np.exp(model.lm_final)[:, None]], 1)
    out = []
    for _ in range(n):
        xs, ys, p = [], [], rng.choice(P, p=np.exp(model.lm_init))
        while p < P:
            emit_phone(model, p, rng, xs, ys)
            p = rng.choice(P + 1, p=after[p])
        out.append((np.array(xs), np.array(ys)))
    return out


def write_data(directory, model, feats, labels, name="train", dim=None):
    fpath, apath = directory / f"{name}.feats.h5", directory / f"{name}.ali"
    with ArchiveWriter(fpath, "features", record({}), attrs={"dim": feats[0].shape[1]}) as w:
        for i, x in enumerate(feats):
            w.add(f"u{i:03d}", x)
    with open(apath, "w") as f:
        for i, y in enumerate(labels):
            f.write(f"u{i:03d} " + " ".join(model.labels.symbols[k] for k in y) + "\n")
    return fpath, apath


def train_and_dev(directory, model, rng, n_train, n_dev):
    """Sampled train and dev sets written into `directory`: ((feats, ali) paths of each,
    and the sampled (feats, labels) of each)."""
    sets = []
    for name, n in (("train", n_train), ("dev", n_dev)):
        feats, labels = sample(model, rng, n)
        sets.append((write_data(directory, model, feats, labels, name), (feats, labels)))
    return sets
