"""Sequence-aware metrics and scorers for rhmmtk's scikit-learn estimators, for
GridSearchCV / cross_val_score: per-position accuracy and the phone error rate, and the
scorers on them (`accuracy_scorer`, `per_scorer`)."""
import numpy as np

from .estimator_checks import InvalidInput


def _pairs(y_true, y_pred):
    if len(y_true) != len(y_pred):
        raise InvalidInput(f"{len(y_true)} reference sequences but {len(y_pred)} predicted")
    for i, (r, h) in enumerate(zip(y_true, y_pred)):
        if isinstance(h, str):        # a classifier's prediction: one label, not characters
            r, h = [r], [h]
        yield i, [str(s) for s in r], [str(s) for s in h]


def per_position_accuracy(y_true, y_pred):
    """The fraction of positions whose predicted label is the reference's (the tagging
    accuracy `rhmmtk score` reports)."""
    right = total = 0
    for i, r, h in _pairs(y_true, y_pred):
        if len(r) != len(h):
            raise InvalidInput(f"y[{i}] has {len(r)} labels but the prediction {len(h)}")
        right += sum(a == b for a, b in zip(r, h))
        total += len(r)
    return right / total if total else 0.0


def phone_error_rate(y_true, y_pred, skip=("-", "_")):
    """Phone error rate (S + D + I) / N of the label strings with the `skip` labels (NETtalk's
    silent '-' and '_') removed: HResults' alignment (rhmmtk.scoring.edit_counts)."""
    from .scoring import edit_counts

    errors = total = 0
    for _, r, h in _pairs(y_true, y_pred):
        r = [s for s in r if s not in skip]
        h = [s for s in h if s not in skip]
        c = edit_counts(np.array(r, dtype=str), np.array(h, dtype=str))
        errors += c.S + c.D + c.I
        total += c.N
    return errors / total if total else 0.0


def accuracy_scorer(estimator, X, y):
    """A scorer for GridSearchCV / cross_val_score: per-position accuracy (higher is
    better)."""
    return per_position_accuracy(y, estimator.predict(X))


def per_scorer(estimator, X, y):
    """A scorer for GridSearchCV / cross_val_score: minus the phone error rate (scikit-learn
    maximises scores)."""
    return -phone_error_rate(y, estimator.predict(X))
