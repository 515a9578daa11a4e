#!/usr/bin/env bash
# Bounded fuzzing of every target in fuzz/ (docs/FUZZING.md): SECONDS each (default 60), from
# the seeds in fuzz/seeds/<target> (every input a fuzz run ever crashed on, and valid files)
# and the growing corpus fuzz/corpus/<target>; SECONDS 0 runs every seed and corpus input once
# and makes no new ones (a regression run of every input that ever crashed). libFuzzer with AddressSanitizer through
# cargo-fuzz, installed when missing; on stable Rust through RUSTC_BOOTSTRAP=1 (the sanitizer
# flags are nightly-only). Fails on the first crash, whose input lands in fuzz/artifacts/.
#
#     bash scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
command -v cargo >/dev/null || { echo "error: cargo not found: install Rust (https://rustup.rs)" >&2; exit 1; }
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked --version 0.13.2
fi
export RUSTC_BOOTSTRAP=1
# the build: every target at once (one build of the library), with parallel code generation
# (16 units: a faster build, a somewhat slower fuzzer; what a bounded run wants)
start=$SECONDS
cargo fuzz build --codegen-units 16
echo "fuzz: built in $((SECONDS - start)) s" >&2
for target in safetensors_header dlpack_import op_call; do
    mkdir -p "fuzz/corpus/$target"
    seeds=()
    if [ -d "fuzz/seeds/$target" ]; then seeds=("fuzz/seeds/$target"); fi
    log="fuzz/target/$target.log"
    if [ "$seconds" = 0 ]; then bound=(-runs=0); else bound=(-max_total_time="$seconds"); fi
    if ! cargo fuzz run --codegen-units 16 "$target" "fuzz/corpus/$target" ${seeds[@]+"${seeds[@]}"} -- \
        "${bound[@]}" -print_final_stats=1 >"$log" 2>&1; then
        grep -v NEW_FUNC "$log" | tail -n 120 >&2
        echo "fuzz: $target crashed (its input is in fuzz/artifacts/$target/; the log is $log)" >&2
        exit 1
    fi
    echo "fuzz: $target: $(grep -E '^(Done|INFO: seed corpus)|stat::(number_of_executed_units|new_units_added)' "$log" | tr '\n' ' ')" >&2
done
echo "fuzz: done in $((SECONDS - start)) s" >&2
