"""Where a CUDA generation's GPU time goes: every kernel of one ``nbx generate``, timed by CUPTI
through torch.profiler (torch serves as the profiler only: nbxtensor itself never imports it), as
totals, counts and means, the largest first.

    python3 benchmarks/profile_decode.py --model /tmp/llama8b --prompt-ids p512.json --new-tokens 65 [--serial]

``--serial`` turns the overlapped launches off first (``runtime.set_overlapped_launches(False)``):
with them on, a kernel's measured time includes its wait for the kernel before it.
"""

import argparse
import contextlib
import io
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--prompt-ids", required=True)
    parser.add_argument("--new-tokens", type=int, default=65)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--serial", action="store_true")
    parser.add_argument("--rows", type=int, default=24)
    args = parser.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile

    from nbxtensor._cli import main as nbx
    from nbxtensor.backend import runtime

    runtime.set_overlapped_launches(not args.serial)
    sys.argv = ["nbx", "generate", "--model", args.model, "--prompt-ids", args.prompt_ids, "--max-new-tokens",
                str(args.new_tokens), "--device", "cuda", "--dtype", args.dtype]
    with profile(activities=[ProfilerActivity.CUDA]) as prof, contextlib.redirect_stdout(io.StringIO()):
        try:
            nbx()
        except SystemExit as done:
            if done.code not in (0, None):
                raise
    rows = sorted(((e.key, e.count, e.device_time_total) for e in prof.key_averages()), key=lambda r: -r[2])
    print(f"torch {torch.__version__}; total kernel time {sum(r[2] for r in rows) / 1e3:.1f} ms")
    for key, count, total in rows[: args.rows]:
        print(f"{total / 1e3:9.2f} ms {count:7d} x {total / max(count, 1):8.2f} us  {key[:100]}")


if __name__ == "__main__":
    main()
