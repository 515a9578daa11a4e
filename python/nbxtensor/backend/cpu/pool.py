"""The CPU pool: one contiguous piece of host work per thread, inline under a threshold
measured once per kind of work.

``parallel_for(n, work, kind, probe)`` calls ``work(start, stop)`` on pieces of ``0..n``;
the first call of a kind measures where splitting starts to pay by timing ``probe(size)``
(a function returning the work for ``size`` elements) inline and split. Pieces run with the
GIL released around the pool and taken per piece; an exception in a piece reaches the caller
unchanged; a call from inside a piece runs inline.
"""

from nbxtensor._core import pool as _core

from . import blas as _blas

threads = _core.threads
measured_threads = _core.measured_threads
set_threads = _core.set_threads
parallel_for = _core.parallel_for
threshold = _core.threshold
forget_thresholds = _core.forget_thresholds

_blas.hold_to_pool()

__all__ = ["threads", "measured_threads", "set_threads", "parallel_for", "threshold", "forget_thresholds"]
