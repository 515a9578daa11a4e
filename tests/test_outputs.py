"""Output dtypes of float32-inside ops under a half compute dtype; complex traced outputs."""

import pytest

from nbxtensor.dtype.outputs import amp_fp32_output_dtype, traced_output_is_complex


@pytest.mark.parametrize(
    "compute, graph, safe, narrowed, want",
    [
        ("bfloat16", "bfloat16", False, False, "bfloat16"),   # bfloat16 has float32's exponent range
        ("float16", "bfloat16", False, False, "bfloat16"),
        ("float16", "float16", False, False, "float32"),      # nothing says the result fits float16
        ("bfloat16", "float16", False, False, "float32"),
        ("float16", "float16", True, False, "float16"),       # the op declares its output fits
        ("float16", "float16", False, True, "float16"),       # the graph narrowed it explicitly
        ("float16", "float8_e4m3fn", False, False, "float32"),
        ("float16", "float32", False, False, "float32"),
        ("bfloat16", "float64", False, False, "float64"),
        ("float32", "float16", False, False, "float16"),      # no half compute: nothing was widened
    ],
)
def test_amp_fp32_output_dtype(compute, graph, safe, narrowed, want):
    assert amp_fp32_output_dtype(compute, graph, safe=safe, narrowed=narrowed) == want


def test_safe_and_narrowed_are_keywords_and_dtypes_are_checked():
    with pytest.raises(TypeError):
        amp_fp32_output_dtype("float16", "float16", False, False)
    with pytest.raises(ValueError, match="'int32' is int"):
        amp_fp32_output_dtype("float16", "int32", safe=False, narrowed=False)
    with pytest.raises(ValueError, match="unknown dtype 'fp16'"):
        amp_fp32_output_dtype("fp16", "float16", safe=False, narrowed=False)


def test_traced_output_is_complex():
    assert traced_output_is_complex({"output_dtypes": ["complex64"]})
    assert traced_output_is_complex({"output_dtypes": ["float32", "complex128"], "op": "abs"})
    assert not traced_output_is_complex({"output_dtypes": ["float32", "int64"], "op": "view_as_complex"})
    assert not traced_output_is_complex({"output_dtypes": []})
    with pytest.raises(ValueError, match="'output_dtypes'"):
        traced_output_is_complex({"op": "fft"})
    with pytest.raises(ValueError, match="unknown dtype 'complex32'"):
        traced_output_is_complex({"output_dtypes": ["complex32"]})
