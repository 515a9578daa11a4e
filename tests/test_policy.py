"""Precision policies: jmp parsing, immutability, replace/fields, autocast classes, fill values."""

import math

import ml_dtypes
import numpy as np
import pytest

from nbxtensor.dtype.policy import Policy, get_policy, op_class


@pytest.mark.parametrize(
    "text, fields",
    [
        ("params=float32,compute=float16,output=float32", ("float32", "float16", "float32")),
        ("p=f32,c=half,o=full", ("float32", "float16", "float32")),
        ("compute=bf16", ("float32", "bfloat16", "bfloat16")),       # params default, output follows compute
        ("params=half", ("float16", "float16", "float16")),           # compute follows params
        ("o=float16", ("float32", "float32", "float16")),
        ("c=float16, o=float32", ("float32", "float16", "float32")),
        ("half", ("float16", "float16", "float16")),                  # one dtype: all three
        ("bfloat16", ("bfloat16", "bfloat16", "bfloat16")),
        ("f32", ("float32", "float32", "float32")),
    ],
)
def test_jmp_spellings(text, fields):
    p = get_policy(text)
    assert (p.params, p.compute, p.output) == fields
    assert p.fields() == dict(zip(("params", "compute", "output"), fields))
    assert get_policy(str(p)) == p


@pytest.mark.parametrize(
    "text, named",
    [
        ("params=float32,colour=float16", "unknown policy key 'colour'"),
        ("compute=float77", "unknown dtype 'float77'"),
        ("quarter", "unknown dtype 'quarter'"),
        ("c=float16,compute=float32", "compute is given twice"),
        ("compute=float16,", "is not key=dtype"),
        ("compute=int8", "'int8' is int"),
    ],
)
def test_malformed_policies_are_refused_by_name(text, named):
    with pytest.raises(ValueError, match=named):
        get_policy(text)


def test_a_policy_is_immutable():
    p = get_policy("params=float32,compute=float16,output=float32")
    for field in ("params", "compute", "output"):
        with pytest.raises(AttributeError):
            setattr(p, field, "bfloat16")
    assert p.compute == "float16"


def test_replace_makes_a_new_policy():
    p = get_policy("float32")
    q = p.replace(compute="bf16", output="float16")
    assert (q.params, q.compute, q.output) == ("float32", "bfloat16", "float16")
    assert (p.compute, p.output) == ("float32", "float32")
    assert p.replace() == p
    with pytest.raises(ValueError, match="unknown policy field 'c'"):
        p.replace(c="float16")
    with pytest.raises(ValueError, match="'uint8' is uint"):
        p.replace(params="uint8")


def test_equality_hash_and_repr():
    a = get_policy("p=float32,c=float16")
    b = Policy("f32", "half", "float16")
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != get_policy("float16")
    assert repr(a) == "Policy('params=float32,compute=float16,output=float16')"
    assert get_policy(a) == a


# PyTorch's torch.amp docs, "CUDA Ops that can autocast to float16 / to float32 / that promote
# to the widest input type": a sample of each list, by the docs' names.
@pytest.mark.parametrize(
    "op, cls",
    [("mm", "lower_precision"), ("conv2d", "lower_precision"), ("__matmul__", "lower_precision"),
     ("softmax", "float32"), ("layer_norm", "float32"), ("rsqrt", "float32"), ("sum", "float32"),
     ("addcmul", "promote"), ("index_put", "promote"), ("relu", None), ("add", None),
     # the library's fused ops: the class of the op each ends in
     ("add_layer_norm", "float32"), ("add_rms_norm", None)],
)
def test_op_classes(op, cls):
    assert op_class(op) == cls


def test_compute_dtype_by_class():
    p = get_policy("params=float32,compute=bfloat16,output=float32")
    assert p.compute_dtype("linear", ["float32", "float32"]) == "bfloat16"
    assert p.compute_dtype("matmul", ["float16", "float16"]) == "bfloat16"
    assert p.compute_dtype("exp", ["bfloat16"]) == "float32"
    assert p.compute_dtype("log_softmax", ["float16"]) == "float32"
    assert p.compute_dtype("atan2", ["bfloat16", "float64"]) == "float64"
    assert p.compute_dtype("tensordot", ["float16", "float32", "float16"]) == "float32"
    assert p.compute_dtype("relu", ["float16"]) == "float16"            # no class: the inputs' dtype
    assert p.compute_dtype("add_layer_norm", ["bfloat16"] * 4) == "float32"  # as layer_norm
    assert p.compute_dtype("add", ["int8", "uint8"]) == "int16"
    with pytest.raises(ValueError, match="'relu'"):
        p.compute_dtype("relu", [])
    with pytest.raises(ValueError, match="unknown dtype 'half'"):      # inputs are table names
        p.compute_dtype("relu", ["half"])


def test_fill_values_fit_the_dtype():
    p = get_policy("half")
    f16_max = float(np.finfo(np.float16).max)
    bf16_lowest = float(ml_dtypes.finfo(ml_dtypes.bfloat16).min)
    e4m3_max = float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).max)
    assert p.fill_value("masked_fill", bf16_lowest, "float16") == -f16_max
    assert p.fill_value("masked_fill", bf16_lowest, "bfloat16") == bf16_lowest
    assert p.fill_value("masked_fill", 1e39, "float32") == float(np.finfo(np.float32).max)
    assert p.fill_value("masked_fill", -math.inf, "float16") == -math.inf      # float16 has an infinity
    assert p.fill_value("masked_fill", -math.inf, "float8_e4m3fn") == -e4m3_max  # e4m3fn has none
    assert p.fill_value("masked_fill", 1e6, "float8_e5m2") == float(ml_dtypes.finfo(ml_dtypes.float8_e5m2).max)
    assert math.isnan(p.fill_value("masked_fill", math.nan, "float16"))
    assert p.fill_value("masked_fill", 0.25, "float16") == 0.25


def test_fill_values_of_integers_and_bool():
    p = get_policy("bf16")
    for dtype in ("int8", "uint8", "int32", "uint64"):
        info = np.iinfo(dtype)
        low = p.fill_value("masked_fill", -1e30, dtype)
        assert type(low) is int and low == info.min
        assert p.fill_value("masked_fill", 2**70, dtype) == info.max
        assert p.fill_value("masked_fill", -math.inf, dtype) == info.min
    assert p.fill_value("masked_fill", -5.0, "int16") == -5
    assert p.fill_value("masked_fill", True, "int8") == 1
    assert p.fill_value("masked_fill", 1, "bool") is True
    assert p.fill_value("masked_fill", 0.0, "bool") is False
    for value, dtype, named in [(0.5, "int32", "integral"), (math.nan, "int8", "NaN"), (2, "bool", "0 or 1"),
                                (1j, "float32", "real"), (0.0, "int4-g128-sym", "packed")]:
        with pytest.raises(ValueError, match=f"masked_fill: fill value .* for {dtype}: .*{named}"):
            p.fill_value("masked_fill", value, dtype)
