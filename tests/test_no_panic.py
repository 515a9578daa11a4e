"""No Rust panic ever reaches Python: every public function and method, called with hostile
arguments (tests/hostile_calls.py, in a child process), either answers or raises an
ordinary exception. A panic, a crash or a hang fails this test."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).with_name("hostile_calls.py")


def test_hostile_arguments_never_panic():
    result = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    calls = int(result.stdout.strip().splitlines()[-1].split(": ")[1])
    assert calls > 5000
