"""Batched uniform sampling over legal actions (random play), on any backend.

Legal action sets are passed as int64 bitmasks (bit ``a`` set = action ``a`` legal), the
compact form the batched engines produce; :func:`pack_masks` turns the usual
``(..., num_actions)`` 0/1 masks into it. Sampling draws ``r`` uniform in ``0..k-1``
(``k`` legal actions), finds the 16-bit chunk holding the ``r``-th set bit from the
chunks' bit counts, and looks the bit's position up in a table of "r-th set bit of a
16-bit number": a dozen array operations per draw, whatever the number of actions.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .backend import Backend


@functools.lru_cache(maxsize=None)
def _select16() -> np.ndarray:
    """``table[x * 16 + r]``: position of the ``r``-th set bit (from 0) of the 16-bit ``x``."""
    x = np.arange(1 << 16, dtype=np.uint32)
    bits = (x[:, None] >> np.arange(16, dtype=np.uint32)) & 1
    rank = np.cumsum(bits, axis=1) - 1  # rank of each set bit
    table = np.zeros((1 << 16, 16), dtype=np.int8)
    rows, cols = np.nonzero(bits)
    table[rows, rank[rows, cols]] = cols
    return table.reshape(-1)


_tables: dict[tuple[str, str], Any] = {}


def _select_table(backend: Backend) -> Any:
    key = (backend.name, str(backend.device))
    if key not in _tables:
        _tables[key] = backend.asarray(_select16(), backend.int64)
    return _tables[key]


def uniform_legal(backend: Backend, legal: Any, gen: Any, num_bits: int = 64) -> Any:
    """One action per element of ``legal``, uniform over its set bits (int64 array).

    ``legal`` is an int64 array of non-zero bitmasks whose bits lie below ``num_bits``
    (64 at most; fewer bits, fewer chunks to look at); ``gen`` a generator from
    ``backend.generator``. Each draw uses 31 random bits, so a set of ``k`` actions is
    sampled with a bias below ``k / 2**31``.
    """
    B = backend
    select = _select_table(B)
    chunks = [(legal >> (16 * i)) & 0xFFFF for i in range((num_bits + 15) // 16)]
    counts = [B.popcount16(c) for c in chunks]
    k = counts[0]
    for c in counts[1:]:
        k = k + c
    r = (B.integers(gen, 0, 1 << 31, legal.shape, B.int64) * k) >> 31
    # Walk the chunks: past every chunk whose bits all rank below r.
    chunk, offset, base, below = chunks[0], 0, 0, counts[0]
    for i in range(1, len(chunks)):
        past = r >= below
        chunk = B.where(past, chunks[i], chunk)
        offset = B.where(past, below, offset)
        base = base + 16 * past
        below = below + counts[i]
    return base + select[chunk * 16 + (r - offset)]


def pack_masks(backend: Backend, masks: Any) -> Any:
    """``(..., A)`` 0/1 masks (any integer or bool dtype, ``A <= 62``) as int64 bitmasks."""
    B = backend
    shifts = B.arange(masks.shape[-1])
    return (B.astype(masks, B.int64) << shifts).sum(-1)
