"""Feature templates: text config -> binary features of the four views.

A template is a conjunction of atoms, written `atom*atom*...`, in a view:

  # view     template
  future     x[0]
  future     a[+1]*x[+1]
  past       pp
  destiny    pos

Atoms (i is the current position, N the length):
  a[k]      label a_{i+k}              (boundary value past either end)
  x[k]      observation x_{i+k}
  np        next phone type: the first label after the current run of a_i
  pp        previous phone type: the last label before the current run
  pos       place in the current run: begin, middle, end, single
  runstart  a_{i-1} != a_i (or i = 1)
  runend    a_{i+1} != a_i (or i = N)
  since     positions since the current run of a_i began: 0, 1, ..., 7 (7 = 7 or more)
  until     positions until the current run ends (0 at its last position), capped the same
  third     which third of the current run position i is in: 0, 1, 2 (floor(3 since / run))
  bias      a constant

Every feature is implicitly conjoined with the current label a_i (the estimator
keeps separate matrices per label). The rule that keeps the spectral method
consistent (docs/RHMM.md): a template may read only what its random variable
contains, and `parse` refuses any that reads more:

  future  F1 = (a_i..a_N, x_i..x_N):     a[k>=0], x[k>=0], np, runend, until
  past    P  = (a_1..a_i, x_1..x_{i-1}): a[k<=0], x[k<=-1], pp, runstart, since
  present R  = (a_i, x_i):               a[0], x[0]
  destiny D  = labels, x except x_i:     a[k], x[k!=0], np, pp, pos, runstart, runend,
                                         since, until, third

since, until and third say where i lies inside its phone, which is what the hidden
states of a phone's frames mostly encode (beginning, steady part, transition to the next);
on frames they are the destiny features that let the spectral estimate find those states.

Feature ids are computed, not looked up: the value of a template is a mixed-radix
number of its atoms' values, offset by the template's place in its view. So the
same (labels, observations) always give the same ids, shard by shard.
The skip-future view F2 at i is, by definition, the future view at i+1 (and
nothing after the last position); it is derived, not stored.
"""
import hashlib
import re

import numpy as np

from ...errors import InputError

VIEWS = ("future", "past", "present", "destiny")
_ATOM = re.compile(r"^(a|x)\[([+-]?\d+)\]$|^(np|pp|pos|runstart|runend|since|until|third|bias)$")
# since/until count positions up to this value (longer distances share it): measured on
# festival-timit's dev, caps of 4, 7 and 15 were within 0.1 point of each other.
RUN_CAP = 7


def _allowed(view, atom, k):
    if atom == "bias":
        return True
    if view == "future":
        return (atom in ("a", "x") and k >= 0) or atom in ("np", "runend", "until")
    if view == "past":
        return (atom == "a" and k <= 0) or (atom == "x" and k <= -1) or atom in (
            "pp", "runstart", "since")
    if view == "present":
        return atom in ("a", "x") and k == 0
    if view == "destiny":
        return atom == "a" or (atom == "x" and k != 0) or atom in (
            "np", "pp", "pos", "runstart", "runend", "since", "until", "third")
    return False


class Templates:
    """A parsed template config: per view, a list of templates (each a list of atoms)."""

    def __init__(self, text, path="<templates>"):
        self.text = text
        self.views = {v: [] for v in VIEWS}
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                raise InputError(f"line {lineno}: expected '<view> <atom>[*<atom>...]'", path)
            view, spec = parts
            if view not in VIEWS:
                raise InputError(f"line {lineno}: unknown view {view!r} (one of {', '.join(VIEWS)})",
                                 path)
            atoms = []
            for tok in spec.split("*"):
                mt = _ATOM.match(tok)
                if not mt:
                    raise InputError(f"line {lineno}: unknown atom {tok!r}", path)
                atom = mt.group(1) or mt.group(3)
                k = int(mt.group(2)) if mt.group(2) is not None else 0
                if not _allowed(view, atom, k):
                    raise InputError(
                        f"line {lineno}: template {spec!r} reads {tok}, which the {view} view "
                        f"may not see (it would break the estimator's independence assumptions)",
                        path)
                atoms.append((atom, k))
            self.views[view].append((spec, atoms))
        for v in VIEWS:
            if not self.views[v]:
                raise InputError(f"no template for the {v} view (every view needs at least one)",
                                 path)

    @classmethod
    def read(cls, path):
        from ...io.text import open_input

        with open_input(path) as f:
            return cls(f.read(), path)

    def fingerprint(self):
        canon = "\n".join(f"{v} {spec}" for v in VIEWS for spec, _ in self.views[v])
        return hashlib.sha1(canon.encode()).hexdigest()[:16]

    def columns(self):
        """Column names of the featurized matrix after the label and observation columns."""
        return [f"{v}:{spec}" for v in VIEWS for spec, _ in self.views[v]]

    def view_slices(self):
        out, c = {}, 2
        for v in VIEWS:
            out[v] = (c, c + len(self.views[v]))
            c += len(self.views[v])
        return out

    def featurize(self, labels, obs, num_labels, num_obs):
        """(N, 2 + T) int64 for one sequence: label id, observation id, one feature id
        per template."""
        return self.featurize_many([labels], [obs], num_labels, num_obs)[0]

    def featurize_many(self, labels, obs, num_labels, num_obs):
        """featurize() for many sequences at once (vectorised over all their positions)."""
        lengths = np.array([len(a) for a in labels])
        ctx = _Context(np.concatenate(labels).astype(np.int64),
                       np.concatenate(obs).astype(np.int64), lengths, num_labels, num_obs)
        cols = [ctx.a, ctx.x]
        for v in VIEWS:
            offset = 0
            for _, atoms in self.views[v]:
                value = np.zeros(len(ctx.a), dtype=np.int64)
                card = 1
                for atom, k in atoms:
                    vals, c = ctx.atom(atom, k)
                    value = value * c + vals
                    card *= c
                if offset + card >= 2**62:
                    raise InputError(f"templates of the {v} view have too many values (>2^62)")
                cols.append(value + offset)
                offset += card
        return np.split(np.stack(cols, axis=1), np.cumsum(lengths)[:-1])


class _Context:
    """Atom values at every position of many concatenated sequences (vectorised)."""

    def __init__(self, a, x, lengths, l, n):
        self.a, self.x, self.l, self.n = a, x, l, n
        N = len(a)
        self.N = N
        starts = np.cumsum(lengths) - lengths
        self.offset = np.arange(N) - np.repeat(starts, lengths)    # position within sequence
        self.length = np.repeat(lengths, lengths)
        change = np.ones(N, dtype=bool)
        change[1:] = a[1:] != a[:-1]
        change[self.offset == 0] = True
        self.runstart = change
        end = np.ones(N, dtype=bool)
        end[:-1] = change[1:]
        self.runend = end
        run_id = np.cumsum(change) - 1
        run_label = a[change]
        first_run = run_id[self.offset == 0]                      # first run of each sequence
        seq_first_run = np.repeat(first_run, lengths)
        nruns = np.diff(np.append(first_run, len(run_label)))
        seq_last_run = np.repeat(first_run + nruns - 1, lengths)
        self.pp = np.where(run_id > seq_first_run, run_label[np.maximum(run_id - 1, 0)], l)
        self.np_ = np.where(run_id < seq_last_run,
                            run_label[np.minimum(run_id + 1, len(run_label) - 1)], l)
        run_start = np.flatnonzero(change)
        run_len = np.diff(np.append(run_start, N))
        length_here = np.repeat(run_len, run_len)
        self.since = np.arange(N) - np.repeat(run_start, run_len)
        self.until = length_here - 1 - self.since
        self.third = 3 * self.since // length_here
        # pos: 0 begin, 1 middle, 2 end, 3 single
        self.pos = np.where(change & end, 3, np.where(change, 0, np.where(end, 2, 1)))

    def _shift(self, arr, k, boundary):
        """arr[i + k] within the same sequence, else the boundary value."""
        j = self.offset + k
        ok = (j >= 0) & (j < self.length)
        idx = np.clip(np.arange(self.N) + k, 0, self.N - 1)
        return np.where(ok, arr[idx], boundary)

    def atom(self, atom, k):
        if atom == "a":
            return self._shift(self.a, k, self.l), self.l + 1
        if atom == "x":
            return self._shift(self.x, k, self.n), self.n + 1
        if atom == "since":
            return np.minimum(self.since, RUN_CAP), RUN_CAP + 1
        if atom == "until":
            return np.minimum(self.until, RUN_CAP), RUN_CAP + 1
        if atom == "third":
            return self.third, 3
        if atom == "np":
            return self.np_, self.l + 1
        if atom == "pp":
            return self.pp, self.l + 1
        if atom == "pos":
            return self.pos, 4
        if atom == "runstart":
            return self.runstart.astype(np.int64), 2
        if atom == "runend":
            return self.runend.astype(np.int64), 2
        return np.zeros(self.N, dtype=np.int64), 1


FEATURIZE_POSITIONS = 1 << 18   # positions featurized at a time (bounded memory)


def featurize_file(obs, ali, out, templates_path, labels_path=None, job=None):
    """featurize: codes archive `obs` + alignment `ali` -> featurized archive `out`, one
    block of utterances at a time; `job` keeps one shard (the label table is still the
    whole alignment's, or `labels_path`'s)."""
    import json

    from ...training_data import CorpusReader
    from ...io.archive import ArchiveWriter
    from ...progress import log, progress
    from ...provenance import record
    from ...symbols import SymbolTable

    from ...io.text import check_outputs

    check_outputs(out, inputs=[obs, ali, templates_path, labels_path])
    tpl = Templates.read(templates_path)
    labels = SymbolTable.read(labels_path) if labels_path else None
    reader = CorpusReader(obs, ali, labels, job=job, block_positions=FEATURIZE_POSITIONS)
    l, n = len(reader.label_table), len(reader.obs_table)
    attrs = {
        "templates": tpl.text,
        "template_fingerprint": tpl.fingerprint(),
        "columns": json.dumps(tpl.columns()),
        "view_slices": json.dumps(tpl.view_slices()),
        "observation_fingerprint": reader.obs_table.fingerprint(),
        "label_fingerprint": reader.label_table.fingerprint(),
    }
    symbols = {"observations": reader.obs_table, "labels": reader.label_table}
    positions = 0
    with ArchiveWriter(out, "featurized", record({"templates": templates_path}), symbols,
                       attrs) as w, progress(total=len(reader.keys), desc="featurize") as bar:
        for corpus in reader.blocks():
            for key, mat in zip(corpus.keys, tpl.featurize_many(corpus.labels, corpus.obs, l, n)):
                w.add(key, mat)
            positions += corpus.num_positions
            bar.update(len(corpus))
    log.info("featurized %d utterances, %d positions, %d templates", len(reader.keys),
             positions, len(tpl.columns()))
