"""Tuning m and C (smooth) of SpectralRHMM on a NETtalk subset with scikit-learn's
GridSearchCV and rhmmtk's sequence-aware scorer, then EM with dev selection.
Usage: python examples/nettalk_tuning.py [nettalk.data [words]]   (default: 1500 words)"""
import os
import sys

import numpy as np
from sklearn.model_selection import GridSearchCV, KFold, train_test_split

from rhmmtk import EmRHMM, SpectralRHMM, accuracy_scorer, phone_error_rate

repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
path = sys.argv[1] if len(sys.argv) > 1 else f"{repo}/../shared/data/nettalk/nettalk.data"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1500
rows = [line.split("\t")[:2] for line in open(path) if line.strip()]
rows = [rows[i] for i in np.random.default_rng(1).permutation(len(rows))[:n]]
words, phones = [w for w, _ in rows], [p for _, p in rows]       # "abase", "xbes-"
X, X_test, y, y_test = train_test_split(words, phones, test_size=0.25, random_state=0)

# unknown="frequent": a letter a fold never saw in training is read as its commonest one
grid = GridSearchCV(SpectralRHMM(templates=f"{repo}/recipes/nettalk/conf/templates.conf",
                                 unknown="frequent"),
                    {"m": [2, 8], "smooth": [10.0, 100.0]}, scoring=accuracy_scorer,
                    cv=KFold(3, shuffle=True, random_state=0)).fit(X, y)
for params, score in zip(grid.cv_results_["params"], grid.cv_results_["mean_test_score"]):
    print(f"spectral m={params['m']} C={params['smooth']:g}: cross-validated accuracy "
          f"{100 * score:.2f}%")
best = grid.best_estimator_
print(f"best {grid.best_params_}: test accuracy {100 * best.score(X_test, y_test):.2f}%, "
      f"PER {100 * phone_error_rate(y_test, best.predict(X_test)):.2f}%")

em = EmRHMM(m=2, iters=5, seed=1, unknown="frequent")
em.fit(X[:len(X) * 4 // 5], y[:len(y) * 4 // 5], dev=(X[len(X) * 4 // 5:], y[len(y) * 4 // 5:]))
print(f"EM m=2: best dev iteration {em.best_iteration_}, test accuracy "
      f"{100 * em.score(X_test, y_test):.2f}%")
