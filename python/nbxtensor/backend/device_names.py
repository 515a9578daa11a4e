"""A device's key (its compute capability) from the name its driver prints."""

from nbxtensor._core import device_files as _core

arch_string = _core.arch_string

__all__ = ["arch_string"]
