"""The BLAS numpy calls (OpenBLAS), held to the pool's cores: as many threads as the pool
outside ``parallel_for``, one per piece inside it, so the two never oversubscribe the machine."""

import numpy as _numpy  # noqa: F401  (loads numpy's OpenBLAS, which this module holds)

from nbxtensor._core import blas as _core

library = _core.library
threads = _core.threads
hold_to_pool = _core.hold_to_pool

__all__ = ["library", "threads", "hold_to_pool"]
