#!/usr/bin/env bash
# Runs on the GPU machine what scripts/vulkan_gpu.sh built (see there): the Vulkan loader
# installed, the conformance suite's vulkan:: checks, the wgpu benchmark, the Python tests.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
logs="${OUT:-$root/.gpuw/logs}"
mkdir -p "$logs"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && export VK_DRIVER_FILES="$icd"
export XDG_RUNTIME_DIR=/tmp NBX_REQUIRE_VULKAN=1 PYTHONUNBUFFERED=1
# the model's first part kept for scripts/vulkan_minilm.sh's call (the tree is sent afresh)
[ -d .gpum1 ] && rm -rf /tmp/gpum1 && cp -r .gpum1 /tmp/gpum1
xz -dkf .gpuw/conformance.xz
timeout 150 .gpuw/conformance vulkan:: --test-threads=8 >"$logs/conformance.log" 2>&1
echo "conformance: exit $?"
grep -E "panicked|test result" -A1 "$logs/conformance.log" | head -20
python3 -m pip install -q --no-deps --no-index --target /tmp/site .gpuw/*.whl && export PYTHONPATH=/tmp/site
timeout 150 python3 benchmarks/bench_wgpu.py --repeats 5 --json "$logs/wgpu.json" 2>&1 | tee "$logs/bench.log"
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_vulkan.py 2>&1 | tail -2
