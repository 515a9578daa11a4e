"""Decode attention's graph rows of ``bench_cuda.py`` (nbxtensor's replay against torch's CUDA
graph) over cache lengths in a given order, in one fresh process, so that a row can be compared
alone and after others, and in several processes (docs/BENCHMARKS.md, twenty-sixth session).

    python3 benchmarks/bench_decode_order.py --lengths 131072              # 128K alone
    python3 benchmarks/bench_decode_order.py                               # 1K, 8K, 32K, 128K
    python3 benchmarks/bench_decode_order.py --lengths 131072,131072       # 128K twice
"""

import argparse

import bench_cuda


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", default=",".join(str(t) for t in bench_cuda.DECODE_LENGTHS),
                        help="cache lengths, comma-separated, in the order run (default: bench_cuda.py's)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    lengths = tuple(int(t) for t in args.lengths.split(","))
    if any(t < 1 for t in lengths):
        parser.error(f"--lengths: every length is at least 1, got {args.lengths}")
    copy_bw = bench_cuda.copy_bandwidth(args.repeats, bench_cuda.COPY_NUMEL)
    bench_cuda.print_us_rows(bench_cuda.decode_graph_rows(args.repeats, copy_bw, lengths))


if __name__ == "__main__":
    main()
