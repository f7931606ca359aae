"""A small array-backend shim, so that ONE batched engine runs on numpy and on torch.

The batched engines are written against the operations numpy arrays and torch tensors
share (indexing, in-place bitwise ops, ``reshape``, ``sum(-1)``, comparisons); the few
that differ (creation, dtype casts, flat views, random numbers, popcount, ``nonzero``,
masked writes) go through a :class:`Backend`. ``get_backend("numpy")`` or
``get_backend("torch", device="cuda")`` makes one.

Some games of a batch (those that ended, those that reshuffle) are selected by a
:class:`Rows` from :meth:`Backend.rows`, in one of two strategies the backend picks
(:attr:`Backend.syncs_free`): index lists, with work only for the selected games (numpy,
where reading data costs nothing), or masks over the full batch, which never read data
on the host (torch, whose device would wait for the host at every read).

Torch is imported only when a torch backend is requested, so the numpy path works
without it.
"""

from __future__ import annotations

import sys
from typing import Any, Sequence

import numpy as np

from .. import game

BACKENDS = ("numpy", "torch")
#: Seeds both backends take: torch's generators hold 64 bits, numpy's refuse negatives.
SEED_LIMIT = 1 << 64


def check_seed(seed: Any) -> int | None:
    """``seed`` as a Python int, or None; ``ValueError`` naming it unless it is None or
    an integer (Python or numpy, not bool) in ``0..2**64-1``."""
    return game.check_seed(seed, SEED_LIMIT)


def integer_array(x: Any, what: str) -> np.ndarray:
    """``x`` (array-like) as an int64 numpy array; ``ValueError`` naming ``what`` unless
    it holds integers that int64 holds (a uint64 above 2**63-1 would wrap)."""
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as err:  # ragged nesting, objects numpy refuses
        raise ValueError(f"{what} must be an array of integers: {err}") from err
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{what} must hold integers, got dtype {arr.dtype}")
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"{what} must fit in int64, got {int(arr.max())}")
    return arr.astype(np.int64, copy=False)


class Backend:
    """The operations that differ between numpy and torch. See the subclasses."""

    #: "numpy" or "torch".
    name: str
    #: Whether reading array data on the host is free (numpy: the data is there). Then
    #: the engines select games by index lists and skip work that selects none; else
    #: (torch, on any device: CPU tests run the GPU's path) they never read data in a
    #: step, and work over the full batch with masks instead.
    syncs_free: bool
    #: The device arrays live on ("cpu" for numpy).
    device: Any
    int8: Any
    int16: Any
    int32: Any
    int64: Any
    float32: Any
    float64: Any
    bool_: Any

    def asarray(self, data: Any, dtype: Any) -> Any:
        """A new array on the backend's device holding ``data`` as ``dtype``."""
        raise NotImplementedError

    def zeros(self, shape: Sequence[int], dtype: Any) -> Any:
        raise NotImplementedError

    def arange(self, n: int) -> Any:
        """``0..n-1`` as int64."""
        raise NotImplementedError

    def astype(self, x: Any, dtype: Any) -> Any:
        raise NotImplementedError

    def as_int64(self, x: Any, what: str) -> Any:
        """``x`` (array-like or tensor of integers) as an int64 array on the device,
        C-contiguous on torch (so :meth:`flat` views it).

        Raises ``ValueError`` naming ``what`` when ``x`` does not hold integers that int64
        holds. A torch tensor given to the numpy backend, a numpy array or a tensor on
        another device given to the torch backend is copied over (SB3 hands numpy actions
        to a torch engine).
        """
        raise NotImplementedError

    def copy(self, x: Any) -> Any:
        raise NotImplementedError

    def flat(self, x: Any) -> Any:
        """A 1-D view of the contiguous array ``x`` (writes go through to ``x``)."""
        raise NotImplementedError

    def to_numpy(self, x: Any) -> np.ndarray:
        raise NotImplementedError

    def nonzero(self, x: Any) -> Any:
        """Indices (int64, 1-D) where the 1-D boolean ``x`` is true."""
        raise NotImplementedError

    def any(self, x: Any) -> bool:
        return bool(x.any())

    def where(self, cond: Any, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def put_where(self, x: Any, mask: Any, value: Any) -> None:
        """Write ``value`` (an array or a scalar, broadcast) into ``x`` in place where
        ``mask`` (broadcast to ``x``) is true; no host sync."""
        raise NotImplementedError

    def known_empty(self, mask: Any) -> bool:
        """Whether the boolean ``mask`` is known to select nothing, so work on it can be
        skipped: looked at when :attr:`syncs_free`, else always False (not read)."""
        return self.syncs_free and not bool(mask.any())

    def rows(self, mask: Any) -> "Rows":
        """The games (rows of the leading axis) where the (N,) boolean ``mask`` is true,
        as this backend's strategy selects them (:attr:`syncs_free`)."""
        return IndexRows(self, mask) if self.syncs_free else MaskRows(self, mask)

    def clip(self, x: Any, low: int, high: int) -> Any:
        """``x`` with every element limited to ``low..high``."""
        raise NotImplementedError

    def amax(self, x: Any, axis: int) -> Any:
        raise NotImplementedError

    def concat(self, arrays: Sequence[Any], axis: int) -> Any:
        raise NotImplementedError

    def maximum(self, a: Any, b: Any) -> Any:
        """Elementwise maximum of two arrays (broadcasting)."""
        raise NotImplementedError

    def cummax(self, x: Any, axis: int) -> Any:
        """Running maximum along ``axis``."""
        raise NotImplementedError

    def cumprod(self, x: Any, axis: int) -> Any:
        """Running product along ``axis``."""
        raise NotImplementedError

    def flip(self, x: Any, axis: int) -> Any:
        """``x`` in reverse order along ``axis``."""
        raise NotImplementedError

    def take_along(self, x: Any, index: Any, axis: int) -> Any:
        """``numpy.take_along_axis``: ``index`` (int64, same rank as ``x``) along ``axis``."""
        raise NotImplementedError

    def put_along(self, x: Any, index: Any, value: Any, axis: int) -> None:
        """Set ``x`` in place to ``value`` (a number, or an array shaped like ``index``)
        where ``index`` (int64, no repeats along ``axis``) points along ``axis``."""
        raise NotImplementedError

    def popcount(self, x: Any) -> Any:
        """Number of set bits of each element of the non-negative int64 array ``x``."""
        raise NotImplementedError

    def popcount16(self, x: Any) -> Any:
        """:meth:`popcount` for int64 arrays known to hold values below ``2**16``."""
        return self.popcount(x)

    def unpack_bits(self, x: Any, n: int) -> Any:
        """Bits ``0..n-1`` of the non-negative int64 array ``x`` as int8 0/1, shape (..., n)."""
        raise NotImplementedError

    def take(self, x: Any, index: Any, axis: int) -> Any:
        """``x`` indexed by the int64 array ``index`` along ``axis`` (like ``numpy.take``)."""
        raise NotImplementedError

    def empty(self, shape: Sequence[int], dtype: Any) -> Any:
        raise NotImplementedError

    def sort(self, x: Any) -> Any:
        """``x`` sorted along the last axis."""
        raise NotImplementedError

    def argsort(self, x: Any) -> Any:
        """Indices (int64) that sort ``x`` along the last axis."""
        raise NotImplementedError

    def nbytes(self, x: Any) -> int:
        """Bytes held by the array ``x``."""
        raise NotImplementedError

    def uniform(self, gen: Any, shape: Sequence[int]) -> Any:
        """Uniform floats in [0, 1)."""
        raise NotImplementedError

    def permutations(self, gen: Any, k: int, n: int) -> Any:
        """``k`` independent uniform permutations of ``0..n-1`` (int64, shape (k, n))."""
        raise NotImplementedError

    def generator(self, seed: int | None) -> Any:
        """A random generator on the device, seeded with ``seed`` (fresh entropy if None).

        Raises ``ValueError`` unless ``seed`` passes :func:`check_seed`; the same seed
        (a Python or numpy integer) always gives the same generator.
        """
        raise NotImplementedError

    def integers(self, gen: Any, low: int, high: int, shape: Sequence[int], dtype: Any) -> Any:
        """Uniform integers in ``low..high-1``."""
        raise NotImplementedError


class Rows:
    """Some games of a batch, selected by a mask over its leading axis (N games).

    ``take(x)`` gives ``count`` rows of ``x`` holding the selected games, and
    ``put(x, value)`` writes ``value`` (``count`` rows, or broadcast) into the selected
    games' rows of ``x``: with :class:`IndexRows` ``count`` is the number of games
    selected; with :class:`MaskRows` it is N, every game, and ``put`` writes only the
    selected ones. Code written against ``count``, ``take`` and ``put`` runs either way.
    """

    #: Rows that ``take`` gives and ``put`` takes.
    count: int
    #: True when known to select no game (then callers may skip the work).
    empty: bool

    def take(self, x: Any) -> Any:
        raise NotImplementedError

    def put(self, x: Any, value: Any) -> None:
        raise NotImplementedError

    def spread(self, values: Any, zero_rest: bool = True) -> Any:
        """``values`` (``count`` rows) as a full batch (N rows): the selected games'
        rows, and zeros in the others (or, unless ``zero_rest``, unspecified values)."""
        raise NotImplementedError


class IndexRows(Rows):
    """The selected games as an index list: work for them only (reading ``mask`` syncs)."""

    def __init__(self, backend: Backend, mask: Any):
        self.backend, self.num_rows = backend, int(mask.shape[0])
        self.index = backend.nonzero(mask)
        self.count = int(self.index.shape[0])
        self.empty = self.count == 0

    def take(self, x):
        return x[self.index]

    def put(self, x, value):
        x[self.index] = value

    def spread(self, values, zero_rest=True):
        out = self.backend.zeros((self.num_rows, *values.shape[1:]), values.dtype)
        out[self.index] = values
        return out


class MaskRows(Rows):
    """The selected games as a mask: work for all N games, data never read (no sync)."""

    empty = False

    def __init__(self, backend: Backend, mask: Any):
        self.backend, self.mask = backend, mask
        self.count = int(mask.shape[0])

    def _mask_for(self, x: Any) -> Any:
        return self.mask.reshape(self.count, *[1] * (len(x.shape) - 1))

    def take(self, x):
        return x

    def put(self, x, value):
        self.backend.put_where(x, self._mask_for(x), value)

    def spread(self, values, zero_rest=True):
        return self.backend.where(self._mask_for(values), values, 0) if zero_rest else values


class NumpyBackend(Backend):
    """numpy arrays on the CPU; generators are ``numpy.random.Generator``."""

    name = "numpy"
    syncs_free = True
    device = "cpu"
    int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
    float32, float64, bool_ = np.float32, np.float64, np.bool_

    def asarray(self, data, dtype):
        return np.array(data, dtype=dtype)

    def zeros(self, shape, dtype):
        return np.zeros(shape, dtype=dtype)

    def arange(self, n):
        return np.arange(n, dtype=np.int64)

    def astype(self, x, dtype):
        return x.astype(dtype, copy=False)

    def as_int64(self, x, what):
        if hasattr(x, "detach"):  # a torch tensor given to the numpy engine
            x = x.detach().cpu().numpy()
        return integer_array(x, what)

    def copy(self, x):
        return x.copy()

    def flat(self, x):
        return x.reshape(-1)

    def to_numpy(self, x):
        return np.asarray(x)

    def nonzero(self, x):
        return np.flatnonzero(x)

    def where(self, cond, a, b):
        return np.where(cond, a, b)

    def put_where(self, x, mask, value):
        np.copyto(x, value, casting="unsafe", where=mask)

    def clip(self, x, low, high):
        return np.clip(x, low, high)

    def amax(self, x, axis):
        return x.max(axis)

    def concat(self, arrays, axis):
        return np.concatenate(arrays, axis=axis)

    def maximum(self, a, b):
        return np.maximum(a, b)

    def cummax(self, x, axis):
        return np.maximum.accumulate(x, axis=axis)

    def cumprod(self, x, axis):
        return np.cumprod(x, axis=axis)

    def flip(self, x, axis):
        return np.flip(x, axis=axis)

    def take_along(self, x, index, axis):
        return np.take_along_axis(x, index, axis=axis)

    def put_along(self, x, index, value, axis):
        np.put_along_axis(x, index, value, axis=axis)

    def popcount(self, x):
        return np.bitwise_count(x)

    def unpack_bits(self, x, n):
        if sys.byteorder == "little":  # the bytes of an int64, lowest first
            as_bytes = np.ascontiguousarray(x).view(np.uint8).reshape(*x.shape, 8)
            return np.unpackbits(as_bytes, axis=-1, count=n, bitorder="little").view(np.int8)
        return ((x[..., None] >> np.arange(n)) & 1).astype(np.int8)

    def take(self, x, index, axis):
        return np.take(x, index, axis=axis)

    def empty(self, shape, dtype):
        return np.empty(shape, dtype=dtype)

    def sort(self, x):
        return np.sort(x, axis=-1)

    def argsort(self, x):
        return np.argsort(x, axis=-1, kind="stable")

    def nbytes(self, x):
        return int(x.nbytes)

    def uniform(self, gen, shape):
        return gen.random(tuple(shape))

    def permutations(self, gen, k, n):
        return gen.permuted(np.tile(np.arange(n, dtype=np.int64), (k, 1)), axis=1)

    def generator(self, seed):
        return np.random.default_rng(check_seed(seed))

    def integers(self, gen, low, high, shape, dtype):
        return gen.integers(low, high, size=tuple(shape), dtype=dtype)


class TorchBackend(Backend):
    """torch tensors on ``device``; generators are ``torch.Generator`` on that device."""

    name = "torch"
    syncs_free = False

    def __init__(self, device: Any = "cpu"):
        import torch

        self.torch = torch
        try:  # an unknown or absent device fails here, not in the middle of a step
            self.device = torch.device(device)
            torch.empty(0, device=self.device)
        except (RuntimeError, TypeError, AssertionError) as err:
            raise ValueError(f"device must be a torch device this machine has (e.g. 'cpu', "
                             f"'cuda:0'), got {device!r}: {err}") from err
        self.int8, self.int16, self.int32, self.int64 = (
            torch.int8, torch.int16, torch.int32, torch.int64)
        self.float32, self.float64, self.bool_ = torch.float32, torch.float64, torch.bool
        self._byte_bits = None
        self._pop16 = None

    def __reduce__(self):
        # The torch module it holds does not pickle; a rebuilt backend is the same one, so
        # engines and vector envs on torch can be pickled and deep-copied (tree search).
        return TorchBackend, (self.device,)

    def asarray(self, data, dtype):
        if isinstance(data, self.torch.Tensor):
            return data.to(device=self.device, dtype=dtype).clone()
        return self.torch.as_tensor(np.asarray(data), device=self.device).to(dtype).clone()

    def zeros(self, shape, dtype):
        return self.torch.zeros(tuple(shape), dtype=dtype, device=self.device)

    def arange(self, n):
        return self.torch.arange(n, dtype=self.torch.int64, device=self.device)

    def astype(self, x, dtype):
        return x.to(dtype)

    def as_int64(self, x, what):
        torch = self.torch
        if not isinstance(x, torch.Tensor):
            x = torch.from_numpy(integer_array(x, what))
        elif x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
            raise ValueError(f"{what} must hold integers, got dtype {x.dtype}")
        if x.device != self.device:  # a copy; tensors already there are not touched
            x = x.to(self.device)
        # Contiguous, as the engines read actions through flat views (a transposed
        # (P, N) tensor made ``view`` fail); a no-op, no copy, for contiguous tensors.
        out = x.to(torch.int64).contiguous()
        # a sync for uint64 only (a dtype since torch 2.3)
        if x.dtype == getattr(torch, "uint64", None) and bool((out < 0).any()):
            raise ValueError(f"{what} must fit in int64, got uint64 values above 2**63-1")
        return out

    def copy(self, x):
        return x.clone()

    def flat(self, x):
        return x.view(-1)

    def to_numpy(self, x):
        return x.detach().cpu().numpy()

    def nonzero(self, x):
        return self.torch.nonzero(x).view(-1)

    def where(self, cond, a, b):
        return self.torch.where(cond, a, b)

    def put_where(self, x, mask, value):
        if isinstance(value, self.torch.Tensor):
            x.copy_(self.torch.where(mask, value, x))
        else:
            x.masked_fill_(mask, value)

    def clip(self, x, low, high):
        return self.torch.clamp(x, low, high)

    def amax(self, x, axis):
        return self.torch.amax(x, dim=axis)

    def concat(self, arrays, axis):
        return self.torch.cat(list(arrays), dim=axis)

    def maximum(self, a, b):
        return self.torch.maximum(a, b)

    def cummax(self, x, axis):
        return self.torch.cummax(x, dim=axis).values

    def cumprod(self, x, axis):
        return self.torch.cumprod(x, dim=axis)

    def flip(self, x, axis):
        return self.torch.flip(x, dims=(axis,))

    def take_along(self, x, index, axis):
        return self.torch.take_along_dim(x, index, dim=axis)

    def put_along(self, x, index, value, axis):
        x.scatter_(axis, index, value)

    def popcount(self, x):
        # SWAR bit counting; torch has no popcount. Inputs are < 2**62, so every
        # intermediate stays non-negative and the arithmetic shifts act as logical ones.
        x = x - ((x >> 1) & 0x5555555555555555)
        x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
        x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
        x = x + (x >> 8)
        x = x + (x >> 16)
        x = x + (x >> 32)
        return x & 0x7F

    def popcount16(self, x):
        if self._pop16 is None:
            table = np.bitwise_count(np.arange(1 << 16, dtype=np.int64))
            self._pop16 = self.torch.as_tensor(table, device=self.device)
        return self._pop16[x]

    def unpack_bits(self, x, n):
        # Look the bits of each byte up in a 256x8 table: far fewer int64 ops than shifting.
        if self._byte_bits is None:
            table = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1,
                                  bitorder="little").astype(np.int8)
            self._byte_bits = self.torch.as_tensor(table, device=self.device)
        nbytes = (n + 7) // 8
        as_bytes = x.contiguous().view(self.torch.uint8).reshape(*x.shape, 8)[..., :nbytes]
        if sys.byteorder != "little":
            as_bytes = as_bytes.flip(-1)
        bits = self._byte_bits[as_bytes.long()].reshape(*x.shape, nbytes * 8)
        return bits[..., :n]

    def take(self, x, index, axis):
        flat = self.torch.index_select(x, axis, index.reshape(-1))
        return flat.reshape(*x.shape[:axis], *index.shape, *x.shape[axis + 1:])

    def empty(self, shape, dtype):
        return self.torch.empty(tuple(shape), dtype=dtype, device=self.device)

    def sort(self, x):
        return self.torch.sort(x, dim=-1).values

    def argsort(self, x):
        return self.torch.argsort(x, dim=-1, stable=True)

    def nbytes(self, x):
        return x.numel() * x.element_size()

    def uniform(self, gen, shape):
        return self.torch.rand(tuple(shape), generator=gen, device=self.device)

    def permutations(self, gen, k, n):
        return self.argsort(self.uniform(gen, (k, n)))

    def generator(self, seed):
        seed = check_seed(seed)
        try:
            gen = self.torch.Generator(device=self.device)
        except RuntimeError as err:  # "meta" holds tensors (sheet_scores), not generators
            raise ValueError(f"device {str(self.device)!r} has no random generator, so no "
                             f"engine runs on it: {err}") from err
        if seed is None:
            gen.seed()
        else:
            gen.manual_seed(seed)
        return gen

    def integers(self, gen, low, high, shape, dtype):
        return self.torch.randint(low, high, tuple(shape), generator=gen, device=self.device,
                                  dtype=dtype)


def get_backend(name: str = "numpy", device: Any = None) -> Backend:
    """The backend called ``name`` ("numpy" or "torch"); ``device`` is for torch only."""
    if name == "numpy":
        if device not in (None, "cpu"):
            raise ValueError(f"the numpy backend runs on the CPU only, got device={device!r}; "
                             f"use backend='torch' for other devices")
        return NumpyBackend()
    if name == "torch":
        return TorchBackend("cpu" if device is None else device)
    raise ValueError(f"unknown backend {name!r}; choose one of {BACKENDS}")


_backends: dict[str, Backend] = {}


def backend_of(x: Any) -> Backend:
    """The backend whose arrays ``x`` is: torch for a tensor (on its device), else numpy."""
    key = str(x.device) if hasattr(x, "detach") else "numpy"
    if key not in _backends:
        _backends[key] = get_backend("numpy") if key == "numpy" else get_backend("torch", x.device)
    return _backends[key]


def to_backend(backend: Backend, tables: dict[str, np.ndarray]) -> dict[str, Any]:
    """numpy tables as arrays of the same dtype on ``backend``'s device."""
    if backend.name == "numpy":
        return dict(tables)
    dtypes = {np.dtype(np.int8): backend.int8, np.dtype(np.int32): backend.int32,
              np.dtype(np.int64): backend.int64, np.dtype(np.float32): backend.float32,
              np.dtype(np.float64): backend.float64,
              np.dtype(np.bool_): backend.bool_}
    return {k: backend.asarray(v, dtypes[v.dtype]) for k, v in tables.items()}
