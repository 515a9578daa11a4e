"""The ``nbx`` command that ``pip install`` puts on the PATH (``[project.scripts]``): the Rust
command line of ``crates/nbx``, run inside the extension, so it is the same program as the
``nbx`` binary cargo builds."""

import signal
import sys

from nbxtensor._core import cli as _core


def main() -> None:
    """Runs ``nbx`` with this process's arguments and exits with its status."""
    # Ctrl-C ends the command at once, as it ends the binary (the Rust code runs without
    # returning to the interpreter, which would only see the signal afterwards).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # output into a closed pipe (`nbx --help | head -1`) ends the command quietly, as it ends
    # other Unix commands, instead of a failed write raised from Rust
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.stdout.flush()
    sys.exit(_core.main(sys.argv[1:]))
