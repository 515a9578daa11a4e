"""nbxtensor.array_api: the Python Array API standard (2024.12) over nbxtensor's kernels.

``tensor.__array_namespace__()`` returns this module; array-agnostic code written against
the standard (``xp = x.__array_namespace__()``) runs on nbxtensor tensors, on the host and
on a GPU (``device=``). Every function runs the library's kernels (casts, elementwise ops,
reductions, scans, sorts, gathers, copies); host objects are read by ``asarray``.

What is left out, and why, is listed in docs/ARRAY_API.md (the linalg factorizations and
solvers; fft; complex tensors on CUDA).
"""

from __future__ import annotations

import math as _math

from . import linalg
from ._creation import (
    arange,
    asarray,
    empty,
    empty_like,
    eye,
    from_dlpack,
    full,
    full_like,
    linspace,
    meshgrid,
    ones,
    ones_like,
    tril,
    triu,
    zeros,
    zeros_like,
)
from ._dtypes import DTYPES as _DTYPES
from ._dtypes import astype, can_cast, finfo, iinfo, isdtype, result_type
from ._elementwise import FUNCTIONS as _ELEMENTWISE
from ._elementwise import ceil, clip, conj, floor, imag, positive, real, round, trunc
from ._indexing import take, take_along_axis
from ._info import __array_namespace_info__
from ._linalg import matmul, tensordot, vecdot
from ._manipulation import (
    broadcast_arrays,
    broadcast_to,
    concat,
    expand_dims,
    flip,
    matrix_transpose,
    moveaxis,
    permute_dims,
    repeat,
    reshape,
    roll,
    squeeze,
    stack,
    tile,
    unstack,
)
from ._set import unique_all, unique_counts, unique_inverse, unique_values
from ._statistical import (
    all,
    any,
    argmax,
    argmin,
    argsort,
    count_nonzero,
    cumulative_prod,
    cumulative_sum,
    diff,
    max,
    mean,
    min,
    nonzero,
    prod,
    searchsorted,
    sort,
    std,
    sum,
    var,
    where,
)

__array_api_version__ = "2024.12"

e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None

globals().update(_ELEMENTWISE)
globals().update(_DTYPES)

__all__ = sorted(
    [name for name in globals() if not name.startswith("_") and name not in ("annotations",)]
    + ["__array_api_version__", "__array_namespace_info__"]
)
