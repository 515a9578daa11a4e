"""The GPU backend in force: which one (``gpu_backend``), its runtime, the architectures whose
kernels the build carries (``shipped_kernels``), whether kernels launch overlapped
(``set_overlapped_launches``), devices, capability table and memory, binding a
tensor's device, and waiting for queued GPU work."""

from nbxtensor._core import runtime as _core

gpu_backend = _core.gpu_backend
unavailable_reason = _core.unavailable_reason
gpu_runtime = _core.gpu_runtime
shipped_kernels = _core.shipped_kernels
set_overlapped_launches = _core.set_overlapped_launches
overlapped_launches = _core.overlapped_launches
devices = _core.devices
backend_table = _core.backend_table
device_memory = _core.device_memory
set_device = _core.set_device
synchronize = _core.synchronize

__all__ = [
    "gpu_backend",
    "unavailable_reason",
    "gpu_runtime",
    "shipped_kernels",
    "set_overlapped_launches",
    "overlapped_launches",
    "devices",
    "backend_table",
    "device_memory",
    "set_device",
    "synchronize",
]
