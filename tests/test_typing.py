"""Type information: the package is typed (py.typed, inline annotations, and stubs for the
extension in python/nbxtensor/_core/), so mypy --strict passes on a user's typed code and
reports the mistakes of typed code that misuses the library; the stubs hold what the extension
holds (mypy's stubtest); the package itself passes mypy --strict."""

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbxtensor
from nbxtensor.dtype.nbx_dtype import NBXDtype

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = Path(__file__).parent / "typing_snippets"
PACKAGE = Path(nbxtensor.__file__).parent


def mypy(cwd, *args, module="mypy"):
    """mypy run from `cwd` (an empty folder: the installed package is what it reads, as a user's
    mypy would), with its cache there."""
    command = [sys.executable, "-m", module, *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900)


def test_the_installed_package_is_typed():
    assert (PACKAGE / "py.typed").is_file()
    from nbxtensor import _core

    stubs = {p.stem for p in (PACKAGE / "_core").glob("*.pyi")} - {"__init__"}
    assert stubs == set(_core.__all__), "a submodule of the extension without its stub, or a stub of none"


def test_a_typed_user_snippet_passes_mypy_strict_and_runs(tmp_path):
    shutil.copy(SNIPPETS / "user_code.py", tmp_path)
    checked = mypy(tmp_path, "--strict", "--cache-dir", str(tmp_path / ".cache"), "user_code.py")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("Success: no issues found in 1 source file")
    ran = subprocess.run([sys.executable, "user_code.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert float(ran.stdout) > 0  # the predicted seconds


def test_mypy_reports_each_mistake_of_typed_code(tmp_path):
    source = (SNIPPETS / "mistakes.py").read_text(encoding="utf-8")
    expected = {i for i, line in enumerate(source.splitlines(), 1) if "# E:" in line}
    shutil.copy(SNIPPETS / "mistakes.py", tmp_path)
    checked = mypy(tmp_path, "--strict", "--cache-dir", str(tmp_path / ".cache"), "mistakes.py")
    errors = re.findall(r"^mistakes\.py:(\d+): error: (.*)$", checked.stdout, flags=re.M)
    assert {int(line) for line, _ in errors} == expected, checked.stdout
    messages = dict((int(line), message) for line, message in errors)
    # the library's own types in the messages, never Any
    assert 'expression has type "Tensor", variable has type "int"' in messages[min(expected)]
    assert all("Any" not in m for m in messages.values()), checked.stdout


def test_the_extension_stubs_match_the_extension(tmp_path):
    """stubtest imports the extension and compares every name and signature with the stubs: a
    function or class added to the extension without its stub line fails here, named."""
    from nbxtensor import _core

    checked = mypy(tmp_path, "nbxtensor._core", "nbxtensor.dtype.nbx_dtype", module="mypy.stubtest")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # the extension, each of its submodules, and the enum's module
    modules = 1 + len(_core.__all__) + 1
    assert f"Success: no issues found in {modules} modules" in checked.stdout, checked.stdout


def test_the_enum_stub_lists_every_dtype_of_the_table():
    tree = ast.parse((PACKAGE / "dtype" / "nbx_dtype.pyi").read_text(encoding="utf-8"))
    enum = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "NBXDtype")
    stubbed = [(a.targets[0].id, a.value.value) for a in enum.body if isinstance(a, ast.Assign)]
    assert stubbed == [(m.name, m.value) for m in NBXDtype]


def test_the_package_passes_mypy_strict(tmp_path):
    """The package's own sources (python/nbxtensor) with the stubs, as mypy --strict reads them."""
    checked = mypy(ROOT / "python", "--strict", "--cache-dir", str(tmp_path / ".cache"), "-p", "nbxtensor")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("Success: no issues found")
