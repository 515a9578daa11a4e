"""nbxtensor's CPU kernels against numpy, side by side in one process.

Each row runs the same operation on the same inputs with nbxtensor and with numpy (its
OpenBLAS for matmul), best of `--repeats`, after one warm-up; the ratio is numpy's time over
nbxtensor's (above 1: nbxtensor is faster). The last rows measure the per-launch host cost of
a chain of small launches: eager op calls against the replay of the captured program.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/bench_ops.py --repeats 5

Before each measurement the script pauses 0.3 s, so that neither side runs while the other's
worker threads still spin (OpenBLAS's spin for a while after each call and slowed the next
rows by up to 1.8x). numpy is measured as its users run it: the command unsets OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE (which hold OpenBLAS to older kernels), and the script prints the BLAS
numpy loaded and the kernel it picked (threadpoolctl) and the 1-minute load average.
"""

import argparse
import os
import time

import numpy as np

import nbxtensor as nbx
from nbxtensor import ops, program


def best(fn, repeats, budget=0.25):
    """The fastest of at least `repeats` timed calls, and of as many as `budget` seconds hold
    (small operations get thousands: their minimum is then not one lucky or unlucky call)."""
    # a pause first: the other side's threads (OpenBLAS's spin for a while after a call) are
    # idle again before this side is timed
    time.sleep(0.3)
    fn()
    times = []
    began = time.perf_counter()
    while len(times) < repeats or time.perf_counter() - began < budget:
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def layer_norm_numpy(x, w, b, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def softmax_numpy(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def rows(repeats):
    rng = np.random.default_rng(0)
    out = []
    for n in (256, 512, 1024, 2048):
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        ta, tb = nbx.asarray(a), nbx.asarray(b)
        out.append((f"matmul f32 {n}^3", best(lambda: ops.matmul(ta, tb), repeats), best(lambda: a @ b, repeats)))
    # an encoder's linears at batch 1 × 128 tokens: x · Wᵀ with the weight [out, in]
    for rows_, inner, outer in ((128, 384, 1536), (128, 1536, 384)):
        x = rng.standard_normal((rows_, inner), dtype=np.float32)
        weight = rng.standard_normal((outer, inner), dtype=np.float32)
        tx, tw = nbx.asarray(x), nbx.asarray(weight)
        out.append((
            f"linear f32 {rows_}x{inner}->{outer}",
            best(lambda: ops.linear(tx, tw), repeats),
            best(lambda: x @ weight.T, repeats),
        ))
    x = rng.standard_normal(1 << 24, dtype=np.float32)
    y = rng.standard_normal(1 << 24, dtype=np.float32)
    tx, ty = nbx.asarray(x), nbx.asarray(y)
    out.append(("add f32 16M", best(lambda: ops.add(tx, ty), repeats), best(lambda: np.add(x, y), repeats)))
    m = rng.standard_normal((4096, 4096), dtype=np.float32)
    w = rng.standard_normal(4096, dtype=np.float32)
    bias = rng.standard_normal(4096, dtype=np.float32)
    tm, tw, tb2 = nbx.asarray(m), nbx.asarray(w), nbx.asarray(bias)
    out.append(("softmax f32 4096x4096", best(lambda: ops.softmax(tm, axis=-1), repeats), best(lambda: softmax_numpy(m), repeats)))
    out.append((
        "layer_norm f32 4096x4096",
        best(lambda: ops.layer_norm(tm, tw, tb2, eps=1e-5), repeats),
        best(lambda: layer_norm_numpy(m, w, bias), repeats),
    ))
    return out


def small_rows(repeats):
    """Eager calls of small operations from Python, each against numpy's same call: the fixed
    cost of a call (the spec's rule: within 2x numpy's time)."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((8, 8), dtype=np.float32)
    b = rng.standard_normal((8, 8), dtype=np.float32)
    v = rng.standard_normal(64, dtype=np.float32)
    w = rng.standard_normal(8, dtype=np.float32)
    ta, tb, tv, tw = nbx.asarray(a), nbx.asarray(b), nbx.asarray(v), nbx.asarray(w)
    zero = np.zeros(8, np.float32)
    tz = nbx.asarray(zero)
    return [
        ("add f32 64", best(lambda: ops.add(tv, tv), repeats), best(lambda: np.add(v, v), repeats)),
        ("exp f32 64", best(lambda: ops.exp(tv), repeats), best(lambda: np.exp(v), repeats)),
        ("sum f32 64", best(lambda: ops.sum(tv), repeats), best(lambda: np.sum(v), repeats)),
        ("matmul f32 8x8", best(lambda: ops.matmul(ta, tb), repeats), best(lambda: a @ b, repeats)),
        ("softmax f32 8x8", best(lambda: ops.softmax(ta, axis=-1), repeats), best(lambda: softmax_numpy(a), repeats)),
        ("layer_norm f32 8x8", best(lambda: ops.layer_norm(ta, tw, tz, eps=1e-5), repeats),
         best(lambda: layer_norm_numpy(a, w, zero), repeats)),
    ]


def launch_costs(repeats, chain=1000):
    """Seconds per launch of a chain of `chain` tiny launches: eager calls, then the replay."""
    x = nbx.asarray(np.ones(16, np.float32))

    def model(t):
        for _ in range(chain):
            t = ops.neg(t)
        return t

    eager = best(lambda: model(x), repeats) / chain
    replay = program.trace(model, x).executable().capture(x)
    replayed = best(lambda: replay.run(x), repeats) / chain
    return eager, replayed


def describe_peer():
    """Prints what numpy runs on (its BLAS and the kernel picked) and the machine's load."""
    from threadpoolctl import threadpool_info

    held = [v for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if v in os.environ]
    for pool in threadpool_info():
        print(f"numpy BLAS: {pool.get('internal_api')} {pool.get('version')}, kernel {pool.get('architecture')}, "
              f"{pool.get('num_threads')} threads")
    if held:
        print(f"warning: {', '.join(held)} set: OpenBLAS is held to older kernels (unset them to measure)")
    print(f"load average (1 min) before: {os.getloadavg()[0]:.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    describe_peer()
    print(f"{'operation':<26}{'nbxtensor ms':>14}{'numpy ms':>12}{'ratio':>9}")
    for name, mine, theirs in rows(args.repeats):
        print(f"{name:<26}{mine * 1e3:>14.2f}{theirs * 1e3:>12.2f}{theirs / mine:>8.2f}x")
    print(f"{'small, eager from Python':<26}{'nbxtensor us':>14}{'numpy us':>12}{'ratio':>9}")
    for name, mine, theirs in small_rows(args.repeats):
        print(f"{name:<26}{mine * 1e6:>14.2f}{theirs * 1e6:>12.2f}{theirs / mine:>8.2f}x")
    eager, replayed = launch_costs(args.repeats)
    print(f"{'per launch, eager':<26}{eager * 1e6:>11.2f} us")
    print(f"{'per launch, replay':<26}{replayed * 1e6:>11.2f} us   ({eager / replayed:.1f}x less)")


if __name__ == "__main__":
    main()
