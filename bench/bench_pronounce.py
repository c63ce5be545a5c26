#!/usr/bin/env python3
"""rhmmtk pronounce of a 100,000-word list with the fastest tagger, against a bound.

    python bench/bench_pronounce.py              # target: 100,000 words < 60 s
    python bench/bench_pronounce.py --smoke      # 2,000 words, a small generated dictionary
    python bench/bench_pronounce.py --list-words 200000 --json pronounce.json

The fastest tagger here is the averaged perceptron on trigrams of (letter, label)
pairs (`train-maxmargin --update perceptron`: one compiled second-order Viterbi over
the whole list, 2 to 18 labels a letter), trained on NETtalk's seed-1 training words
(--words, hand alignment, --iters epochs). The list: every training word and pairs of
them joined ("aardvark" + "inseparably"), --list-words of them, unseen spellings of
seen letters. Timed (best of --repeats, in-process, after a warm-up that compiles):
the whole `pronounce` (letters to observation ids, decoding, labels to phonemes); the
bound is its decoding alone (the Viterbi every tagger of this kind must run), so
ratio = pronounce / decoding is what the rest costs.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import options  # bench/options.py: the options every benchmark shares
from timing import REPO, best_of

sys.path.insert(0, str(REPO))


def word_list(words, n, seed=0):
    """n spellings: the words, then random pairs of them joined."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = list(words[:n])
    while len(out) < n:
        i, j = rng.integers(len(words), size=2)
        out.append(words[i] + words[j])
    return out


def main():
    ap = options.parser(__doc__, nettalk=15000, work=True)
    ap.add_argument("--iters", type=options.positive, default=10,
                    help="perceptron epochs (default: %(default)s)")
    ap.add_argument("--list-words", type=options.positive, default=100_000,
                    help="words to pronounce (default: %(default)s)")
    args = options.parse(ap, dict(words=500, iters=2, list_words=2000))

    from rhmmtk.g2p.pronounce import letter_codes, pronounce
    from rhmmtk.models.maxmargin import MaxMarginOptions, train

    with options.work_dir(args, "rhmmtk-bench-pronounce-") as work:
        train_set = options.nettalk_training(args, work)
        model, _ = train(work / "let.h5", work / "ali",
                         MaxMarginOptions(update="perceptron", iters=args.iters))
    words = word_list([w for _, w, _ in train_set], args.list_words)
    pronounce(model, words[:100])                                  # compile
    codes = letter_codes(model, words)
    t_all, _, entries = best_of(lambda: pronounce(model, words), args.repeats)
    t_dec, _, _ = best_of(lambda: model.decode(codes), args.repeats)
    letters = sum(len(w) for w in words)
    print(f"{len(words)} words, {letters} letters; perceptron on {len(train_set)} words, "
          f"{model.bis.nb - 2} (letter, label) pairs")
    print(f"{'step':<12}{'time s':>10}{'ratio':>8}")
    print(f"{'decoding':<12}{t_dec:>10.2f}{1.0:>8.1f}")
    target = "" if args.smoke else f"  (target 60 s: {'met' if t_all < 60 else 'MISSED'})"
    print(f"{'pronounce':<12}{t_all:>10.2f}{t_all / t_dec:>8.1f}{target}")
    options.write_json(args, {"words": len(words), "letters": letters,
                              "train_words": len(train_set), "decode_s": t_dec,
                              "pronounce_s": t_all, "ratio": t_all / t_dec,
                              "entries": len(entries)})


if __name__ == "__main__":
    main()
