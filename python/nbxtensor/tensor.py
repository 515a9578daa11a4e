"""The tensor class: a dtype, a shape, strides in elements, an offset, a device, and storage
shared by its views. Views never copy; exchange with other libraries is DLPack."""

from nbxtensor._core import tensor as _core

Tensor = _core.Tensor

__all__ = ["Tensor"]
