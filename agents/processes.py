"""Jobs in worker processes, with one progress bar over the games they finish.

The evaluator's ``--workers`` and the demonstrations' ``imitation.workers`` both split
their games into jobs for spawned processes. :func:`in_processes` runs the jobs and moves
one bar as the workers finish games, not only when a whole job returns (a search bot's
job runs for half an hour). A worker reports through :func:`count_finished`, the
``progress`` callback every game loop here takes.
"""

from __future__ import annotations

import multiprocessing
import sys
from typing import Any, Callable, Sequence

from tqdm import tqdm

__all__ = ["in_processes", "count_finished"]

_finished: Any = None  # in a worker: the parent's count of finished games


def in_processes(worker: Callable[[Any], Any], jobs: Sequence[Any], processes: int,
                 total: int, desc: str, progress: bool) -> list[Any]:
    """``worker(job)`` for every job in ``processes`` spawned processes (one torch thread
    each); the results in the order of ``jobs``. ``total``: the games the jobs play."""
    context = multiprocessing.get_context("spawn")
    finished = context.Value("q", 0)
    with context.Pool(processes, initializer=_start_worker, initargs=(finished,)) as pool, \
            tqdm(total=total, desc=desc, unit="game", disable=not progress,
                 file=sys.stderr) as bar:
        pending = pool.map_async(worker, jobs)
        while not pending.ready():
            pending.wait(0.5)
            bar.update(finished.value - bar.n)
        return pending.get()


def count_finished(games: int) -> None:
    """In a worker of :func:`in_processes`: ``games`` more games are finished."""
    with _finished.get_lock():
        _finished.value += games


def _start_worker(finished: Any) -> None:
    # One torch thread per worker: several workers each running torch's default thread
    # count oversubscribe the cores, and torch's threads then mostly wait on each other.
    import torch

    global _finished
    _finished = finished
    torch.set_num_threads(1)
