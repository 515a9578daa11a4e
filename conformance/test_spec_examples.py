"""Every example of the spec's sections that the library covers runs as written.

The examples are read from the spec itself (see spec_examples.py), not copied here, so a
change of behaviour that breaks one of them fails this test. Run by scripts/check_spec.sh
(from .ci/run where the shared folder exists), not by scripts/test.sh: the repository's own
tests need nothing beside it. The expected number of asserts
per section guards the extraction: a section whose examples were not found fails too.
"""

import pytest

from spec_examples import SPEC, assert_count, examples

# section heading -> the number of assert statements its examples hold in the spec
SECTIONS = {
    "What the library reads by itself, and what you may set": 5,
    "The CPU: every core": 3,
    "Dtype widths and kinds": 8,
    "bfloat16 on the host": 4,
    "Type promotion": 7,
    "Precision by policy": 8,
    "Array API: type promotion and Python scalars": 3,
    "Shapes, strides and views": 8,
    "The dtype enum and its tables": 4,
}


def test_spec_is_beside_the_repository():
    assert SPEC.is_file(), f"the spec is read from {SPEC}: set NBX_SHARED or put the shared folder beside the repository"


@pytest.mark.parametrize("heading", list(SECTIONS))
def test_section_examples_run_as_written(heading):
    blocks = examples(heading)
    assert sum(assert_count(b) for b in blocks) == SECTIONS[heading], f"examples of {heading!r} not all found"
    namespace = {"__name__": "spec_example"}
    for source in blocks:
        exec(compile(source, f"<spec: {heading}>", "exec"), namespace)
