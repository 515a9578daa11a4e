"""nbxtensor.dtype: the dtype table and everything read from it.

Submodules: ``itemsize`` (widths, kinds, codes), ``convert`` (host conversions),
``promotion`` (type promotion), ``policy`` (precision policies), ``outputs`` (output dtypes
under a policy), ``nbx_dtype`` (the frozen enum).
"""

from . import convert, itemsize, nbx_dtype, outputs, policy, promotion

__all__ = ["convert", "itemsize", "nbx_dtype", "outputs", "policy", "promotion"]
