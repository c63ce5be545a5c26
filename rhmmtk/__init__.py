"""rhmmtk: refinement HMMs trained by the spectral method or EM.

The library is usable without the command line: see rhmmtk.models.rhmm.operators,
rhmmtk.models.rhmm.decoder, rhmmtk.models.rhmm.spectral, rhmmtk.models.rhmm.em and
rhmmtk.io, or the scikit-learn-style estimators `rhmmtk.SpectralRHMM`, `rhmmtk.EmRHMM`
and `rhmmtk.UnigramTagger` (rhmmtk.models.rhmm.estimators), loaded on first use so
`import rhmmtk` stays cheap.
"""
__version__ = "0.1.0"

_ESTIMATORS = "rhmmtk.models.rhmm.estimators"
_LAZY = {"SpectralRHMM": _ESTIMATORS, "EmRHMM": _ESTIMATORS, "UnigramTagger": _ESTIMATORS,
         "open_features": "rhmmtk.io.features", "load_model": "rhmmtk.models"}
__all__ = ["__version__", *_LAZY]


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rhmmtk' has no attribute {name!r}")
