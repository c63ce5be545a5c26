"""NETtalk's competitors from Python: the max-margin tagger (nuclear norm), the averaged
perceptron, the HKZ spectral HMM and the CRF peer, on a NETtalk subset.
Usage: python examples/nettalk_competitors.py [nettalk.data [words]]   (default: 1500)"""
import os
import sys

import numpy as np
from sklearn.model_selection import train_test_split

from rhmmtk import CrfTagger, HkzTagger, MaxMarginTagger

repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
path = sys.argv[1] if len(sys.argv) > 1 else f"{repo}/../shared/data/nettalk/nettalk.data"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1500
rows = [line.split("\t")[:2] for line in open(path) if line.strip()]
rows = [rows[i] for i in np.random.default_rng(1).permutation(len(rows))[:n]]
X, X_test, y, y_test = train_test_split([w for w, _ in rows], [p for _, p in rows],
                                        test_size=0.25, random_state=0)
for name, model in [("max-margin (nuclear)", MaxMarginTagger(reg="nuclear", iters=8)),
                    ("averaged perceptron", MaxMarginTagger(update="perceptron", iters=5)),
                    ("HKZ m=16", HkzTagger(m=16)),
                    ("CRF", CrfTagger(window=2, iters=50))]:
    model.set_params(unknown="frequent").fit(X, y)     # letters unseen in training: commonest
    print(f"{name}: test accuracy {100 * model.score(X_test, y_test):.2f}%")
model.save("nettalk_crf.h5")           # then: rhmmtk info nettalk_crf.h5; rhmmtk decode ...
