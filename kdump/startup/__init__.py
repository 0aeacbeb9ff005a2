"""``kdump startup``: what a broker will do when it starts on these log dirs, and how long it
will take, before it is started.

Library first: ``plan_startup`` (kdump.startup.plan) returns one ``LogDirStartup`` per log dir,
each partition's part read from the opened partition (``UnifiedLog.broker_load``: LogLoader's
rules, in one place for every command), priced by kdump.startup.estimate; ``kdump.render.startup``
prints it.
"""

from __future__ import annotations

from kdump.startup.estimate import CALIBRATION, Calibration, Pace, Work, schedule
from kdump.startup.plan import (
    LogDirStartup,
    PartitionStartup,
    ProducerReplay,
    SegmentRecovery,
    StartupOptions,
    StartupResult,
    plan_startup,
)

__all__ = [
    "CALIBRATION",
    "Calibration",
    "LogDirStartup",
    "Pace",
    "PartitionStartup",
    "ProducerReplay",
    "SegmentRecovery",
    "StartupOptions",
    "StartupResult",
    "Work",
    "plan_startup",
    "schedule",
]
