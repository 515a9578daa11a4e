"""``__array_namespace_info__``: what the namespace offers, and where."""

from __future__ import annotations

from typing import Any

from . import _dtypes
from ._creation import DEFAULT_COMPLEX, DEFAULT_FLOAT, DEFAULT_INT

_KIND_NAMES = ("bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating", "numeric")


class Info:
    """The inspection object of the standard's ``__array_namespace_info__()``."""

    def capabilities(self) -> dict[str, Any]:
        """Boolean indexing and data-dependent shapes are served; up to 64 dims (DLPack's cap
        on import, and the library's)."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> str:
        """The host."""
        return "cpu"

    def devices(self) -> list[str]:
        """The host, then each GPU present (``cuda:N``, ``metal:N``, ``vulkan:N``)."""
        from nbxtensor.backend import runtime

        return ["cpu"] + [f"{d['kind']}:{d['index']}" for d in runtime.devices()]

    def default_dtypes(self, *, device: str | None = None) -> dict[str, Any]:
        """float64 for real floats, complex128 for complex ones, int64 for integers and indices."""
        return {
            "real floating": _dtypes.of(DEFAULT_FLOAT),
            "complex floating": _dtypes.of(DEFAULT_COMPLEX),
            "integral": _dtypes.of(DEFAULT_INT),
            "indexing": _dtypes.of(DEFAULT_INT),
        }

    def dtypes(self, *, device: str | None = None, kind: Any = None) -> dict[str, Any]:
        """The namespace's dtypes by name, those of ``kind`` (a kind name, or a tuple) when given."""
        if kind is None:
            return dict(_dtypes.DTYPES)
        return {name: d for name, d in _dtypes.DTYPES.items() if _dtypes.isdtype(d, kind)}


def __array_namespace_info__() -> Info:
    """The namespace's inspection object."""
    return Info()
