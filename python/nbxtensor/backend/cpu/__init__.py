"""nbxtensor.backend.cpu: host work on every core: the pool and the BLAS numpy calls."""

from . import blas, pool

__all__ = ["blas", "pool"]
