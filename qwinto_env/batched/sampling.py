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
    """One action per legal set, uniform over its set bits (int64 array).

    ``legal`` holds non-empty bitmasks over ``num_bits`` actions: an int64 array when
    ``num_bits <= 64`` (fewer bits, fewer chunks to look at), else int64 words on a last
    axis of ``ceil(num_bits / 64)`` (action ``a`` is bit ``a % 64`` of word ``a // 64``).
    ``gen`` is a generator from ``backend.generator``. Each draw uses 31 random bits, so
    a set of ``k`` actions is sampled with a bias below ``k / 2**31``.
    """
    B = backend
    select = _select_table(B)
    if num_bits <= 64:
        words = [legal]
        shape = legal.shape
    else:
        words = [legal[..., w] for w in range((num_bits + 63) // 64)]
        shape = legal.shape[:-1]
    chunks = []
    for w, word in enumerate(words):
        bits_here = min(64, num_bits - 64 * w)
        chunks += [(word >> (16 * i)) & 0xFFFF for i in range((bits_here + 15) // 16)]
    counts = [B.popcount16(c) for c in chunks]
    k = counts[0]
    for c in counts[1:]:
        k = k + c
    r = (B.integers(gen, 0, 1 << 31, shape, B.int64) * k) >> 31
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
    """``(..., A)`` 0/1 masks (any integer or bool dtype) as the bitmasks
    :func:`uniform_legal` takes: int64 (...) for ``A <= 64``, else (..., ceil(A / 64))."""
    B = backend
    n = masks.shape[-1]
    m = B.astype(masks, B.int64)
    if n <= 64:
        return (m << B.arange(n)).sum(-1)
    words = (n + 63) // 64
    padded = B.zeros((*masks.shape[:-1], 64 * words), B.int64)
    padded[..., :n] = m
    padded = padded.reshape(*masks.shape[:-1], words, 64)
    return (padded << B.arange(64)).sum(-1)
