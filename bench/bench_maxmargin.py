#!/usr/bin/env python3
"""Benchmark: one FOBOS iteration of train-maxmargin over 15,000 NETtalk words against a
lower bound measured in the same run.

The words are the recipe's training split (rhmmtk.corpora.nettalk.split, as
recipes/nettalk/local/prepare_nettalk.py makes it, seed 1: a seeded permutation of the
dictionary, the first 15,000). One iteration of the
batch algorithm (paper 002, algorithm 1; `--batch-words 0`) is: the loss-augmented
second-order Viterbi over every word with the subgradient accumulated (the hot path),
the gradient step, and one singular-value thresholding of H. It is timed from a trained
point (a few iterations in, so H is dense and the argmax paths are not trivial).

Lower bound: the Viterbi must, at every padded position j, combine every candidate triple
(o, p, q) of bi-symbols once -- K_{j-2} K_{j-1} K_j add-and-compare steps, counted from the
actual words and bi-symbols. Their floor is the time a compiled loop takes for the same
number of add-and-max steps on contiguous memory (measured here, best of several runs).
The thresholding needs at least the Gram matrix H^T H of the (nb^2 x nb) H, timed as a
bare GEMM of that shape. Bound = the two added. Ratio = iteration time / bound. The
stochastic form (`--batch-words 500`: 30 steps, 30 thresholdings per pass) is timed too,
against the same Viterbi floor plus 30 Gram GEMMs.

  python bench/bench_maxmargin.py [--data nettalk.data] [--words 15000] [--repeats 3]
  python bench/bench_maxmargin.py --smoke    # seconds: a small generated dictionary
"""
import numpy as np

import options  # bench/options.py: the options every benchmark shares
from timing import best_of  # bench/timing.py


def nettalk_words(path, words):
    """(letters, phonemes) of the recipe's `words` training words."""
    from rhmmtk.corpora.nettalk import read_dictionary, split

    train = split(read_dictionary(path), options.nettalk_sizes(words), seed=1)["train"]
    return [(letters, phonemes) for _, letters, phonemes in train]


def main():
    ap = options.parser(__doc__, nettalk=15000)
    args = options.parse(ap, dict(words=150))

    import numba

    from rhmmtk.models.maxmargin import fobos, prox
    from rhmmtk.models.trigram import Batch, BiSymbols, hinge_subgradient

    with options.work_dir(args, "rhmmtk-bench-maxmargin-") as work:
        data = nettalk_words(options.nettalk_data(args, work), args.words)
    letters = sorted({c for w, _ in data for c in w})
    phones = sorted({c for _, p in data for c in p})
    li, pi = {c: i for i, c in enumerate(letters)}, {c: i for i, c in enumerate(phones)}
    obs = [np.array([li[c] for c in w]) for w, _ in data]
    lab = [np.array([pi[c] for c in p]) for _, p in data]
    bis = BiSymbols.from_corpus(obs, lab, len(letters))
    batch = Batch(bis, obs, lab)
    nb = bis.nb
    print(f"{len(data)} words, {len(batch.inputs)} letters, {nb - 2} bi-symbols "
          f"(+2 pads), H {nb * nb} x {nb}; machine shared and loaded: read ratios only")

    # a trained point: a few stochastic FOBOS passes
    H, _ = fobos(bis, batch, "nuclear", 3e-3, 100.0, 2, batch_words=500)

    def batch_iteration():
        loss, errors, G = hinge_subgradient(H, bis, batch)
        prox(H - (1.0 / len(batch)) * G, "nuclear", 3e-3)

    def stochastic_pass():
        fobos(bis, batch, "nuclear", 3e-3, 100.0, 1, batch_words=500)

    hinge_subgradient(H, bis, batch)            # compile
    t_iter = best_of(batch_iteration, args.repeats)[0]
    t_vit = best_of(lambda: hinge_subgradient(H, bis, batch), args.repeats)[0]
    t_pass = best_of(stochastic_pass, max(1, args.repeats - 1))[0]

    # the Viterbi's unavoidable add-and-compare steps
    steps = 0
    for w in range(len(batch)):
        x = batch.inputs[batch.offsets[w]:batch.offsets[w + 1]]
        k = np.concatenate([[1, 1], bis.count[x], [1]])
        steps += int(np.sum(k[:-2] * k[1:-1] * k[2:]))

    @numba.njit(cache=True)
    def maxplus(a, b):
        s = -np.inf
        for i in range(len(a)):
            v = a[i] + b[i]
            if v > s:
                s = v
        return s

    rng = np.random.default_rng(0)
    chunk = 1 << 20
    a, b = rng.random(chunk), rng.random(chunk)
    maxplus(a, b)

    def floor_viterbi():
        done = 0
        while done < steps:
            n = min(chunk, steps - done)
            maxplus(a[:n], b[:n])
            done += n

    t_floor = best_of(floor_viterbi, max(3, args.repeats))[0]
    Hc = rng.random((nb * nb, nb))
    Hc.T @ Hc
    t_gram = best_of(lambda: Hc.T @ Hc, max(3, args.repeats))[0]
    lb_batch = t_floor + t_gram
    lb_pass = t_floor + int(np.ceil(len(batch) / 500)) * t_gram
    print(f"Viterbi add-and-compare steps: {steps:,} (floor {t_floor:.3f} s); "
          f"Gram H^T H {t_gram:.3f} s")
    print(f"{'step':44s} {'time':>8s} {'bound':>8s} {'ratio':>6s}")
    print(f"{'loss-augmented Viterbi + subgradient':44s} {t_vit:8.3f} {t_floor:8.3f} "
          f"{t_vit / t_floor:6.2f}")
    print(f"{'FOBOS iteration (batch, paper alg. 1)':44s} {t_iter:8.3f} {lb_batch:8.3f} "
          f"{t_iter / lb_batch:6.2f}")
    print(f"{'FOBOS pass (--batch-words 500)':44s} {t_pass:8.3f} {lb_pass:8.3f} "
          f"{t_pass / lb_pass:6.2f}")
    options.write_json(args, {
        "words": len(data), "viterbi_steps": steps, "viterbi_floor_s": t_floor, "gram_s": t_gram,
        "viterbi_subgradient_s": t_vit, "fobos_iteration_s": t_iter, "fobos_pass_s": t_pass,
        "ratios": {"viterbi": t_vit / t_floor, "iteration": t_iter / lb_batch,
                   "pass": t_pass / lb_pass}})


if __name__ == "__main__":
    main()
