"""Dev selection (rhmmtk.selection): best rows and iterations on hand-made tables."""
import math

import pytest

from rhmmtk.errors import InputError
from rhmmtk.selection import SELECT_KEYS, best_index, best_iteration, best_row, main, stalled


def test_best_index_highest_lowest_first_of_equals_and_missing():
    rows = [{"a": 1.0}, {"a": 3.0, "b": 2.0}, {"b": 1.0}, {"a": 3.0, "b": 1.0},
            {"a": math.nan, "b": 0.5}]
    assert best_index(rows, "a") == 1            # 3.0 twice: the first
    assert best_index(rows, "a", lower=True) == 0
    assert best_index(rows, "b", lower=True) == 4
    assert best_index(rows, "b") == 1
    assert best_index(rows, "c") is None
    assert best_index([{"a": math.nan}], "a") is None


def test_best_iteration_by_each_select_key():
    hist = [{"iter": 1, "objective": 9.0, "dev_acc": 70.0, "dev_per": 30.0},
            {"iter": 2, "objective": 7.0, "dev_acc": 72.0, "dev_per": 29.0},
            {"iter": 3, "objective": 8.0, "dev_acc": 71.0, "dev_per": 28.0},
            {"iter": 4, "objective": 7.0, "dev_acc": 72.0, "dev_per": 31.0}]
    assert best_iteration(hist, *SELECT_KEYS["accuracy"]) == 2
    assert best_iteration(hist, *SELECT_KEYS["per"]) == 3
    assert best_iteration(hist, *SELECT_KEYS["objective"]) == 2
    assert best_iteration([{"iter": 1}, {"iter": 2}]) == 2     # no dev scores: the last


def test_stalled_counts_scored_rows_after_the_first_best():
    acc = lambda *v: [{"iter": i, "dev_acc": a} for i, a in enumerate(v)]
    hist = acc(0.5, 0.7, None, 0.6, 0.7, None, 0.65)
    # best: 0.7 at row 1 (a later equal is no gain); scored after it: 0.6, 0.7, 0.65
    assert stalled(hist, 3) and stalled(hist, 2) and stalled(hist, 1)
    assert not stalled(hist, 4)
    assert not stalled(hist, 0)                                     # 0: never stop
    assert not stalled(acc(0.5, 0.6, 0.7), 1)                       # still improving
    assert stalled(acc(0.5, 0.6, 0.7, 0.7), 1)
    assert not stalled(acc(None, None, None), 1)                    # nothing scored
    assert not stalled(acc(0.5, 0.5, math.nan, math.nan), 2)        # NaN is not a score
    assert stalled([{"dev_per": 20.0}, {"dev_per": 21.0}], 1, "dev_per", lower=True)


def test_best_row_across_tables_and_the_recipe_entry(tmp_path, capsys):
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    a.write_text("lambda\titer\tdev_per\n1e3\t1\t30.5\n1e3\t2\t29.25\n")
    b.write_text("lambda\titer\tdev_per\n1e4\t1\t31\n1e4\t2\t29.250\n")
    row = best_row([a, b], "dev_per", lower=True)
    assert row["table"] == a and row["iter"] == 2.0       # tie 29.25 = 29.250: first table
    assert row["raw"]["lambda"] == "1e3"
    assert main(["--lower", "dev_per", "lambda,iter,table", str(b), str(a)]) == 0
    assert capsys.readouterr().out == f"1e4\t2\t{b}\n"
    assert main(["dev_per", "lambda", str(a), str(b)]) == 0
    assert capsys.readouterr().out == "1e4\n"
    assert main(["dev_per", "nope", str(a)]) == 1
    assert "no column 'nope'" in capsys.readouterr().err
    (tmp_path / "bad.tsv").write_text("x\ty\n1\n")
    with pytest.raises(InputError, match="line 2 has 1 fields"):
        best_row([tmp_path / "bad.tsv"], "x")
