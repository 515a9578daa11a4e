#!/usr/bin/env bash
# The conformance checks against the shared folder beside the repository (conformance/):
# the spec's examples run as written, and the copied reference figures are the shared ones.
# Not part of scripts/test.sh; .ci/run calls it after that, where the folder exists. The
# folder is $NBX_SHARED, else ../shared. Uses the .venv scripts/test.sh built (builds it
# when there is none).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export NBX_SHARED="${NBX_SHARED:-$(cd .. && pwd)/shared}"
if [ ! -d "$NBX_SHARED" ]; then
    echo "error: no shared folder at $NBX_SHARED (set NBX_SHARED): the conformance checks need it" >&2
    exit 1
fi
if ! .venv/bin/python -c "import nbxtensor" 2>/dev/null; then
    source scripts/env.sh
fi
.venv/bin/python -m pytest -q conformance "$@"
