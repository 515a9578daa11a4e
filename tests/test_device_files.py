"""The device description files and their readers, from Python.

References: Apple's Metal Feature Set Tables (32 KB of threadgroup memory, no double in Metal),
Apple's M4 Pro announcement (16- or 20-core GPU, 273 GB/s), NVIDIA's H200 datasheet
(141 GB, 4.8 TB/s) and the CUDA compute-capability list (H200 and H100: 9.0; V100: 7.0).
"""

import os

import pytest

from nbxtensor.backend import device_files, device_names


def test_the_m4_pro_file_holds_apples_published_limits():
    chip = device_files.read("apple", "apple_m4_pro")
    assert chip["compute_capability"] == "apple-m4-pro"
    assert chip["memory"]["max_shared_memory_per_block"] == 32 * 1024
    assert chip["memory"]["bandwidth_bytes_per_s"] == pytest.approx(273e9)
    assert chip["compute"]["multiprocessor_counts"] == [16, 20]
    assert chip["shares_host_memory"] is True
    assert chip["computes_float64"] is False
    assert "Apple M4 Pro" in chip["names"]


def test_the_h200_file_holds_the_datasheet_figures():
    card = device_files.read("nvidia", "h200")
    assert card["memory"]["device_memory_gb"] == [141]
    assert card["memory"]["bandwidth_bytes_per_s"] == pytest.approx(4.8e12)
    assert card["peak"]["matrix"]["bfloat16"] == pytest.approx(1979e12 / 2)  # datasheet figure is sparse
    assert "l2_cache_bytes" not in card["memory"]  # not in the datasheet: left out, not guessed


def test_arch_string_recognises_driver_names_and_keys():
    assert device_names.arch_string("Apple M4 Pro") == "apple-m4-pro"
    assert device_names.arch_string("NVIDIA H200") == "sm_90"
    assert device_names.arch_string("nvidia h100 80gb hbm3 ") == "sm_90"
    assert device_names.arch_string("Tesla V100-SXM2-32GB") == "sm_70"
    assert device_names.arch_string("sm_89") == "sm_89"


def test_unknown_names_raise_value_error_listing_what_exists():
    with pytest.raises(ValueError, match="NVIDIA H200 \\(sm_90\\)"):
        device_names.arch_string("Matrox G200")
    with pytest.raises(ValueError, match="apple.*cpu.*nvidia"):
        device_files.read("intel", "arc_a770")
    with pytest.raises(ValueError, match="apple_m4_max"):
        device_files.read("apple", "apple_m9")
    with pytest.raises(ValueError, match="nvidia"):
        device_files.devices("amd")


def test_read_returns_a_fresh_copy():
    first = device_files.read("apple", "apple_m4_pro")
    first["memory"]["max_shared_memory_per_block"] = 1
    first["names"].append("not a chip")
    again = device_files.read("apple", "apple_m4_pro")
    assert again["memory"]["max_shared_memory_per_block"] == 32768
    assert again["names"] == ["Apple M4 Pro"]


def test_every_listed_device_reads_and_agrees_with_its_key():
    assert device_files.vendors() == ["apple", "cpu", "nvidia"]
    assert set(device_files.devices("nvidia")) == {"tesla_v100", "a100", "l4", "rtx_4090", "h100", "h200"}
    for vendor in ("apple", "nvidia"):
        for name in device_files.devices(vendor):
            facts = device_files.read(vendor, name)
            assert facts["vendor"] == vendor
            for driver_name in facts["names"]:
                assert device_names.arch_string(driver_name) == facts["compute_capability"]


def test_the_host_cpu_is_measured_with_its_sources():
    host = device_files.read("cpu", "host")
    # the CPUs this process may run on bound the count (a cgroup quota can only lower it)
    assert 1 <= host["logical_cores"] <= len(os.sched_getaffinity(0))
    assert set(host["source"]) == {"logical_cores", "simd", "caches", "model_name"}
    assert all(isinstance(s, str) and s for s in host["source"].values())
    caches_dir = "/sys/devices/system/cpu/cpu0/cache"
    if os.path.isdir(caches_dir):
        assert host["source"]["caches"] == caches_dir
        levels = {int(open(os.path.join(caches_dir, d, "level")).read()) for d in os.listdir(caches_dir) if d.startswith("index")}
        assert {c["level"] for c in host["caches"]} == levels
    else:
        assert host["caches"] is None and host["source"]["caches"].startswith("absent")
    assert device_files.devices("cpu") == ["host"]
