"""nbxtensor never imports torch: importing the package and every submodule, in a fresh
interpreter, records no attempt to import torch, caught or not.

The recorder is a meta-path finder placed before every other: Python asks it first about
each import, so even ``try: import torch / except ImportError`` is seen.
"""

import json
import subprocess
import sys

RECORDER = r"""
import importlib, json, pkgutil, sys

attempts = []

class Recorder:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            attempts.append(name)
        return None

sys.meta_path.insert(0, Recorder())
{body}
print(json.dumps({{"attempts": attempts, "modules": sorted(imported)}}))
"""

IMPORT_ALL = """
import nbxtensor
imported = {"nbxtensor"}
for info in pkgutil.walk_packages(nbxtensor.__path__, "nbxtensor."):
    importlib.import_module(info.name)
    imported.add(info.name)
"""

CONTROL = """
imported = set()
try:
    import torch  # a caught attempt must still be recorded
except ImportError:
    pass
"""


def _run(body):
    result = subprocess.run(
        [sys.executable, "-c", RECORDER.format(body=body)], capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_importing_every_module_never_asks_for_torch():
    report = _run(IMPORT_ALL)
    assert report["attempts"] == []
    # the walk reached the package's modules, not just the top
    assert {"nbxtensor.dtype.convert", "nbxtensor.shape", "nbxtensor._core"} <= set(report["modules"])


def test_the_recorder_sees_a_caught_import():
    assert _run(CONTROL)["attempts"] == ["torch"]
