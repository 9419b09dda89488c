"""How many of this process's CPUs are idle now, from /proc/stat (Linux): what an export sizes its reader pool
by. The 1-minute load average it used before counts the export's own recent work (an exporter busy with the
previous export, a bench's rounds) as load, so an idle 2-core machine looked busy and got one process."""

from __future__ import annotations

import time
from collections.abc import Collection
from pathlib import Path

PROC_STAT = Path("/proc/stat")
SAMPLE = 0.2  # seconds between the two readings; this process sleeps meanwhile, so its own work is not counted


def idle_between(before: str, after: str, cpus: Collection[int]) -> float | None:
    """CPUs' worth of idle time (idle + iowait) among `cpus` between two /proc/stat texts; None if they hold
    no line for any of them or no time passed."""
    first, second = _times(before, cpus), _times(after, cpus)
    idle = 0.0
    counted = False
    for cpu, (busy1, idle1) in first.items():
        if cpu not in second:
            continue
        busy2, idle2 = second[cpu]
        total = (busy2 - busy1) + (idle2 - idle1)
        if total > 0:
            idle += (idle2 - idle1) / total
            counted = True
    return idle if counted else None


def idle_cpus(cpus: Collection[int], *, sample: float = SAMPLE) -> float | None:
    """CPUs' worth of idle time among `cpus` over the next `sample` seconds; None without /proc/stat."""
    try:
        before = PROC_STAT.read_text()
        time.sleep(sample)
        after = PROC_STAT.read_text()
    except OSError:
        return None
    return idle_between(before, after, cpus)


def _times(text: str, cpus: Collection[int]) -> dict[int, tuple[int, int]]:
    """cpu number -> (busy ticks, idle ticks) of the `cpuN` lines (user nice system idle iowait irq softirq
    steal ...; guest time is already in user)."""
    out: dict[int, tuple[int, int]] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu":
            continue
        try:
            cpu, fields = int(name[3:]), [int(f) for f in rest.split()[:8]]
        except ValueError:
            continue
        if cpu in cpus and len(fields) >= 5:
            idle = fields[3] + fields[4]
            out[cpu] = (sum(fields) - idle, idle)
    return out
