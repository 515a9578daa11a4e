#!/usr/bin/env bash
# Builds here what the GPU machine runs, into .gpu/ (git-ignored): the CUDA test binary, the
# backend conformance suite, the core's unit tests, and an abi3 wheel of the Python package.
# Then, in ONE device call (the `device` tool of this workplace, or any machine with an NVIDIA
# GPU and CUDA 13):
#
#     bash scripts/gpu_run.sh          # from the repository root, with .gpu/ beside it
#
# which runs the GPU tests (also under compute-sanitizer memcheck and racecheck), the Python
# GPU tests, and benchmarks/bench_cuda.py, and prints a table last.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# the CUDA kernels' machine code compiled into every build below (as scripts/env.sh does), by the
# NVRTC of .venv (made by scripts/env.sh)
[ -x .venv/bin/python ] || { echo "error: no .venv: run scripts/env.sh first (it installs NVRTC for the build)" >&2; exit 1; }
export VIRTUAL_ENV="$root/.venv"
export NBX_SHIP_CUDA="${NBX_SHIP_CUDA-1}"
rm -rf .gpu && mkdir -p .gpu
binaries="$(cargo test --release -p nbxtensor --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        name = m["target"]["name"]
        if name in ("cuda", "conformance", "nbxtensor") and m["target"]["kind"] in (["test"], ["lib"]):
            print(("core_lib" if name == "nbxtensor" else name) + " " + m["executable"])
')"
while read -r name path; do
    cp "$path" ".gpu/$name"
    strip ".gpu/$name"
done <<<"$binaries"
cargo build --release --quiet -p nbxtensor --example cuda_launch_cost
cp target/release/examples/cuda_launch_cost .gpu/ && strip .gpu/cuda_launch_cost
.venv/bin/python -m pip wheel --quiet --no-deps -w .gpu . >/dev/null
ls -la .gpu
