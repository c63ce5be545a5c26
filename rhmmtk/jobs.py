"""`--job K/N`: the K-th of N deterministic shards of an utterance list.

Kaldi's contract (`$cmd JOB=1:$nj log/x.JOB.log prog --job JOB/$nj ...`):
every per-utterance command can process one shard of its input, and N shard
outputs together cover every utterance exactly once.

The split: shard K (1-based) of N holds the contiguous block of utterances
[floor((K-1) U / N), floor(K U / N)) of the U utterances, in the order the
command would process them without --job (the input archive's or list's order).
Contiguous blocks keep the input order, so concatenating the shards' outputs
1..N (alignments, archives) gives the single-process output; shard sizes differ
by at most one utterance.
"""
import re

from .errors import InputError

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class Job:
    """Shard `index` (1-based) of `total`."""

    def __init__(self, index, total):
        if total < 1 or not 1 <= index <= total:
            raise InputError(f"--job {index}/{total}: need 1 <= K <= N")
        self.index, self.total = index, total

    @classmethod
    def parse(cls, spec):
        """'K/N' -> Job; anything else is an InputError."""
        m = _SPEC.match(str(spec))
        if not m:
            raise InputError(f"--job {spec!r}: expected K/N, e.g. 2/8 (shard 2 of 8)")
        return cls(int(m.group(1)), int(m.group(2)))

    def bounds(self, count):
        """[lo, hi) of this shard among `count` items."""
        return (self.index - 1) * count // self.total, self.index * count // self.total

    def select(self, items):
        """This shard's items of a list (in order)."""
        items = list(items)
        lo, hi = self.bounds(len(items))
        return items[lo:hi]

    def __str__(self):
        return f"{self.index}/{self.total}"

    def __repr__(self):
        return f"Job({self.index}, {self.total})"

    def __eq__(self, other):
        return isinstance(other, Job) and (self.index, self.total) == (other.index, other.total)

    def __hash__(self):
        return hash((self.index, self.total))


def select(items, job):
    """`items` itself when job is None, else the job's shard of them."""
    return list(items) if job is None else job.select(items)


def select_groups(items, group_of, job):
    """Shard whole groups: items sharing `group_of(item)` (e.g. a speaker) stay together.

    Groups are ordered by first appearance and split into N contiguous blocks of groups;
    the shard holds its groups' items in input order. Used where a per-group statistic
    (per-speaker CMVN) must see all of a group's utterances.
    """
    items = list(items)
    if job is None:
        return items
    groups = list(dict.fromkeys(group_of(x) for x in items))
    mine = set(job.select(groups))
    return [x for x in items if group_of(x) in mine]
