from collections.abc import Mapping
from typing import Any

def tiling_table() -> dict[str, Any]: ...
def set_tiling(table: Mapping[str, Any] | None) -> None: ...

__all__ = ["tiling_table", "set_tiling"]
