"""Packaging: `pip wheel .` gives one abi3 wheel under the manylinux policy of pyproject.toml
(the wheel scripts/env.sh built and installed, kept in target/wheelhouse), the extension links
no newer glibc than that policy allows, the wheel carries its types, and the `nbx` command it
installs runs, here and in a fresh virtual environment."""

import configparser
import os
import platform
import re
import signal
import subprocess
import sys
import venv
import zipfile
from importlib.metadata import distribution
from pathlib import Path

import numpy as np

import nbxtensor

ROOT = Path(__file__).resolve().parents[1]
WHEELHOUSE = ROOT / "target" / "wheelhouse"
PACKAGE = Path(nbxtensor.__file__).parent


def policy():
    """The manylinux policy pyproject.toml names (`[tool.maturin] compatibility`)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    found = re.findall(r'^compatibility = "(manylinux_(\d+)_(\d+))"$', text, flags=re.M)
    assert len(found) == 1, "pyproject.toml names one manylinux policy"
    name, major, minor = found[0]
    return name, (int(major), int(minor))


def wheel():
    wheels = sorted(WHEELHOUSE.glob("nbxtensor-*.whl"))
    assert len(wheels) == 1, f"expected the one wheel scripts/env.sh builds in {WHEELHOUSE}, found {wheels}"
    return wheels[0]


def tag():
    return f"cp310-abi3-{policy()[0]}_{platform.machine()}"


def test_pip_wheel_gives_an_abi3_manylinux_wheel():
    assert wheel().name == f"nbxtensor-{nbxtensor.__version__}-{tag()}.whl"
    with zipfile.ZipFile(wheel()) as z:
        metadata = z.read(f"nbxtensor-{nbxtensor.__version__}.dist-info/WHEEL").decode()
    assert f"Tag: {tag()}\n" in metadata and "Root-Is-Purelib: false" in metadata
    # the package these tests import is that wheel
    assert f"Tag: {tag()}\n" in distribution("nbxtensor").read_text("WHEEL")


def test_the_extension_needs_no_newer_glibc_than_its_tag():
    extension = PACKAGE / "_core.abi3.so"
    versions = {(int(a), int(b)) for a, b in re.findall(rb"GLIBC_(\d+)\.(\d+)", extension.read_bytes())}
    assert versions, "no glibc symbol version found: not a glibc build?"
    assert max(versions) <= policy()[1], f"{extension} needs glibc {max(versions)}, its tag promises {policy()[1]}"


def test_the_wheel_carries_types_and_the_command():
    with zipfile.ZipFile(wheel()) as z:
        names = set(z.namelist())
        entry_points = z.read(f"nbxtensor-{nbxtensor.__version__}.dist-info/entry_points.txt").decode()
    stubs = {n for n in names if n.startswith("nbxtensor/_core/") and n.endswith(".pyi")}
    assert {"nbxtensor/py.typed", "nbxtensor/dtype/nbx_dtype.pyi"} <= names
    assert {"nbxtensor/_core/__init__.pyi", "nbxtensor/_core/tensor.pyi", "nbxtensor/_core/program.pyi"} <= stubs
    scripts = configparser.ConfigParser()
    scripts.read_string(entry_points)
    assert dict(scripts["console_scripts"]) == {"nbx": "nbxtensor._cli:main"}


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, timeout=600, **kwargs)


def assert_help_and_refusal(nbx):
    shown = run([str(nbx), "--help"])
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("usage:\n  nbx embed --model DIR") and "  nbx price --model DIR" in shown.stdout
    refused = run([str(nbx), "frobnicate"])
    assert refused.returncode == 2
    assert refused.stderr.startswith('nbx: error: unknown command "frobnicate"') and refused.stdout == ""


def test_the_installed_nbx_command_is_the_rust_command_line():
    nbx = Path(sys.executable).parent / "nbx"
    assert nbx.is_file(), f"pip did not install the nbx command beside {sys.executable}"
    assert_help_and_refusal(nbx)
    # a failure after the command line: exit 1 and the reason
    missing = run([str(nbx), "price", "--model", str(ROOT / "no-such-model")])
    assert missing.returncode == 1 and "no model directory" in missing.stderr


def test_nbx_into_a_closed_pipe_ends_quietly():
    nbx = Path(sys.executable).parent / "nbx"
    child = subprocess.Popen([str(nbx), "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child.stdout.close()  # before the interpreter has started: its first write finds no reader
    _, errors = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGPIPE and errors == b""


def test_nbx_runs_after_installing_the_wheel_into_a_fresh_venv(tmp_path):
    fresh = tmp_path / "fresh"
    venv.create(fresh, with_pip=False)
    python = fresh / "bin" / "python"
    installed = run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", str(wheel())])
    assert installed.returncode == 0, installed.stderr
    # numpy, the one dependency, lent from this environment (no index is reached)
    site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    (site / "numpy_of_the_tests.pth").write_text(str(Path(np.__file__).parents[1]) + "\n")
    where = run([str(python), "-c", "import nbxtensor; print(nbxtensor.__file__)"])
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(fresh), "the fresh venv imported another nbxtensor"
    assert_help_and_refusal(fresh / "bin" / "nbx")
    assert os.access(fresh / "bin" / "nbx", os.X_OK)
