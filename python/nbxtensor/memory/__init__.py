"""nbxtensor.memory: the memory limit every allocator holds to (a setting, not a service)."""

from nbxtensor._core import memory as _core

set_limit = _core.set_limit
limit = _core.limit
host_in_use = _core.host_in_use
host_high_water = _core.host_high_water
reset_host_high_water = _core.reset_host_high_water
release_parked = _core.release_parked

__all__ = ["set_limit", "limit", "host_in_use", "host_high_water", "reset_host_high_water", "release_parked"]
