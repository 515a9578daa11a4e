"""Output dtypes of ops under a precision policy, and what a traced record says of its outputs."""

from nbxtensor._core import outputs as _core

amp_fp32_output_dtype = _core.amp_fp32_output_dtype
traced_output_is_complex = _core.traced_output_is_complex

__all__ = ["amp_fp32_output_dtype", "traced_output_is_complex"]
