"""Symbol tables: the map between symbols (labels, observations) and integer ids.

On disk (see rhmmtk-formats(5)) a table is a text file, one `symbol id` per line,
ids 0..K-1 in order, as Kaldi's words.txt. Inside archives and models it is stored
as a string dataset; its fingerprint lets tools refuse mismatched inputs.
"""
import hashlib

import numpy as np

from .errors import InputError


class SymbolTable:
    def __init__(self, symbols):
        self.symbols = [str(s) for s in symbols]
        self.index = {s: i for i, s in enumerate(self.symbols)}
        if len(self.index) != len(self.symbols):
            dup = next(s for s in self.symbols if self.symbols.count(s) > 1)
            raise InputError(f"symbol {dup!r} appears twice in a symbol table")

    def __len__(self):
        return len(self.symbols)

    def __eq__(self, other):
        return isinstance(other, SymbolTable) and self.symbols == other.symbols

    def __contains__(self, sym):
        return sym in self.index

    def fingerprint(self):
        return hashlib.sha1("\n".join(self.symbols).encode()).hexdigest()[:16]

    def ids(self, syms, path=None, utt=None):
        """Map symbols to ids; an unknown symbol is an InputError naming it."""
        try:
            return np.fromiter((self.index[s] for s in syms), dtype=np.int32, count=len(syms))
        except KeyError as e:
            raise InputError(f"unknown symbol {e.args[0]!r}", path, utt) from None

    def write(self, path):
        from .io.text import open_output

        with open_output(path) as f:
            for i, s in enumerate(self.symbols):
                f.write(f"{s} {i}\n")

    @classmethod
    def read(cls, path):
        from .io.text import symbol_id_lines

        syms = []
        for lineno, sym, i in symbol_id_lines(path):
            if i != len(syms):
                raise InputError(f"line {lineno}: ids must run 0,1,2,... (got {i})", path)
            syms.append(sym)
        return cls(syms)

    # --- HDF5 form ---------------------------------------------------------
    def to_hdf5(self, group, name):
        import h5py

        group.create_dataset(name, data=np.array(self.symbols, dtype=object),
                             dtype=h5py.string_dtype())

    @classmethod
    def from_hdf5(cls, dataset):
        return cls([s.decode() if isinstance(s, bytes) else s for s in dataset[()]])
