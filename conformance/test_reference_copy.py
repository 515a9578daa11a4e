"""The MiniLM reference figures the repository's tests read (a copy, so that a fresh clone needs
nothing beside it) are the shared folder's, byte for byte."""

from pathlib import Path

from spec_examples import REPOSITORY, SHARED

COPY = REPOSITORY / "crates" / "nbxtensor-models" / "tests" / "data" / "minilm_public.json"
ORIGINAL = SHARED / "reference" / "minilm_public.json"


def test_the_copied_reference_is_the_shared_one():
    assert ORIGINAL.is_file(), f"no reference at {ORIGINAL}: set NBX_SHARED or put the shared folder beside the repository"
    assert COPY.read_bytes() == ORIGINAL.read_bytes(), f"{COPY} differs from {ORIGINAL}: copy it again"
