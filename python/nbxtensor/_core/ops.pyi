from collections.abc import Mapping, Sequence
from typing import Any

from .tensor import Tensor

def call(op: str, inputs: Sequence[Tensor], attrs: Mapping[str, Any] | None = None) -> list[Tensor]: ...
def call_one(op: str, x: Tensor, attrs: Mapping[str, Any] | None = None) -> Tensor: ...
def capability_table() -> str: ...

__all__ = ["call", "call_one", "capability_table"]
