"""Decode attention's graph rows of ``bench_cuda.py`` (nbxtensor's replay against torch's CUDA
graph), either the 128K row alone in a fresh process or all four lengths in the benchmark's order,
so that the two can be compared: in docs/BENCHMARKS.md (twenty-fifth session) the 128K replay took
192–198 µs alone and 212 µs after the shorter rows, torch's graph 177–179 µs both ways.

    python3 benchmarks/bench_decode_order.py alone   # the 128K row in a process of its own
    python3 benchmarks/bench_decode_order.py after   # 1K, 8K, 32K, then 128K
"""

import argparse

import bench_cuda


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("order", choices=["alone", "after"])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    copy_bw = bench_cuda.copy_bandwidth(args.repeats, 1 << 28)
    if args.order == "alone":
        bench_cuda.DECODE_LENGTHS = (131072,)
    for name, mine, theirs, note in bench_cuda.decode_graph_rows(args.repeats, copy_bw):
        print(f"{args.order} {name}: {mine * 1e6:.1f} us, torch {theirs * 1e6:.1f} us, {theirs / mine:.2f}x; {note}")


if __name__ == "__main__":
    main()
