#!/usr/bin/env bash
# Runs on the GPU machine what scripts/gpu.sh built: the CUDA tests (plain, then under
# compute-sanitizer memcheck and racecheck), the conformance suite on the CPU and CUDA, the
# Python GPU tests, and the CUDA benchmark.
# Logs go to $OUT (when set) or .gpu/logs; a summary table is printed last.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
logs="${OUT:-$root/.gpu/logs}"
mkdir -p "$logs"
export PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/tmp/nbx-cache
summary=()
step() { # name, command...
    local name="$1"; shift
    local start=$SECONDS
    if "$@" >"$logs/$name.log" 2>&1; then
        summary+=("$(printf '%-28s ok    %4ds  %s' "$name" $((SECONDS - start)) "$(grep -h 'test result' "$logs/$name.log" | tail -1)")")
    else
        summary+=("$(printf '%-28s FAIL  %4ds  see %s' "$name" $((SECONDS - start)) "$logs/$name.log")")
        tail -30 "$logs/$name.log"
    fi
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
step core-unit-tests .gpu/core_lib --test-threads=4
step cuda-tests .gpu/cuda --test-threads=1
step conformance .gpu/conformance --test-threads=1
step cuda-memcheck compute-sanitizer --tool memcheck --error-exitcode 9 .gpu/cuda --test-threads=1
step cuda-racecheck compute-sanitizer --tool racecheck --error-exitcode 9 .gpu/cuda --test-threads=1 unary rows softmax attention decode
python3 -m pip install -q --no-deps --no-index --target /tmp/site .gpu/*.whl
export PYTHONPATH=/tmp/site
step python-gpu-tests python3 -m pytest -q -p no:cacheprovider tests/test_cuda.py
step bench-cuda python3 benchmarks/bench_cuda.py --repeats 7
step launch-cost .gpu/cuda_launch_cost
echo "== benchmark"
cat "$logs/bench-cuda.log" "$logs/launch-cost.log"
echo "== summary"
printf '%s\n' "${summary[@]}"
