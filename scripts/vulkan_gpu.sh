#!/usr/bin/env bash
# Builds here what a Vulkan run on the GPU machine needs (the wgpu backend, issue 17), into
# .gpuw/ and .gl/ (both git-ignored through .git/info/exclude): the conformance test binary, an
# abi3 wheel without CUDA kernels, and the Vulkan loader as a Debian package. Then, in ONE
# device call, carrying .gpuw and .gl:
#
#     bash scripts/vulkan_run.sh
#
# which installs the loader, runs the conformance suite's vulkan:: checks (NBX_REQUIRE_VULKAN:
# an absent adapter fails), benchmarks/bench_wgpu.py and tests/test_vulkan.py, logs under $OUT.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
grep -qx '/.gpuw/' .git/info/exclude || echo /.gpuw/ >>.git/info/exclude
grep -qx '/.gl/' .git/info/exclude || echo /.gl/ >>.git/info/exclude
rm -rf .gpuw && mkdir -p .gpuw .gl /tmp/amd64/partial
binary="$(cargo test --release -p nbxtensor --test conformance --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "conformance":
        print(m["executable"])
')"
cp "$binary" .gpuw/conformance && strip .gpuw/conformance
NBX_SHIP_CUDA=0 .venv/bin/python -m pip wheel --quiet --no-deps -w .gpuw .
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
apt-get $o update -qq && (cd .gl && apt-get $o download libvulkan1)
ls -la .gpuw .gl
