"""rhmmtk: refinement HMMs trained by the spectral method or EM.

The library is usable without the command line: see rhmmtk.operators,
rhmmtk.forward_backward, rhmmtk.spectral, rhmmtk.em and rhmmtk.io.
"""
__version__ = "0.1.0"
