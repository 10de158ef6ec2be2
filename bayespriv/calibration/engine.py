"""The sampling engine: draws F(X) | secret in seeded chunks and summarises."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_confidence, check_positive_int
from ..datamodels.base import DataModel
from ..errors import ParameterTypeError, ValidationError
from ..queries import Query
from ..random import RNGLike, as_seed_sequence
from ..secrets import Secret, SecretPair, as_pairs
from .moments import bonferroni_z, sample_moments
from .result import Calibration

__all__ = ["calibrate", "draw_query_samples"]

#: Elements (draws x records x columns) one chunk may hold: ~64 MB of float64.
CHUNK_ELEMENTS = 8_000_000


@dataclass(frozen=True)
class _Task:
    model: DataModel
    secret: Secret
    query: Query
    n_draws: int
    seed: np.random.SeedSequence


def _run(task: _Task) -> np.ndarray:
    return task.model.sample_query(task.secret, task.n_draws, np.random.default_rng(task.seed), task.query)


def _chunk_sizes(n_draws: int, chunk_size: int) -> list[int]:
    full, rest = divmod(n_draws, chunk_size)
    return [chunk_size] * full + ([rest] if rest else [])


def draw_query_samples(
    model: DataModel,
    secrets: Sequence[Secret],
    query: Query,
    *,
    n_draws: int,
    rng: RNGLike = None,
    executor: Executor | None = None,
    chunk_size: int | None = None,
    progress: bool | None = None,
) -> np.ndarray:
    """Samples of F(X) | secret, array ``(len(secrets), n_draws, k)``.

    Seeds are spawned per secret and per chunk from ``rng``; the chunking
    depends only on ``n_draws`` and ``chunk_size``, so the numbers are the same
    whichever executor runs the tasks.
    """
    if chunk_size is None:
        per_draw = model.n_records * max(len(query.columns), 1)
        chunk_size = max(1, min(n_draws, CHUNK_ELEMENTS // per_draw))
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    sizes = _chunk_sizes(n_draws, chunk_size)
    root = as_seed_sequence(rng)
    tasks = []
    for secret, secret_seed in zip(secrets, root.spawn(len(secrets))):
        for size, seed in zip(sizes, secret_seed.spawn(len(sizes))):
            tasks.append(_Task(model, secret, query, size, seed))
    show = progress if progress is not None else (len(tasks) >= 20 and sys.stderr.isatty() and not os.environ.get("CI"))
    if executor is None:
        results = []
        for i, t in enumerate(tasks):
            results.append(_run(t))
            if show:
                print(f"\rcalibrating: {i + 1}/{len(tasks)} tasks", end="", file=sys.stderr, flush=True)
        if show:
            print(file=sys.stderr)
    else:
        if not isinstance(executor, Executor):
            raise ParameterTypeError(f"executor must be None or a concurrent.futures.Executor; got {type(executor).__name__}")
        results = list(executor.map(_run, tasks))
    k = {r.shape[1] for r in results}
    if len(k) != 1:
        raise ValidationError(f"query {query.name!r} must return the same number of components for every secret; got {sorted(k)}")
    per_secret = len(sizes)
    return np.stack([np.concatenate(results[i * per_secret:(i + 1) * per_secret]) for i in range(len(secrets))])


def calibrate(
    model: DataModel,
    pairs: SecretPair | Sequence[SecretPair],
    query: Query,
    *,
    n_draws: int,
    rng: RNGLike = None,
    confidence: float | None = 0.95,
    executor: Executor | None = None,
    chunk_size: int | None = None,
    progress: bool | None = None,
) -> Calibration:
    """Estimate what the mechanisms need by sampling F(X) | secret.

    Parameters
    ----------
    model : DataModel
        Θ: draws datasets conditioned on a secret.
    pairs : SecretPair or sequence of SecretPair
        Discriminative pairs; every secret in them is sampled ``n_draws`` times.
    query : Query
    n_draws : int
        Datasets drawn per secret (at least 2).
    rng : None, int, SeedSequence or Generator
        Same seed, same calibration.
    confidence : float in (0, 1) or None, default 0.95
        Probability that *all* bounds (mean boxes, covariance lower bounds)
        hold at once, by a Bonferroni split over every interval, each a
        CLT normal interval (recorded as the assumption ``monte_carlo_clt``).
        ``None`` gives a plug-in calibration whose bounds are the estimates,
        as the papers use; guarantees on it carry ``estimated_moments``.
    executor : concurrent.futures.Executor, optional
        Runs the (secret, chunk) tasks; the model and query must then pickle.
    chunk_size : int, optional
        Draws per task; bounds memory to ``chunk_size × n_records × columns``.
    progress : bool, optional
        Print task progress to stderr. Default: on for 20 tasks or more when
        stderr is a terminal and the ``CI`` environment variable is unset.

    Returns
    -------
    Calibration
    """
    if not isinstance(model, DataModel):
        raise ParameterTypeError(f"model must be a bayespriv DataModel; got {type(model).__name__}")
    if not isinstance(query, Query):
        raise ParameterTypeError(f"query must be a bayespriv Query; got {type(query).__name__}")
    pairs = as_pairs(pairs)
    n_draws = check_positive_int(n_draws, "n_draws", minimum=2)
    confidence = check_confidence(confidence)
    missing = [c for c in query.columns if c not in model.columns]
    if missing:
        raise ValidationError(f"query columns must be columns of the data model {list(model.columns)!r}; got {missing!r}")
    secrets = tuple(dict.fromkeys(s for p in pairs for s in p.secrets))
    for s in secrets:
        model.check_secret(s)
    samples = draw_query_samples(
        model, secrets, query, n_draws=n_draws, rng=rng, executor=executor, chunk_size=chunk_size, progress=progress
    )
    return calibration_from_samples(samples, secrets, pairs, query, confidence=confidence,
                                    n_records=model.n_records, theta=model.theta or None)


def calibration_from_samples(
    samples: np.ndarray,
    secrets: Sequence[Secret],
    pairs: Sequence[SecretPair],
    query: Query | None,
    *,
    confidence: float | None,
    n_records: int | None = None,
    theta: Any = None,
) -> Calibration:
    """Summarise samples ``(S, n_draws, k)`` into a :class:`Calibration`."""
    S, n, k = samples.shape
    means, covs, mean_se, cov_se = sample_moments(samples)
    n_events = S * k + S * k * (k + 1) // 2
    names = query.component_names(k) if query is not None else tuple(f"F[{i}]" for i in range(k))
    return Calibration(
        secrets=tuple(secrets),
        pairs=tuple(pairs),
        mean_array=means,
        cov_array=covs,
        mean_se=mean_se,
        cov_se=cov_se,
        confidence=confidence,
        z=bonferroni_z(confidence, n_events),
        query=query,
        n_draws=n,
        n_records=n_records,
        sample_array=samples,
        component_names=names,
        theta=theta,
    )
