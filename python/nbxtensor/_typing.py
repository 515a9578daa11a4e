"""Type aliases of the library's signatures (read by its annotations and stubs)."""

from collections.abc import Sequence
from typing import Any, Protocol, TypeAlias

import numpy as np
import numpy.typing as npt

#: a Python scalar operand (weak in promotion)
Scalar: TypeAlias = bool | int | float | complex
#: a shape: any sequence of ints, or a numpy int array
ShapeLike: TypeAlias = Sequence[int] | npt.NDArray[np.integer[Any]]
#: a numpy array of any dtype
Array: TypeAlias = npt.NDArray[Any]


class SupportsDLPack(Protocol):
    """Anything that exports DLPack capsules (numpy arrays, tensors of other libraries)."""

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any: ...


__all__ = ["Scalar", "ShapeLike", "Array", "SupportsDLPack"]
