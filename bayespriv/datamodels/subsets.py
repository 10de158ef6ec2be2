"""Uniform random k-subsets of table rows, drawn in batches: rejection, redraw of repeats, or a bitmap.

:func:`sample_subsets` draws ``n_draws`` independent uniform k-subsets of
``range(n_rows)`` (the rows :class:`~bayespriv.datamodels.EmpiricalDataModel`
resamples without replacement), choosing the fastest of three exact samplers
for ``k`` and ``n_rows``.
"""

from __future__ import annotations

import numpy as np

from .._validation import fail

__all__ = ["sample_subsets"]

#: Use rejection sampling while the expected number of colliding pairs among k
#: draws with replacement out of N, k(k − 1)/(2N), is below this; the
#: probability that a row must be redrawn is then below about 0.26.
REJECTION_MAX_COLLISIONS = 0.3

#: Between rejection and the Bernoulli bitmap, redraw only the duplicated entries
#: while k ≤ this fraction of N: measured faster than the bitmap at k/N ≤ ~0.1 on
#: 1000 draws (the bitmap costs N random 16-bit draws per draw whatever k is).
REDRAW_MAX_FRACTION = 0.125

#: Elements (draws × table rows) one chunk of random keys may hold (~32 MB).
KEY_CHUNK_ELEMENTS = 4_000_000

_EMPTY_INDEX = np.zeros(0, dtype=np.intp)


def _use_rejection(n_rows: int, k: int) -> bool:
    return k * (k - 1) / (2.0 * n_rows) < REJECTION_MAX_COLLISIONS


def _subsets_by_rejection(n_rows: int, k: int, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_draws, k)`` distinct indices in ``[0, n_rows)``, by rejection.

    Each row is ``k`` i.i.d. uniform indices. Conditionally on holding no
    repeated index, such a row is uniform over the ordered k-tuples of distinct
    indices (every one of them has the same probability ``N^-k``), hence its
    set is uniform over the k-subsets. Rows with a repeat are redrawn from
    scratch, independently of everything else, so every accepted row has that
    conditional distribution. The loop is over rejection rounds (each expected
    to shrink the rows left by a factor below ``1 − e^{-0.3}``), never over
    draws.
    """
    dtype = np.int32 if n_rows < 2**31 else np.int64
    idx = rng.integers(0, n_rows, size=(n_draws, k), dtype=dtype)
    idx.sort(axis=1)  # sorted rows are still uniform subsets; sorting exposes repeats
    bad = np.flatnonzero((idx[:, 1:] == idx[:, :-1]).any(axis=1))
    while bad.size:
        redraw = np.sort(rng.integers(0, n_rows, size=(bad.size, k), dtype=dtype), axis=1)
        idx[bad] = redraw
        bad = bad[(redraw[:, 1:] == redraw[:, :-1]).any(axis=1)]
    return idx


def _subsets_by_redraw(n_rows: int, k: int, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_draws, k)`` distinct indices in ``[0, n_rows)``, redrawing duplicates only.

    Stages: draw ``k`` i.i.d. uniform indices per row; sort each row; in every
    row, replace each repeated entry (all copies of a value but one) by a fresh
    i.i.d. uniform index; repeat on the rows that still hold a repeat.

    Exactness: after a round, a row's set is ``D ∪ {fresh draws}`` where ``D`` is
    the set of distinct values it held and the number of fresh draws is
    ``k − |D|`` (which copy of a repeated value is replaced does not change the
    set). Every stage is therefore equivariant under a relabelling ``π`` of
    ``[0, n_rows)``: running it on relabelled uniforms gives the relabelled set,
    and uniforms are invariant in law under ``π``. So the law of the final
    k-subset is invariant under every permutation of the indices; permutations
    act transitively on k-subsets, hence the law is uniform. The loop is over
    rounds (each expected to leave about ``k·d/N`` repeats from ``d``), never
    over draws. Cheap while ``k ≪ N``; see :data:`REDRAW_MAX_FRACTION`.
    """
    dtype = np.int32 if n_rows < 2**31 else np.int64
    idx = rng.integers(0, n_rows, size=(n_draws, k), dtype=dtype)
    idx.sort(axis=1)
    r, c = np.nonzero(idx[:, 1:] == idx[:, :-1])  # row-major: r is sorted
    while r.size:
        idx[r, c + 1] = rng.integers(0, n_rows, size=r.size, dtype=dtype)
        rows = r[np.concatenate(([True], r[1:] != r[:-1]))]
        if 2 * rows.size > n_draws:  # most rows touched: sort in place, no fancy copies
            idx.sort(axis=1)
            r, c = np.nonzero(idx[:, 1:] == idx[:, :-1])
        else:
            sub = np.sort(idx[rows], axis=1)
            idx[rows] = sub
            r, c = np.nonzero(sub[:, 1:] == sub[:, :-1])
            r = rows[r]
    return idx


def _adjust_counts(mark: np.ndarray, have: np.ndarray, k: int, add: bool, rng: np.random.Generator) -> None:
    """Add (``add``) or remove set bits of the ``(d, N)`` bitmap ``mark`` until every row holds ``k``.

    Each round draws, for every missing (surplus) member of a row, one uniform
    index of that row; the distinct drawn indices that are not (are) in the row's
    set join (leave) it. ``have`` (bits per row) is updated in place.
    """
    d, n_rows = mark.shape
    flat = mark.reshape(-1)
    rows = np.flatnonzero(have < k) if add else np.flatnonzero(have > k)
    while rows.size:
        r = np.repeat(rows, k - have[rows] if add else have[rows] - k).astype(np.int64)
        key = np.unique(r * n_rows + rng.integers(0, n_rows, size=r.size))
        key = key[flat[key] != add]
        flat[key] = add
        change = np.bincount(key // n_rows, minlength=d)
        have += change if add else -change
        rows = rows[have[rows] < k] if add else rows[have[rows] > k]


def _subsets_by_bernoulli(
    n_rows: int, k: int, n_draws: int, rng: np.random.Generator, *, chunk_elements: int = KEY_CHUNK_ELEMENTS
) -> np.ndarray:
    """``(n_draws, k)`` distinct indices in ``[0, n_rows)``, by a Bernoulli bitmap corrected to size k.

    Stages (per chunk of draws, at most ``chunk_elements`` bits): every index
    joins a row's set independently with probability ``q ≈ k/N`` (a 16-bit
    uniform below a threshold: cheaper than a double); rows with
    fewer than ``k`` members receive uniform indices not yet in the set until
    they hold ``k``; rows with more lose uniformly drawn members until they hold
    ``k`` (:func:`_adjust_counts`); the set bits are read out in index order.

    Exactness: every stage is equivariant under a relabelling ``π`` of
    ``[0, N)`` (the Bernoulli bits are i.i.d. across indices, the corrections
    use uniform indices and set membership only), and the laws of the random
    inputs are invariant under ``π``. So the law of the final k-subset is
    invariant under every permutation; permutations act transitively on
    k-subsets, hence it is uniform. ``q`` only affects the speed (the
    corrections touch about ``√(N q (1 − q))`` indices per row).
    """
    out = np.empty((n_draws, k), dtype=np.intp)
    chunk = max(1, chunk_elements // n_rows)
    threshold = min(65535, round(65536 * k / n_rows))  # q = threshold / 2^16 ≈ k/N
    for start in range(0, n_draws, chunk):
        d = min(n_draws, start + chunk) - start
        mark = rng.integers(0, 65536, size=(d, n_rows), dtype=np.uint16) < threshold
        have = np.count_nonzero(mark, axis=1)
        _adjust_counts(mark, have, k, True, rng)
        _adjust_counts(mark, have, k, False, rng)
        # flat positions of the set bits, row by row (k per row), minus each row's offset
        out[start:start + d] = np.flatnonzero(mark).reshape(d, k) - (np.arange(d, dtype=np.intp) * n_rows)[:, None]
    return out


def sample_subsets(n_rows: int, k: int, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """``n_draws`` independent uniform k-subsets of ``range(n_rows)``, as ``(n_draws, k)``.

    Small ``k`` (few expected collisions) uses rejection of i.i.d. draws,
    ``k ≤ N/8`` redraws only the repeated entries, larger ``k`` a Bernoulli
    bitmap corrected to exactly ``k`` members; all three give the uniform
    distribution over k-subsets (see :func:`_subsets_by_rejection`,
    :func:`_subsets_by_redraw` and :func:`_subsets_by_bernoulli`). The order of the indices within a row carries
    no meaning.
    """
    if not 0 <= k <= n_rows:
        raise fail("k", f"in [0, {n_rows}] (rows available)", k)
    if k == 0:
        return np.zeros((n_draws, 0), dtype=np.intp)
    if k == n_rows:
        return np.broadcast_to(np.arange(n_rows), (n_draws, n_rows)).copy()
    if _use_rejection(n_rows, k):
        return _subsets_by_rejection(n_rows, k, n_draws, rng)
    if k <= REDRAW_MAX_FRACTION * n_rows:
        return _subsets_by_redraw(n_rows, k, n_draws, rng)
    return _subsets_by_bernoulli(n_rows, k, n_draws, rng)
