"""How many BLAS threads rhmmtk uses: one unless RHMMTK_THREADS says otherwise.

Our matrix products are many and small, and on a shared 2-core machine a second BLAS
thread measured 2-5x slower (bench/README.md). The thread count also changes the order
of a product's sums, so the command line and the Python API must use the same one or
their models differ in the last bits.
"""
import os


def threads():
    return int(os.environ.get("RHMMTK_THREADS", "1"))


def limit_blas_env():
    """Before numpy is imported (a new `rhmmtk` process): the BLAS reads these once."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(threads()))


def blas_threads():
    """A context limiting an already loaded BLAS (a notebook, or the command line run
    in-process by the tests, where numpy came first)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(threads(), user_api="blas")
