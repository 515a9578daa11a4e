"""Settings with a default, each restored by None, and the host's memory."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nbxtensor import memory
from nbxtensor.backend import device_facts
from nbxtensor.backend.host_memory import memory_state
from nbxtensor.ops import autotune_settings, launch_observer, tiling_policy
from nbxtensor.ops.launch_observer import LaunchObserver


def meminfo_kib(field):
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"/proc/meminfo has no {field}")


def cgroup_limit():
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            return int(Path(path).read_text().strip())
        except (OSError, ValueError):
            continue
    return None


def test_host_memory_is_the_smaller_of_the_machine_and_its_cgroup():
    state = memory_state()
    machine = meminfo_kib("MemTotal") * 1024
    limit = cgroup_limit()
    if limit is not None and limit < machine:
        assert state.total == limit and "cgroup" in state.source
    else:
        assert state.total == machine and state.source == "/proc/meminfo"
    assert 0 < state.available <= state.total and 0 < state.free <= state.total


def test_device_facts_come_from_the_device_files():
    assert device_facts.shares_host_memory("apple", "apple_m2_max") is True
    assert device_facts.computes_float64("apple", "apple_m2_max") is False
    assert device_facts.shares_host_memory("nvidia", "a100") is False
    assert device_facts.computes_float64("nvidia", "a100") is True
    assert device_facts.computes_float64("cpu", "host") is True
    with pytest.raises(ValueError, match="nvidia"):
        device_facts.computes_float64("nvidia", "gtx_480")


def test_memory_limit_is_set_read_and_restored():
    try:
        memory.set_limit(3 << 30)
        assert memory.limit() == 3 << 30
    finally:
        memory.set_limit(None)
    assert memory.limit() is None
    for bad in (0, -1, -(2**70)):
        with pytest.raises(ValueError, match="positive number of bytes"):
            memory.set_limit(bad)


def test_the_tiling_table_is_a_copy_set_whole_and_checked():
    library = tiling_policy.tiling_table()
    assert library == {"host_chunk_elements": 16384, "host_product_inline_work": 1 << 20,
                       "host_product_column_split_work": 1 << 31}
    library["host_chunk_elements"] = 1
    assert tiling_policy.tiling_table()["host_chunk_elements"] == 16384, "the table handed out is a copy"
    try:
        mine = {"host_chunk_elements": 1024, "host_product_inline_work": 64, "host_product_column_split_work": 1 << 20}
        tiling_policy.set_tiling(mine)
        assert tiling_policy.tiling_table() == mine
        for bad, message in [({}, "missing entry"), ({"host_chunk_elements": 8}, "missing entry 'host_product_inline_work'"), ({**mine, "host_chunk_elements": 0}, "host_chunk_elements must be ≥ 1"), ({**mine, "host_product_inline_work": -1}, "host_product_inline_work must be ≥ 1"), ({**mine, "tile": 4}, "unknown entry 'tile'")]:
            with pytest.raises(ValueError, match=message):
                tiling_policy.set_tiling(bad)
        assert tiling_policy.tiling_table() == mine, "a refused table changes nothing"
    finally:
        tiling_policy.set_tiling(None)
    assert tiling_policy.tiling_table() == {"host_chunk_elements": 16384, "host_product_inline_work": 1 << 20,
                                            "host_product_column_split_work": 1 << 31}


def default_store_in(env):
    code = "from nbxtensor.ops import autotune_settings as a; print(a.directory())"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.strip()


def test_the_default_store_is_in_the_users_cache(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"}
    env["HOME"] = str(tmp_path / "home")
    assert default_store_in(env) == str(tmp_path / "home" / ".cache" / "nbxtensor" / "certified")
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    assert default_store_in(env) == str(tmp_path / "xdg" / "nbxtensor" / "certified")
    env["XDG_CACHE_HOME"] = "relative/ignored"
    assert default_store_in(env) == str(tmp_path / "home" / ".cache" / "nbxtensor" / "certified")


def test_a_store_is_a_path_or_a_callable(tmp_path):
    try:
        autotune_settings.set_store(tmp_path / "proven")
        assert autotune_settings.directory() == tmp_path / "proven"
        assert not (tmp_path / "proven").exists(), "directory() does not create"
        assert autotune_settings.writable_directory() == tmp_path / "proven"
        assert (tmp_path / "proven").is_dir()
        asked = []
        autotune_settings.set_store(lambda: asked.append(1) or str(tmp_path / f"store{len(asked)}"))
        assert autotune_settings.directory() == tmp_path / "store1"
        assert autotune_settings.directory() == tmp_path / "store2"
        autotune_settings.set_store(lambda: 42)
        with pytest.raises(ValueError, match="must return a path"):
            autotune_settings.directory()
        with pytest.raises(ValueError, match="give a path"):
            autotune_settings.set_store(3.5)
    finally:
        autotune_settings.set_store(None)
    assert autotune_settings.directory().parts[-2:] == ("nbxtensor", "certified")


def test_an_unwritable_store_is_named_when_used(tmp_path):
    blocked = tmp_path / "read-only"
    blocked.mkdir()
    blocked.chmod(0o500)
    try:
        autotune_settings.set_store(blocked / "store")
        if os.geteuid() == 0:
            # root writes anywhere on an ordinary file system: use a path no one can create
            autotune_settings.set_store("/proc/nbxtensor-store")
        with pytest.raises(OSError, match="nbxtensor-store|read-only"):
            autotune_settings.writable_directory()
    finally:
        autotune_settings.set_store(None)
        blocked.chmod(0o700)


def test_a_fresh_process_has_measured_nothing():
    code = "from nbxtensor.ops import autotune_settings as a; n = a.measurements(); print(type(n).__name__, n)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["int", "0"]
    assert isinstance(autotune_settings.measurements(), int)


def test_no_observer_means_every_launch_runs():
    assert launch_observer.launch_observer().active() is False


def test_an_installed_observer_records_launches():
    class Counting(LaunchObserver):
        def record(self, tuned, key):
            super().record(tuned, key.upper())

    watcher = Counting()
    try:
        launch_observer.set_launch_observer(watcher)
        assert launch_observer.launch_observer() is watcher and watcher.active()
        watcher.record(True, "matmul:bf16:128x128")
        outputs = [("float32", (4, 4))]
        assert watcher.shadow_run("softmax:fp32", outputs) is outputs
        assert watcher.launches == [(True, "MATMUL:BF16:128X128"), (False, "SOFTMAX:FP32")]
        with pytest.raises(TypeError):
            launch_observer.set_launch_observer("not an observer")
    finally:
        launch_observer.set_launch_observer(None)
    assert launch_observer.launch_observer().active() is False
    assert LaunchObserver(active=False).active() is False
