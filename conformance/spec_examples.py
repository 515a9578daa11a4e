"""Reads the spec (the 0.0.1 README in the shared folder beside the repository: ``$NBX_SHARED``,
else ``../shared``) and yields the Python examples of one of its sections, as written there.

The spec is plain text: a section runs from its heading line to the next heading, and an
example is a paragraph (lines between blank lines) that compiles as Python and whose first
line that is not a comment starts like code. Consecutive examples of a section share one namespace, as a reader running them would.
"""

import ast
import os
import re
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NBX_SHARED") or REPOSITORY.parent / "shared")
SPEC = SHARED / "seed" / "000_5562fce05e728465.txt"

# Every heading of the spec's "Examples" part, in order: each ends the section before it.
HEADINGS = [
    "Dtype widths and kinds",
    "bfloat16 on the host",
    "Type promotion",
    "Precision by policy",
    "Array API: type promotion and Python scalars",
    "Shapes, strides and views",
    "The dtype enum and its tables",
    "What the library reads by itself, and what you may set",
    "The CPU: every core",
    "Hardware",
]

_CODE_START = re.compile(r"^(from |import |assert |try:|[A-Za-z_][\w.]*\s*(=|\())")


def section_text(heading):
    """The lines of one section of the spec, without its heading."""
    lines = SPEC.read_text(encoding="utf-8").splitlines()
    start = lines.index(heading) + 1
    following = HEADINGS[HEADINGS.index(heading) + 1]
    end = lines.index(following, start)
    return lines[start:end]


def examples(heading):
    """The code paragraphs of one section, in order, each as source text."""
    blocks, paragraph = [], []
    for line in section_text(heading) + [""]:
        if line.strip():
            paragraph.append(line)
            continue
        if paragraph:
            source = "\n".join(paragraph)
            code = [line for line in paragraph if not line.lstrip().startswith("#")]
            if code and _CODE_START.match(code[0]) and _compiles(source):
                blocks.append(source)
            paragraph = []
    return blocks


def assert_count(source):
    """How many assert statements a source holds (a check that extraction found the examples)."""
    return sum(isinstance(node, ast.Assert) for node in ast.walk(ast.parse(source)))


def _compiles(source):
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True
