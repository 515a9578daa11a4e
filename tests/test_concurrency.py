"""The concurrency suite (tests/concurrency_cases.py): 8 threads × {eager ops, shared replays,
shared executables, captures, settings churn, observers, generators}, each case in a child
process with a timeout, asserting every value; 0 wrong answers and 0 hung threads, over the
issue's full count: 8 threads × 1,000 iterations of each case (a few seconds in all).
NBX_CONCURRENCY_ITERATIONS changes the count."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("concurrency_cases.py")
THREADS = 8
ITERATIONS = 1000
CASES = ["eager_ops", "shared_replays", "shared_executables", "captures", "settings_churn", "observers", "generators"]


@pytest.mark.parametrize("case", CASES)
def test_case_gives_no_wrong_answer_and_no_hang(case):
    iterations = int(os.environ.get("NBX_CONCURRENCY_ITERATIONS", ITERATIONS))
    result = subprocess.run([sys.executable, str(SCRIPT), case, str(THREADS), str(iterations)],
                            capture_output=True, text=True, timeout=600)
    print(result.stdout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert f"{THREADS} threads x {iterations} iterations, 0 wrong, 0 hung" in result.stdout
