"""The per-process runtime of a PyMC data model: the built model and what is memoised about it.

:class:`Runtime` holds the PyMC model built by ``builder(n_records)`` and the
per-process memos of the collaborators of
:class:`~bayespriv.datamodels.PyMCDataModel` (plans, pivots, compiled samplers,
quadrature tables, the model's fingerprint). It is shared by every copy of one
data model within a process (the registry is in :mod:`bayespriv.datamodels.pymc`)
and never pickled; each collaborator reaches it through a zero-argument callable
(:data:`RuntimeSource`), so that a model unpickled in a worker rebuilds it on
first use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class Runtime:
    """The PyMC model built by ``builder(n_records)`` and the per-process memos of its collaborators.

    Parameters
    ----------
    model : pymc.Model
        The built model (never mutated).

    Attributes
    ----------
    model : pymc.Model
        The built model.
    lock : threading.RLock
        Serialises every use of the compiled functions (whose RNG state is reseeded on each call) and of
        the memos.
    functions : dict
        (given variables, mean column, outputs, element) -> (compiled function, its RNG shared variables).
    plans : dict
        secret -> its :class:`~bayespriv.datamodels.pymc_model.plans.Plan`.
    fingerprint : str or None
        SHA-256 of the built model and the builder (posterior cache keys), once computed.
    tables : dict
        (secret, seed) -> quadrature table, or the reason there is none.
    pivots : dict
        (deterministic, index) -> (members, gaussian, how), or the reason there is none.
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self.lock = threading.RLock()
        self.functions: dict[tuple, tuple[Any, list]] = {}
        self.plans: dict[Any, Any] = {}
        self.fingerprint: str | None = None
        self.tables: dict[Any, Any] = {}
        self.pivots: dict[Any, Any] = {}


#: How a collaborator reaches the runtime: a zero-argument callable (the data model's own lookup).
RuntimeSource = Callable[[], Runtime]
