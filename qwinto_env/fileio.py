"""Atomic file writes: every file a user may load is either the old one or the new one.

A plain write that is killed halfway (SIGKILL, a full disk, a power cut) leaves a
truncated file that a later load chokes on. These helpers write into a temporary file
in the same folder, flush it to disk, and rename it over the target: on POSIX a rename
within one file system is atomic, so a reader sees the previous file or the complete new
one, never a mix. A failed write removes its temporary file and leaves the target as it
was; a write killed outright leaves it behind, hidden, for :func:`leftover_temporaries`
to find. A Ctrl-C (SIGINT) that arrives during a write is held until the write ends:
a ``KeyboardInterrupt`` raised inside ``torch.save`` turns into a ``RuntimeError`` from
its zip writer, which a caller that handles Ctrl-C would not expect.

>>> import tempfile, pathlib
>>> target = pathlib.Path(tempfile.mkdtemp()) / "notes.txt"
>>> atomic_write_text(target, "hello\\n")
>>> target.read_text()
'hello\\n'
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import tempfile
import threading
from pathlib import Path
from typing import IO, Any, Callable

__all__ = ["atomic_write", "atomic_write_text", "atomic_write_json", "atomic_torch_save",
           "output_problem", "check_output", "leftover_temporaries", "sigint_held"]


def atomic_write(path: str | os.PathLike, write: Callable[[IO[bytes]], Any]) -> None:
    """Call ``write(fh)`` on a binary temporary file, then move it to ``path`` atomically.

    ``path``'s folder must exist. If ``write`` raises, ``path`` is left untouched and the
    exception propagates. A SIGINT during the write is handled once it has ended.
    """
    with sigint_held():
        _write_and_replace(Path(path), write)


def _write_and_replace(path: Path, write: Callable[[IO[bytes]], Any]) -> None:
    prefix, suffix = _temporary(path.name)
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; keep the usual mode
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(path.parent)


@contextlib.contextmanager
def sigint_held():
    """Run the block with SIGINT recorded, not handled; then hand a recorded one to the
    handler that was in place. Only the main thread can change signal handlers, and only
    a Python handler (by default the one raising ``KeyboardInterrupt``) can be held.
    Holds nest: a set of files written under one hold is interrupted after the last."""
    handler = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(handler):
        yield
        return
    caught = []
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, handler)
    if caught:
        handler(signal.SIGINT, caught[0])


def _temporary(name: str) -> tuple[str, str]:
    """Prefix and suffix of the temporary file of a write to ``name`` (a random part goes
    between them): hidden, and named after its target."""
    return f".{name}.", ".tmp"


def leftover_temporaries(folder: str | os.PathLike, name: str) -> list[Path]:
    """The temporary files in ``folder`` of writes to ``name`` (a glob pattern:
    ``step_*.pt``) that were killed before they finished. Only the process that owns
    these files may remove them: another one's write in progress looks the same."""
    prefix, suffix = _temporary(name)
    return sorted(Path(folder).glob(f"{prefix}*{suffix}"))


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_write`)."""
    data = text.encode(encoding)
    atomic_write(path, lambda fh: fh.write(data))


def atomic_write_json(path: str | os.PathLike, data: Any, **dumps: Any) -> None:
    """``data`` as strict JSON (``json.dumps`` keywords ``dumps``), atomically: a NaN or
    an infinity, which JSON has no word for (Python writes ``NaN``, which ``jq`` and
    JavaScript refuse), is written as ``null``."""
    atomic_write_text(path, json.dumps(_finite(data), allow_nan=False, **dumps) + "\n")


def _finite(data: Any) -> Any:
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: _finite(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [_finite(value) for value in data]
    return data


def atomic_torch_save(obj: Any, path: str | os.PathLike) -> None:
    """``torch.save(obj, path)``, atomically (see :func:`atomic_write`)."""
    import torch

    atomic_write(path, lambda fh: torch.save(obj, fh))


def output_problem(path: str | os.PathLike, suffix: str | None = None) -> str | None:
    """Why a file cannot be written at ``path`` (atomically: a new file in its folder), or
    None: for a check before the work that makes the file. With ``suffix`` (``".png"``),
    a name with another suffix is refused too (any case; a name without one is taken):
    the file's format is fixed, and a viewer picking one by the name would fail on it."""
    path = os.fspath(path)
    if not path:
        return "is no file name"
    if suffix is not None and Path(path).suffix.lower() not in ("", suffix):
        return (f"ends in {Path(path).suffix!r}, but the file written is a "
                f"{suffix[1:].upper()}: name it with {suffix!r}")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        return f"is in {folder!r}, which is not an existing directory"
    if os.path.isdir(path):
        return "is a directory"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"is in {folder!r}, which is not writable"
    return None


def check_output(path: str | os.PathLike, suffix: str | None = None) -> None:
    """ValueError ``path '<path>' <why>`` where :func:`output_problem` finds a reason."""
    if (problem := output_problem(path, suffix)) is not None:
        raise ValueError(f"path {os.fspath(path)!r} {problem}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
