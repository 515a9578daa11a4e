#!/usr/bin/env bash
# The Array API standard's own test suite (data-apis/array-api-tests, copied in the shared
# folder: ../shared/array-api-tests, or $NBX_ARRAY_API_TESTS) against nbxtensor.array_api.
# Not part of scripts/test.sh (the suite is not on PyPI and the README's command reads
# nothing beside the repository); .ci/run calls it where the folder exists.
#
#     bash scripts/array_api.sh [pytest arguments, e.g. -k test_sum]
#
# The suite runs from a copy in target/array_api (hypothesis keeps its database there), at
# --max-examples $NBX_ARRAY_API_EXAMPLES (default 100). The summary (scripts/array_api_summary.py)
# counts passed and failed tests, writes each failure to target/array_api/failures.txt, and
# fails when fewer than $NBX_ARRAY_API_FLOOR percent pass (default: the rate docs/ARRAY_API.md
# records, so a regression fails CI; the standard's acceptance is 95).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
suite="${NBX_ARRAY_API_TESTS:-$(cd .. && pwd)/shared/array-api-tests}"
if [ ! -d "$suite/array_api_tests" ]; then
    echo "error: no array-api-tests at $suite (set NBX_ARRAY_API_TESTS)" >&2
    exit 1
fi
if ! .venv/bin/python -c "import nbxtensor" 2>/dev/null; then
    source scripts/env.sh
fi
.venv/bin/python -m pip install --quiet "hypothesis>=6.151" "ndindex>=1.8" "pytest-json-report>=1.5"
work="$PWD/target/array_api"
rm -rf "$work/suite"
mkdir -p "$work"
cp -r "$suite" "$work/suite"
start=$SECONDS
(cd "$work/suite" && ARRAY_API_TESTS_MODULE=nbxtensor.array_api "$OLDPWD/.venv/bin/python" -m pytest array_api_tests/ \
    -q -p no:cacheprovider --max-examples "${NBX_ARRAY_API_EXAMPLES:-100}" --hypothesis-disable-deadline \
    --json-report --json-report-file="$work/report.json" --json-report-omit collectors keywords streams \
    "$@" >"$work/pytest.log" 2>&1) || true
echo "array api: the suite ran in $((SECONDS - start)) s (log: $work/pytest.log)" >&2
.venv/bin/python scripts/array_api_summary.py "$work/report.json" --failures "$work/failures.txt" \
    --floor "${NBX_ARRAY_API_FLOOR:-0}"
