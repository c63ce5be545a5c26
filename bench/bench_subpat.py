#!/usr/bin/env python3
"""Decoding speed of the sub-pattern trigram tagger (train-subpat), against a bound.

    python bench/bench_subpat.py              # NETtalk's 15,000 training words
    python bench/bench_subpat.py --smoke      # 500 words of a small generated dictionary

Trained on NETtalk's seed-1 training words (--words, hand alignment, --iters epochs),
twice with the same letter templates (--window, --ngram; the recipe's choice): the
full model (graphone pairs within +-1, label trigram; train-subpat's defaults) and its
first-order reduction (--label-order 1 --graphone-window -1: the letter n-grams with
the label and label bigrams only, a first-order chain). Both decode the same words
(the training words, in-process, best of --repeats after a warm-up that compiles).
The bound is the first-order model's decoding: what any tagger with these letter
features must do; ratio = full / first-order is what the second order and the
graphone features cost.

Training (the paper's templates, --features paper): one epoch of the averaged perceptron
(a Viterbi per word, the bound) against one of the CRF's SGD (train-subpat --loss crf:
forward-backward and the expected features per word) and one of the averaged CRF's
(--average: the same, each gradient also added into the average's accumulator); ratio =
CRF / perceptron, all after a warm-up epoch that compiles.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import options  # bench/options.py: the options every benchmark shares
from timing import REPO, best_of

sys.path.insert(0, str(REPO))


def main():
    ap = options.parser(__doc__, nettalk=15000, work=True)
    ap.add_argument("--iters", type=options.positive, default=3,
                    help="perceptron epochs (default: %(default)s)")
    ap.add_argument("--window", type=int, default=5, help="(default: %(default)s)")
    ap.add_argument("--ngram", type=options.positive, default=5, help="(default: %(default)s)")
    args = options.parse(ap, dict(words=500, iters=1))

    from rhmmtk.models.subpat import SubpatOptions, train
    from rhmmtk.models.trigram import Batch, read_training
    from rhmmtk.training_data import read_corpus

    base = SubpatOptions(window=args.window, ngram=args.ngram, iters=args.iters)
    first = SubpatOptions(window=args.window, ngram=args.ngram, iters=args.iters,
                          label_order=1, graphone_window=-1)
    with options.work_dir(args, "rhmmtk-bench-subpat-") as work:
        train_set = options.nettalk_training(args, work)
        full, _ = train(work / "let.h5", work / "ali", base)
        chain, _ = train(work / "let.h5", work / "ali", first)
        obs = read_corpus(work / "let.h5", work / "ali").obs
        paper_model, _ = train(work / "let.h5", work / "ali", SubpatOptions(features="paper",
                                                                            iters=1))
        _, _, gold = read_training(work / "let.h5", work / "ali")
    t_perceptron, t_crf, t_avg = epochs(paper_model, gold, args.repeats)
    batch = Batch(full.bis, obs)
    full.label_paths(batch.subset([0]))
    chain.label_paths(batch.subset([0]))                 # compile
    t_full, _, _ = best_of(lambda: full.label_paths(batch), args.repeats)
    t_chain, _, _ = best_of(lambda: chain.label_paths(batch), args.repeats)
    letters = len(batch.inputs)
    print(f"{len(obs)} words, {letters} letters; {full.bis.nb - 2} (letter, label) pairs; "
          f"templates {len(full.templates)} (first order: {len(chain.templates)})")
    print(f"{'decoder':<24}{'time s':>10}{'letters/s':>12}{'ratio':>8}")
    print(f"{'first order (bound)':<24}{t_chain:>10.3f}{letters / t_chain:>12.0f}{1.0:>8.2f}")
    print(f"{'second order, graphone':<24}{t_full:>10.3f}{letters / t_full:>12.0f}"
          f"{t_full / t_chain:>8.2f}")
    print(f"{'training epoch (paper)':<24}{'time s':>10}{'letters/s':>12}{'ratio':>8}")
    print(f"{'perceptron (bound)':<24}{t_perceptron:>10.3f}{letters / t_perceptron:>12.0f}"
          f"{1.0:>8.2f}")
    print(f"{'crf (sgd)':<24}{t_crf:>10.3f}{letters / t_crf:>12.0f}"
          f"{t_crf / t_perceptron:>8.2f}")
    print(f"{'crf (averaged sgd)':<24}{t_avg:>10.3f}{letters / t_avg:>12.0f}"
          f"{t_avg / t_perceptron:>8.2f}")
    options.write_json(args, {"words": len(obs), "letters": letters, "first_order_s": t_chain,
                              "full_s": t_full, "ratio": t_full / t_chain,
                              "perceptron_epoch_s": t_perceptron, "crf_epoch_s": t_crf,
                              "crf_ratio": t_crf / t_perceptron, "crf_average_epoch_s": t_avg,
                              "crf_average_ratio": t_avg / t_perceptron})


def epochs(model, batch, repeats):
    """Best-of-`repeats` seconds of one perceptron epoch, one CRF epoch and one averaged
    CRF epoch on `batch` (from zero weights, no dev scoring), after a warm-up epoch of
    each."""
    from rhmmtk.models.subpat import averaged_perceptron
    from rhmmtk.models.subpat_crf import crf_sgd

    def perceptron():
        averaged_perceptron(model, batch, 1, 0)

    def crf(average=False):
        crf_sgd(model, batch, 1, 0, 1.0, 0.1, average=average)

    def averaged_crf():
        crf(average=True)

    timed = (perceptron, crf, averaged_crf)
    for f in timed:
        f()
    return tuple(best_of(f, repeats)[0] for f in timed)


if __name__ == "__main__":
    main()
