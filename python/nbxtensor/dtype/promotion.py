"""Type promotion by table name: the Array API standard's rules, the decisions where it is
silent (PyTorch's rule across kinds, float16 with bfloat16 in float32), and weak Python
scalars (NEP 50)."""

from nbxtensor._core import promotion as _core

binary_result = _core.binary_result
promoted = _core.promoted
common_dtype = _core.common_dtype
float_math_input = _core.float_math_input
scalar_result = _core.scalar_result
complex_part = _core.complex_part

__all__ = ["binary_result", "promoted", "common_dtype", "float_math_input", "scalar_result", "complex_part"]
