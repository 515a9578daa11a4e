"""The memory limit holds (issue 18): under `memory.set_limit(64 MiB)`, no op family and no copy
raises the host allocator's high-water mark, or the process's resident memory, past the limit;
what fits gives the same answer as on contiguous inputs, what does not is a MemoryError. In a
child process (tests/memory_limit_cases.py): the limit and the count are process-wide."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).with_name("memory_limit_cases.py")


def test_no_op_and_no_copy_passes_the_limit():
    result = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=600)
    print(result.stdout)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stdout[-4000:] + result.stderr[-3000:]
    assert result.stdout.count("peak") >= 28, "every family and every copy ran"
