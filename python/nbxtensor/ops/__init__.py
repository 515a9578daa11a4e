"""nbxtensor.ops: the settings kernels read (tiling, proven settings, the launch observer)."""

from . import autotune_settings, launch_observer, tiling_policy

__all__ = ["autotune_settings", "launch_observer", "tiling_policy"]
