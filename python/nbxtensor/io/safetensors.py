"""safetensors weights: the load-time conversions, split across the CPU pool."""

from nbxtensor._core import safetensors as _core

to_bf16_bits = _core.to_bf16_bits

__all__ = ["to_bf16_bits"]
