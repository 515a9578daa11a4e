"""nbxtensor.ops: the operations on tensors, and the settings kernels read.

Every operation dispatches to the backend's capability table (``capability_table()`` prints
it) by name and dtype; ``call(op, inputs, **attrs)`` reaches any op. The typed functions
below are thin: they name the op and pass its attributes.
Settings: ``tiling_policy``, ``autotune_settings``, ``launch_observer``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from nbxtensor._core import ops as _core

from . import autotune_settings, launch_observer, tiling_policy
from ._create import *  # noqa: F401,F403
from ._create import __all__ as _create_names
from ._elementwise import *  # noqa: F401,F403
from ._elementwise import __all__ as _elementwise_names
from ._linalg import *  # noqa: F401,F403
from ._reduce import *  # noqa: F401,F403 - also re-exported by _elementwise; named here for type checkers
from ._linalg import __all__ as _linalg_names
from ._solvers import *  # noqa: F401,F403
from ._solvers import __all__ as _solvers_names
from ._sort import *  # noqa: F401,F403
from ._sort import __all__ as _sort_names

if TYPE_CHECKING:
    from nbxtensor._core.tensor import Tensor

capability_table = _core.capability_table


def call(op: str, inputs: Iterable[Tensor], **attrs: Any) -> list[Tensor]:
    """Calls any op of the capability table on a list of tensors; returns the list of outputs."""
    return _core.call(op, list(inputs), attrs)


__all__ = ["autotune_settings", "launch_observer", "tiling_policy", "call", "capability_table"]
__all__ += _elementwise_names + _linalg_names + _create_names + _sort_names + _solvers_names
