"""The tiling table in force: the library's ``tiling.yml``, or a whole table an application sets."""

from nbxtensor._core import tiling_policy as _core

tiling_table = _core.tiling_table
set_tiling = _core.set_tiling

__all__ = ["tiling_table", "set_tiling"]
