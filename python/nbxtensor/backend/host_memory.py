"""The host's memory as this process sees it: ``/proc/meminfo``, bounded by a smaller cgroup limit."""

from nbxtensor._core import host_memory as _core

MemoryState = _core.MemoryState
memory_state = _core.memory_state

__all__ = ["MemoryState", "memory_state"]
