"""Which mechanism to release with: every candidate built on one calibration, compared by expected error.

Each mechanism of the Gaussian and expected-value families gives exactly the (ε, δ) asked for, or
refuses (:mod:`bayespriv.mechanisms.mechanism`), so the established ones are interchangeable in privacy and
differ only in the noise they add: the one with the least E‖noise‖² = trace(noise_cov) is the best
choice for a release of the whole query. A mechanism whose guarantee rests on a failed check, or that
refuses, is listed with the reason and never chosen. APGM puts the same noise on every component; the
others shape it to the query (EigM, DauM, OptimalGaussian) or to the secret's direction (ExpM, DirM),
which for a multi-component query with components of very different scales can cost orders of
magnitude less noise on the small ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._validation import check_delta, check_epsilon, fail
from ..errors import BayesPrivError
from .apgm import APGM
from .expected_value import DauM, DirM, EigM, ExpM
from .optimal import OptimalGaussian

if TYPE_CHECKING:
    from bayespriv.calibration import Calibration

__all__ = ["CANDIDATES", "MechanismChoice", "choose"]

#: The mechanisms :func:`choose` compares, built as ``cls(calibration, epsilon=, delta=)``.
CANDIDATES: Mapping[str, type] = {"APGM": APGM, "OptimalGaussian": OptimalGaussian, "EigM": EigM, "DauM": DauM,
                                  "DirM": DirM, "ExpM": ExpM}


@dataclass(frozen=True)
class MechanismChoice:
    """The candidates built on one calibration and the one with the least expected error.

    Attributes
    ----------
    best : Mechanism
        The established candidate with the least E‖noise‖² (first in :data:`CANDIDATES` order on a tie).
    table : pandas.DataFrame
        One row per candidate: ``established``, ``E‖noise‖²``, the noise sd per component (``sd``, a tuple),
        ``× best`` (its E‖noise‖² over the best's) and ``why not`` (the refusal or the failed check).
    mechanisms : mapping name -> Mechanism
        The candidates that could be built (established or not).
    """

    best: Any
    table: pd.DataFrame
    mechanisms: Mapping[str, Any]

    def __str__(self) -> str:
        return f"best: {type(self.best).__name__} ({self.best.guarantee})\n{self.table.to_string()}"


def _build(cls: type, calibration: Calibration, epsilon: float, delta: float) -> tuple[Any, str | None]:
    try:
        mech = cls(calibration, epsilon=epsilon, delta=delta)
    except BayesPrivError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    if not mech.guarantee.established:
        return mech, f"failed check: {', '.join(mech.guarantee.failed_assumptions)}"
    return mech, None


def choose(calibration: Calibration, *, epsilon: float, delta: float,
           candidates: Mapping[str, type] | None = None) -> MechanismChoice:
    """Build every candidate on ``calibration`` at (ε, δ) and pick the established one with the least noise.

    Parameters
    ----------
    calibration : Calibration
    epsilon, delta : float
        The request (every candidate gives exactly this, or refuses).
    candidates : mapping name -> mechanism class, optional
        Default :data:`CANDIDATES`.

    Returns
    -------
    MechanismChoice

    Raises
    ------
    ValidationError
        When no candidate is established (the table of reasons is in the message).

    Examples
    --------
    >>> import bayespriv as bp
    >>> a, b = bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 1.0)
    >>> cal = bp.Calibration.from_moments({a: [0.0, 0.0], b: [1.0, 0.01]}, {a: [[1.0, 0], [0, 1e-4]], b: [[1.0, 0], [0, 1e-4]]},
    ...                                   bp.SecretPair(a, b), query=bp.stack(bp.mean("x"), bp.mean("y")), n_records=20)
    >>> choice = bp.mechanisms.choose(cal, epsilon=1.0, delta=1e-3)
    >>> type(choice.best).__name__ != "APGM", bool(choice.table.loc["APGM", "× best"] > 5)  # same sd on both
    (True, True)
    """
    eps, dlt = check_epsilon(epsilon), check_delta(delta)
    pool = dict(CANDIDATES if candidates is None else candidates)
    if not pool:
        raise fail("candidates", "a non-empty mapping of mechanism classes", candidates)
    built, rows = {}, {}
    for name, cls in pool.items():
        mech, why = _build(cls, calibration, eps, dlt)
        if mech is not None:
            built[name] = mech
        cov = None if mech is None else np.asarray(mech.noise_cov, dtype=float)
        rows[name] = {"established": why is None, "E‖noise‖²": math.nan if cov is None else float(np.trace(cov)),
                      "sd": None if cov is None else tuple(np.sqrt(np.clip(np.diag(cov), 0, None)).round(6)),
                      "why not": why or ""}
    table = pd.DataFrame.from_dict(rows, orient="index")
    ok = table[table["established"]]
    if ok.empty:
        raise fail("calibration", f"a calibration on which some mechanism establishes (ε={eps:g}, δ={dlt:g})",
                   "none does:\n" + table["why not"].to_string())
    best_name = ok["E‖noise‖²"].idxmin()
    best = float(ok.loc[best_name, "E‖noise‖²"])
    table["× best"] = table["E‖noise‖²"] / best if best > 0 else np.where(table["E‖noise‖²"] > 0, np.inf, 1.0)
    return MechanismChoice(built[best_name], table, built)
