"""The data-model protocol: Θ as something that draws batches of datasets.

A data model draws ``n_draws`` datasets of ``n_records`` records, each
conditioned on a secret, as a batch (column -> array ``(n_draws, n_records)``).
That is all calibration needs. Models that know more (closed-form moments of
linear queries) offer :meth:`DataModel.moments`.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._validation import check_column_names, check_memory, check_positive_int
from ..errors import ParameterTypeError, UnsupportedSecretError, ValidationError
from ..queries import Batch, Query
from ..random import RNGLike, as_generator
from ..secrets import DatasetSecret, DistributionSecret, Secret

__all__ = ["DataModel"]


class DataModel(abc.ABC):
    """Θ: a distribution over datasets of ``n_records`` records.

    Subclasses implement :meth:`_sample` and, when they can condition on a kind
    of secret, say so in :meth:`check_secret`. Conditioning never mutates the
    model: every call draws afresh from the conditional distribution.

    Attributes
    ----------
    columns : tuple of str
        The record columns the model draws.
    n_records : int
        Records per dataset.
    theta : dict
        Parameters naming this member of a family (empty for a single model).

    Examples
    --------
    Ten fair coin flips per dataset; a proportion secret fixes how many land 1 (their places are
    uniformly random):

    >>> import numpy as np
    >>> import bayespriv as bp
    >>> class Coins(bp.DataModel):
    ...     def _sample(self, secret, n_draws, rng, columns):
    ...         if secret is None:
    ...             return {"flip": rng.integers(0, 2, size=(n_draws, self.n_records))}
    ...         ones = np.arange(self.n_records) < round(secret.value * self.n_records)
    ...         return {"flip": rng.permuted(np.tile(ones, (n_draws, 1)), axis=1).astype(int)}
    >>> coins = Coins(["flip"], n_records=10)
    >>> coins.sample(None, 3, rng=0)["flip"].shape
    (3, 10)
    >>> coins.sample(bp.DatasetSecret.proportion("flip", 1, 0.3), 3, rng=0)["flip"].sum(axis=1)
    array([3, 3, 3])
    """

    columns: tuple[str, ...]
    n_records: int
    theta: Mapping[str, Any]

    def __init__(self, columns: Sequence[str], n_records: int, theta: Mapping[str, Any] | None = None) -> None:
        self.columns = check_column_names(columns, "columns", allow_str=False)
        self.n_records = check_positive_int(n_records, "n_records")
        # One dataset of n_records rows must fit in memory (calibration draws at least one at a time).
        check_memory(8.0 * self.n_records * len(self.columns), "n_records", self.n_records,
                     f"one dataset of {self.n_records} records x {len(self.columns)} columns (8 bytes each)")
        if theta is not None and not isinstance(theta, Mapping):
            raise ParameterTypeError(f"theta must be None or a mapping of parameter names to values; got {type(theta).__name__}")
        self.theta = dict(theta or {})

    # -- secrets -------------------------------------------------------------------
    def check_secret(self, secret: Secret | None) -> None:
        """Raise a clear error when this model cannot condition on ``secret``."""
        if secret is None:
            return
        if isinstance(secret, DatasetSecret):
            if secret.column not in self.columns:
                raise ValidationError(
                    f"secret column must be a column of the data model; got {secret.column!r}, columns are {list(self.columns)!r}"
                )
        elif isinstance(secret, DistributionSecret):
            raise UnsupportedSecretError(
                f"{type(self).__name__} cannot condition on distribution secrets; got {secret.label!r}. "
                "Use a PyMC, Bayesian-network or family data model, where the parameter is part of the model."
            )
        else:
            raise UnsupportedSecretError(f"secret must be a DatasetSecret or DistributionSecret; got {type(secret).__name__}")

    # -- preparation -------------------------------------------------------------------
    def prepare(self, secrets: Sequence[Secret], rng: np.random.Generator) -> "DataModel":
        """Called once by :func:`~bayespriv.calibrate` before any sampling task.

        Returns the model to sample from (default: ``self``). Models that need
        inference per secret (e.g. MCMC for a dataset secret) run it here and
        return a *new* model holding what sampling needs; it must pickle, since
        executors ship it to workers. Raise
        :class:`~bayespriv.errors.ConvergenceError` when that inference fails.
        """
        return self

    @property
    def diagnostics(self) -> Mapping[str, Any]:
        """Diagnostics of :meth:`prepare` (copied into ``Calibration.diagnostics``)."""
        return {}

    @property
    def posteriors(self) -> Mapping[str, Any]:
        """Posteriors :meth:`prepare` computed: secret label -> :class:`arviz.InferenceData`
        (kept on ``Calibration.posteriors``); empty for models that need no inference."""
        return {}

    # -- sampling ----------------------------------------------------------------------
    def sample(
        self, secret: Secret | None, n_draws: int, rng: RNGLike = None, *, columns: Sequence[str] | None = None
    ) -> dict[str, np.ndarray]:
        """Draw ``n_draws`` datasets given ``secret`` (None: unconditionally).

        Returns a batch restricted to ``columns`` (default: all), each array of
        shape ``(n_draws, n_records)``.
        """
        self.check_secret(secret)
        n_draws = check_positive_int(n_draws, "n_draws")
        cols = self.columns if columns is None else check_column_names(columns, "columns")
        check_memory(8.0 * n_draws * self.n_records * len(cols), "n_draws", n_draws,
                     f"{n_draws} datasets of {self.n_records} records x {len(cols)} columns (8 bytes each)")
        unknown = [c for c in cols if c not in self.columns]
        if unknown:
            raise ValidationError(f"columns must be columns of the data model {list(self.columns)!r}; got {unknown!r}")
        batch = self._sample(secret, n_draws, as_generator(rng), cols)
        for c in cols:
            if c not in batch:
                raise ValidationError(f"{type(self).__name__} must return column {c!r}; it is missing from the batch")
            if np.shape(batch[c]) != (n_draws, self.n_records):
                raise ValidationError(
                    f"{type(self).__name__} must return column {c!r} with shape (n_draws, n_records) = "
                    f"({n_draws}, {self.n_records}); got {np.shape(batch[c])}"
                )
        return {c: batch[c] for c in cols}

    def bytes_per_record(self, columns: Sequence[str] | None = None) -> int:
        """Bytes one record of one dataset occupies while a sampling task runs.

        :func:`~bayespriv.calibrate` sizes its chunks with it (draws per task ×
        ``n_records`` × this ≈ ``CHUNK_BYTES``), so it must count every column
        the model *draws*, not only those a query reads: a model draws the
        ancestors of the requested columns too (a PyMC height needs its
        gender). The default is 8 bytes (float64) per column of the model,
        whatever ``columns`` asks for, which bounds any model that draws only
        its own columns. Models that draw fewer (only ``columns``) or hold
        more per record (latent variables, uniforms kept alongside) override it.

        Parameters
        ----------
        columns : sequence of str, optional
            The columns a query will read (default: all); unused by the default.

        Returns
        -------
        int
            At least 8.
        """
        return 8 * max(len(self.columns), 1)

    def sample_query(self, secret: Secret | None, n_draws: int, rng: RNGLike, query: Query) -> np.ndarray:
        """Draw ``n_draws`` datasets given ``secret`` and return F on them, ``(n_draws, k)``.

        This is what calibration calls. The default draws the query's columns
        and evaluates the query; models that can compute F without materialising
        the records (e.g. additive queries over a resampled table) override it,
        and must return the same distribution.
        """
        return query.evaluate(self.sample(secret, n_draws, rng, columns=query.columns))

    @abc.abstractmethod
    def _sample(self, secret: Secret | None, n_draws: int, rng: np.random.Generator, columns: tuple[str, ...]) -> Batch:
        """Draw the batch; arguments are already validated."""

    def moments(self, secret: Secret | None, query: Query) -> tuple[np.ndarray, np.ndarray]:
        """Exact mean ``(k,)`` and covariance ``(k, k)`` of F(X) given ``secret``.

        Only models with a closed form implement it.
        """
        raise UnsupportedSecretError(f"{type(self).__name__} has no closed-form moments; calibrate by sampling instead")

    def exact_law(self, secret: Secret | None, query: Query) -> tuple[np.ndarray, np.ndarray] | None:
        """The exact law of F(X) given ``secret`` when it has finitely many values, or None.

        :func:`~bayespriv.calibrate` asks for it (``exact_laws="auto"``) and,
        when the model gives it for every secret, the calibration holds these
        laws (:attr:`~bayespriv.Calibration.finite_laws`): its moments are
        exact and the privacy accountant reads the laws instead of the draws.
        Models that can tabulate some query (a count of a category, see
        :attr:`~bayespriv.Query.indicator`) override it; the default, and any
        model for a query it cannot tabulate, returns None (calibrate by
        sampling, as before).

        Parameters
        ----------
        secret : Secret or None
        query : Query

        Returns
        -------
        (points, weights) or None
            ``points (m, k)``: the values F takes; ``weights (m,)``: their
            probabilities (summing to 1).
        """
        return None

    def __repr__(self) -> str:
        extra = f", theta={self.theta}" if self.theta else ""
        return f"{type(self).__name__}(columns={list(self.columns)}, n_records={self.n_records}{extra})"
