"""nbxtensor.backend: the machine's facts and the device backends.

Submodules: ``cpu`` (the thread pool and the BLAS it holds), ``host_memory`` (the host's
memory as this process sees it).
"""

from . import cpu, host_memory

__all__ = ["cpu", "host_memory"]
