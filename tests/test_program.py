"""Programs from Python: a model traced through the ops, planned, run in one arena,
captured and replayed; the replay equals eager execution byte for byte."""

import numpy as np
import pytest

import nbxtensor as nbx
from nbxtensor import ops, program


def model(x):
    y = ops.exp(x)
    z = ops.neg(y)
    return ops.abs(z.transpose(0, 1)), y


def test_trace_records_the_launches_and_runs_nothing():
    x = nbx.asarray(np.ones((3, 4), np.float32))
    p = program.trace(model, x)
    assert p.keys() == ["exp:fp32", "neg:fp32", "abs:fp32"]
    assert len(p) == 3 and p.flops() == 36 and p.bytes_moved() == 3 * 2 * 48


def test_plan_report_and_picture():
    x = nbx.asarray(np.ones((64, 64), np.float32))
    plan = program.trace(model, x).plan()
    assert plan.arena_bytes >= plan.lower_bound > 0 and plan.ratio == plan.arena_bytes / plan.lower_bound
    assert "arena" in plan.report()
    assert plan.svg("chain").lstrip().startswith("<svg")


def test_replay_equals_eager_on_new_inputs():
    rng = np.random.default_rng(3)
    x = nbx.asarray(rng.standard_normal((5, 7), dtype=np.float32))
    executable = program.trace(model, x).executable()
    first = executable.run(x)
    eager = model(x)
    assert [t.tobytes() for t in first] == [t.tobytes() for t in eager]
    replay = executable.capture(x)
    for _ in range(3):
        fresh = nbx.asarray(rng.standard_normal((5, 7), dtype=np.float32))
        assert [t.tobytes() for t in replay.run(fresh)] == [t.tobytes() for t in model(fresh)]
    with pytest.raises(ValueError, match="already captured|was captured"):
        executable.run(x)


def test_bad_models_and_inputs_are_refused():
    x = nbx.asarray(np.ones((2, 2), np.float32))
    with pytest.raises(ValueError, match="must return a Tensor"):
        program.trace(lambda t: 3, x)
    with pytest.raises(ZeroDivisionError):
        program.trace(lambda t: 1 / 0, x)
    with pytest.raises(BufferError, match="no data"):
        program.trace(lambda t: nbx.asarray(t.numpy()), x)
    replay = program.trace(model, x).executable().capture(x)
    with pytest.raises(ValueError, match=r"traced with float32 \[2, 2\], given float32 \[3, 3\]"):
        replay.run(nbx.asarray(np.ones((3, 3), np.float32)))


def test_a_traced_tensor_cannot_be_used_outside_its_trace():
    x = nbx.asarray(np.ones((2, 2), np.float32))
    leaked = []
    program.trace(lambda t: leaked.append(ops.exp(t)) or leaked[0], x)
    with pytest.raises(ValueError, match="traced tensor"):
        ops.neg(leaked[0])
    with pytest.raises(BufferError, match="traced tensor has no data"):
        leaked[0].numpy()
    with pytest.raises(ValueError, match="no data"):
        leaked[0].tobytes()
