"""Watch every kernel launch without running it: while an installed observer is active,
launches are recorded (a dry run that lists the kernel keys a model forms, with no device).
With none installed, every launch runs."""

from nbxtensor._core import launch_observer as _core

LaunchObserver = _core.LaunchObserver
set_launch_observer = _core.set_launch_observer
launch_observer = _core.launch_observer

__all__ = ["LaunchObserver", "set_launch_observer", "launch_observer"]
