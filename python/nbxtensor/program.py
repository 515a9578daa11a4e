"""Programs: trace a model function into launches over symbolic buffers, plan them in one
arena, price them, run them, capture the launch list and replay it verified byte-equal.

    p = trace(model, *example_inputs)      # nothing runs
    plan = p.plan()                        # arena, lower bound, report(), svg()
    p.price("nvidia/h200").seconds         # predicted, from the declarations (None: this CPU)
    replay = p.executable().capture(*inputs)   # eager run vs first replay, byte for byte
    outputs = replay.run(*inputs)
"""

from nbxtensor._core import program as _core

trace = _core.trace
Program = _core.Program
Plan = _core.Plan
Executable = _core.Executable
Replay = _core.Replay
Price = _core.Price

__all__ = ["trace", "Program", "Plan", "Executable", "Replay", "Price"]
