"""nbxtensor.memory: the memory limit every allocator holds to (a setting, not a service)."""

from nbxtensor._core import memory as _core

set_limit = _core.set_limit
limit = _core.limit

__all__ = ["set_limit", "limit"]
