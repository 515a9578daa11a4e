#!/usr/bin/env bash
# The main job: build nbxtensor from this checkout and run it (on the CPU; no GPU needed).
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
.venv/bin/python -m nbxtensor
