"""nbxtensor.backend: what the library knows of the machine and the devices it runs on.

Submodules: ``device_files`` (the device description files and the host CPU),
``device_names`` (a device's key from the name its driver prints), ``device_facts`` (whether
a device shares the host's memory, whether it computes float64), ``host_memory`` (the host's
memory as this process sees it), ``cpu`` (the thread pool and the BLAS it holds).
"""

from . import cpu, device_facts, device_files, device_names, host_memory

__all__ = ["cpu", "device_facts", "device_files", "device_names", "host_memory"]
