#!/usr/bin/env bash
# Miri (the interpreter that checks unsafe code for undefined behaviour) on the pure layers:
# shapes, strides and byte counts, the dtype table and promotion, the host allocator, the
# host element gathers, the DLPack import's checks, the memory planner, and the size and
# shape properties (their proptest cases fewer under Miri: cfg(miri)). Not the kernels (SIMD
# intrinsics, the thread pool and gemm are out of Miri's reach, and the fuzz targets and
# tests cover them). Installs the pinned nightly and its miri component when missing.
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
cargo "+$toolchain" miri test -p nbxtensor --lib -- \
    shape:: dtype::table dtype::promotion memory::host tensor::host_elements tensor::dlpack
cargo "+$toolchain" miri test -p nbxtensor --test planner_cases --test planner_props --test shape_props
cargo "+$toolchain" miri test -p nbxtensor --test size_props -- constructors_refuse chains_of_views
echo "miri: done in $((SECONDS - start)) s" >&2
