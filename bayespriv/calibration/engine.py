"""The sampling engine: draws F(X) | secret in seeded chunks and summarises."""

from __future__ import annotations

import weakref

import contextlib
import functools
import math
import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import special, stats

from .._deprecation import option_value
from .._validation import described, fail
from .._progress import ProgressBar
from .._progress import progress as progress_bar
from .._validation import check_confidence, check_memory, check_positive_int
from ..datamodels import posterior_cache
from ..datamodels.base import DataModel
from ..datamodels.family import DataModelFamily
from ..errors import ParameterTypeError, UnsupportedSecretError, UnverifiedCalibrationError, ValidationError
from ..queries import Query
from ..random import RNGLike, as_seed_sequence
from ..secrets import Secret, SecretPair, as_pairs
from .moments import bonferroni_z, sample_moments
from .draw_report import DrawReport
from .execution import ExecutionOptions, _is_dask_client
from .laws import FiniteLaw
from .result import Calibration
from bayespriv.calibration.provenance import UNVERIFIED

if TYPE_CHECKING:
    from distributed import Client
    from .contract import CalibrationLike

__all__ = ["calibrate", "default_chunk_size", "draw_query_samples", "minimum_draws"]

#: The data model each calibration made by :func:`calibrate` was drawn from, while both are alive
#: (never saved: a calibration loaded from a file has none). Joint accounting of several releases on
#: the same data draws their stacked query from it (:mod:`bayespriv.ledger.joint`).
_MODELS: "weakref.WeakKeyDictionary[Calibration, Any]" = weakref.WeakKeyDictionary()


def model_of(calibration: CalibrationLike) -> Any:
    """The data model (or family) ``calibration`` was drawn from by :func:`calibrate` in this process, or None."""
    try:
        return _MODELS.get(calibration)
    except TypeError:  # not weak-referenceable
        return None


#: Elements (draws x records x columns) one chunk may hold: ~64 MB of float64.
CHUNK_ELEMENTS = 8_000_000
#: Bytes of drawn records one task may hold (draws x n_records x ``DataModel.bytes_per_record``).
CHUNK_BYTES = 8 * CHUNK_ELEMENTS


def _run(model: DataModel, secret: Secret, query: Query, n_draws: int, seed: np.random.SeedSequence) -> np.ndarray:
    return model.sample_query(secret, n_draws, np.random.default_rng(seed), query)


#: Payloads (cloudpickle bytes of a model or query) unpickled per worker process, kept so that the
#: tasks of one calibration landing on a worker unpickle (and, for PyMC, rebuild) each object once.
_PAYLOAD_CACHE = 8


@functools.lru_cache(maxsize=_PAYLOAD_CACHE)
def _unpickled(payload: bytes) -> Any:
    """The object a cloudpickle payload holds, once per process and payload."""
    import cloudpickle

    return cloudpickle.loads(payload)


def _one_blas_thread() -> Any:
    """A context in which BLAS/OpenMP pools run one thread (threadpoolctl; a no-op without it).

    Process-pool workers run side by side, one per core: a BLAS pool per worker sized
    for the whole machine oversubscribes the cores. In a child process (a pool worker)
    the limit is set once and kept (:func:`_pin_blas_threads`: setting it costs a few
    milliseconds); in the caller's own process (an executor that runs tasks inline) it
    is scoped to the task, leaving the caller's thread pools as they were.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn's usual stack
        return contextlib.nullcontext()
    if multiprocessing.parent_process() is None:
        return threadpool_limits(limits=1)
    _pin_blas_threads(os.getpid())
    return contextlib.nullcontext()


@functools.lru_cache(maxsize=1)
def _pin_blas_threads(pid: int) -> Any:
    """Limit this worker process's BLAS/OpenMP pools to one thread, once per ``pid``
    (a forked child inherits the cache but not the limit: its pid differs)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def _run_pickled(model: bytes, secret: Secret, query: bytes, n_draws: int,
                 seed: np.random.SeedSequence) -> np.ndarray:
    """:func:`_run` in a worker process: the model and the query arrive as cloudpickle bytes;
    BLAS runs on one thread (:func:`_one_blas_thread`)."""
    with _one_blas_thread():
        return _run(_unpickled(model), secret, _unpickled(query), n_draws, seed)


def _pickled_tasks(tasks: list[tuple]) -> list[tuple]:
    """Tasks whose model and query are cloudpickle bytes, each distinct object serialised once.

    The standard pickle refuses lambdas and locally defined functions — the usual way of
    writing a query or a model builder; cloudpickle sends them by value (the worker needs
    only the libraries they import). An object cloudpickle cannot serialise raises a
    ParameterTypeError naming it.
    """
    import cloudpickle

    blobs: dict[int, bytes] = {}

    def blob(obj: Any, name: str) -> bytes:
        if id(obj) not in blobs:
            try:
                blobs[id(obj)] = cloudpickle.dumps(obj)
            except Exception as exc:  # noqa: BLE001 - re-raised with the object named
                raise ParameterTypeError(
                    f"{name} must be picklable (by cloudpickle) to run on a process executor; got "
                    f"{type(obj).__name__} {getattr(obj, 'name', '')!s:.60}, which raised {exc!r}. "
                    "Run serially (ExecutionOptions(executor=None)) or on a ThreadPoolExecutor, or make it "
                    "picklable") from exc
        return blobs[id(obj)]

    return [(blob(m, "model"), s, blob(q, "query"), n, seed) for m, s, q, n, seed in tasks]


def _chunk_sizes(n_draws: int, chunk_size: int) -> list[int]:
    full, rest = divmod(n_draws, chunk_size)
    return [chunk_size] * full + ([rest] if rest else [])


def _map(tasks: list[tuple], executor: Executor | Client | None, bar: ProgressBar) -> list[np.ndarray]:
    """Run ``_run(*task)`` for every task, in order, on the executor (checked by :class:`ExecutionOptions`)."""
    if executor is None:
        out = []
        for t in tasks:
            out.append(_run(*t))
            bar.update()
        return out
    if _is_dask_client(executor):
        return _dask_map(tasks, executor, bar)
    run = _run
    if not isinstance(executor, ThreadPoolExecutor) and not _is_dask_executor(executor):
        # Another process: ship the model and query with cloudpickle (lambdas included).
        tasks, run = _pickled_tasks(tasks), _run_pickled
    out = []
    for r in executor.map(run, *zip(*tasks)):
        out.append(r)
        bar.update()
    return out


def _dask_scatter(client: Client, objects: Sequence[Any]) -> dict[int, Any]:
    """Futures of ``objects`` on every worker, keyed by ``id``, each under a fresh key.

    ``hash=False`` gives every scatter its own key. With the default content-hash key,
    a second calibration of the same model scatters under the key the first one's
    futures are releasing; the scheduler can forget the data between the two, and
    the new tasks fail with ``FutureCancelledError: lost dependencies``.
    """
    distinct = {id(o): o for o in objects}
    return {key: client.scatter(o, broadcast=True, hash=False) for key, o in distinct.items()}


def _dask_map(tasks: list[tuple], client: Client, bar: ProgressBar) -> list[np.ndarray]:
    """Run ``_run(*task)`` for every task on a dask ``Client``, results in task order.

    Stages: scatter each distinct model and query once under unique keys
    (:func:`_dask_scatter`); submit every task with ``pure=False`` (tasks are
    random: never deduplicated or cached); collect in order. The scattered futures
    stay referenced until every task has finished; if one fails, every task of the
    call is cancelled (the erred one too), so nothing of this call outlives it on
    the cluster.
    """
    data = _dask_scatter(client, [t[0] for t in tasks] + [t[2] for t in tasks])
    futures = [client.submit(_run, data[id(m)], s, data[id(q)], n, seed, pure=False)
               for m, s, q, n, seed in tasks]
    try:
        out = []
        for i in range(len(futures)):  # no loop variable: a raised error's frame keeps no future alive
            out.append(futures[i].result())
            bar.update()
    except BaseException:
        client.cancel(futures)  # the erred task and the unfinished ones; the error keeps its traceback
        raise
    finally:
        del futures, data
    return out


def _is_dask_executor(executor: Executor | Client | None) -> bool:
    """A dask ``ClientExecutor`` (dask pickles with cloudpickle itself)."""
    return type(executor).__module__.startswith("distributed")


def default_chunk_size(model: DataModel, query: Query, n_draws: int) -> int:
    """Draws per task when ``chunk_size`` is not given: ``CHUNK_BYTES`` of drawn records.

    Counts every column the model draws (``model.bytes_per_record(query.columns)``,
    8 bytes per model column by default), not only the query's: a query on one
    column of a two-column model still makes the model draw both.

    Parameters
    ----------
    model : DataModel
    query : Query
    n_draws : int

    Returns
    -------
    int
        ``max(1, min(n_draws, CHUNK_BYTES // (n_records × bytes_per_record)))``.
    """
    per_record = model.bytes_per_record(query.columns)
    if isinstance(per_record, bool) or not isinstance(per_record, (int, np.integer)) or per_record < 1:
        raise fail(f"{type(model).__name__}.bytes_per_record()", "a positive int", per_record)
    return max(1, min(n_draws, CHUNK_BYTES // (model.n_records * int(per_record))))


def _plan(models: Sequence[DataModel], secrets: Sequence[Secret], query: Query, n_draws: int,
          seeds: Sequence[np.random.SeedSequence], chunk_size: int | None) -> tuple[list[tuple], int]:
    if chunk_size is None:
        chunk_size = default_chunk_size(models[0], query, n_draws)
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    sizes = _chunk_sizes(n_draws, chunk_size)
    tasks = []
    for model, root in zip(models, seeds):
        for secret, secret_seed in zip(secrets, root.spawn(len(secrets))):
            for size, seed in zip(sizes, secret_seed.spawn(len(sizes))):
                tasks.append((model, secret, query, size, seed))
    return tasks, len(sizes)


def _assemble(results: list[np.ndarray], n_models: int, n_secrets: int, per_secret: int, query: Query) -> np.ndarray:
    k = {r.shape[1] for r in results}
    if len(k) != 1:
        raise ValidationError(f"query {query.name!r} must return the same number of components for every secret; got {sorted(k)}")
    blocks = [np.concatenate(results[i * per_secret:(i + 1) * per_secret]) for i in range(n_models * n_secrets)]
    return np.stack(blocks).reshape(n_models, n_secrets, *blocks[0].shape)


def _prepare_seed(root: np.random.SeedSequence) -> np.random.SeedSequence:
    """A seed for :meth:`DataModel.prepare` that leaves the sampling seeds
    (``root.spawn(...)`` children) unchanged."""
    return np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, 0x5EED_0F))


#: The keywords of their own that :class:`ExecutionOptions`' fields were (deprecated spellings, kept for one release).
_EXECUTION_FIELDS = ("executor", "chunk_size", "progress", "reuse")
#: How the draws run when a call passes no ``execution=``: serially, default chunks, the automatic progress bar.
_DEFAULT_EXECUTION = ExecutionOptions()


def _execution_options(owner: str, execution: Any, old: Mapping[str, Any],
                       fields: Sequence[str] = _EXECUTION_FIELDS) -> ExecutionOptions:
    """The ``execution=`` of a call of ``owner``: checked (None: the defaults), with the deprecated keywords of
    ``old`` (the options' ``fields``, once keywords of their own) folded in, warning. An old keyword given with
    ``execution=`` is a :class:`~bayespriv.errors.ValidationError`; a keyword that was never accepted, a
    ``TypeError`` (as Python's)."""
    unknown = [name for name in old if name not in fields]
    if unknown:
        raise TypeError(f"{owner}() got an unexpected keyword argument {unknown[0]!r}")
    return option_value(owner, "execution", ExecutionOptions, execution, old, _DEFAULT_EXECUTION)


def draw_query_samples(
    model: DataModel,
    secrets: Sequence[Secret],
    query: Query,
    *,
    n_draws: int,
    rng: RNGLike = None,
    execution: ExecutionOptions | None = None,
    **deprecated: Any,
) -> np.ndarray:
    """Samples of F(X) | secret, array ``(len(secrets), n_draws, k)``.

    Seeds are spawned per secret and per chunk from ``rng``; the chunking
    depends only on ``n_draws`` and ``execution.chunk_size``, so the numbers are
    the same whichever executor runs the tasks. ``model`` must already be
    prepared (:meth:`DataModel.prepare`).

    ``execution`` is how the draws run (:class:`~bayespriv.calibration.ExecutionOptions`; default: serially);
    its ``reuse`` must be None, as the model is already prepared. ``executor=``, ``chunk_size=`` and
    ``progress=`` are its deprecated spelling, kept for one release.
    """
    execution = _execution_options("draw_query_samples", execution, deprecated, _EXECUTION_FIELDS[:3])
    if execution.reuse is not None:
        raise fail("execution.reuse", "None for draw_query_samples (the model is already prepared: reuse applies "
                                      "to calibrate)", described(f"a {type(execution.reuse).__name__}"))
    root = as_seed_sequence(rng)
    tasks, per_secret = _plan([model], secrets, query, n_draws, [root], execution.chunk_size)
    with progress_bar(len(tasks), "calibrating", execution.progress) as bar:
        results = _map(tasks, execution.executor, bar)
    return _assemble(results, 1, len(secrets), per_secret, query)[0]


def calibrate(
    model: DataModel | DataModelFamily,
    pairs: SecretPair | Sequence[SecretPair],
    query: Query,
    *,
    n_draws: int,
    rng: RNGLike = None,
    confidence: float | None = 0.95,
    exact_laws: bool | str = "auto",
    execution: ExecutionOptions | None = None,
    **deprecated: Any,
) -> Calibration:
    """Estimate what the mechanisms need by sampling F(X) | secret (and take the exact laws where the model knows them).

    Parameters
    ----------
    model : DataModel or DataModelFamily
        Θ: draws datasets conditioned on a secret. For a family every member
        θ is calibrated; the result is the member with the largest L2
        sensitivity bound, with all members in ``Calibration.family``, and
        the bounds of all members hold jointly with probability ``confidence``.
    pairs : SecretPair or sequence of SecretPair
        Discriminative pairs; every secret in them is sampled ``n_draws`` times.
    query : Query
    n_draws : int
        Datasets drawn per secret. At least what this calibration's own bounds
        need (:func:`minimum_draws`: 30 or more with ``confidence``, e.g. 63
        for one pair of a one-component query at 0.95; 2 for a plug-in); a
        smaller value raises a ValidationError naming the minimum and why
        (checked once the query's k is known, after the few draws are made).
    rng : None, int, SeedSequence or Generator
        Same seed, same calibration.
    confidence : float in (0, 1) or None, default 0.95
        Probability that *all* bounds (mean boxes, covariance lower bounds)
        hold at once, by a Bonferroni split over every interval, each a
        CLT normal interval (recorded as the assumption ``monte_carlo_clt``).
        ``None`` gives a plug-in calibration whose bounds are the estimates,
        as the papers use; guarantees on it carry ``estimated_moments``.
    exact_laws : {"auto", True, False}, default "auto"
        Whether the calibration holds the exact law of F under each secret
        when the data model can tabulate it (:meth:`DataModel.exact_law`:
        today a count or proportion of a category, ``bp.count(column,
        category)``, on an :class:`~bayespriv.EmpiricalDataModel` —
        hypergeometric — or a discrete :class:`~bayespriv.BayesNetDataModel`
        — binomial). With the laws (:attr:`Calibration.finite_laws`) the
        moments are exact (standard errors 0, ``confidence`` 1.0, no
        ``monte_carlo_clt``), the accountant of the released law computes δ(ε)
        exactly instead of bounding it from the draws (no ``sampled_law``, no
        confidence margin), and the draws are still made and kept for
        diagnostics and plots; the minimum number of draws of the bounds
        (:func:`minimum_draws`) no longer applies, as no bound rests on them.
        ``"auto"``: take the laws when the model gives them for every secret
        (of every member, for a family), else calibrate by sampling as
        before — the laws remove an assumption and are never less accurate,
        and tabulating them costs far less than drawing (about a millisecond
        per secret; measured on 100 and 1000 records). With the laws the
        calibration is exact whatever ``confidence`` says (a plug-in request
        included). ``True``: require them (ValidationError naming the secret
        and model that cannot). ``False``: never (the sampled calibration,
        e.g. to reproduce a paper's estimates).
    execution : ExecutionOptions, optional
        How the draws run — executor, draws per task, progress bar, MCMC posteriors to reuse — never what
        they give: :class:`~bayespriv.calibration.ExecutionOptions` (default: serially, in this process).
        ``executor=``, ``chunk_size=``, ``progress=`` and ``reuse=`` are its deprecated spelling, kept for
        one release.

    Returns
    -------
    Calibration

    Raises
    ------
    UnverifiedCalibrationError
        ``execution.reuse`` comes from a file that did not verify.
    ValidationError
        ``exact_laws=True`` and the model cannot tabulate some law.

    Examples
    --------
    Two correlated columns: the mean of ``y`` moves by 0.5 per unit of the mean of ``x``, so the
    exact sensitivity between means of ``x`` at −1 and 1 is 1 (the estimate's standard error with
    1000 draws per secret is about 0.009):

    >>> import bayespriv as bp
    >>> model = bp.GaussianDataModel([0.0, 0.0], [[1.0, 0.5], [0.5, 1.0]], ["x", "y"], n_records=20)
    >>> pair = bp.SecretPair(bp.DatasetSecret.mean("x", -1.0), bp.DatasetSecret.mean("x", 1.0))
    >>> cal = bp.calibrate(model, pair, bp.mean("y"), n_draws=1000, rng=0)
    >>> cal.n_draws, bool(abs(cal.sensitivity() - 1.0) < 0.05), cal.sensitivity(bound=True) > cal.sensitivity()
    (1000, True, True)

    ``confidence=None`` is the papers' plug-in calibration: its bounds are the estimates.

    >>> plug_in = bp.calibrate(model, pair, bp.mean("y"), n_draws=1000, rng=0, confidence=None)
    >>> plug_in.sensitivity(bound=True) == plug_in.sensitivity(), plug_in.confidence
    (True, None)
    """
    execution = _execution_options("calibrate", execution, deprecated)
    request = _validated_request(model, pairs, query, n_draws, confidence, exact_laws)
    root = as_seed_sequence(rng)
    # Seeds: a single model keeps root -> secret -> chunk; a family adds a θ level first.
    seeds = root.spawn(len(request.members)) if request.family else [root]
    with posterior_cache.offered(_offered_posteriors(execution.reuse)):
        prepared = [m.prepare(request.secrets, np.random.default_rng(_prepare_seed(seed)))
                    for m, seed in zip(request.members, seeds)]
    laws, why_sampled = _tabulated_laws(prepared, request.secrets, query, exact_laws)
    samples = _draw_samples(request, prepared, seeds, execution)
    result = _summarised(request, prepared, samples, laws, why_sampled)
    result = _family_result(result, model.covers) if request.family else result[0]
    _MODELS[result] = model
    return result


@dataclass(frozen=True)
class _Request:
    """A checked calibration request: the models (one, or a family's members), the secrets, the query."""

    members: tuple[Any, ...]
    family: bool
    pairs: tuple[SecretPair, ...]
    secrets: tuple[Secret, ...]
    query: Query
    n_draws: int
    confidence: float | None


def _validated_request(model: Any, pairs: Any, query: Any, n_draws: Any, confidence: Any,
                       exact_laws: Any) -> _Request:
    """Check the arguments of :func:`calibrate` (types, ranges, memory, columns, secrets) before any draw; its
    ``execution`` is checked by :class:`ExecutionOptions`."""
    if not isinstance(model, (DataModel, DataModelFamily)):
        raise ParameterTypeError(f"model must be a bayespriv DataModel or DataModelFamily; got {type(model).__name__}")
    if not isinstance(query, Query):
        raise ParameterTypeError(f"query must be a bayespriv Query; got {type(query).__name__}")
    pairs = as_pairs(pairs)
    n_draws = check_positive_int(n_draws, "n_draws", minimum=2)
    confidence = check_confidence(confidence)
    if not (exact_laws == "auto" or isinstance(exact_laws, (bool, np.bool_))):
        raise fail("exact_laws", "'auto', True or False", exact_laws)
    family = isinstance(model, DataModelFamily)
    members = tuple(model.members) if family else (model,)
    secrets = tuple(dict.fromkeys(s for p in pairs for s in p.secrets))
    # The samples (members x secrets x n_draws x k, k >= 1) are kept: refuse before drawing if they cannot fit.
    check_memory(8.0 * len(members) * len(secrets) * n_draws * max(query.k or 1, 1), "n_draws", n_draws,
                 f"the calibration samples ({len(members)} model(s) x {len(secrets)} secrets x {n_draws} draws x "
                 f"{query.k or 'k >= 1'} components, 8 bytes each)")
    missing = [c for c in query.columns if c not in members[0].columns]
    if missing:
        raise ValidationError(f"query columns must be columns of the data model {list(members[0].columns)!r}; got {missing!r}")
    for m in members:
        for s in secrets:
            m.check_secret(s)
    return _Request(members, family, tuple(pairs), secrets, query, n_draws, confidence)


def _draw_samples(request: _Request, prepared: list, seeds: list, execution: ExecutionOptions) -> np.ndarray:
    """F(X) | secret for every prepared model, secret and draw: (members, secrets, n_draws, k)."""
    tasks, per_secret = _plan(prepared, request.secrets, request.query, request.n_draws, seeds,
                              execution.chunk_size)
    label = f"calibrating {len(request.members)} models" if request.family else "calibrating"
    with progress_bar(len(tasks), label, execution.progress) as bar:
        results = _map(tasks, execution.executor, bar)
    return _assemble(results, len(prepared), len(request.secrets), per_secret, request.query)


def _summarised(request: _Request, prepared: list, samples: np.ndarray, laws: Any,
                why_sampled: str | None = None) -> list[Calibration]:
    """One Calibration per prepared model, with the Bonferroni count over every member's intervals (and, when
    ``exact_laws="auto"`` fell back to sampling, why: ``diagnostics["exact_laws"]``)."""
    k = samples.shape[-1]
    extra = {} if why_sampled is None else {"exact_laws": why_sampled}
    n_events = len(prepared) * _events(len(request.secrets), k)
    if laws is None:
        _refuse_too_few_draws(request.n_draws, request.confidence, k, n_events)
    return [
        calibration_from_samples(samples[i], request.secrets, request.pairs, request.query,
                                 confidence=request.confidence, n_records=m.n_records, theta=m.theta or None,
                                 report=DrawReport(n_events=n_events, diagnostics={**m.diagnostics, **extra},
                                                   posteriors=m.posteriors,
                                                   finite_laws=None if laws is None else laws[i]))
        for i, m in enumerate(prepared)
    ]


def _family_result(cals: list[Calibration], covers: str) -> Calibration:
    """A family's calibration: its worst member (largest L2 sensitivity bound) holding every member."""
    worst = int(np.argmax([c.pair_sensitivities(2, bound=True).max() for c in cals]))
    diagnostics = dict(cals[worst].diagnostics)
    diagnostics["family"] = {
        "members": len(cals),
        "covers": covers,
        "worst_theta": dict(cals[worst].theta or {}),
    }
    return replace(cals[worst], family=tuple(cals), diagnostics=diagnostics)


def _tabulated_laws(models: Sequence[DataModel], secrets: Sequence[Secret], query: Query,
                    mode: bool | str) -> tuple[list[dict[str, FiniteLaw]] | None, str | None]:
    """The exact law of F under every secret, per model (:meth:`DataModel.exact_law`), or None; and, when
    ``mode="auto"`` falls back to sampling because a law is too large to tabulate, why.

    All or nothing: with ``mode="auto"`` None as soon as one model cannot tabulate one secret's law (or
    refuses to, :class:`~bayespriv.errors.UnsupportedSecretError`: the calibration samples instead);
    with ``True`` that refuses, naming them; with ``False`` None. A law whose dimension is not the
    query's is a bug of the model (refused).
    """
    if mode is False or mode is np.False_:
        return None, None
    out = []
    for m in models:
        laws: dict[str, FiniteLaw] = {}
        for s in secrets:
            try:
                law = m.exact_law(s, query)
            except UnsupportedSecretError as exc:
                if mode != "auto":
                    raise
                return None, f"sampled: the exact law under {s.label!r} could not be tabulated ({exc})"
            if law is None:
                if mode == "auto":
                    return None, None
                raise fail("exact_laws", f"'auto' or False for {type(m).__name__}, which cannot tabulate the law of "
                                         f"query {query.name!r} under secret {s.label!r} (it tabulates counts and "
                                         "proportions of a category, bp.count(column, category), on an "
                                         "EmpiricalDataModel or a discrete BayesNetDataModel)", True)
            laws[s.label] = FiniteLaw(*law)
            if query.k is not None and laws[s.label].k != query.k:
                raise ValidationError(f"{type(m).__name__}.exact_law must return points of the query's dimension "
                                      f"{query.k}; got {laws[s.label].k} for secret {s.label!r}")
        out.append(laws)
    return out, None


def _offered_posteriors(reuse: Calibration | None) -> dict[str, Any]:
    """Saved key -> MCMC run of every posterior of ``reuse`` (and of its family members); a calibration loaded
    unverified is refused (its type was checked by :class:`ExecutionOptions`)."""
    if reuse is None:
        return {}
    if UNVERIFIED in reuse.assumptions:
        where = reuse.provenance.path if reuse.provenance is not None else "a file"
        raise UnverifiedCalibrationError(
            f"reuse must be a calibration computed in this process or loaded from a verified file; got one loaded "
            f"with trust='unverified' from {where!r}, whose MCMC posteriors nothing vouches for. Calibrate without "
            "reuse (MCMC runs again), or re-create the file with your key")
    out: dict[str, Any] = {}
    for m in (reuse, *reuse.family):
        for idata in m.posteriors.values():
            key = posterior_cache.key_of(idata)
            if key is not None:
                out[key] = idata
    return out


# -- the fewest draws the bounds need ------------------------------------------------------

#: Fewest draws per secret for a calibration with confidence bounds: the usual floor of
#: the normal approximation behind the mean boxes (the variance rule below is stricter for k = 1).
MIN_DRAWS_CLT = 30
#: Fewest draws per secret for a plug-in calibration (``confidence=None``): sample variances (ddof 1).
MIN_DRAWS_PLUG_IN = 2


@functools.lru_cache(maxsize=256)
def _variance_bound_draws(z: float, k: int) -> int:
    """Smallest n from which the Loewner variance bound can meet its Bonferroni share.

    For a Gaussian F the variance estimate along a direction is σ²·χ²_{n−1}/(n − 1);
    the bound Σ̂/(1 + η) (:mod:`~bayespriv.calibration.moments`) fails along it
    when that exceeds σ²(1 + η), with η = z·ρ(s) and, at the standard errors'
    expected values, ρ(s) = (√2 + k − 1)/√n (whitened entries: √(2/n) on the
    diagonal, √(1/n) off it). Its share of the failure probability is 2Φ(−z).
    Returns the smallest n with P(χ²_{n−1} > (n − 1)(1 + η_n)) ≤ 2Φ(−z) for it
    and every larger n (searched up to 2²⁰). This is necessary, not sufficient: the plug-in
    fourth moments add error (simulated k = 1 Gaussian: the share is met from
    n ≈ 147 at z = 2.5, where this gives 63), and heavier tails need more.
    """
    top = 4096
    while True:  # the failing n lie below a few thousand unless z is extreme
        n = np.arange(3, top + 1)
        eta = z * (math.sqrt(2.0) + k - 1.0) / np.sqrt(n)
        ok = stats.chi2.sf((n - 1) * (1.0 + eta), n - 1) <= 2.0 * special.ndtr(-z)
        if ok[-top // 2:].all() or top >= 1_048_576:
            bad = np.flatnonzero(~ok)
            return int(n[bad[-1]] + 1) if bad.size else 3
        top *= 4


def minimum_draws(confidence: float | None, k: int, n_events: int) -> tuple[int, str]:
    """Fewest draws per secret that :func:`calibrate` accepts, and why.

    Parameters
    ----------
    confidence : float in (0, 1) or None
    k : int
        Components of the query.
    n_events : int
        Intervals under the Bonferroni split (every member θ, secret, mean and
        covariance entry), which set the per-bound quantile z.

    Returns
    -------
    (int, str)
        The minimum and the reason.

    Notes
    -----
    * ``confidence=None`` (plug-in): 2, for sample variances.
    * Otherwise the largest of: 30 (normal approximation of the mean boxes);
      k + 1 (a full-rank Σ̂, else the covariance bound credits nothing in the
      missing directions); and :func:`_variance_bound_draws` (z, k), the
      fewest draws at which the fourth-moment Loewner lower bound can hold with
      its Bonferroni share for a Gaussian F. That last one binds for k = 1:
      63 for one pair at confidence 0.95, 241 at 0.99, more with more secrets
      or family members; for k ≥ 2 the Perron-root bound is wide enough that 30
      binds. Measured joint failure rate of the bounds, one pair, k = 1, Gaussian
      F, 4000 runs: 0.081 at n = 20, 0.056 at 30, 0.044 at 40 (nominal 0.05);
      0.036, 0.025, 0.016 at n = 20, 30, 50 (nominal 0.01). A skewed F needs
      more than the minimum (exponential, k = 1: 0.070 at n = 50, 0.045 at 100).
    """
    if confidence is None:
        return MIN_DRAWS_PLUG_IN, "a plug-in calibration needs 2 draws per secret for the sample variances"
    z = bonferroni_z(confidence, n_events)
    need = {
        MIN_DRAWS_CLT: f"the normal approximation of the mean boxes needs {MIN_DRAWS_CLT}",
        k + 1: f"a full-rank covariance of the k={k} components needs k + 1 = {k + 1}",
        _variance_bound_draws(round(z, 12), k): (
            f"the fourth-moment Loewner covariance bound at z={z:.3g} (confidence {confidence:g} split over "
            f"{n_events} intervals) meets its Bonferroni share only from {_variance_bound_draws(round(z, 12), k)} "
            "draws for a Gaussian query (chi-square tail of the variance estimate)"),
    }
    n_min = max(need)
    return n_min, need[n_min]


def _refuse_too_few_draws(n_draws: int, confidence: float | None, k: int, n_events: int) -> None:
    """Raise a ValidationError naming ``n_draws`` when it is below :func:`minimum_draws`."""
    n_min, why = minimum_draws(confidence, k, n_events)
    if n_draws < n_min:
        remedy = " or confidence=None for a plug-in calibration" if confidence is not None else ""
        raise fail("n_draws", f"at least {n_min} draws per secret for this calibration's bounds ({why}); "
                              f"draw more{remedy}", n_draws)


def _events(n_secrets: int, k: int) -> int:
    """Intervals per member: a mean per component and a covariance entry per pair of components."""
    return n_secrets * k + n_secrets * k * (k + 1) // 2




def _draw_report(report: Any, old: Mapping[str, Any]) -> DrawReport:
    """The ``report=`` of :func:`calibration_from_samples`: checked (None: an empty report), with the deprecated
    keywords of ``old`` (the report's fields) folded in, warning; an unknown keyword is a ``TypeError``."""
    return option_value("calibration_from_samples", "report", DrawReport, report, old)


def _from_laws(samples: np.ndarray, secrets: Sequence[Secret], pairs: Sequence[SecretPair], query: Query | None,
               names: tuple[str, ...], n_records: int | None, theta: Any, report: DrawReport) -> Calibration:
    """The calibration of :func:`calibration_from_samples` whose moments are those of the report's exact laws."""
    missing = [s.label for s in secrets if s.label not in report.finite_laws]
    if missing:
        raise fail("report.finite_laws", "one law per secret, keyed by its label",
                   described(f"no law for {missing!r}"))
    laws = [report.finite_laws[s.label] for s in secrets]
    S, n, k = samples.shape
    return Calibration(
        secrets=tuple(secrets), pairs=tuple(pairs), mean_array=np.stack([law.mean for law in laws]),
        cov_array=np.stack([law.cov for law in laws]), mean_se=np.zeros((S, k)), cov_se=np.zeros((S, k, k)),
        cov_se_white=np.zeros((S, k, k)), confidence=1.0, z=0.0, query=query, n_draws=n, n_records=n_records,
        sample_array=samples, component_names=names, theta=theta, diagnostics=dict(report.diagnostics or {}),
        posteriors=dict(report.posteriors or {}), finite_laws=dict(report.finite_laws),
    )


def calibration_from_samples(
    samples: np.ndarray,
    secrets: Sequence[Secret],
    pairs: Sequence[SecretPair],
    query: Query | None,
    *,
    confidence: float | None,
    n_records: int | None = None,
    theta: Any = None,
    report: DrawReport | None = None,
    **deprecated: Any,
) -> Calibration:
    """Summarise samples ``(S, n_draws, k)`` into a :class:`Calibration`.

    ``report`` is what the sampler reported alongside the draws
    (:class:`~bayespriv.calibration.DrawReport`: the Bonferroni count, the
    data model's diagnostics and MCMC runs, the exact laws; default: none of
    them). With its ``finite_laws`` the moments are the laws' own, exact
    (``confidence`` 1.0), and the samples are kept as draws for diagnostics.
    ``n_events=``, ``diagnostics=``, ``posteriors=`` and ``finite_laws=`` are
    its deprecated spelling, kept for one release.
    """
    report = _draw_report(report, deprecated)
    S, n, k = samples.shape
    names = query.component_names(k) if query is not None else tuple(f"F[{i}]" for i in range(k))
    if report.finite_laws:
        return _from_laws(samples, secrets, pairs, query, names, n_records, theta, report)
    means, covs, mean_se, cov_se, cov_se_white = sample_moments(samples)
    n_events = _events(S, k) if report.n_events is None else report.n_events
    return Calibration(
        secrets=tuple(secrets),
        pairs=tuple(pairs),
        mean_array=means,
        cov_array=covs,
        mean_se=mean_se,
        cov_se=cov_se,
        cov_se_white=cov_se_white,
        confidence=confidence,
        z=bonferroni_z(confidence, n_events),
        query=query,
        n_draws=n,
        n_records=n_records,
        sample_array=samples,
        component_names=names,
        theta=theta,
        diagnostics=dict(report.diagnostics or {}),
        posteriors=dict(report.posteriors or {}),
    )
