"""nbxtensor: an inference-first tensor library with a Rust core, torch-free.

The graph and the shapes of an inference are known before the first run, so memory is
planned, every kernel declares its cost, and a repeated run is captured, verified byte-equal
and replayed. This package is the Python front of the `nbxtensor` Rust crate; each module
re-exports the extension `nbxtensor._core` under the paths of the spec.
"""

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from . import backend, dtype, host, io, memory, ops, program, random, shape, tensor
from .tensor import Tensor, asarray, from_dlpack
from . import array_api
from .array_api._creation import arange, empty, empty_like, eye, full, full_like, linspace, ones, ones_like, zeros, zeros_like
from ._core import errors as _errors

InternalError = _errors.InternalError

try:
    __version__ = _version("nbxtensor")
except _PackageNotFoundError as _missing:  # pragma: no cover - only in a broken install
    raise ImportError("nbxtensor is not installed: run `pip install .` from the repository") from _missing

__all__ = [
    "__version__", "array_api", "backend", "dtype", "host", "io", "memory", "ops", "program", "random", "shape",
    "tensor", "Tensor", "asarray", "from_dlpack", "InternalError",
    # the creation functions of the Array API namespace, where numpy users look for them
    "arange", "empty", "empty_like", "eye", "full", "full_like", "linspace", "ones", "ones_like", "zeros", "zeros_like",
]
