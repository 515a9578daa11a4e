"""Element counts, strides (in elements), the view rule, broadcasting and slice bounds."""

from nbxtensor._core import shape as _core

numel = _core.numel
contiguous_strides = _core.contiguous_strides
is_contiguous = _core.is_contiguous
view_strides = _core.view_strides
broadcast_shapes = _core.broadcast_shapes
broadcast_strides = _core.broadcast_strides
slice_bounds = _core.slice_bounds

__all__ = [
    "numel",
    "contiguous_strides",
    "is_contiguous",
    "view_strides",
    "broadcast_shapes",
    "broadcast_strides",
    "slice_bounds",
]
