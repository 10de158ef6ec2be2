"""What a mechanism promises (:class:`Guarantee`) and what a release hands out (:class:`Release`).

Both are tiny frozen values that check themselves on construction, in the
manner of Tumult Analytics' ``protected_change.py``: a Guarantee cannot hold
δ ≥ 1 or a negative ε, and a Release cannot hold a non-finite value.

A Guarantee refuses assignment, even through ``object.__setattr__``
(:func:`~bayespriv._validation.seal_fields`). Still, nothing that charges a budget or gates a
release reads a Guarantee that was handed out: a mechanism keeps what it charges as an
:class:`AccountingRecord` (a tuple of floats and strings, which nothing can edit in place), the
ledger reads that record, and ``mechanism.guarantee`` is a new Guarantee built from it at each
access.

A guarantee is *established* when no assumption its proof needs failed a check
on the calibration samples. A release of a non-established guarantee happens
only when the caller opts in (``accept_failed_assumptions=True``); the Release,
its repr and the ledger row then say "NOT ESTABLISHED".
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd

from .._validation import fail, seal_fields, sealed

__all__ = ["Guarantee", "Release", "AccountingRecord"]

#: The assumption naming a calibration loaded from a file that did not verify.
_UNVERIFIED = "unverified_calibration"


def _names(value: object, name: str) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):  # type: ignore[union-attr]
        raise fail(name, "a tuple of assumption names (str)", value)
    return tuple(value)  # type: ignore[arg-type]


@seal_fields
@dataclass(frozen=True)
class Guarantee:
    """What a mechanism promises.

    Attributes
    ----------
    epsilon, delta : float
        (ε, δ)-Pufferfish privacy for the calibration's secret pairs and Θ;
        finite ε ≥ 0 and 0 ≤ δ < 1 (anything else promises nothing and is
        refused on construction).
    confidence : float or None
        Probability over the calibration's own randomness that the guarantee
        holds (1.0: exact; None: plug-in estimates, no probability claimed).
    assumptions : tuple of str
        Named assumptions the proof needs, e.g. ``"gaussian_query"``,
        ``"translation"``, ``"equal_covariance"``, ``"estimated_moments"``,
        ``"monte_carlo_clt"``, ``"exchangeable_records"``.
    theorem : str
        Where the proof is.
    failed_assumptions : tuple of str
        Assumptions among ``assumptions`` whose check on the calibration
        samples *failed*: the proof's premise is contradicted by the draws, so
        (ε, δ) is **not established**. ``release`` refuses such a guarantee
        unless the caller opts in.
    unchecked_assumptions : tuple of str
        Assumptions among ``assumptions`` that have a check but could not be
        tested with power (too few draws, or no samples: the user vouches for
        them). *Unchecked* is not *passed*.

    Examples
    --------
    >>> from bayespriv import Guarantee
    >>> g = Guarantee(1.0, 1e-5, 0.95, ("gaussian_query",), "APGM: Zhang et al. 2022, Theorem 1")
    >>> print(g)
    (ε=1, δ=1e-05) [confidence 0.95; assumes: gaussian_query; APGM: Zhang et al. 2022, Theorem 1]
    >>> g.established, Guarantee(1.0, 1e-5, 0.95, ("gaussian_query",), failed_assumptions=("gaussian_query",)).established
    (True, False)
    """

    epsilon: float
    delta: float
    confidence: float | None
    assumptions: tuple[str, ...] = ()
    theorem: str = ""
    failed_assumptions: tuple[str, ...] = ()
    unchecked_assumptions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        eps, delta = float(self.epsilon), float(self.delta)
        if not (math.isfinite(eps) and eps >= 0):
            raise fail("epsilon", "a finite number >= 0 (ε = inf promises nothing)", self.epsilon)
        if not (0.0 <= delta < 1.0):
            raise fail("delta", "in [0, 1) (δ ≥ 1 promises nothing)", self.delta)
        if self.confidence is not None and not (0.0 <= float(self.confidence) <= 1.0):
            raise fail("confidence", "None or in [0, 1]", self.confidence)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", delta)
        for name in ("assumptions", "failed_assumptions", "unchecked_assumptions"):
            object.__setattr__(self, name, _names(getattr(self, name), name))

    @property
    def established(self) -> bool:
        """True when no assumption of the proof failed its check."""
        return not self.failed_assumptions

    @property
    def checks_passed(self) -> bool:
        """True when no named assumption failed its check (unchecked ones may remain)."""
        return not self.failed_assumptions

    def __str__(self) -> str:
        conf = "plug-in" if self.confidence is None else f"confidence {self.confidence:g}"
        assume = ", ".join(self.assumptions) or "none"
        unchecked = f"; unchecked: {', '.join(self.unchecked_assumptions)}" if self.unchecked_assumptions else ""
        failed = f"; FAILED check: {', '.join(self.failed_assumptions)}" if self.failed_assumptions else ""
        return f"(ε={self.epsilon:g}, δ={self.delta:g}) [{conf}; assumes: {assume}{unchecked}{failed}; {self.theorem}]"

    def _repr_html_(self) -> str:
        state = ("<b style='color:#b00'>NOT ESTABLISHED</b>: failed check of " + html.escape(", ".join(self.failed_assumptions))
                 if self.failed_assumptions else "established")
        conf = "plug-in (no probability claimed)" if self.confidence is None else f"{self.confidence:g}"
        rows = [("ε", f"{self.epsilon:g}"), ("δ", f"{self.delta:g}"), ("confidence", conf),
                ("assumptions", ", ".join(self.assumptions) or "none"),
                ("unchecked", ", ".join(self.unchecked_assumptions) or "none"), ("status", state),
                ("theorem", self.theorem)]
        body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>"
                       f"{v if k == 'status' else html.escape(v)}</td></tr>" for k, v in rows)
        return (f"<table style='max-width:60em'><caption style='text-align:left'><b>Guarantee</b></caption>"
                f"{body}</table>")


class AccountingRecord(NamedTuple):
    """What a mechanism charges, fixed at its construction: a tuple, so no one can edit it in place.

    Built once from the mechanism's guarantee (:meth:`of`); the ledger charges it
    (``mechanism.accounting_record``), and :meth:`guarantee` gives a new :class:`Guarantee` equal to
    it each time, so editing a Guarantee handed out changes neither the ledger's charge nor a
    later release. The fields are a Guarantee's, with the same names and meanings.
    """

    epsilon: float
    delta: float
    confidence: float | None
    assumptions: tuple[str, ...]
    theorem: str
    failed_assumptions: tuple[str, ...]
    unchecked_assumptions: tuple[str, ...]

    @classmethod
    def of(cls, guarantee: Guarantee) -> "AccountingRecord":
        """The record of ``guarantee`` (plain floats, strings and tuples of strings)."""
        if not isinstance(guarantee, Guarantee):
            raise fail("guarantee", "a Guarantee", guarantee)
        g = guarantee
        return cls(float(g.epsilon), float(g.delta), None if g.confidence is None else float(g.confidence),
                   _names(g.assumptions, "assumptions"), str(g.theorem), _names(g.failed_assumptions, "failed_assumptions"),
                   _names(g.unchecked_assumptions, "unchecked_assumptions"))

    def guarantee(self) -> Guarantee:
        """A new :class:`Guarantee` equal to the one recorded (its fields were checked when recorded)."""
        out = object.__new__(Guarantee)
        out.__dict__.update(zip(self._fields, self))
        return out


@dataclass(frozen=True)
class Release:
    """A noisy answer with its guarantee. The true answer is never stored.

    Attributes
    ----------
    value : ndarray (k,)
        Finite; its memory cannot be written (:func:`~bayespriv._validation.sealed`).
    guarantee : Guarantee
    mechanism : str
    seeded : bool
        True when the caller seeded the noise (replayable: for testing only).
    query : str or None
    component_names : tuple of str
    variables : tuple of str
        Columns the released value depends on (for per-variable ε accounting).
    protected : tuple of str
        Attributes whose secrets the guarantee protects (budget names).
    ledger_id : int or None
        The ledger's release row, when a ledger was charged.

    Examples
    --------
    >>> import pandas as pd
    >>> import bayespriv as bp
    >>> a, b = bp.DatasetSecret.mean("height", 65.0), bp.DatasetSecret.mean("height", 67.0)
    >>> cal = bp.Calibration.from_moments({a: [146.67], b: [153.33]}, {a: [[6.0]], b: [[6.0]]},
    ...                                   bp.SecretPair(a, b), bp.mean("weight"), n_records=3)
    >>> release = bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3).release(pd.DataFrame({"weight": [150.0, 160.0, 170.0]}))
    >>> release.value.shape, release.mechanism, release.seeded, release.protected, release.variables
    ((1,), 'APGM', False, ('height',), ('weight',))
    >>> release.guarantee.epsilon, release.guarantee.delta
    (1.0, 0.001)
    """

    value: np.ndarray
    guarantee: Guarantee
    mechanism: str
    seeded: bool
    query: str | None = None
    component_names: tuple[str, ...] = field(default=())
    variables: tuple[str, ...] = field(default=())
    protected: tuple[str, ...] = field(default=())
    ledger_id: int | None = None

    def __post_init__(self) -> None:
        value = sealed(np.asarray(self.value, dtype=float).reshape(-1))
        if not np.all(np.isfinite(value)):
            raise fail("value", "finite (a release is never inf or NaN)", self.value)
        object.__setattr__(self, "value", value)
        if not isinstance(self.guarantee, Guarantee):
            raise fail("guarantee", "a Guarantee", self.guarantee)

    @property
    def established(self) -> bool:
        """False when the release was made despite a failed assumption check."""
        return self.guarantee.established

    @property
    def verified(self) -> bool:
        """False when the calibration behind the release came from a file that did not verify
        (loaded with ``trust="unverified"``, released with ``accept_unverified=True``): its guarantee
        names the assumption ``unverified_calibration``."""
        return _UNVERIFIED not in self.guarantee.assumptions

    def to_series(self) -> pd.Series:
        """The released value as a pandas Series indexed by component name, named after the query."""
        return pd.Series(self.value, index=list(self.component_names) or None, name=self.query)

    def __repr__(self) -> str:
        values = ", ".join(f"{n}={v:.6g}" for n, v in zip(self.component_names, self.value)) if self.component_names \
            else np.array2string(self.value, precision=6)
        status = "" if self.established else " NOT ESTABLISHED"
        status += "" if self.verified else " UNVERIFIED calibration"
        seeded = " seeded" if self.seeded else ""
        return f"Release({self.mechanism}{seeded}{status}: {values}; {self.guarantee})"

    def _repr_html_(self) -> str:
        table = self.to_series().to_frame("released value").to_html(float_format="%.6g")
        warn = ("" if self.established else
                "<p style='color:#b00'><b>Guarantee NOT ESTABLISHED</b>: released with a failed assumption check "
                f"({html.escape(', '.join(self.guarantee.failed_assumptions))}).</p>")
        if not self.verified:
            warn += ("<p style='color:#b00'><b>UNVERIFIED calibration</b>: the calibration file did not verify under "
                     "the owner's key (loaded with trust='unverified'); nothing vouches for the noise.</p>")
        seeded = "<p><i>Seeded noise: for testing only.</i></p>" if self.seeded else ""
        return (f"<div><p><b>Release</b> by {html.escape(self.mechanism)}</p>{warn}{seeded}{table}"
                f"{self.guarantee._repr_html_()}</div>")
