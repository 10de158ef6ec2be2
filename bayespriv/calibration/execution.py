"""How a calibration's draws are computed, as one checked value: :class:`ExecutionOptions`.

Nothing here changes what a calibration computes: the seeds are fixed per task before any task runs, so
every executor gives the same numbers, and a reused MCMC posterior is taken only where it is what a fresh
run gives, bit for bit (see :func:`~bayespriv.calibration.calibrate`).
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from bayespriv._validation import check_optional_positive_int
from bayespriv.errors import ParameterTypeError

if TYPE_CHECKING:
    from .result import Calibration

__all__ = ["ExecutionOptions"]


def _is_dask_client(executor: Any) -> bool:
    """A ``dask.distributed.Client`` (recognised without importing dask)."""
    return type(executor).__module__.startswith("distributed") and hasattr(executor, "get_executor")


@dataclass(frozen=True, kw_only=True)
class ExecutionOptions:
    """Where and how a calibration's draws are computed (``calibrate(..., execution=...)``), checked once.

    Taken by :func:`~bayespriv.calibration.calibrate` and by
    :func:`~bayespriv.calibration.draw_query_samples` (whose model is already prepared: it takes no
    ``reuse``). Keyword-only and frozen; the default, ``ExecutionOptions()``, draws serially in this
    process, in tasks of :func:`~bayespriv.calibration.engine.default_chunk_size` draws, with a progress
    bar only where one can be seen, and runs every MCMC posterior the model needs. A wrong type is a
    :class:`~bayespriv.errors.ParameterTypeError` and a value out of range a
    :class:`~bayespriv.errors.ValidationError`, each naming the field.

    Attributes
    ----------
    executor : concurrent.futures.Executor or dask.distributed.Client, optional
        Runs the (θ, secret, chunk) tasks. ``None`` runs serially; a ``ThreadPoolExecutor`` shares the
        objects; any other executor (e.g. ``ProcessPoolExecutor``) gets the model and query serialised
        with cloudpickle, once each per calibration, so lambdas and locally defined functions travel (a
        worker unpickles each once and keeps it). Seeds are fixed per task before any runs, so every
        executor gives the same numbers; process workers run BLAS on one thread per task. A dask client
        gets each model and query scattered once per call under fresh keys (so one Client serves any
        number of calls) and tasks submitted with ``pure=False``.
    chunk_size : int, optional
        Draws per task, at least 1; bounds memory to ``chunk_size × n_records ×
        model.bytes_per_record()``. Default: :func:`~bayespriv.calibration.engine.default_chunk_size`
        (about 64 MiB of drawn records per task, counting every column the model draws).
    progress : bool, optional
        Show a progress bar over the sampling tasks (tqdm: a widget in notebooks, text on stderr in
        terminals). True: always; False: never; None (default): in a Jupyter kernel or when stderr is a
        terminal, unless the ``CI`` environment variable is set, and only once the work has lasted 0.5 s.
    reuse : Calibration, optional
        A calibration whose MCMC posteriors (:attr:`Calibration.posteriors
        <bayespriv.calibration.Calibration.posteriors>`, e.g. of one loaded with
        :func:`~bayespriv.load_calibration`) the call may reuse instead of running :func:`pymc.sample`
        again. A posterior is taken only where its saved key equals the key the model computes for the run
        it needs — the model's graph and builder, ``n_records``, the secret and its evidence, the MCMC
        settings, the seed derived from ``rng`` and the library versions — so the result is what a fresh
        run gives, bit for bit. Offered to that call only: nothing is added to the process's posterior
        cache. A calibration loaded with ``trust="unverified"`` from a file that did not verify is refused
        when the call starts (:class:`~bayespriv.errors.UnverifiedCalibrationError`).

    Examples
    --------
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> from bayespriv.calibration import ExecutionOptions
    >>> ExecutionOptions(chunk_size=500, progress=False)
    ExecutionOptions(executor=None, chunk_size=500, progress=False, reuse=None)
    >>> with ThreadPoolExecutor(2) as pool:
    ...     options = ExecutionOptions(executor=pool)
    >>> ExecutionOptions(chunk_size=0)
    Traceback (most recent call last):
        ...
    bayespriv.errors.ValidationError: chunk_size must be an integer >= 1; got 0
    """

    executor: Executor | Any | None = None
    chunk_size: int | None = None
    progress: bool | None = None
    reuse: Calibration | None = None

    def __post_init__(self) -> None:
        from .result import Calibration

        if not (self.executor is None or isinstance(self.executor, Executor) or _is_dask_client(self.executor)):
            raise ParameterTypeError("executor must be None, a concurrent.futures.Executor or a dask.distributed "
                                     f"Client; got {type(self.executor).__name__}")
        object.__setattr__(self, "chunk_size", check_optional_positive_int(self.chunk_size, "chunk_size"))
        if self.progress is not None and not isinstance(self.progress, (bool, np.bool_)):
            raise ParameterTypeError(f"progress must be None, True or False; got {self.progress!r:.80}")
        if self.reuse is not None and not isinstance(self.reuse, Calibration):
            raise ParameterTypeError(f"reuse must be None or a bayespriv Calibration; got {type(self.reuse).__name__}")
