"""Measured and described facts of a device the kernels depend on: whether it shares the
host's memory, and whether it computes float64 (read from its device file; for
``("cpu", "host")``, true for both)."""

from nbxtensor._core import device_files as _core

shares_host_memory = _core.shares_host_memory
computes_float64 = _core.computes_float64

__all__ = ["shares_host_memory", "computes_float64"]
