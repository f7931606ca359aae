"""Jobs in worker processes, with one progress bar over the games they finish.

The evaluator's ``--workers`` and the demonstrations' ``imitation.workers`` both split
their games into jobs for spawned processes. :func:`in_processes` runs the jobs and moves
one bar as the workers finish games, not only when a whole job returns (a search bot's
job runs for half an hour).

Every game loop here takes a ``progress(games, decisions)`` callback: the games it has
newly finished and the decisions its agents made since its last call. The bar counts
the games and shows the decisions beside them, because games played side by side on the
batched engine all finish near the end. :func:`bar_progress` is the callback for a bar in
this process; in a worker, :func:`count_finished` is.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
from typing import Any, Callable, Iterator, Sequence

from tqdm import tqdm

__all__ = ["in_processes", "common", "count_finished", "bar_progress"]

# in a worker: the parent's counts of finished games and of decisions made, and what
# in_processes shares with every job
_finished: Any = None
_decided: Any = None
_common: Any = None


def in_processes(worker: Callable[[Any], Any], jobs: Sequence[Any], processes: int,
                 total: int, desc: str, progress: bool, common: Any = None) -> list[Any]:
    """``worker(job)`` for every job in ``processes`` spawned processes (one torch thread
    each; no more processes than jobs); the results in the order of ``jobs``. ``total``:
    the games the jobs play. ``common`` goes to each worker once, where :func:`common`
    returns it: what every job needs (seeds of all games, say) belongs there, the jobs
    themselves should stay small (the pool feeds them through a pipe, and a feeder
    blocked on a full one keeps Ctrl-C's terminate() waiting for good). Ctrl-C reaches
    this process alone, which stops the workers."""
    context = multiprocessing.get_context("spawn")
    finished, decided = context.Value("q", 0), context.Value("q", 0)
    with contextlib.ExitStack() as stack:
        with _sigint_blocked():  # the workers inherit it: see _sigint_blocked
            pool = stack.enter_context(context.Pool(
                min(processes, len(jobs)), initializer=_start_worker,
                initargs=(finished, decided, common, os.getpid())))
        bar = stack.enter_context(tqdm(total=total, desc=desc, unit="game",
                                       disable=not progress, file=sys.stderr))
        pending = pool.map_async(worker, jobs)
        while not pending.ready():
            pending.wait(0.5)
            _show_decisions(bar, decided.value)
            bar.update(finished.value - bar.n)
        return pending.get()


def common() -> Any:
    """In a worker of :func:`in_processes`: the ``common`` object it was given."""
    return _common


def count_finished(games: int, decisions: int) -> None:
    """In a worker of :func:`in_processes`: ``games`` more games are finished, after
    ``decisions`` more decisions."""
    with _finished.get_lock():
        _finished.value += games
    with _decided.get_lock():
        _decided.value += decisions


def bar_progress(bar: tqdm) -> Callable[[int, int], None]:
    """The ``progress(games, decisions)`` callback that moves ``bar`` in this process."""
    decided = 0

    def progress(games: int, decisions: int) -> None:
        nonlocal decided
        decided += decisions
        _show_decisions(bar, decided)
        bar.update(games)  # redraws at most every tqdm ``mininterval``, even for 0 games

    return progress


def _show_decisions(bar: tqdm, decisions: int) -> None:
    if decisions:
        bar.set_postfix_str(f"{decisions:,} decisions", refresh=False)


def _start_worker(finished: Any, decided: Any, common: Any, parent: int) -> None:
    # One torch thread per worker: several workers each running torch's default thread
    # count oversubscribe the cores, and torch's threads then mostly wait on each other.
    import torch

    global _finished, _decided, _common
    _finished, _decided, _common = finished, decided, common
    torch.set_num_threads(1)
    _die_with(parent)


def _die_with(parent: int) -> None:
    """Linux: the kernel ends this worker when ``parent`` dies, even by SIGKILL, which
    leaves the pool no chance to stop its workers (they played on for good, orphans)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1  # <linux/prctl.h>
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the call
        os._exit(1)


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """Ctrl-C held back within the block, and delivered (a KeyboardInterrupt) after it.

    Ctrl-C reaches the whole process group. Workers started within the block inherit the
    blocked signal (a signal mask survives fork and exec) and keep it for life, so none
    dies of it while starting up, which would leave the pool waiting for good; this
    process's KeyboardInterrupt leaves the pool's block, which terminates them."""
    if not hasattr(signal, "pthread_sigmask"):  # not POSIX: nothing to hold back
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
