"""A user's typed code over the library's public names: mypy --strict passes on it
(tests/test_typing.py), and it runs."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

import nbxtensor as nbx
from nbxtensor import ops, program
from nbxtensor.backend import device_files
from nbxtensor.dtype import convert, itemsize, policy, promotion
from nbxtensor.dtype.nbx_dtype import NBXDtype, dtype_size, parse_dtype
from nbxtensor.random import Generator


def block(x: nbx.Tensor, weight: nbx.Tensor, bias: nbx.Tensor) -> nbx.Tensor:
    """A linear layer, GELU, a layer norm and a softmax."""
    h = ops.gelu(ops.linear(x, weight, bias))
    h = ops.layer_norm(h, ops.exp(bias * 0.0), bias, eps=1e-5)
    return ops.softmax(h, axis=-1)


def run() -> float:
    rng = np.random.default_rng(0)
    values: npt.NDArray[np.float32] = rng.standard_normal((2, 8), dtype=np.float32)
    x = nbx.asarray(values)
    weight = nbx.from_dlpack(np.ones((8, 8), np.float32))
    bias = nbx.asarray([0.0] * 8, dtype="float32")
    y = block(x, weight, bias)
    shape: tuple[int, ...] = y.shape
    assert shape == (2, 8) and y.dtype == "float32" and y.ndim == 2
    total: nbx.Tensor = ops.sum(y, axes=-1)
    assert np.allclose(np.from_dlpack(total), 1.0, atol=1e-5)
    view = y.transpose(0, 1)[1:3]
    assert view.shape == (2, 2) and not view.is_contiguous()
    doubled = ops.mul(x, 2) + ops.add(x, x) - 1.0
    assert doubled.shape == x.shape
    mask: nbx.Tensor = ops.gt(x, 0.0)
    chosen = ops.where(mask, x, 0.0)
    assert chosen.numpy().min() >= 0.0
    as_half = ops.cast(x, "float16")
    assert as_half.dtype == "float16"

    traced = program.trace(lambda t: block(t, weight, bias), x)
    keys: list[str] = traced.keys()
    plan: program.Plan = traced.plan()
    price: program.Price = traced.price()
    seconds: float = price.seconds
    assert len(keys) == len(traced) and plan.arena_bytes >= plan.lower_bound and seconds > 0
    replay = traced.executable().capture(x)
    outputs: list[nbx.Tensor] = replay.run(x)
    assert outputs[0].tobytes() == y.tobytes()

    width: int = itemsize.itemsize("bfloat16")
    member: NBXDtype = parse_dtype("torch.float16")
    name: str = member.table_name
    size: int = dtype_size(NBXDtype.int64)
    result: str = promotion.binary_result("uint8", "int8")
    mixed = policy.get_policy("p=float32,c=bfloat16,o=float32")
    compute: str = mixed.compute_dtype("linear", ["float32"])
    bits: npt.NDArray[np.uint16] = convert.f32_to_bf16_bits(values)
    h200: dict[str, object] = device_files.read("nvidia", "h200")
    draws = Generator(seed=1).normal((2, 3))
    assert (width, name, size, result, compute) == (2, "float16", 8, "int16", "bfloat16")
    assert bits.shape == values.shape and "peak" in h200 and draws.shape == (2, 3)
    return seconds


if __name__ == "__main__":
    print(run())
