"""Batched uniform sampling over legal actions (random play), on any backend.

Legal action sets are passed as int64 bitmasks (bit ``a`` set = action ``a`` legal), the
compact form the batched engines produce; :func:`pack_masks` turns the usual
``(..., num_actions)`` 0/1 masks into it. Sampling draws ``r`` uniform in
``0..k-1`` (``k`` legal actions) and finds the ``r``-th set bit by a binary search over
bit counts: a few operations per level on arrays with one element per decision, so
the cost does not grow with the number of actions.
"""

from __future__ import annotations

from typing import Any

from .backend import Backend

_WIDTHS = (32, 16, 8, 4, 2, 1)  # binary-search levels over a 64-bit mask


def uniform_legal(backend: Backend, legal: Any, gen: Any) -> Any:
    """One action per element of ``legal``, uniform over its set bits (int64 array).

    ``legal`` is an int64 array of non-zero bitmasks below ``2**62``; ``gen`` a generator
    from ``backend.generator``. Each draw uses 31 random bits, so a set of ``k``
    actions is sampled with a bias below ``k / 2**31``.
    """
    B = backend
    k = B.popcount(legal)
    r = (B.integers(gen, 0, 1 << 31, legal.shape, B.int64) * k) >> 31
    pos = B.zeros(legal.shape, B.int64)
    bits = legal
    for width in _WIDTHS:
        low = bits & ((1 << width) - 1)
        count = B.popcount(low)
        upper = r >= count
        r = r - count * upper
        bits = B.where(upper, bits >> width, low)
        pos += width * upper
    return pos


def pack_masks(backend: Backend, masks: Any) -> Any:
    """``(..., A)`` 0/1 masks (any integer or bool dtype, ``A <= 62``) as int64 bitmasks."""
    B = backend
    shifts = B.arange(masks.shape[-1])
    return (B.astype(masks, B.int64) << shifts).sum(-1)
