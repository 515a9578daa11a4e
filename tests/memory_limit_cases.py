"""Every op family and every copy under `memory.set_limit(L)`: run by test_memory_limit.py in a
child process (the limit and the allocator's count are process-wide).

Each case is called twice: on inputs whose work fits under L (broadcast and strided views, so
that kernels gather), where the answer must equal the same op on contiguous copies of the
inputs made by numpy; and on inputs whose outputs or gathers do not fit, where the answer
must be a MemoryError. Either way the host allocator's high-water mark stays at or under L,
and the process's resident memory grows by less than L. Prints one line per case, then "ok".
"""

import gc
import sys

import numpy as np

import nbxtensor as nbx
from nbxtensor import memory, ops, program
from nbxtensor.random import Generator

L = 64 << 20
RNG = np.random.default_rng(18)


def rss():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def t(shape, dtype=np.float32):
    return nbx.asarray(RNG.standard_normal(shape).astype(dtype))


def materialized(x):
    """The same elements, contiguous, in numpy's memory (not the library's)."""
    if not isinstance(x, nbx.Tensor):
        return x
    if x.dtype == "bfloat16":
        return nbx.asarray(np.ascontiguousarray(x.numpy())).view_dtype("bfloat16")
    return nbx.asarray(np.ascontiguousarray(x.numpy()))


def outputs_of(result):
    return list(result) if isinstance(result, (list, tuple)) else [result]


# name -> (op, fitting inputs, too-large inputs); an op is a callable on the inputs
W = 1024
row = t((1, W))
ascending = nbx.asarray(np.sort(RNG.standard_normal(W)).astype(np.float32))


def complex_t(shape):
    return nbx.asarray((RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64))


complex_row = complex_t((1, W))
square = nbx.asarray((RNG.standard_normal((1, 64, 64)) + 64 * np.eye(64)).astype(np.float32))
CASES = {
    "unary (exp)": (ops.exp, lambda: [row.expand(4096, W)], lambda: [row.expand(1 << 15, W)]),
    "binary (add, broadcast)": (ops.add, lambda: [row.expand(2048, W), t((2048, 1))],
                                lambda: [row.expand(1 << 15, W), t((1 << 15, 1))]),
    "compare (lt)": (ops.lt, lambda: [row.expand(4096, W), row], lambda: [row.expand(1 << 16, W), row]),
    "cast (float64)": (lambda x: ops.cast(x, "float64"), lambda: [row.expand(2048, W)],
                       lambda: [row.expand(1 << 14, W)]),
    "reduce (sum)": (lambda x: ops.sum(x, axes=[0]), lambda: [row.expand(4096, W)], lambda: [row.expand(1 << 15, W)]),
    "reduce (max of a transpose)": (lambda x: ops.max(x, axes=[-1]), lambda: [t((W, 2048)).transpose(0, 1)],
                                    lambda: [row.expand(1 << 15, W).transpose(0, 1)]),
    "reduce (argmax)": (lambda x: ops.argmax(x, axis=-1), lambda: [row.expand(4096, W)], lambda: [row.expand(1 << 15, W)]),
    "reduce (mean)": (lambda x: ops.mean(x, axes=[-1]), lambda: [row.expand(4096, W)], lambda: [row.expand(1 << 15, W)]),
    "softmax": (lambda x: ops.softmax(x, axis=-1), lambda: [row.expand(2048, W)], lambda: [row.expand(1 << 15, W)]),
    "layer_norm": (lambda x, w, b: ops.layer_norm(x, w, b), lambda: [row.expand(2048, W), t((W,)), t((W,))],
                   lambda: [row.expand(1 << 15, W), t((W,)), t((W,))]),
    "rms_norm": (lambda x, w: ops.rms_norm(x, w), lambda: [row.expand(2048, W), t((W,))],
                 lambda: [row.expand(1 << 15, W), t((W,))]),
    "matmul": (ops.matmul, lambda: [row.expand(512, W), t((W, 256))], lambda: [row.expand(1 << 16, W), t((W, 256))]),
    "linear": (ops.linear, lambda: [row.expand(512, W), t((256, W))], lambda: [row.expand(1 << 16, W), t((256, W))]),
    "embedding": (ops.embedding, lambda: [nbx.asarray(np.arange(4096, dtype=np.int64) % 7), t((7, W))],
                  lambda: [nbx.asarray(np.zeros(1, np.int64)).expand(1 << 15), t((7, W))]),
    "index_select": (lambda x, i: ops.index_select(x, i, 0), lambda: [row.expand(64, W), nbx.asarray(np.arange(2048) % 64)],
                     lambda: [row.expand(64, W), nbx.asarray(np.zeros(1, np.int64)).expand(1 << 15)]),
    "concat": (lambda a, b: ops.concat([a, b], axis=0), lambda: [row.expand(2048, W), t((16, W))],
               lambda: [row.expand(1 << 15, W), t((16, W))]),
    "where": (ops.where, lambda: [nbx.asarray(np.array([[True, False]])).expand(2048, 2), t((2048, 2)), t((1, 2))],
              lambda: [nbx.asarray(np.array([[True]])).expand(1 << 24, 2), t((1, 2)), t((1, 2))]),
    "masked_fill": (lambda x, m: ops.masked_fill(x, m, -1.0), lambda: [row.expand(2048, W), nbx.asarray(np.ones((1, W), bool))],
                    lambda: [row.expand(1 << 15, W), nbx.asarray(np.ones((1, W), bool))]),
    "rope": (ops.rope, lambda: [t((1, 1, 64, 64)).expand(16, 8, 64, 64), t((64, 32)), t((64, 32))],
             lambda: [t((1, 1, 64, 64)).expand(256, 64, 64, 64), t((64, 32)), t((64, 32))]),
    "sdpa": (ops.sdpa, lambda: [t((1, 1, 64, 64)).expand(2, 4, 64, 64), t((2, 4, 64, 64)), t((2, 4, 64, 64))],
             lambda: [t((1, 1, 64, 64)).expand(64, 64, 64, 64), t((1, 1, 64, 64)).expand(64, 64, 64, 64),
                      t((1, 1, 64, 64)).expand(64, 64, 64, 64)]),
    "sort": (lambda x: ops.sort(x, axis=-1), lambda: [t((W, 2048)).transpose(0, 1)], lambda: [row.expand(1 << 15, W)]),
    "argsort": (lambda x: ops.argsort(x, axis=0), lambda: [row.expand(1024, W)], lambda: [row.expand(1 << 14, W)]),
    "cumulative_sum": (lambda x: ops.cumulative_sum(x, axis=-1), lambda: [row.expand(2048, W)],
                       lambda: [row.expand(1 << 15, W)]),
    "searchsorted": (ops.searchsorted, lambda: [ascending, row.expand(1024, W)], lambda: [ascending, row.expand(1 << 14, W)]),
    "iota": (lambda n: ops.iota(n), lambda: [1 << 20], lambda: [1 << 30]),
    "exp (complex64)": (ops.exp, lambda: [complex_row.expand(2048, W)], lambda: [complex_row.expand(1 << 14, W)]),
    "matmul (complex64)": (ops.matmul, lambda: [complex_row.expand(256, W), complex_t((W, 64))],
                           lambda: [complex_row.expand(1 << 16, W), complex_t((W, 256))]),
    "inv (linalg)": (ops.inv, lambda: [square.expand(256, 64, 64)], lambda: [square.expand(1 << 13, 64, 64)]),
    "pack_int4": (ops.pack_int4, lambda: [row.expand(1024, W)], lambda: [row.expand(1 << 16, W)]),
    "pack_int8": (ops.pack_int8, lambda: [row.expand(1024, W)], lambda: [row.expand(1 << 16, W)]),
    "copy (contiguous)": (lambda x: x.contiguous(), lambda: [row.expand(4096, W)], lambda: [row.expand(1 << 15, W)]),
}

packed = ops.pack_int4(t((256, W)))
CASES["matmul_int4"] = (ops.matmul_int4, lambda: [row.expand(512, W), *packed], lambda: [row.expand(1 << 16, W), *packed])
CASES["pack_linear"] = (ops.pack_linear, lambda: [row.expand(1024, W)], lambda: [row.expand(1 << 16, W)])
panels = ops.pack_linear(t((256, W)))
CASES["linear_packed"] = (lambda x, p: ops.linear_packed(x, p, features=256), lambda: [row.expand(512, W), panels],
                          lambda: [row.expand(1 << 16, W), panels])
codes = ops.pack_int8(t((256, W)))
CASES["matmul_int8"] = (ops.matmul_int8, lambda: [row.expand(512, W), *codes], lambda: [row.expand(1 << 16, W), *codes])


def copy_cases():
    """The copies: tobytes, numpy (shared), DLPack with copy=True, draws, a planned program."""
    x = row.expand(4096, W)
    huge = row.expand(1 << 15, W)
    model = program.trace(lambda a: ops.exp(a), row.expand(256, W))
    big_model = program.trace(lambda a: ops.exp(a), row.expand(1 << 15, W))
    return {
        "tobytes": (lambda: x.tobytes(), lambda: huge.tobytes(),
                    lambda got: got == np.ascontiguousarray(x.numpy()).tobytes()),
        # numpy() shares the tensor's memory: even a view of 128 MiB allocates nothing
        "numpy": (lambda: x.numpy(), lambda: huge.numpy(),
                  lambda got: np.array_equal(got, np.broadcast_to(row.numpy(), (4096, W)))),
        "__dlpack__(copy=True)": (lambda: np.from_dlpack(x, copy=True), lambda: np.from_dlpack(huge, copy=True),
                                  lambda got: np.array_equal(got, np.broadcast_to(row.numpy(), (4096, W)))),
        "random draw": (lambda: Generator(3).uniform((2048, W)), lambda: Generator(3).uniform((1 << 15, W)),
                        lambda got: np.array_equal(got, Generator(3).uniform((2048, W)))),
        "program run": (lambda: model.executable().run(row.expand(256, W))[0].numpy(), lambda: big_model.plan(),
                        lambda got: np.array_equal(got, ops.exp(materialized(row.expand(256, W))).numpy())),
    }


def measured(f):
    gc.collect()
    memory.reset_host_high_water()
    before = rss()
    try:
        result, error = f(), None
    except MemoryError as e:
        result, error = None, e
    grew = rss() - before
    return result, error, memory.host_high_water(), grew


def main():
    memory.set_limit(L)
    failures = []
    for name, (op, fitting, too_large) in CASES.items():
        args = fitting()
        got, error, peak, grew = measured(lambda: outputs_of(op(*args)))
        if error is not None:
            failures.append(f"{name}: a call that fits was refused: {error}")
        else:
            want = outputs_of(op(*[materialized(a) for a in args]))
            same = all(g.shape == w.shape and g.tobytes() == w.tobytes() for g, w in zip(got, want))
            if not same:
                failures.append(f"{name}: the views' answer differs from the contiguous one")
        del got
        big, big_error, big_peak, big_grew = measured(lambda: outputs_of(op(*too_large())))
        if big_error is None:
            failures.append(f"{name}: a call over the limit was not refused")
        del big
        for what, p, g in (("fits", peak, grew), ("over", big_peak, big_grew)):
            if p > L or g > L:
                failures.append(f"{name} ({what}): high water {p}, resident growth {g}, limit {L}")
        print(f"{name}: peak {peak >> 20} MiB (refused: peak {big_peak >> 20} MiB, {type(big_error).__name__})")
    for name, (fits, over, correct) in copy_cases().items():
        got, error, peak, grew = measured(fits)
        if error is not None or not correct(got):
            failures.append(f"{name}: a copy that fits: {error or 'a wrong value'}")
        del got
        shared, big_error, big_peak, big_grew = measured(over)
        if name == "numpy":
            if big_error is not None or shared.shape != (1 << 15, W) or shared.flags.writeable:
                failures.append(f"numpy of a large broadcast view: {big_error or shared.flags}")
        elif big_error is None:
            failures.append(f"{name}: a copy over the limit was not refused")
        del shared
        for what, p, g in (("fits", peak, grew), ("over", big_peak, big_grew)):
            if p > L or g > L:
                failures.append(f"{name} ({what}): high water {p}, resident growth {g}, limit {L}")
        outcome = f"refused: {str(big_error)[:80]}" if big_error else "shared, nothing allocated"
        print(f"{name}: peak {peak >> 20} MiB ({outcome})")
    for failure in failures:
        print("FAIL " + failure)
    print("ok" if not failures else f"{len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
