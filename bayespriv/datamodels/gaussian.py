"""Records i.i.d. multivariate normal, with exact conditioning on a column mean."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._validation import described, check_covariance, check_finite_array, fail
from ..errors import UnsupportedSecretError
from ..queries import Batch, Query
from ..secrets import DatasetSecret, Secret
from .base import DataModel

__all__ = ["GaussianDataModel"]

#: Standard normals drawn per block while sampling (2 MiB of float64, rounded down to whole records;
#: at least one record).
BLOCK_ELEMENTS = 1 << 18
#: Multiply-adds of one block's product L_rows Z_blockᵀ (computed columns × m × records) at most, so that
#: OpenBLAS makes it on the calling thread: it only starts its thread pool above 4 · 65,536 multiply-adds,
#: and on a busy machine that pool waits for a free core on every call (measured on 2 shared cores: the
#: same 3 × 3 × 87,381 product 5.5 ms with the pool, 0.15 ms per 21,845 records without it). One-thread
#: BLAS is ~4× faster than the same product by NumPy ufuncs.
BLAS_ONE_THREAD_MULADDS = 1 << 17
#: Blocks are kept under :data:`BLAS_ONE_THREAD_MULADDS` only while they still hold this many records;
#: wider products (many columns) use blocks of :data:`BLOCK_ELEMENTS`, where BLAS threads pay.
MIN_BLOCK_RECORDS = 1024


def _block_records(n_rows: int, m: int) -> int:
    """Records per block: at most :data:`BLOCK_ELEMENTS` numbers, and at most
    :data:`BLAS_ONE_THREAD_MULADDS` multiply-adds in the product of ``n_rows`` computed columns
    unless that leaves fewer than :data:`MIN_BLOCK_RECORDS` records; at least one record."""
    records = max(1, BLOCK_ELEMENTS // m)
    one_thread = BLAS_ONE_THREAD_MULADDS // (n_rows * m)
    if one_thread >= MIN_BLOCK_RECORDS:
        records = min(records, one_thread)
    return records


class GaussianDataModel(DataModel):
    """Θ = one multivariate normal record distribution N(μ, V), n i.i.d. records.

    This is the instantiation of §4.2 of the attribute-privacy paper.

    Secrets: :meth:`DatasetSecret.mean` on any column i. Conditioning is exact:
    every drawn dataset has column mean exactly ``a``. By Matheron's rule, with
    Y an unconditional draw and S = Ȳ_i its column mean,
    ``X = Y + Cov(Y, S) Var(S)^{-1} (a - S)``; since Cov(Y_j^r, S) = V_ji / n and
    Var(S) = V_ii / n, every record is shifted by ``(V_{·i} / V_ii)(a - Ȳ_i)``.

    Parameters
    ----------
    mean : array (m,)
    cov : array (m, m)
        Positive semi-definite; the conditioned column needs V_ii > 0.
    columns : sequence of m str
    n_records : int

    Examples
    --------
    >>> import bayespriv as bp
    >>> model = bp.GaussianDataModel(mean=[66.0, 150.0], cov=[[9.0, 30.0], [30.0, 400.0]],
    ...                              columns=["height", "weight"], n_records=50)
    >>> batch = model.sample(bp.DatasetSecret.mean("height", 65.0), 400, rng=0)
    >>> batch["height"].shape, bool(abs(batch["height"].mean(axis=1) - 65.0).max() < 1e-9)
    ((400, 50), True)

    The weights shift by V_21 / V_11 = 30/9 per unit of height: E[mean weight] = 150 − 30/9
    (4 standard errors of the 400 draws' average, about 0.12 each, fit in 0.5):

    >>> bool(abs(batch["weight"].mean() - (150 - 30 / 9)) < 0.5)
    True
    """

    def __init__(
        self,
        mean: Sequence[float],
        cov: Sequence[Sequence[float]],
        columns: Sequence[str],
        n_records: int,
        *,
        theta: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(columns, n_records, theta)
        m = len(self.columns)
        self.mean = check_finite_array(mean, "mean", ndim=1)
        if self.mean.shape != (m,):
            raise fail("mean", f"of length {m} (one entry per column)", described(f"length {self.mean.shape[0]}"))
        self.cov = check_covariance(cov, "cov", m)
        w, U = np.linalg.eigh(self.cov)
        self._factor = U * np.sqrt(np.clip(w, 0.0, None))

    def check_secret(self, secret: Secret | None) -> None:
        super().check_secret(secret)
        if isinstance(secret, DatasetSecret):
            if secret.statistic != "mean":
                raise UnsupportedSecretError(
                    f"GaussianDataModel conditions on column means only (DatasetSecret.mean); got {secret.label!r}"
                )
            i = self.columns.index(secret.column)
            if self.cov[i, i] <= 0:
                raise fail("cov", f"positive in the variance of the secret column {secret.column!r}", self.cov[i, i])

    def _sample(self, secret, n_draws, rng, columns) -> Batch:
        """X = μ + Z Lᵀ (L = U·√w from the eigendecomposition of V), then the mean shift.

        The standard normals are drawn in the order of one ``(n_draws, n_records, m)``
        array Z (same seed, same Z as drawing it at once), in blocks of whole records of
        about :data:`BLOCK_ELEMENTS` numbers into one reused buffer, so that Z never
        exists in full. Each block is one 2-D BLAS product ``L_rows @ Z_blockᵀ``, small enough
        to run on the calling thread (:func:`_block_records`), written straight
        into the output, laid out column by column (``(columns, n_draws, n_records)``),
        and μ is added while the block is in cache: every returned column is a contiguous
        array, and only the requested columns (and the secret's) are computed. Memory:
        the output plus one block.
        """
        m = len(self.columns)
        n = self.n_records
        secret_column = self.columns.index(secret.column) if secret is not None else None
        rows = list(dict.fromkeys([self.columns.index(c) for c in columns]
                                  + ([secret_column] if secret_column is not None else [])))
        factor = self._factor[rows]
        mean = self.mean[rows][:, None]
        x = np.empty((len(rows), n_draws, n))
        flat = x.reshape(len(rows), n_draws * n)  # a view: records in the order of Z
        total = n_draws * n
        per_block = _block_records(len(rows), m)
        buffer = np.empty((min(per_block, total), m))
        for start in range(0, total, per_block):
            stop = min(total, start + per_block)
            z = buffer[:stop - start]
            rng.standard_normal(out=z)
            out = flat[:, start:stop]
            np.matmul(factor, z.T, out=out)
            out += mean
        if secret is not None:
            i = rows.index(secret_column)
            shift = secret.value - x[i].mean(axis=1)
            weights = self.cov[rows, secret_column] / self.cov[secret_column, secret_column]
            for r, w in enumerate(weights):
                x[r] += w * shift[:, None]
        return {c: x[rows.index(self.columns.index(c))] for c in columns}

    def moments(self, secret: Secret | None, query: Query) -> tuple[np.ndarray, np.ndarray]:
        """Closed-form mean and covariance of a linear query given a mean secret.

        For an additive query with ``F_c = s_c Σ_r W_c·x^r`` (``s_c`` = 1/n for
        means, 1 for sums), unconditionally E[F] = s ⊙ n W μ and
        Cov(F) = n (s sᵀ) ⊙ W V Wᵀ. Conditioning on Ȳ_i = a (Gaussian
        conditioning on Cov(F_c, S) = s_c (W V)_ci and Var(S) = V_ii / n):

        E[F | a] = s ⊙ n W (μ + V_{·i} (a − μ_i) / V_ii),
        Cov(F | a) = n (s sᵀ) ⊙ (W V Wᵀ − (W V_{·i})(W V_{·i})ᵀ / V_ii).

        For ``mean(j)`` this is §4.2's N(μ_j + V_ij/V_ii (a − μ_i), (V_jj − V_ij²/V_ii)/n).
        """
        self.check_secret(secret)
        form = query.linear_form(self.columns)
        if form is None:
            raise UnsupportedSecretError(
                f"closed-form moments need a linear query over the model's columns (e.g. mean(col) without bounds); "
                f"got {query.name!r}"
            )
        W, per_mean = form
        n = self.n_records
        s = np.where(per_mean, 1.0 / n, 1.0)
        mu, V = self.mean, self.cov
        WV = W @ V
        cov = W @ V @ W.T
        if secret is not None:
            i = self.columns.index(secret.column)
            mu = mu + V[:, i] * (secret.value - mu[i]) / V[i, i]
            cov = cov - np.outer(WV[:, i], WV[:, i]) / V[i, i]
        return s * n * (W @ mu), n * np.outer(s, s) * cov
