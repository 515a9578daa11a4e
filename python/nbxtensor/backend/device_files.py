"""The device description files shipped in the package, and the host CPU measured at run time.

``read(vendor, name)`` returns a new dict each call; ``read("cpu", "host")`` measures the host
and names the source of every fact under ``"source"``.
"""

from nbxtensor._core import device_files as _core

read = _core.read
vendors = _core.vendors
devices = _core.devices

__all__ = ["read", "vendors", "devices"]
