#!/usr/bin/env bash
# Miri (the interpreter that checks unsafe code for undefined behaviour) on the unit tests of
# the layers whose unsafe code it can run: the host allocator (memory::host), storage, element
# reads and gathers, and the DLPack import and export (tensor::). Not the kernels (SIMD
# intrinsics, the thread pool and gemm are out of Miri's reach; the fuzz targets and tests
# cover them), nor the layers without unsafe code (shapes, promotion, the planner: safe Rust,
# whose tests run natively). Installs the pinned nightly and its miri component when missing.
#
#     bash scripts/miri.sh
set -euo pipefail
cd "$(dirname "$0")/.."
toolchain="${NBX_MIRI_TOOLCHAIN:-nightly-2026-05-20}"
command -v rustup >/dev/null || { echo "error: rustup not found: install Rust (https://rustup.rs)" >&2; exit 1; }
if ! cargo "+$toolchain" miri --version >/dev/null 2>&1; then
    rustup toolchain install "$toolchain" --profile minimal --component miri,rust-src --no-self-update
fi
cargo "+$toolchain" miri setup
# isolation off: proptest looks for its regression files
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-disable-isolation}"
start=$SECONDS
cargo "+$toolchain" miri test -p nbxtensor --lib -- memory::host tensor::
echo "miri: done in $((SECONDS - start)) s" >&2
