"""Decode attention's graph rows of ``bench_cuda.py`` (nbxtensor's replay against torch's CUDA
graph) over cache lengths in a given order, in one fresh process, so that a row can be compared
alone and after others, and in several processes (docs/BENCHMARKS.md, twenty-sixth session).

    python3 benchmarks/bench_decode_order.py --lengths 131072              # 128K alone
    python3 benchmarks/bench_decode_order.py                               # 1K, 8K, 32K, 128K
    python3 benchmarks/bench_decode_order.py --lengths 131072,131072       # 128K twice
    python3 benchmarks/bench_decode_order.py --store /tmp/fresh            # the splits tuned anew

The rows end with the autotune's decode entries in the store: each candidate cut of the cache
(``s32`` = 32 splits) timed from memory at the shape's first call, and the choice, so that the
cuts compare side by side in one process. ``--store`` points the process at a store of its own
(an empty one measures every shape again).
"""

import argparse
import json

import bench_cuda
from nbxtensor.ops import autotune_settings


def print_decode_choices():
    """The store's decode_attention entries: the candidates' µs and the choice."""
    for path in sorted((autotune_settings.directory() / "autotune").glob("*.json")):
        for key, entry in json.loads(path.read_text())["entries"].items():
            if key.startswith("decode_"):
                times = ", ".join(f"{m['candidate']} {m['seconds'] * 1e6:.1f}us" for m in entry["measured"])
                print(f"autotune {key}: {times}; chose {entry['choice']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", default=",".join(str(t) for t in bench_cuda.DECODE_LENGTHS),
                        help="cache lengths, comma-separated, in the order run (default: bench_cuda.py's)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--store", help="the autotune store this process uses (default: the user's)")
    args = parser.parse_args()
    if args.store:
        autotune_settings.set_store(args.store)
    lengths = tuple(int(t) for t in args.lengths.split(","))
    if any(t < 1 for t in lengths):
        parser.error(f"--lengths: every length is at least 1, got {args.lengths}")
    copy_bw = bench_cuda.copy_bandwidth(args.repeats, bench_cuda.COPY_NUMEL)
    bench_cuda.print_us_rows(bench_cuda.decode_graph_rows(args.repeats, copy_bw, lengths))
    print_decode_choices()


if __name__ == "__main__":
    main()
