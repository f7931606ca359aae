"""Count the torch calls that would make a GPU wait for the host (a "host sync"), on CPU.

A CUDA device runs ahead of Python until Python needs a value from it: reading an element
(``.item()``, ``int()``, ``float()``, ``bool()`` of a tensor, ``if tensor:``), copying to
the host (``.cpu()``, ``.numpy()``, ``.tolist()``, ``.to("cpu")``), or an operation whose
output size depends on the data (``nonzero``, boolean-mask indexing, ``masked_select``,
``unique``, ``repeat_interleave`` with tensor repeats). :class:`SyncCounter` is a
:class:`~torch.overrides.TorchFunctionMode` that sees every torch call made from Python
and counts those, so a test on a CPU-only machine can require zero of them in a loop
that is meant to run on a GPU without waiting. (With CUDA present,
``torch.cuda.set_sync_debug_mode("error")`` checks the same on the device.)

>>> import torch
>>> x = torch.arange(4)
>>> with SyncCounter() as syncs:
...     y = torch.where(x > 1, x, 0).sum()
...     n = int(y)
>>> syncs.count, syncs.calls[0][0]
(1, '__int__')
"""

from __future__ import annotations

import traceback

import torch
from torch.overrides import TorchFunctionMode

#: Methods and functions that always read the device from the host.
_ALWAYS = {"item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__", "__index__",
           "nonzero", "argwhere", "masked_select", "unique", "unique_consecutive",
           "__array__", "equal", "allclose", "is_nonzero", "any_", "_local_scalar_dense"}


def _name(func) -> str:
    return getattr(func, "__name__", str(func))


def _bool_index(index) -> bool:
    """Whether an indexing key holds a boolean tensor (its result size needs a sync)."""
    keys = index if isinstance(index, tuple) else (index,)
    return any(isinstance(k, torch.Tensor) and k.dtype == torch.bool for k in keys)


def _is_sync(func, args, kwargs) -> bool:
    name = _name(func)
    if name in _ALWAYS:
        return True
    if name in ("__getitem__", "__setitem__") and len(args) > 1 and _bool_index(args[1]):
        return True
    if name == "to":
        target = [a for a in args[1:] if isinstance(a, (str, torch.device))]
        target += [kwargs[k] for k in ("device",) if k in kwargs]
        return any(torch.device(t).type == "cpu" for t in target)
    if name == "repeat_interleave":
        return len(args) > 1 and isinstance(args[1], torch.Tensor)
    if name == "where":
        return len(args) == 1 and not kwargs
    return False


class SyncCounter(TorchFunctionMode):
    """Counts host syncs (see the module docstring) made while it is active.

    ``calls`` lists ``(name, where)`` for each, ``where`` the innermost project frame, so
    a failing test says which line synchronised.
    """

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str]] = []

    @property
    def count(self) -> int:
        return len(self.calls)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _is_sync(func, args, kwargs):
            self.calls.append((_name(func), _caller()))
        return func(*args, **kwargs)


def _caller() -> str:
    for frame in reversed(traceback.extract_stack()[:-3]):
        if "/torch/" not in frame.filename and not frame.filename.endswith("syncs.py"):
            return f"{frame.filename}:{frame.lineno}: {frame.line}"
    return "?"
