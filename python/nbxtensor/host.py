"""The services an application may still pass in, each plain data with a default (``None``
restores it):

- ``set_device_description("vendor/name")``: use this device file of the package for every
  GPU instead of the one recognised from the driver's device name;
- ``set_matrix_operands({"float32": "tf32"})``: let float32 matrix products take TF32
  operands where the device's matrix unit has them (default ``"float32"``: exact);
- ``set_attention_operands({"probabilities": "float32"})``: keep attention's softmax
  probabilities in float32 when they weigh float16 or bfloat16 values (exact, and on CUDA
  this backend's own kernel, slower than cuDNN's); the default ``"input"`` rounds them to
  the inputs' dtype first, as fused attention kernels (FlashAttention, cuDNN, torch) do;
- ``set_build_cache(path)``: where compiled GPU kernels are cached (default ``kernels/`` in the
  proven-settings store, ``nbxtensor.ops.autotune_settings``).

Everything else an application once passed in (device facts, tiling, the memory limit) the
library reads or measures by itself; see ``nbxtensor.backend`` and ``nbxtensor.ops``.
"""

from pathlib import Path

from nbxtensor._core import host as _core

set_device_description = _core.set_device_description
device_description = _core.device_description
set_matrix_operands = _core.set_matrix_operands
matrix_operands = _core.matrix_operands
set_attention_operands = _core.set_attention_operands
attention_operands = _core.attention_operands
set_build_cache = _core.set_build_cache


def build_cache() -> Path:
    """Where compiled GPU kernels are cached now, as a ``pathlib.Path`` (not created)."""
    return Path(_core.build_cache())


__all__ = [
    "set_device_description",
    "device_description",
    "set_matrix_operands",
    "matrix_operands",
    "set_attention_operands",
    "attention_operands",
    "set_build_cache",
    "build_cache",
]
