"""GPU tensors from Python: moves, ops against numpy, DLPack with torch (in a child process,
since the library never imports torch), the runtime module. Every test that needs a GPU
skips, saying why, where there is none; the runtime's answers without a GPU are tested too."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nbxtensor as nbx
from nbxtensor import ops
from nbxtensor.backend import runtime

GPU = runtime.gpu_backend() == "cuda"
needs_gpu = pytest.mark.skipif(not GPU, reason=f"no CUDA device: {runtime.unavailable_reason('cuda')}")


def cuda_devices():
    """The CUDA entries of ``runtime.devices()``."""
    return [d for d in runtime.devices() if d["kind"] == "cuda"]


def test_runtime_answers_with_or_without_a_gpu():
    if GPU:
        assert runtime.unavailable_reason() is None and runtime.unavailable_reason("cuda") is None
        assert runtime.gpu_runtime().startswith("CUDA driver ")
        (first, *_) = cuda_devices()
        assert first["index"] == 0 and first["arch"].startswith("sm_") and first["total_memory"] > 0
        free, total = runtime.device_memory()
        assert 0 < free <= total == first["total_memory"]
    else:
        assert runtime.gpu_backend() != "cuda"
        assert runtime.unavailable_reason("cuda").startswith("CUDA is not")
        assert cuda_devices() == []
        if runtime.gpu_backend() is None:
            with pytest.raises(RuntimeError, match="CUDA is not"):
                runtime.gpu_runtime()
        with pytest.raises(ValueError, match="CUDA is not"):
            nbx.asarray(np.ones(3, np.float32)).to("cuda")
    table = runtime.backend_table("cuda")
    assert table.startswith("cuda backend:") and "matmul" in table and "float32" in table
    assert "cpu backend:" in runtime.backend_table()
    with pytest.raises(ValueError, match="unknown backend 'tpu'"):
        runtime.backend_table("tpu")
    with pytest.raises(ValueError, match="not a GPU"):
        runtime.device_memory("cpu")


def test_the_build_ships_the_tables_architectures():
    """The README's build (scripts/env.sh sets NBX_SHIP_CUDA=1) carries the machine code of every
    architecture of data/shipped_cuda.yml; on a GPU of one of them, a fresh process with an empty
    kernel cache compiles nothing for its first ops."""
    table = (Path(__file__).parents[1] / "crates/nbxtensor/data/shipped_cuda.yml").read_text()
    (line,) = [line for line in table.splitlines() if line.startswith("architectures:")]
    listed = [a.strip() for a in line.split("[", 1)[1].rstrip("]").split(",")]
    assert listed and runtime.shipped_kernels() == listed, "built without NBX_SHIP_CUDA=1 (scripts/env.sh sets it)"
    if not GPU or cuda_devices()[0]["arch"] not in listed:
        return
    code = (
        "import numpy as np, nbxtensor as nbx\n"
        "from nbxtensor import ops\n"
        "x = nbx.asarray(np.arange(6, dtype=np.float32).reshape(2, 3), device='cuda')\n"
        "y = ops.softmax(ops.add(x, x), axis=-1).to('cpu').numpy()\n"
        "total = ops.cast(ops.sum(ops.cast(x, 'bfloat16')), 'float32')\n"
        "print(float(total.to('cpu').numpy()), y[1].argmax())\n"
    )
    import tempfile

    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, XDG_CACHE_HOME=cache)
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["15.0", "2"]
    assert "nbxtensor: compiling" not in done.stderr, done.stderr


@needs_gpu
def test_tensors_move_to_the_gpu_and_back():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((33, 17), dtype=np.float32)
    t = nbx.asarray(x).to("cuda")
    assert t.device == "cuda:0" and t.__dlpack_device__() == (2, 0)
    with pytest.raises(ValueError, match="copy it to the host first"):
        t.numpy()
    back = t.to("cpu")
    np.testing.assert_array_equal(back.numpy(), x)
    view = t.transpose(0, 1)[3:9]
    np.testing.assert_array_equal(view.to("cpu").numpy(), x.T[3:9])


@needs_gpu
def test_ops_on_the_gpu_match_numpy():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((64, 48), dtype=np.float32)
    b = rng.standard_normal((48, 40), dtype=np.float32)
    ta, tb = nbx.asarray(a).to("cuda"), nbx.asarray(b).to("cuda")
    product = ops.matmul(ta, tb)
    assert product.device == "cuda:0"
    np.testing.assert_allclose(product.to("cpu").numpy(), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ops.exp(ta).to("cpu").numpy(), np.exp(a.astype(np.float64)), rtol=2e-6)
    with pytest.raises(ValueError, match="lives on cpu"):
        ops.matmul(ta, nbx.asarray(b))


TUNING_CHILD = """
import sys
import numpy as np
import nbxtensor as nbx
from nbxtensor import ops
from nbxtensor.ops import autotune_settings, launch_observer

autotune_settings.set_store(sys.argv[1])
rng = np.random.default_rng(5)
if sys.argv[2] == "int4":
    w = nbx.asarray(rng.standard_normal((256, 512)).astype(np.float32))
    weight = ops.pack_int4(w)
    host = [nbx.asarray(rng.standard_normal((16, 512)).astype(np.float32), dtype="bfloat16"), *weight]
    call = ops.matmul_int4
else:
    # one query of 32 heads over 8 cache heads of 8192 keys: three cuts of the cache
    shapes = [(1, 32, 1, 128), (1, 8, 8192, 128), (1, 8, 8192, 128)]
    host = [nbx.asarray(rng.standard_normal(s).astype(np.float32), dtype="bfloat16") for s in shapes]
    host.append(nbx.asarray(np.array(8000, np.int32)))
    call = ops.decode_attention
inputs = [t.to("cuda") for t in host]


def dry_run():
    observer = launch_observer.LaunchObserver()
    launch_observer.set_launch_observer(observer)
    call(*inputs)
    launch_observer.set_launch_observer(None)
    (launch,) = observer.launches
    return launch


before = dry_run()
measured_dry = autotune_settings.measurements()
got = call(*inputs).to("cpu").astype("float32").numpy()
want = call(*host).astype("float32").numpy()
after = dry_run()
error = float(np.abs(got - want).max() / np.abs(want).max())
print(before[0], after[0], before[1] == after[1], measured_dry, autotune_settings.measurements(), error, before[1])
"""


@needs_gpu
@pytest.mark.parametrize(
    "which, key_parts",
    [("int4", ["quant_few_bf16_r16", "n256 k512"]), ("decode", ["decode_mma_bf16_128_8", "b1 hk8 rows4 T8192"])],
)
def test_tuned_kernels_measure_once_and_a_second_process_measures_nothing(tmp_path, which, key_parts):
    """The tensor-core int4 product and decode attention measure their candidates at a shape's
    first call and keep the choice in the store: a dry run lists the autotune key (tuned once
    proven); a second process on the same store measures nothing."""
    store = tmp_path / "store"
    lines = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", TUNING_CHILD, str(store), which], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        lines.append(done.stdout.split(maxsplit=6))
    (tuned_1, after_1, same_1, dry_1, measured_1, error_1, key), (tuned_2, after_2, same_2, dry_2, measured_2, error_2, _) = lines
    assert all(part in key for part in key_parts), key
    assert (tuned_1, after_1, same_1, dry_1) == ("False", "True", "True", "0"), lines[0]
    assert int(measured_1) >= 2, "the first process measured the candidates"
    assert (tuned_2, after_2, same_2, dry_2, measured_2) == ("True", "True", "True", "0", "0"), lines[1]
    assert float(error_1) < 1e-2 and float(error_2) < 1e-2, "the GPU's result matches the CPU's"
    assert (store / "autotune").is_dir()


@needs_gpu
def test_programs_replay_cuda_graphs_from_python():
    from nbxtensor import program

    rng = np.random.default_rng(3)
    x = nbx.asarray(rng.standard_normal((4, 32), dtype=np.float32)).to("cuda")

    def model(t):
        for _ in range(10):
            t = ops.tanh(t)
        return t

    replay = program.trace(model, x).executable().capture(x)
    y = nbx.asarray(rng.standard_normal((4, 32), dtype=np.float32)).to("cuda")
    np.testing.assert_array_equal(replay.run(y)[0].to("cpu").numpy(), model(y).to("cpu").numpy())


@needs_gpu
def test_dlpack_with_torch_both_ways():
    """Run in a child process: torch.from_dlpack on an nbxtensor tensor and
    nbxtensor.from_dlpack on a torch tensor, zero-copy, on the GPU."""
    script = Path(__file__).with_name("cuda_dlpack_torch.py")
    child = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=dict(os.environ))
    if child.returncode == 3:
        pytest.skip(child.stdout.strip())
    assert child.returncode == 0, child.stdout + child.stderr
    assert "zero-copy both ways" in child.stdout


@needs_gpu
def test_a_gpu_program_is_priced_on_its_device_file_and_named_in_its_repr():
    from nbxtensor import program

    def model(t):
        return ops.neg(ops.exp(t))

    host = nbx.asarray(np.ones((3, 4), np.float32))
    x = host.to("cuda")
    p = program.trace(model, x)
    assert repr(p) == (
        "Program(launches=2, device='cuda:0', inputs=[float32[3, 4]], outputs=[float32[3, 4]], flops="
        f"{p.flops()}, bytes_moved={p.bytes_moved()})"
    )
    # without a file named, the device's own file (an H200 here) prices it
    assert p.price().seconds == p.price("nvidia/h200").seconds
    # the cost declarations live above the backends: the same price on the same file
    on_gpu, on_host = p.price("nvidia/h200"), program.trace(model, host).price("nvidia/h200")
    assert (on_gpu.seconds, on_gpu.flops, on_gpu.bytes) == (on_host.seconds, on_host.flops, on_host.bytes)
    executable = p.executable()
    arena = executable.arena_bytes
    assert repr(executable) == f"Executable(launches=2, device='cuda:0', arena_bytes={arena})"
    replay = executable.capture(x)
    assert repr(replay) == f"Replay(launches=2, device='cuda:0', arena_bytes={arena}, cuda_graph=True)"


@needs_gpu
def test_decode_attention_and_cache_writes_on_the_gpu_match_float64_and_replay_as_one_graph():
    from nbxtensor import program

    from float_formats import f64, stored, tensor
    from test_ops_decode import decode_reference

    rng = np.random.default_rng(23)
    hq, hk, t, d = 32, 8, 1500, 128
    k, v = rng.standard_normal((1, hk, t, d)), rng.standard_normal((1, hk, t, d))
    kc, vc = tensor(k, "bfloat16").to("cuda"), tensor(v, "bfloat16").to("cuda")
    for n in (0, 1, 999, t, t + 9):  # past the cache: clamped to it on the GPU
        q = rng.standard_normal((1, hq, 1, d))
        length = nbx.asarray(np.array(n, np.int32)).to("cuda")
        got = f64(ops.decode_attention(tensor(q, "bfloat16").to("cuda"), kc, vc, length).to("cpu"))
        ref = decode_reference(stored(q, "bfloat16"), stored(k, "bfloat16"), stored(v, "bfloat16"), [min(n, t)])
        np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-2)

    def model(q, k_new, v_new, position, length):
        ops.kv_cache_write(kc, k_new, position)
        ops.kv_cache_write(vc, v_new, position)
        return ops.decode_attention(q, kc, vc, length)

    def step(at):
        rows = lambda heads: tensor(rng.standard_normal((1, heads, 1, d)), "bfloat16").to("cuda")  # noqa: E731
        position = nbx.asarray(np.array(at, np.int64)).to("cuda")
        return rows(hq), rows(hk), rows(hk), position, nbx.asarray(np.array([at + 1], np.int32)).to("cuda")

    first = step(0)
    replay = program.trace(model, *first).executable().capture(*first)
    assert "cuda_graph=True" in repr(replay)
    for at in (1, 100, 1023, t - 1):
        x = step(at)
        got = f64(replay.run(*x)[0].to("cpu"))
        ref = decode_reference(f64(x[0].to("cpu")), f64(kc.to("cpu")), f64(vc.to("cpu")), [at + 1])
        np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-2)
        np.testing.assert_array_equal(f64(x[1].to("cpu"))[0, :, 0], f64(kc.to("cpu"))[0, :, at])


CONCURRENCY = Path(__file__).with_name("concurrency_cases.py")


@needs_gpu
@pytest.mark.parametrize("case", ["eager_ops", "shared_replays", "shared_executables", "captures", "settings_churn",
                                  "observers", "generators"])
def test_the_concurrency_suite_on_the_gpu(case):
    """tests/concurrency_cases.py with its tensors on cuda:0: 8 threads x 1,000 iterations, every
    value read back and asserted (test_concurrency.py runs the same cases on the CPU)."""
    result = subprocess.run([sys.executable, str(CONCURRENCY), case, "8", "1000", "cuda"],
                            capture_output=True, text=True, timeout=300)
    print(result.stdout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "8 threads x 1000 iterations, 0 wrong, 0 hung" in result.stdout and "on cuda" in result.stdout
