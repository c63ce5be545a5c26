"""rhmmtk: refinement HMMs trained by the spectral method or EM.

The library is usable without the command line: see rhmmtk.models.rhmm.operators,
rhmmtk.models.rhmm.decoder, rhmmtk.models.rhmm.spectral, rhmmtk.models.rhmm.em and rhmmtk.io, or the
scikit-learn estimators, one per trainer (`rhmmtk.SpectralRHMM`, `EmRHMM`, `UnigramTagger`,
`MaxMarginTagger`, `HkzTagger`, `CrfTagger`, `SubpatTagger`, `MlCdhmm`, `LargeMarginCdhmm`, `HcrfClassifier`,
`HcrfFrameTagger`) and the scorers for model selection (`accuracy_scorer`, `per_scorer`),
loaded on first use so `import rhmmtk` stays cheap (docs/INTEROP.md, "From Python").
"""
__version__ = "0.1.0"

_LAZY = {"SpectralRHMM": "rhmmtk.models.rhmm.estimators", "EmRHMM": "rhmmtk.models.rhmm.estimators", "UnigramTagger": "rhmmtk.models.rhmm.estimators",
         "open_features":
         "rhmmtk.io.features", "load_model": "rhmmtk.models",
         "MaxMarginTagger": "rhmmtk.models.maxmargin_estimator",
         "HkzTagger": "rhmmtk.models.hkz_estimator", "CrfTagger": "rhmmtk.models.crf_estimator",
         "SubpatTagger": "rhmmtk.models.subpat_estimator",
         "MlCdhmm": "rhmmtk.models.cdhmm_estimator",
         "LargeMarginCdhmm": "rhmmtk.models.cdhmm_estimator",
         "HcrfClassifier": "rhmmtk.models.hcrf.estimator",
         "HcrfFrameTagger": "rhmmtk.models.hcrf.estimator",
         **{name: "rhmmtk.estimator_scorers" for name in (
             "accuracy_scorer", "per_scorer", "per_position_accuracy", "phone_error_rate")}}
__all__ = ["__version__", *_LAZY]


def __dir__():
    # the lazy names too, so tab completion finds them before their first use
    return sorted({*globals(), *_LAZY})


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rhmmtk' has no attribute {name!r}")
