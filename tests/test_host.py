"""nbxtensor.host: each service is plain data, read back as set, refused by name when wrong,
restored by None, and (where the host can show it) changes what the ops compute."""

import numpy as np
import pytest

from float_formats import f64, stored, tensor
from nbxtensor import host, ops
from test_ops_attention import sdpa_reference


@pytest.fixture(autouse=True)
def defaults_restored():
    yield
    host.set_device_description(None)
    host.set_matrix_operands(None)
    host.set_attention_operands(None)
    host.set_build_cache(None)


def test_device_description_is_read_back_and_refused_by_name():
    assert host.device_description() is None
    host.set_device_description("nvidia/a100")
    assert host.device_description() == "nvidia/a100"
    with pytest.raises(ValueError, match="'h200' is not 'vendor/name'"):
        host.set_device_description("h200")
    with pytest.raises(ValueError, match="unknown device 'no-such-gpu' of vendor 'nvidia'"):
        host.set_device_description("nvidia/no-such-gpu")
    assert host.device_description() == "nvidia/a100", "a refused setting leaves the last one in force"
    host.set_device_description(None)
    assert host.device_description() is None


def test_matrix_operands_are_read_back_and_refused_by_name():
    assert host.matrix_operands() == {"float32": "float32"}
    host.set_matrix_operands({"float32": "tf32"})
    assert host.matrix_operands() == {"float32": "tf32"}
    with pytest.raises(ValueError, match="unknown key 'float16'"):
        host.set_matrix_operands({"float16": "tf32"})
    with pytest.raises(ValueError, match="'fp8' is not one of float32, tf32"):
        host.set_matrix_operands({"float32": "fp8"})
    host.set_matrix_operands(None)
    assert host.matrix_operands() == {"float32": "float32"}


def test_attention_operands_round_the_probabilities_to_the_inputs_dtype():
    rng = np.random.default_rng(3)
    q, k, v = (stored(rng.standard_normal((1, 2, 5, 16)), "bfloat16") for _ in range(3))
    tq, tk, tv = (tensor(a, "bfloat16") for a in (q, k, v))
    # rounded to the inputs' dtype by default, as fused attention kernels do
    assert host.attention_operands() == {"probabilities": "input"}
    rounded = f64(ops.sdpa(tq, tk, tv))
    host.set_attention_operands({"probabilities": "float32"})
    assert host.attention_operands() == {"probabilities": "float32"}
    exact = f64(ops.sdpa(tq, tk, tv))
    want = sdpa_reference(q, k, v)
    # both within bfloat16's error of the float64 definition, and not the same values
    assert np.abs(exact - want).max() < 2e-2
    assert np.abs(rounded - want).max() < 3e-2
    assert not np.array_equal(exact, rounded), "rounding the probabilities changed nothing"
    # float32 inputs have nothing to round: either way they are exact
    q32, k32, v32 = (tensor(a, "float32") for a in (q, k, v))
    np.testing.assert_allclose(f64(ops.sdpa(q32, k32, v32)), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="'bfloat16' is not one of"):
        host.set_attention_operands({"probabilities": "bfloat16"})
    host.set_attention_operands(None)
    assert host.attention_operands() == {"probabilities": "input"}
    np.testing.assert_array_equal(f64(ops.sdpa(tq, tk, tv)), rounded)


def test_build_cache_is_a_path_and_none_restores_the_store(tmp_path):
    default = host.build_cache()
    assert default.name == "kernels"
    host.set_build_cache(tmp_path / "kernels")
    assert host.build_cache() == tmp_path / "kernels"
    host.set_build_cache(None)
    assert host.build_cache() == default
