"""The continuous-density families from Python on synthetic frames (three "phones", each a
Gaussian blob in 3-d): ML CDHMMs, large-margin CDHMMs, the frame-tagging HCRF, and HCRF
phone classification of segments.
Usage: python examples/frames.py"""
import numpy as np

from rhmmtk import HcrfClassifier, HcrfFrameTagger, LargeMarginCdhmm, MlCdhmm


def utterances(rng, count):
    """Utterances of runs of 3-8 frames per phone: (frames list, frame-label list)."""
    means = {"aa": [0, 0, 0], "iy": [2, 0, 1], "s": [0, 2, -1]}
    X, y = [], []
    for _ in range(count):
        phones = rng.choice(list(means), size=5)
        labels = [p for p in phones for _ in range(rng.integers(3, 9))]
        X.append(np.array([means[p] for p in labels]) + rng.normal(size=(len(labels), 3)))
        y.append(labels)
    return X, y


rng = np.random.default_rng(0)
X, y = utterances(rng, 20)
X_dev, y_dev = utterances(rng, 8)
ml = MlCdhmm(states=2, mixtures=2, iters=2).fit(X, y)
print(f"ML CDHMM: dev frame accuracy {100 * ml.score(X_dev, y_dev):.1f}%")
lm = LargeMarginCdhmm(init=ml, lam=10, max_iter=3).fit(X, y, dev=(X_dev, y_dev))
print(f"large-margin CDHMM: dev frame accuracy {100 * lm.score(X_dev, y_dev):.1f}%")
tagger = HcrfFrameTagger(init=ml, iters=3).fit(X, y)
print(f"frame-tagging HCRF: dev frame accuracy {100 * tagger.score(X_dev, y_dev):.1f}%")


def segments(X, y):
    """Every run of one label as its own sequence, with that label."""
    out, labels = [], []
    for x, lab in zip(X, y):
        cut = [0] + [i for i in range(1, len(lab)) if lab[i] != lab[i - 1]] + [len(lab)]
        out += [x[s:e] for s, e in zip(cut[:-1], cut[1:])]
        labels += [lab[s] for s in cut[:-1]]
    return out, labels


S, c = segments(X, y)
S_dev, c_dev = segments(X_dev, y_dev)
hcrf = HcrfClassifier(init=ml, constraints="moment", iters=3).fit(S, c)
print(f"HCRF phone classification: dev accuracy {100 * hcrf.score(S_dev, c_dev):.1f}%, "
      f"p(class | first dev segment) {np.round(hcrf.predict_marginals(S_dev[:1])[0], 3)}")
