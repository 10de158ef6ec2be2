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
        m = len(self.columns)
        z = rng.standard_normal((n_draws, self.n_records, m))
        x = self.mean + z @ self._factor.T
        if secret is not None:
            i = self.columns.index(secret.column)
            shift = secret.value - x[:, :, i].mean(axis=1)
            x += shift[:, None, None] * (self.cov[:, i] / self.cov[i, i])
        return {c: x[:, :, self.columns.index(c)] for c in columns}

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
