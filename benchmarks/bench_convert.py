"""Side-by-side timings of nbxtensor.dtype.convert against ml_dtypes / numpy astype.

Every row times both sides in the same run on the same input, best of several repeats, and
checks first that both give the same result. Run against a release install:

    .venv/bin/pip install --no-deps --force-reinstall . && .venv/bin/python benchmarks/bench_convert.py
"""

import argparse
import time

import ml_dtypes
import numpy as np

from nbxtensor.dtype import convert


def best_of(repeats, fn):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def inputs(n):
    rng = np.random.default_rng(0)
    f32 = (rng.standard_normal(n, dtype=np.float32) * np.float32(8.0))
    return {
        "f32": f32,
        "bf16": f32.astype(ml_dtypes.bfloat16).view(np.uint16),
        "f16": f32.astype(np.float16),
        "e4m3": f32.astype(ml_dtypes.float8_e4m3fn).view(np.uint8),
        "e5m2": f32.astype(ml_dtypes.float8_e5m2).view(np.uint8),
    }


def cases(data):
    """(name, nbxtensor call, reference call, reference name) for each conversion."""
    bf16 = data["bf16"].view(ml_dtypes.bfloat16)
    return [
        ("f32 -> bf16 bits", lambda: convert.f32_to_bf16_bits(data["f32"]),
         lambda: data["f32"].astype(ml_dtypes.bfloat16), "ml_dtypes"),
        ("bf16 bits -> f32", lambda: convert.bf16_bits_to_f32(data["bf16"]),
         lambda: bf16.astype(np.float32), "ml_dtypes"),
        ("bf16 bits -> f16", lambda: convert.bf16_bits_to_f16(data["bf16"]),
         lambda: bf16.astype(np.float16), "ml_dtypes"),
        ("f16 -> bf16 bits", lambda: convert.f16_to_bf16_bits(data["f16"]),
         lambda: data["f16"].astype(ml_dtypes.bfloat16), "ml_dtypes"),
        ("f32 -> e4m3fn bits", lambda: convert.f32_to_fp8_e4m3fn_bits(data["f32"]),
         lambda: data["f32"].astype(ml_dtypes.float8_e4m3fn), "ml_dtypes"),
        ("e4m3fn bits -> f32", lambda: convert.fp8_e4m3fn_bits_to_f32(data["e4m3"]),
         lambda: data["e4m3"].view(ml_dtypes.float8_e4m3fn).astype(np.float32), "ml_dtypes"),
        ("f32 -> e5m2 bits", lambda: convert.f32_to_fp8_e5m2_bits(data["f32"]),
         lambda: data["f32"].astype(ml_dtypes.float8_e5m2), "ml_dtypes"),
        ("e5m2 bits -> f32", lambda: convert.fp8_e5m2_bits_to_f32(data["e5m2"]),
         lambda: data["e5m2"].view(ml_dtypes.float8_e5m2).astype(np.float32), "ml_dtypes"),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1 << 16, 1 << 20, 1 << 26])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"{'conversion':<22} {'elements':>10} {'nbxtensor ms':>13} {'reference ms':>13} {'reference':>10} {'ratio':>7}")
    for n in args.sizes:
        data = inputs(n)
        for name, ours, reference, reference_name in cases(data):
            got, expected = ours(), reference()
            assert np.array_equal(got.view(expected.dtype).view(np.uint8), expected.view(np.uint8)), name
            t_ours = best_of(args.repeats, ours)
            t_reference = best_of(args.repeats, reference)
            print(f"{name:<22} {n:>10} {t_ours * 1e3:>13.3f} {t_reference * 1e3:>13.3f} {reference_name:>10}"
                  f" {t_reference / t_ours:>6.2f}x")


if __name__ == "__main__":
    main()
