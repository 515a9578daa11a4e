"""Tensor views against numpy: any sequence of narrow, permute, reshape and expand gives the
same elements as numpy doing the same sequence; refusals name what is wrong."""

import random
import re

import numpy as np
import pytest

import nbxtensor as nbx
from nbxtensor.backend import runtime


def random_step(rng, t, a):
    """One random view applied to both the tensor and the numpy array, or None if refused."""
    kind = rng.choice(["narrow", "permute", "reshape", "expand", "select", "unsqueeze", "squeeze"])
    nd = a.ndim
    if kind == "narrow" and nd:
        dim = rng.randrange(nd)
        start = rng.randrange(a.shape[dim] + 1)
        length = rng.randrange(a.shape[dim] - start + 1)
        return t.narrow(dim, start, length), a[(slice(None),) * dim + (slice(start, start + length),)]
    if kind == "permute" and nd:
        order = list(range(nd))
        rng.shuffle(order)
        return t.permute(*order), a.transpose(order)
    if kind == "select" and nd and a.shape[0]:
        index = rng.randrange(-a.shape[0], a.shape[0])
        return t[index], a[index]
    if kind == "unsqueeze":
        dim = rng.randrange(nd + 1)
        return t.unsqueeze(dim), np.expand_dims(a, dim)
    if kind == "squeeze":
        return t.squeeze(), a.squeeze()
    if kind == "expand" and nd and 1 in a.shape:
        target = tuple(rng.choice([1, 2, 3]) if s == 1 else s for s in a.shape)
        return t.expand(*target), np.broadcast_to(a, target)
    if kind == "reshape":
        size = a.size
        dims = [d for d in range(1, size + 1) if size and size % d == 0] or [0]
        first = rng.choice(dims)
        new = (first, size // first if first else 0)
        view = np.reshape(a, new, copy=None)
        try:
            mine = t.reshape(*new)
        except ValueError as e:
            assert "copy first" in str(e)
            assert not np.shares_memory(view, a) or a.size == 0, "nbxtensor refused a view numpy found"
            return None
        assert np.shares_memory(view, a) or a.size <= 1 or view.size == 0, "nbxtensor made a view numpy could not"
        return mine, view
    return None


@pytest.mark.parametrize("seed", range(300))
def test_random_view_sequences_match_numpy(seed):
    rng = random.Random(seed)
    shape = tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 4)))
    a = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    t = nbx.asarray(a)
    for _ in range(rng.randint(1, 8)):
        step = random_step(rng, t, a)
        if step is None:
            continue
        t, a = step
        assert t.shape == a.shape
        assert np.array_equal(np.asarray(t.contiguous()), a), f"after {t!r}"
        assert np.array_equal(np.from_dlpack(t), a)


@pytest.mark.parametrize("seed", range(200))
def test_slices_with_any_step_are_the_views_numpy_makes(seed):
    rng = random.Random(seed)
    shape = tuple(rng.randint(0, 6) for _ in range(rng.randint(1, 3)))
    a = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    t = nbx.asarray(a)
    bound = lambda: rng.choice([None, -9, -3, -1, 0, 1, 2, 5, 9])
    key = tuple(slice(bound(), bound(), rng.choice([None, -3, -2, -1, 1, 2, 4])) for _ in shape)
    view = t[key]
    assert view.shape == a[key].shape, key
    assert np.array_equal(np.asarray(view.contiguous()), a[key]), key
    assert np.array_equal(np.from_dlpack(view), a[key]), key  # the strides numpy reads are the view's
    # a step is a view: the same storage, no copy
    assert view.size == 0 or np.shares_memory(np.from_dlpack(view), np.from_dlpack(t))


def test_a_reversed_view_reads_and_computes_as_numpy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = nbx.asarray(a)
    r = t[::-1, ::-2]
    assert r.strides == (-4, -2)
    assert r.tolist() == a[::-1, ::-2].tolist()
    assert np.array_equal(np.asarray(r + 1), a[::-1, ::-2] + 1)
    assert np.array_equal(np.asarray(r.sum(axis=0)), a[::-1, ::-2].sum(axis=0))
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        t[::0]


def test_views_share_storage_and_contiguous_copies_only_when_needed():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = nbx.asarray(a)
    assert t.contiguous().numpy().__array_interface__["data"][0] == a.__array_interface__["data"][0]
    p = t.permute(2, 0, 1)
    assert not p.is_contiguous()
    c = p.contiguous()
    assert c.is_contiguous() and np.array_equal(c.numpy(), a.transpose(2, 0, 1))
    assert not np.shares_memory(c.numpy(), a)


def test_refusals_name_the_operation():
    t = nbx.asarray(np.zeros((2, 3), np.float32))
    cases = [
        (lambda: t.transpose(0, 1).reshape(6), ValueError, "copy first"),
        (lambda: t.narrow(1, 2, 5), ValueError, "narrow: 2..2\\+5 is outside dim 1 of size 3"),
        (lambda: t.permute(0, 0), ValueError, "names dim 0 twice"),
        (lambda: t.permute(0), ValueError, "names 1 dims of a tensor of 2"),
        (lambda: t.expand(4, 3), ValueError, "broadcast"),
        (lambda: t.squeeze(0), ValueError, "extent 2, not 1"),
        (lambda: t[5], IndexError, "index 5 is out of range"),
        (lambda: t[0, 0, 0], IndexError, "too many indices"),
        (lambda: t["a"], ValueError, "indexed by ints, slices"),
        (lambda: t.to("tpu"), ValueError, "unknown device 'tpu'"),
        (lambda: t.view_dtype("float64"), ValueError, "only dtypes of one width"),
    ]
    if runtime.unavailable_reason("cuda") is not None:
        # without CUDA, moving there is refused, saying why
        cases.append((lambda: t.to("cuda"), ValueError, re.escape(runtime.unavailable_reason("cuda"))))
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()


def test_a_tensor_over_the_memory_limit_is_refused_and_the_process_goes_on():
    from nbxtensor import memory

    try:
        memory.set_limit(1 << 20)
        with pytest.raises(MemoryError, match=r"allocating 2097152 bytes with \d+ bytes in use would pass the memory limit of 1048576 bytes"):
            # a contiguous copy of a 1024 x 512 float32 transpose: 2 MiB made by nbxtensor
            nbx.asarray(np.zeros((1024, 512), np.float32)).transpose(0, 1).contiguous()
        small = nbx.asarray(np.ones((64, 64), np.float32)).transpose(0, 1).contiguous()
        assert small.is_contiguous()
    finally:
        memory.set_limit(None)


def test_str_prints_the_values_as_numpy_lays_them_out():
    t = nbx.asarray(np.array([[1.5, -2.0], [3.25, 4.0]], np.float32))
    assert str(t) == "Tensor([[ 1.5 , -2.  ],\n        [ 3.25,  4.  ]], dtype=float32)"
    # numpy's own layout of the same values, its separators aside
    assert str(t)[len("Tensor(") : -len(", dtype=float32)")].replace(",", "") == np.array2string(
        np.array([[1.5, -2.0], [3.25, 4.0]], np.float32), separator=" "
    ).replace("\n ", "\n        ")
    assert str(nbx.asarray(np.arange(2000, dtype=np.int32))) == (
        "Tensor([   0,    1,    2, ..., 1997, 1998, 1999], dtype=int32)"
    )
    assert str(nbx.asarray(np.array([True, False]))) == "Tensor([ True, False], dtype=bool)"
    assert repr(t) == str(t)
