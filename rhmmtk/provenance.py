"""What made a file: command line, options, library versions, time.

Every archive and model records this so it can be inspected later
(`rhmmtk info FILE`).
"""
import json
import platform
import shlex
import sys
import time


def versions():
    import h5py
    import numpy
    import scipy

    from . import __version__

    return {
        "rhmmtk": __version__,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "h5py": h5py.__version__,
    }


def command_line():
    argv = list(sys.argv)
    if argv and argv[0].endswith(("__main__.py", "rhmmtk")):
        argv[0] = "rhmmtk"
    return shlex.join(argv)


def record(options=None):
    """A dict of provenance attributes (strings), ready to store as HDF5 attributes."""
    return {
        "created_by": command_line(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "options": json.dumps(options or {}, sort_keys=True, default=str),
        "versions": json.dumps(versions(), sort_keys=True),
    }
