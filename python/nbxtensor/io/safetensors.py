"""safetensors weights: files read by memory map (read-only views where aligned, else copies)
and written, every header field checked before any tensor is made; the load-time conversions,
split across the CPU pool."""

from nbxtensor._core import safetensors as _core

load = _core.load
save = _core.save
open = _core.open  # noqa: A001 (the module's verb, as safetensors' safe_open)
SafetensorsFile = _core.SafetensorsFile
to_bf16_bits = _core.to_bf16_bits

__all__ = ["SafetensorsFile", "load", "open", "save", "to_bf16_bits"]
