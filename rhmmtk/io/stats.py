"""Statistics files: what an accumulation step writes per shard and an estimation step sums.

The gmm-acc-stats / gmm-est pattern (Kaldi): `acc-*` commands write the sums over
their shard's positions, `svd-spectral`, `est-*` and `init-em` add any number of them
(the sums equal one process's over all the data) and estimate. Layout (HDF5):

  /                 attrs: rhmmtk_format="stats", kind, provenance (created_by, created,
                    options, versions), `meta` (JSON: what every file being summed must
                    agree on: fingerprints of the templates, the symbol tables, the
                    projections or model, m, ...), `source` (the absolute path of
                    the input the shard came from), `job` ("K/N", or "" for all of
                    it), `utts`, `positions`
  /symbols/<name>   the label and observation symbol tables
  /data/...         kind-specific datasets (sums and counts), documented in rhmmtk-formats(5)

Kinds: spectral-omega (pass 1 of the spectral estimator), spectral-moments (pass 2),
em-counts (label-level counts for EM's initial model), em-stats (an E-step's expected counts),
cdhmm-init and cdhmm-stats (the CDHMM trainer's), largemargin-risk (a shard's large-margin
risk and subgradient at a point) and largemargin-bundle (the bundle method's state
between est-largemargin steps; never summed).
A file of another kind, another template set or symbol table, another m, another
projections file or model, a shard given twice and a missing shard are InputErrors that
name the file.
"""
import json
import os

from ..errors import InputError
from ..symbols import SymbolTable
from .hdf5 import OpenFile, create_checked, open_h5, read_checked, reading
from .output import write_hdf5

FORMAT = "stats"

# meta key -> what differs when it does (for error messages)
DESCRIBE = {
    "template_fingerprint": "template set",
    "view_slices": "template layout",
    "label_fingerprint": "label symbol table",
    "observation_fingerprint": "observation symbol table",
    "m": "number of hidden states m",
    "projections": "projections file (another svd-spectral run)",
    "model": "model (another iteration or training run)",
    "restarts": "--restarts (bundle restarts)",
}


def write_stats(path, kind, meta, provenance, symbols, data, source, job, utts, positions,
                attrs=None):
    """Write one statistics file atomically. `data`: name -> array (names may contain '/');
    `attrs`: further string attributes (not compared when summing)."""
    with write_hdf5(path) as f:
        f.attrs["rhmmtk_format"] = FORMAT
        f.attrs["kind"] = kind
        for k, v in provenance.items():
            f.attrs[k] = v
        f.attrs["meta"] = json.dumps(meta, sort_keys=True)
        f.attrs["source"] = str(source)
        f.attrs["job"] = "" if job is None else str(job)
        f.attrs["utts"] = int(utts)
        f.attrs["positions"] = int(positions)
        for k, v in (attrs or {}).items():
            f.attrs[k] = v
        g = f.create_group("symbols")
        for name, table in symbols.items():
            table.to_hdf5(g, name)
        for name, arr in data.items():
            create_checked(f, f"data/{name}", arr)


class StatsFile(OpenFile):
    """An open statistics file: .kind, .meta, .source, .job, .utts, .positions, data access."""

    DAMAGED = "statistics file is incomplete or corrupt"

    def __init__(self, path, kind=None):
        self.path = os.fspath(path)
        if self.path != "-" and not os.path.exists(self.path):
            raise InputError("no such statistics file", self.path)
        self.file = open_h5(self.path, "HDF5 statistics file")
        try:
            with reading(self.path, "statistics file is incomplete or corrupt"):
                self._open(kind)
        except BaseException:
            self.close()
            raise

    def _open(self, kind):
        a = self.file.attrs
        fmt = a.get("rhmmtk_format")
        if fmt != FORMAT:
            self.close()
            what = f"an rhmmtk {fmt} file" if fmt else "an HDF5 file not written by rhmmtk"
            raise InputError(f"expected an rhmmtk statistics file, found {what}", self.path)
        try:
            self.kind = str(a["kind"])
            self.meta = json.loads(a["meta"])
            self.source = str(a["source"])
            self.job = str(a["job"])
            self.utts = int(a["utts"])
            self.positions = int(a["positions"])
        except (KeyError, ValueError, TypeError):
            self.close()
            raise InputError("statistics file is incomplete or corrupt (attributes)",
                             self.path) from None
        kinds = (kind,) if isinstance(kind, str) else kind
        if kind is not None and self.kind not in kinds:
            self.close()
            raise InputError(f"expected statistics of kind {' or '.join(kinds)}, found "
                             f"{self.kind}", self.path)
        self.attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in a.items()}


    def __contains__(self, name):
        return f"data/{name}" in self.file

    def __getitem__(self, name):
        with reading(self.path, "statistics file is incomplete or corrupt"):
            if f"data/{name}" not in self.file:
                raise InputError(f"statistics file is incomplete or corrupt (no {name})",
                                 self.path)
            return read_checked(self.file[f"data/{name}"], self.path)

    def group(self, name):
        try:
            return self.file[f"data/{name}"]
        except KeyError:
            raise InputError(f"statistics file is incomplete or corrupt (no {name})",
                             self.path) from None

    def symbols(self, name):
        try:
            with reading(self.path):
                return SymbolTable.from_hdf5(self.file["symbols"][name])
        except (KeyError, InputError):
            raise InputError(f"statistics file has no {name} symbol table (incomplete or "
                             "corrupt)", self.path) from None


def check_meta(meta, want, path, against):
    """Every key of `want` must have the same value in `meta`; else an InputError naming `path`."""
    for key, v0 in want.items():
        v = meta.get(key)
        if v != v0:
            what = DESCRIBE.get(key, key)
            raise InputError(f"statistics made with another {what} than {against} "
                             f"({key} {v} vs {v0})", path)


def check_set(paths, kind):
    """Open every file's header: same kind, same meta, each shard once, no shard missing.

    Returns (meta of the first file, total utts, total positions). Files are closed again;
    the caller re-opens them one at a time to sum (memory: one file at a time).
    """
    if not paths:
        raise InputError("no statistics files given")
    first, seen, shards = None, {}, {}
    utts = positions = 0
    for p in paths:
        with StatsFile(p, kind) as s:
            if first is None:
                first = (p, s.kind, s.meta)
            elif s.kind != first[1]:
                raise InputError(f"statistics of kind {s.kind} cannot be summed with {first[0]}'s "
                                 f"({first[1]})", p)
            else:
                check_meta(s.meta, first[2], p, first[0])
                extra = set(s.meta) - set(first[2])
                if extra:
                    raise InputError(f"statistics record {sorted(extra)}, which {first[0]}'s do "
                                     "not: made by another version or command", p)
            key = (s.source, s.job)
            if key in seen:
                raise InputError(f"the same shard (job {s.job or 'all'} of {s.source}) as "
                                 f"{seen[key]}: a file given twice", p)
            seen[key] = p
            if s.job:
                k, n = (int(v) for v in s.job.split("/"))
                shards.setdefault(s.source, {})[k] = (n, p)
            utts += s.utts
            positions += s.positions
    for source, got in shards.items():
        totals = {n for n, _ in got.values()}
        if len(totals) > 1:
            files = ", ".join(p for _, p in got.values())
            raise InputError(f"shards of {source} from different splits (N = "
                             f"{sorted(totals)}) in {files}")
        n = totals.pop()
        missing = sorted(set(range(1, n + 1)) - set(got))
        if missing:
            some = next(iter(got.values()))[1]
            raise InputError(f"statistics of job{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(f'{k}/{n}' for k in missing)} of {source} missing "
                             f"(have {len(got)} of {n} shards, e.g. {some}): a failed or "
                             "skipped accumulation job?")
    return first[2], utts, positions


def stats_tables(path, kind):
    """(labels, observations) symbol tables of statistics file `path` of `kind`."""
    with StatsFile(path, kind) as sf:
        return sf.symbols("labels"), sf.symbols("observations")
