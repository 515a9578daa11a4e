"""Programs from Python: ``Program.price()`` (the flops, bytes, memory and predicted seconds
``nbx price`` prints, from the declarations alone) and the reprs of Program, Plan, Executable,
Replay and Price."""

import math

import numpy as np
import pytest

import nbxtensor as nbx
from nbxtensor import ops, program
from nbxtensor.backend import device_files


def model(x):
    y = ops.exp(x)
    z = ops.neg(y)
    return ops.abs(z.transpose(0, 1)), y


def traced():
    return program.trace(model, nbx.asarray(np.ones((3, 4), np.float32)))


def test_price_on_a_device_file_is_the_roofline_of_its_rates():
    p = traced()
    h200 = device_files.read("nvidia", "h200")
    bandwidth = h200["memory"]["bandwidth_bytes_per_s"]
    price = p.price("nvidia/h200")
    # three launches of 12 elements: 96 bytes each, a few flops; the bytes take longer
    assert (price.launches, price.flops, price.bytes) == (3, 36, 288)
    assert price.seconds == pytest.approx(3 * 96 / bandwidth, rel=1e-12)
    assert price.source == "device file nvidia/h200"
    plan = p.plan()
    assert (price.arena_bytes, price.lower_bound) == (plan.arena_bytes, plan.lower_bound)
    assert price.allocated_bytes >= price.arena_bytes > 0


def test_a_matrix_product_is_priced_at_the_matrix_unit_rate():
    a = nbx.asarray(np.zeros((1024, 1024), np.float16))
    p = program.trace(lambda x: ops.matmul(x, x), a)
    h200 = device_files.read("nvidia", "h200")
    price = p.price("nvidia/h200")
    assert price.flops == 2 * 1024**3
    flops_time = price.flops / h200["peak"]["matrix"]["float16"]
    bytes_time = price.bytes / h200["memory"]["bandwidth_bytes_per_s"]
    assert flops_time > bytes_time
    assert price.seconds == pytest.approx(flops_time, rel=1e-12)
    # the same product on another file: its own rate
    a100 = device_files.read("nvidia", "a100")
    assert p.price("nvidia/a100").seconds == pytest.approx(
        max(price.flops / a100["peak"]["matrix"]["float16"], price.bytes / a100["memory"]["bandwidth_bytes_per_s"]),
        rel=1e-12,
    )


def test_price_on_the_host_is_measured_once():
    p = traced()
    first, again = p.price(), p.price()
    assert first.source == "the host CPU, measured"
    assert math.isfinite(first.seconds) and first.seconds > 0
    assert first.seconds == again.seconds  # the same measured rates
    assert (first.launches, first.flops, first.bytes) == (len(p), p.flops(), p.bytes_moved())


def test_price_refusals_name_the_fault():
    p = traced()
    with pytest.raises(ValueError, match="'VENDOR/NAME'.*given 'h200'"):
        p.price("h200")
    with pytest.raises(ValueError, match="h999"):
        p.price("nvidia/h999")
    with pytest.raises(ValueError, match="apple/apple_m1 has no memory bandwidth"):
        p.price("apple/apple_m1")
    f32 = program.trace(lambda x: ops.matmul(x, x), nbx.asarray(np.zeros((4, 4), np.float32)))
    with pytest.raises(ValueError, match=r"no peak rate for float32 \(matrix\)"):
        f32.price("nvidia/h200")


def test_reprs_show_what_each_object_holds():
    p = traced()
    assert repr(p) == (
        "Program(launches=3, device='cpu', inputs=[float32[3, 4]], outputs=[float32[4, 3], float32[3, 4]], "
        "flops=36, bytes_moved=288)"
    )
    plan = p.plan()
    assert repr(plan) == f"Plan(arena_bytes={plan.arena_bytes}, lower_bound={plan.lower_bound}, ratio={plan.ratio:.4f})"
    price = p.price("nvidia/h200")
    assert repr(price) == (
        f"Price(seconds={price.seconds!r}, flops=36, bytes=288, launches=3, arena_bytes={plan.arena_bytes}, "
        f"allocated_bytes={price.allocated_bytes}, lower_bound={plan.lower_bound}, source='device file nvidia/h200')"
    )
    executable = p.executable()
    arena = executable.arena_bytes
    assert arena >= plan.arena_bytes
    assert repr(executable) == f"Executable(launches=3, device='cpu', arena_bytes={arena})"
    x = nbx.asarray(np.ones((3, 4), np.float32))
    replay = executable.capture(x)
    assert repr(executable) == "Executable(captured: run its Replay)"
    assert repr(replay) == f"Replay(launches=3, device='cpu', arena_bytes={arena}, cuda_graph=False)"
