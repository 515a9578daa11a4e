"""The portable GPU backend (wgpu) from Python, on Vulkan: tensors moved there and back, ops
against numpy, a captured program replayed, the runtime's report, and the refusals that name
their cause. Each test skips, saying why, where no Vulkan adapter is found — but CI installs
Mesa's lavapipe and sets NBX_REQUIRE_VULKAN, where a missing adapter fails instead."""

import os

import numpy as np
import pytest

import nbxtensor as nbx
from nbxtensor import ops
from nbxtensor.backend import runtime

WHY = runtime.unavailable_reason("vulkan")
if WHY is not None and os.environ.get("NBX_REQUIRE_VULKAN"):
    raise RuntimeError(f"NBX_REQUIRE_VULKAN is set, but vulkan is absent: {WHY}")
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"no Vulkan adapter: {WHY}")


def test_the_runtime_reports_the_vulkan_adapter():
    vulkan = [d for d in runtime.devices() if d["kind"] == "vulkan"]
    assert vulkan and vulkan[0]["index"] == 0 and vulkan[0]["name"]
    assert vulkan[0]["max_binding"] >= 1 << 27 and isinstance(vulkan[0]["software"], bool)
    assert runtime.gpu_backend() in ("cuda", "vulkan")
    if runtime.gpu_backend() == "vulkan":
        assert runtime.gpu_runtime().startswith("wgpu through vulkan: ")
    free, total = runtime.device_memory("vulkan")
    assert 0 < free <= total
    assert "vulkan:0" in nbx.asarray(np.ones(1)).__array_namespace__().__array_namespace_info__().devices()
    table = runtime.backend_table("wgpu")
    assert table.startswith("wgpu backend:") and "matmul" in table and "bfloat16" in table


def test_tensors_move_to_vulkan_and_back_byte_for_byte():
    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float16, np.int64, np.int8, np.bool_):
        x = (rng.standard_normal((33, 17)) * 50).astype(dtype)
        t = nbx.asarray(x).to("vulkan")
        assert t.device == "vulkan:0"
        assert t.to("cpu").numpy().tobytes() == x.tobytes()
        # a strided view is gathered there by the copy kernel
        view = t.transpose(0, 1)[3:9]
        assert view.to("cpu").numpy().tobytes() == np.ascontiguousarray(x.T[3:9]).tobytes()


def test_ops_on_vulkan_match_numpy():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((64, 48), dtype=np.float32)
    b = rng.standard_normal((48, 40), dtype=np.float32)
    ta, tb = nbx.asarray(a).to("vulkan"), nbx.asarray(b).to("vulkan")
    product = ops.matmul(ta, tb)
    assert product.device == "vulkan:0"
    np.testing.assert_allclose(product.to("cpu").numpy(), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ops.exp(ta).to("cpu").numpy(), np.exp(a.astype(np.float64)), rtol=2e-7)
    sums = ops.sum(ta, axes=[1]).to("cpu").numpy()
    np.testing.assert_allclose(sums, a.astype(np.float64).sum(axis=1), rtol=1e-6)
    soft = ops.softmax(ta, axis=-1).to("cpu").numpy()
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(soft, e / e.sum(axis=-1, keepdims=True), rtol=1e-5)
    with pytest.raises(ValueError, match="lives on cpu"):
        ops.matmul(ta, nbx.asarray(b))


def test_a_program_is_captured_and_replayed_on_vulkan():
    from nbxtensor import program

    rng = np.random.default_rng(3)
    x = nbx.asarray(rng.standard_normal((4, 32), dtype=np.float32)).to("vulkan")

    def model(t):
        for _ in range(10):
            t = ops.tanh(t)
        return t

    replay = program.trace(model, x).executable().capture(x)
    y = nbx.asarray(rng.standard_normal((4, 32), dtype=np.float32)).to("vulkan")
    np.testing.assert_array_equal(replay.run(y)[0].to("cpu").numpy(), model(y).to("cpu").numpy())


def test_refusals_name_their_cause():
    t = nbx.asarray(np.ones(4, np.float32)).to("vulkan")
    with pytest.raises(ValueError, match="no kernel for op 'sin' on dtype float32 in the wgpu backend"):
        ops.sin(t)
    assert t.__dlpack_device__() == (7, 0)
    with pytest.raises(BufferError, match="vulkan:0 memory cannot be exported"):
        t.__dlpack__()
    with pytest.raises(ValueError, match="copy it to the host first"):
        t.numpy()
