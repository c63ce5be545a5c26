"""NETtalk letter-to-phoneme from Python: rhmmtk's scikit-learn-style API in ten lines.
Usage: python examples/nettalk.py [nettalk.data]   (default: ../shared beside the repository)"""
import os
import sys

import numpy as np
from rhmmtk import SpectralRHMM

repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
path = sys.argv[1] if len(sys.argv) > 1 else f"{repo}/../shared/data/nettalk/nettalk.data"
words, phones = zip(*(line.split("\t")[:2] for line in open(path)))   # "abase", "xbes-"
order = np.random.default_rng(1).permutation(len(words))
train, test = order[: len(words) * 3 // 4], order[len(words) * 3 // 4:]
model = SpectralRHMM(m=32, smooth=100, templates=f"{repo}/recipes/nettalk/conf/templates.conf",
                     context=1, min_count=2)       # strings are sequences of characters
model.fit([words[i] for i in train], [phones[i] for i in train])
print(f"per-letter test accuracy {100 * model.score([words[i] for i in test], [phones[i] for i in test]):.2f}%")
print("phonemes of 'rhythm':", "".join(model.predict(["rhythm"])[0]))
model.save("nettalk_spectral32.h5")   # then: rhmmtk info nettalk_spectral32.h5; rhmmtk decode ...
