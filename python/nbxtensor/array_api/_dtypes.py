"""The Array API's data types and data-type functions, read from the dtype table.

A data type is a :class:`DType` object named by its table name; it compares equal to that
name, so ``tensor.dtype == float32`` holds for a tensor's ``dtype`` (a table name). complex64
and complex128 are the table's complex dtypes (each part a float32 or a float64).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any

from nbxtensor.dtype import itemsize as _table
from nbxtensor.dtype import promotion as _promotion
from nbxtensor.tensor import Tensor

# the dtypes the namespace offers, in the standard's order
NAMES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "complex64",
    "complex128",
)


class DType:
    """One of the standard's data types: its table name, equal to that name and to itself."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def table_name(self) -> str:
        """The dtype table's name (what every nbxtensor function reads as a dtype)."""
        return self.name

    def __eq__(self, other: object) -> builtins.bool:
        if isinstance(other, DType):
            return other.name == self.name
        if isinstance(other, str):
            return other == self.name
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"nbxtensor.array_api.{self.name}"

    __str__ = __repr__


DTYPES = {name: DType(name) for name in NAMES}

# the standard's kinds, by the table's kind of each dtype
_KINDS: dict[str, Callable[[str], builtins.bool]] = {
    "bool": lambda kind: kind == "bool",
    "signed integer": lambda kind: kind == "int",
    "unsigned integer": lambda kind: kind == "uint",
    "integral": lambda kind: kind in ("int", "uint"),
    "real floating": lambda kind: kind == "float",
    "complex floating": lambda kind: kind == "complex",
    "numeric": lambda kind: kind in ("int", "uint", "float", "complex"),
}


def name_of(dtype: Any, what: str = "dtype") -> str:
    """The table name of a dtype argument: a :class:`DType`, a table name, or anything the
    library reads as a dtype (an NBXDtype, a numpy dtype)."""
    if isinstance(dtype, DType):
        return dtype.name
    if isinstance(dtype, str) and dtype in DTYPES:
        return dtype
    from nbxtensor.dtype.nbx_dtype import parse_dtype

    try:
        return parse_dtype(dtype).table_name
    except ValueError:
        pass
    try:
        import numpy as np

        return parse_dtype(np.dtype(dtype).name).table_name
    except (TypeError, ValueError):
        raise ValueError(f"{what}: {dtype!r} is not a data type") from None


def of(name: str) -> DType:
    """The namespace's object for a table name; a dtype the namespace leaves out is refused."""
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"{name} is not one of the Array API namespace's data types ({', '.join(NAMES)})") from None


def kind(name: str) -> str:
    """The table's kind of a dtype (bool, int, uint, float, complex, packed)."""
    return _table.kind(name)


def _dtype_of(arg: Any) -> str:
    return arg.dtype if isinstance(arg, Tensor) else name_of(arg)


@dataclass(frozen=True)
class finfo_object:
    """Machine limits of a floating dtype (the standard's ``finfo``): for a complex dtype, those
    of its parts' real dtype (``dtype`` is that real dtype)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


@dataclass(frozen=True)
class iinfo_object:
    """Machine limits of an integer dtype (the standard's ``iinfo``)."""

    bits: int
    max: int
    min: int
    dtype: DType


def finfo(type: Any, /) -> finfo_object:  # noqa: A002 - the standard's name
    """The limits of a floating dtype (or of an array's dtype), from the dtype table; a complex
    dtype's are its part's (complex64: float32's)."""
    name = _dtype_of(type)
    if kind(name) == "complex":
        name = _promotion.complex_part(name)
    entry = _table.entry(name)
    facts = entry.get("float")
    if facts is None:
        raise ValueError(f"finfo: {name} is not a floating dtype")
    bias = (1 << (facts["exponent_bits"] - 1)) - 1
    return finfo_object(
        bits=8 * _table.itemsize(name),
        eps=2.0 ** -facts["mantissa_bits"],
        max=float(facts["max"]),
        min=-float(facts["max"]),
        smallest_normal=2.0 ** (1 - bias),
        dtype=of(name),
    )


def iinfo(type: Any, /) -> iinfo_object:  # noqa: A002 - the standard's name
    """The limits of an integer dtype (or of an array's dtype), from its width in the table."""
    name = _dtype_of(type)
    bits = 8 * _table.itemsize(name)
    table_kind = kind(name)
    if table_kind == "int":
        return iinfo_object(bits=bits, max=(1 << (bits - 1)) - 1, min=-(1 << (bits - 1)), dtype=of(name))
    if table_kind == "uint":
        return iinfo_object(bits=bits, max=(1 << bits) - 1, min=0, dtype=of(name))
    raise ValueError(f"iinfo: {name} is not an integer dtype")


def isdtype(dtype: Any, kind: Any) -> builtins.bool:  # noqa: A002
    """Whether ``dtype`` is of ``kind``: a kind's name ("bool", "signed integer", "unsigned
    integer", "integral", "real floating", "complex floating", "numeric"), a dtype, or a tuple
    of them."""
    name = name_of(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str) and k in _KINDS:
            if _KINDS[k](_table.kind(name)):
                return True
        elif name_of(k, "isdtype kind") == name:
            return True
    return False


def result_type(*arrays_and_dtypes: Any) -> DType:
    """The dtype the standard's promotion gives arrays, dtypes and (weak) Python scalars."""
    names = [_dtype_of(a) for a in arrays_and_dtypes if not isinstance(a, (builtins.bool, int, float, complex))]
    scalars = [a for a in arrays_and_dtypes if isinstance(a, (builtins.bool, int, float, complex))]
    if not names:
        raise ValueError("result_type: at least one array or dtype is needed (Python scalars alone have no dtype)")
    result = names[0]
    for name in names[1:]:
        result = _promotion.binary_result(result, name)
    for scalar in scalars:
        result = _promotion.scalar_result(result, scalar)
    return of(result)


def can_cast(from_: Any, to: Any, /) -> builtins.bool:
    """Whether the promotion rules cast ``from_`` (a dtype or an array) to ``to``: the two
    promote to ``to``."""
    source, target = _dtype_of(from_), name_of(to)
    if source == target:
        return True
    try:
        return _promotion.binary_result(source, target) == target and (kind(source) == "bool") == (kind(target) == "bool")
    except ValueError:
        return False


def astype(x: Tensor, dtype: Any, /, *, copy: builtins.bool = True, device: str | None = None) -> Tensor:
    """``x`` converted to ``dtype`` by the cast kernel (itself when ``copy`` is False and
    nothing changes), on ``device`` when given."""
    out = x.astype(name_of(dtype), copy=copy)
    return out if device is None or device == out.device else out.to(device)
