"""nbxtensor.backend: what the library knows of the devices it runs on.

Submodules: ``device_files`` (the device description files and the host CPU),
``device_names`` (a device's key from the name its driver prints).
"""

from . import device_files, device_names

__all__ = ["device_files", "device_names"]
