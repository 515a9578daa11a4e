//! DLPack for `nbxtensor.Tensor` (being written).
