"""Dev-set scoring of R-HMMs for the iterative trainers' selection (rhmmtk.selection):
the per-position accuracy of each iteration's model on the dev data."""
import numpy as np

from ...errors import InputError


def rhmm_dev_scorer(dev_obs, dev_ali, labels, observations, options=None):
    """A function of an RHMM giving its per-position accuracy on the dev set (None without
    one), decoded with `options` (RhmmDecodeOptions; default: the decoder's defaults).
    The dev observations must use the training observation table."""
    if not dev_obs:
        return None
    from ...training_data import read_corpus
    from .decoder import decode
    from .operators import RhmmDecodeOptions

    dev = read_corpus(dev_obs, dev_ali, labels, strict=False)
    if dev.obs_table != observations:
        raise InputError("observation symbol table differs from the training data's "
                         f"({dev.obs_table.fingerprint()} vs {observations.fingerprint()}): "
                         "features made with another table or options", dev_obs)
    ref = np.concatenate(dev.labels)
    opts = RhmmDecodeOptions() if options is None else options

    def score(rhmm):
        hyp, _, _ = decode(rhmm.operators(labels, observations), dev.obs, opts.batch_mb,
                           beam=opts.beam, precision=opts.precision)
        return float(np.mean(np.concatenate(hyp) == ref))

    return score
