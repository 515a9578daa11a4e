//! Host conversions between dtypes (placeholder while the layer is written).
