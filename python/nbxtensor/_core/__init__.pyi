# Stubs of the extension module nbxtensor._core (crates/nbxtensor-py): one file per submodule,
# named as the Rust module registers it (`add_submodule` in crates/nbxtensor-py/src/lib.rs).
# A new function or class of the extension gets its line in the submodule's file here;
# tests/test_typing.py runs mypy's stubtest, which names what is missing or differs.

from . import autotune_settings as autotune_settings
from . import blas as blas
from . import cli as cli
from . import convert as convert
from . import device_files as device_files
from . import errors as errors
from . import host as host
from . import host_memory as host_memory
from . import itemsize as itemsize
from . import launch_observer as launch_observer
from . import memory as memory
from . import nbx_dtype as nbx_dtype
from . import ops as ops
from . import outputs as outputs
from . import policy as policy
from . import pool as pool
from . import program as program
from . import promotion as promotion
from . import random as random
from . import runtime as runtime
from . import safetensors as safetensors
from . import shape as shape
from . import tensor as tensor
from . import tiling_policy as tiling_policy

__all__ = [
    "errors", "host", "itemsize", "nbx_dtype", "convert", "promotion", "policy", "outputs", "shape", "tensor", "pool", "random",
    "host_memory", "runtime", "memory", "safetensors", "tiling_policy", "autotune_settings", "launch_observer",
    "ops", "program", "blas", "device_files", "cli",
]
