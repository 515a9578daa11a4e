#!/usr/bin/env bash
# Every test: the Rust workspace (unit, property and doc tests), then pytest against the
# package installed with `pip install .`.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cargo test --workspace --release
.venv/bin/python -m pytest -q "$@"
