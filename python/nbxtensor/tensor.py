"""The tensor class: a dtype, a shape, strides in elements, an offset, a device, and storage
shared by its views. Views never copy; exchange with other libraries is DLPack only."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as _np

from nbxtensor._core import tensor as _core
from nbxtensor.dtype import convert as _convert
from nbxtensor.dtype.nbx_dtype import parse_dtype as _parse_dtype

if TYPE_CHECKING:
    from nbxtensor.dtype.nbx_dtype import NBXDtype

Tensor = _core.Tensor
from_dlpack = _core.from_dlpack

# dtypes numpy lacks, made from float32 by the library's own conversions (bit patterns)
_FROM_FLOAT32: dict[str, Callable[[Any], _np.ndarray[Any, Any]]] = {
    "bfloat16": _convert.f32_to_bf16_bits,
    "float8_e4m3fn": _convert.f32_to_fp8_e4m3fn_bits,
    "float8_e5m2": _convert.f32_to_fp8_e5m2_bits,
}


def asarray(obj: object, dtype: str | NBXDtype | None = None) -> Tensor:
    """A tensor from any DLPack producer, numpy array, sequence or scalar.

    Without ``dtype`` a producer's memory is shared (zero-copy) and other objects go through
    ``numpy.asarray``. With ``dtype`` (a table name or alias) the values are converted:
    numpy's dtypes by numpy, bfloat16 and float8 through float32 with the library's
    conversions (round to nearest even). A tensor is returned as is when its dtype already
    matches; converting a tensor to another dtype is refused (that is a cast kernel's work).
    """
    if dtype is None:
        if isinstance(obj, Tensor) or hasattr(obj, "__dlpack__"):
            return from_dlpack(obj)
        return from_dlpack(_np.asarray(obj, order="C"))
    name = _parse_dtype(dtype).table_name
    if isinstance(obj, Tensor):
        if obj.dtype == name:
            return obj
        raise ValueError(f"asarray: the tensor holds {obj.dtype}, not {name}; converting a tensor is a cast, not asarray")
    source = _np.from_dlpack(obj) if hasattr(obj, "__dlpack__") else obj
    if name in _FROM_FLOAT32:
        bits = _FROM_FLOAT32[name](_np.asarray(source, dtype=_np.float32, order="C"))
        return from_dlpack(bits).view_dtype(name)
    try:
        numpy_dtype = _np.dtype(name)
    except TypeError:
        raise ValueError(f"asarray: {name} has no host representation to convert values into") from None
    return from_dlpack(_np.asarray(source, dtype=numpy_dtype, order="C"))


__all__ = ["Tensor", "from_dlpack", "asarray"]
