class InternalError(RuntimeError):
    """A bug in nbxtensor: a Rust panic caught at the Python edge."""

def _panic_for_test(message: str) -> None: ...

__all__ = ["InternalError", "_panic_for_test"]
