"""How many CPU threads torch gets: the cores that other processes leave free.

torch's intra-op thread pool assumes it owns every core. On a shared machine that goes
badly: when another process takes one of two cores, torch's two threads wait on each other
at every operation and training falls to a fraction of its speed (README, Training under
load), while one thread would keep almost all of it. :class:`ThreadGovernor` therefore
looks at what the rest of the machine uses and gives torch the cores left free, checking
again every few seconds, so a run adapts when a neighbour starts or stops. (A core that
other processes keep busy less than ``BUSY_SHARE`` of the time still counts as free.)

=================  ==============================================================
``run.torch_threads``  threads
=================  ==============================================================
``0`` (default)    adaptive: the cores this process may use, less those other
                   processes kept busy over the last interval (at least 1)
``n > 0``          exactly ``n``, never changed
=================  ==============================================================

Adaptive mode reads ``/proc/stat`` (Linux); elsewhere it keeps torch's default.
"""

from __future__ import annotations

import os
import time
from typing import Callable

import torch

#: Seconds between two looks at the machine's load.
INTERVAL = 2.0
#: Seconds of the first look, when a run starts.
PROBE = 0.1
#: A core counts as free when other processes used less than this share of it.
BUSY_SHARE = 0.75


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _machine_busy_seconds() -> float | None:
    """CPU seconds every process spent busy since boot, from ``/proc/stat``; None elsewhere."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    # user nice system idle iowait irq softirq steal ...: all but idle and iowait are busy
    ticks = [int(x) for x in fields[1:9]]
    busy = sum(ticks) - ticks[3] - ticks[4]
    return busy / os.sysconf("SC_CLK_TCK")


def _own_busy_seconds() -> float:
    times = os.times()
    return times.user + times.system


class ThreadGovernor:
    """Sets torch's thread count from ``requested`` (0 = adaptive; see the module table).

    Adaptive mode decides once at construction, from a ``probe``-second look at the
    machine, then again at each :meth:`update` once ``interval`` seconds have passed.
    torch applies a thread count to the thread that sets it, so :meth:`update` must be
    called from the thread that trains (a trainer calls it between two updates).
    """

    def __init__(self, requested: int, interval: float = INTERVAL, probe: float = PROBE,
                 clock: Callable[[], float] = time.monotonic):
        if isinstance(requested, bool) or not isinstance(requested, int) or requested < 0:
            raise ValueError(f"torch threads must be an integer >= 0, got {requested!r}")
        self.requested = requested
        self.cores = usable_cores()
        self.interval = interval
        self._clock = clock
        self.adaptive = requested == 0 and _machine_busy_seconds() is not None
        if requested:
            torch.set_num_threads(requested)
        self.threads = torch.get_num_threads()
        if self.adaptive:
            self._last = self._sample()
            time.sleep(probe)
            self._look()

    def _sample(self) -> tuple[float, float, float]:
        return self._clock(), _machine_busy_seconds() or 0.0, _own_busy_seconds()

    def _look(self) -> int:
        """Set the threads from the other processes' use of the cores since the last look."""
        now = self._sample()
        elapsed = max(now[0] - self._last[0], 1e-9)
        others = max(0.0, (now[1] - self._last[1]) - (now[2] - self._last[2])) / elapsed
        self._last = now
        return self.set_from_load(others)

    def update(self) -> int:
        """Look at the machine again when the interval has passed; the thread count in force."""
        if self.adaptive and self._clock() - self._last[0] >= self.interval:
            return self._look()
        return self.threads

    def set_from_load(self, others_busy_cores: float) -> int:
        """Give torch the cores that ``others_busy_cores`` (other processes' use) leaves."""
        busy = int(others_busy_cores + 1.0 - BUSY_SHARE)
        threads = max(1, self.cores - busy)
        if threads != self.threads:
            torch.set_num_threads(threads)
            self.threads = threads
        return threads
