"""Widths, kinds and the codes of other formats, read from the dtype table by table name."""

from nbxtensor._core import itemsize as _core

itemsize = _core.itemsize
kind = _core.kind
from_safetensors = _core.from_safetensors
to_safetensors = _core.to_safetensors
from_autotune_key = _core.from_autotune_key
autotune_key = _core.autotune_key
dlpack_type = _core.dlpack_type
storage_dtype = _core.storage_dtype
representation_bytes = _core.representation_bytes
entry = _core.entry
names = _core.names

__all__ = [
    "itemsize",
    "kind",
    "from_safetensors",
    "to_safetensors",
    "from_autotune_key",
    "autotune_key",
    "dlpack_type",
    "storage_dtype",
    "representation_bytes",
    "entry",
    "names",
]
