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
only when the caller opts in (``options=ReleaseOptions(accept_failed_assumptions=True)``);
the Release, its repr and the ledger row then say "NOT ESTABLISHED". :class:`ReleaseOptions`
holds every such opt-in and declaration of one release.
"""

from __future__ import annotations

import dataclasses
import html
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from bayespriv._validation import fail, seal_fields, sealed
from bayespriv.errors import ParameterTypeError, ValidationError
from bayespriv.noise.release_noise import ReleaseNoise

__all__ = ["Guarantee", "Release", "ReleaseOptions", "AccountingRecord", "PLAIN_ASSUMPTIONS"]

#: The assumption naming a calibration loaded from a file that did not verify.
_UNVERIFIED = "unverified_calibration"

#: Plain words for the assumptions a guarantee most often rests on (``str(guarantee)``); any other name is shown as
#: it is, and :meth:`Guarantee.details` always gives the names.
PLAIN_ASSUMPTIONS = {
    "gaussian_query": "the statistic being Gaussian under each secret",
    "equal_covariance": "equal spreads of the statistic under the two secrets",
    "translation": "the statistic's law under one secret being a shift of the other's",
    "estimated_moments": "moments estimated from the draws",
    "sampled_law": "the draws representing the statistic's law",
    "monte_carlo_clt": "the accountant's Monte-Carlo error being normal",
    "exchangeable_records": "exchangeable records",
    "mcmc_posterior": "the MCMC draws representing the posterior",
    "domain_from_data": "the categories read off the data",
    "numerical_influence": "numerically computed max-influences",
    "sequential_composition": "adding up with other releases",
    "declared_independent": "the declared independence from other releases",
    "declared_separate_data": "the declared separate data",
    _UNVERIFIED: "an UNVERIFIED calibration file",
}


def _plain(name: str) -> str:
    return PLAIN_ASSUMPTIONS.get(name, name.replace("_", " ") if name.startswith("mcmc_relaxed") else name)


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
    (ε=1, δ=1e-05) with 95% confidence; rests on: the statistic being Gaussian under each secret
    >>> print(g.details())
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
        """One readable sentence: (ε, δ), how sure, what it rests on, and whether it is established
        (:meth:`details` for the assumption names and the theorem)."""
        if self.confidence is None:
            conf = " as plug-in estimates (no confidence claimed)"
        elif self.confidence >= 1.0:
            conf = ", exactly"
        else:
            conf = f" with {100 * self.confidence:.4g}% confidence"
        rests = ("; rests on: " + ", ".join(map(_plain, self.assumptions))) if self.assumptions else ""
        unchecked = f"; unchecked: {', '.join(self.unchecked_assumptions)}" if self.unchecked_assumptions else ""
        failed = (f" — NOT ESTABLISHED (FAILED check: {', '.join(self.failed_assumptions)})"
                  if self.failed_assumptions else "")
        return f"(ε={self.epsilon:g}, δ={self.delta:g}){conf}{rests}{unchecked}{failed}"

    def details(self) -> str:
        """Every detail on one line: (ε, δ), the confidence, the assumptions by name, which are unchecked or
        failed their check, and the theorem (with the noise's own construction)."""
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
    """A noisy answer with its guarantee and the law of its noise. The true answer is never stored.

    Built as ``Release(value, guarantee, mechanism, seeded, query=..., ...)``: the four first fields
    by position or keyword, every other one by keyword only.

    What a recipient needs besides the value: the noise that was added (:attr:`noise`, with
    :attr:`noise_cov`, :attr:`noise_scale`, :attr:`noise_basis`), the expected error of each
    component (:attr:`noise_sd`), a noise-only confidence interval (:meth:`interval`), and the
    range the true answer lies in (:attr:`valid_range`, into which :meth:`clipped` projects).
    All of them read only the released value and the public noise law: post-processing, which
    costs no privacy (Kifer & Machanavajjhala 2014, Theorem 5.1, for every Pufferfish
    instantiation; Dwork & Roth 2014, Proposition 2.1, for differential privacy).

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
    noise : ReleaseNoise or None
        The law of the noise added (:class:`~bayespriv.noise.release_noise.ReleaseNoise`);
        None when the Release was built by hand without it.
    valid_range : ndarray (k, 2) or None
        (low, high) of each component's true value, ±inf where unbounded (the query's
        :meth:`~bayespriv.Query.valid_range` at the calibrated number of records); None: unknown.
    postprocessed : tuple of str
        Post-processing applied after the noise, in order (``"clip"``: :meth:`clipped`).

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

    Built by hand with its noise law, a scalar release prints as a scalar with its noise sd:

    >>> import numpy as np
    >>> from bayespriv.noise.release_noise import ReleaseNoise
    >>> r = Release(np.array([148.52080816]), Guarantee(1.0, 1e-5, 1.0), "APGM", False, query="mean(weight)",
    ...             component_names=("mean(weight)",), noise=ReleaseNoise.of(1, np.array([[151.29]])))
    >>> print(r)
    mean(weight) = 148.52 ± 12.3 (sd)
    >>> np.round(r.interval(0.95), 2).tolist()
    [[124.41, 172.63]]
    """

    value: np.ndarray
    guarantee: Guarantee
    mechanism: str
    seeded: bool
    _: dataclasses.KW_ONLY
    query: str | None = None
    component_names: tuple[str, ...] = field(default=())
    variables: tuple[str, ...] = field(default=())
    protected: tuple[str, ...] = field(default=())
    ledger_id: int | None = None
    noise: ReleaseNoise | None = None
    valid_range: np.ndarray | None = None
    postprocessed: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        value = sealed(np.asarray(self.value, dtype=float).reshape(-1))
        if not np.all(np.isfinite(value)):
            raise fail("value", "finite (a release is never inf or NaN)", self.value)
        object.__setattr__(self, "value", value)
        if not isinstance(self.guarantee, Guarantee):
            raise fail("guarantee", "a Guarantee", self.guarantee)
        if self.noise is not None and (not isinstance(self.noise, ReleaseNoise) or self.noise.k != value.size):
            raise fail("noise", f"None or a ReleaseNoise of k={value.size} components", self.noise)
        if self.valid_range is not None:
            object.__setattr__(self, "valid_range", _checked_range(self.valid_range, value.size))
        if isinstance(self.postprocessed, str) or not all(isinstance(v, str) for v in self.postprocessed):
            raise fail("postprocessed", "a tuple of post-processing names (str)", self.postprocessed)
        object.__setattr__(self, "postprocessed", tuple(self.postprocessed))

    @classmethod
    def _template(cls, **fields: Any) -> Mapping[str, Any]:
        """The optional fields of a mechanism's releases, checked once when the mechanism is built: its
        fixed values (query name, component names, variables, protected names, noise law, valid range)
        over the defaults. :meth:`_issued` copies it into each release."""
        unknown = set(fields) - set(_RELEASE_DEFAULTS)
        if unknown:
            raise fail("fields", f"optional fields of Release ({sorted(_RELEASE_DEFAULTS)})", sorted(unknown))
        return MappingProxyType({**_RELEASE_DEFAULTS, **fields})

    @classmethod
    def _issued(cls, value: np.ndarray, guarantee: Guarantee, mechanism: str, seeded: bool, template: Mapping[str, Any],
                ledger_id: int | None) -> "Release":
        """The release of a mechanism, whose ``value`` (float64 (k,)) its noise step checked finite.

        Every other field was checked once, when the mechanism was built: its guarantee and noise
        law are frozen values, its valid range a sealed ``(k, 2)`` array, all of them in ``template``
        (:meth:`_template`). So a mechanism's release skips :meth:`__post_init__` (a third of a
        release's time): it seals ``value`` and builds the same frozen value.
        """
        out = object.__new__(cls)
        state = vars(out)
        state.update(template.copy())  # the mapping proxy's own dict, copied
        state["value"] = sealed(value, np.float64)
        state["guarantee"], state["mechanism"], state["seeded"], state["ledger_id"] = (guarantee, mechanism, seeded,
                                                                                    ledger_id)
        return out

    @property
    def established(self) -> bool:
        """False when the release was made despite a failed assumption check."""
        return self.guarantee.established

    @property
    def verified(self) -> bool:
        """False when the calibration behind the release came from a file that did not verify (loaded
        with ``trust="unverified"``, released with ``ReleaseOptions(accept_unverified=True)``): its
        guarantee names the assumption ``unverified_calibration``."""
        return _UNVERIFIED not in self.guarantee.assumptions

    # -- the noise -----------------------------------------------------------------------------------
    def noise_law(self, what: str = "noise_law") -> ReleaseNoise:
        """The law of the noise this release carries (what a recipient computes intervals and plots from);
        ``what`` names the caller in the refusal when the Release was built without it."""
        if self.noise is None:
            raise ValidationError(f"{what} needs the law of the noise; this Release was built without it (noise=None)")
        return self.noise

    @property
    def noise_cov(self) -> np.ndarray:
        """Covariance (k × k) of the noise added (for Laplace noise 2 B diag(b²) Bᵀ)."""
        return self.noise_law("noise_cov").cov

    @property
    def noise_scale(self) -> np.ndarray | None:
        """Laplace scales b (d,) of the noise added, or None when it has no Laplace part."""
        return self.noise_law("noise_scale").laplace_scale

    @property
    def noise_basis(self) -> np.ndarray | None:
        """Laplace directions (k × d, columns), or None when the noise has no Laplace part."""
        return self.noise_law("noise_basis").laplace_basis

    @property
    def noise_sd(self) -> np.ndarray:
        """Expected error of each component: the standard deviation of its noise, sqrt(diag(noise_cov)).

        For Laplace noise along a basis B with scales b, component c's sd is
        sqrt(2 Σ_j B_cj² b_j²): every direction that reaches c adds its variance 2 b_j² B_cj².
        """
        return self.noise_law("noise_sd").sd

    def interval(self, level: float = 0.95) -> np.ndarray:
        """Noise-only confidence interval of each component: an array ``(k, 2)`` of (low, high).

        With probability ``level`` over the release's noise, the interval of component c contains
        F_c(X), the exact answer of the query on the dataset released (value − noise = F(X)).
        Symmetric, ``value ± h_c`` with P(|N_c| ≤ h_c) = level under the noise law
        (:meth:`~bayespriv.noise.release_noise.ReleaseNoise.half_width`: exact for Gaussian
        noise and a single Laplace term, numerical otherwise). It says nothing about the
        population, the secrets or Θ, and the intervals of several components hold each with
        probability ``level``, not jointly.

        Computed from the release and the public noise law only: post-processing, free of
        privacy cost. On a :meth:`clipped` release the interval is intersected with
        :attr:`valid_range`; it then holds with probability at least ``level`` (clipping moves the
        centre toward the range, which contains F(X)).
        """
        h = self.noise_law("interval").half_width(level)
        out = np.stack([self.value - h, self.value + h], axis=1)
        if "clip" in self.postprocessed and self.valid_range is not None:
            out = np.clip(out, self.valid_range[:, :1], self.valid_range[:, 1:])
        return sealed(out)

    # -- post-processing -------------------------------------------------------------------------------
    def clipped(self) -> "Release":
        """The release projected into the query's valid range: each component clipped to
        [low, high] of :attr:`valid_range` (counts into [0, n], proportions into [0, 1], means into
        the column's declared bounds; unbounded components unchanged).

        Opt-in post-processing, free of privacy cost: the clipped value is a fixed function of the
        released one, and every (ε, δ)-Pufferfish guarantee — every instantiation, for every
        secret pair and θ — holds for any function of a private output (Kifer & Machanavajjhala
        2014, Theorem 5.1; Dwork & Roth 2014, Proposition 2.1 for differential privacy). It moves
        each component toward the true answer (which lies in the range), so no error grows; it
        biases the estimate near a bound. Recorded: ``postprocessed`` ends with ``"clip"``.
        Idempotent: clipping a clipped release changes nothing.

        Raises
        ------
        ValidationError
            When the valid range is unknown (``valid_range`` is None).
        """
        if self.valid_range is None:
            raise ValidationError("clipped needs the valid range of the query; this Release has valid_range=None")
        value = np.clip(self.value, self.valid_range[:, 0], self.valid_range[:, 1])
        done = self.postprocessed if "clip" in self.postprocessed else self.postprocessed + ("clip",)
        return dataclasses.replace(self, value=value, postprocessed=done)

    # -- presentation ----------------------------------------------------------------------------------
    def to_series(self) -> pd.Series:
        """The released value as a pandas Series indexed by component name, named after the query."""
        return pd.Series(self.value, index=list(self.component_names) or None, name=self.query)

    def summary(self) -> tuple[str, ...]:
        """One line per component, ``name = value ± sd (sd)``: the value to one digit below the noise
        sd's third significant digit (``148.52 ± 12.3 (sd)``); ``(no noise)`` for a noiseless
        component; the value alone when the noise law is unknown."""
        names = self.component_names or tuple(f"[{i}]" for i in range(self.value.size))
        sds = None if self.noise is None else self.noise.sd
        return tuple(f"{n} = {_format_estimate(v, None if sds is None else float(sds[i]))}"
                     for i, (n, v) in enumerate(zip(names, self.value)))

    def __str__(self) -> str:
        """:meth:`summary`, and for a component released without noise, why that is honest."""
        lines = list(self.summary())
        sds = None if self.noise is None else np.asarray(self.noise.sd, dtype=float)
        if sds is not None and np.any(sds <= 0) and self.established:
            g = self.guarantee
            lines.append(f"no noise: under the adversary's model Θ the statistic's own randomness already makes the "
                         f"secrets indistinguishable at (ε={g.epsilon:g}, δ={g.delta:g}), so the exact value is "
                         "released (what that rests on: the guarantee)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        sds = None if self.noise is None else self.noise.sd
        shown = [_format_estimate(v, None if sds is None else float(sds[i])) for i, v in enumerate(self.value)]
        if self.component_names:
            values = ", ".join(f"{n}={v}" for n, v in zip(self.component_names, shown))
        else:
            values = shown[0] if len(shown) == 1 else "[" + ", ".join(shown) + "]"
        status = "" if self.established else " NOT ESTABLISHED"
        status += "" if self.verified else " UNVERIFIED calibration"
        seeded = " seeded" if self.seeded else ""
        post = f" postprocessed={','.join(self.postprocessed)}" if self.postprocessed else ""
        return f"Release({self.mechanism}{seeded}{status}{post}: {values}; {self.guarantee})"

    def _repr_html_(self) -> str:
        frame = self.to_series().to_frame("released value")
        if self.noise is not None:
            frame["noise sd"] = self.noise.sd
            frame[["95% low", "95% high"]] = self.interval(0.95)
        table = frame.to_html(float_format="%.6g")
        warn = ("" if self.established else
                "<p style='color:#b00'><b>Guarantee NOT ESTABLISHED</b>: released with a failed assumption check "
                f"({html.escape(', '.join(self.guarantee.failed_assumptions))}).</p>")
        if not self.verified:
            warn += ("<p style='color:#b00'><b>UNVERIFIED calibration</b>: the calibration file did not verify under "
                     "the owner's key (loaded with trust='unverified'); nothing vouches for the noise.</p>")
        seeded = "<p><i>Seeded noise: for testing only.</i></p>" if self.seeded else ""
        post = (f"<p>Post-processed: {html.escape(', '.join(self.postprocessed))}.</p>" if self.postprocessed else "")
        return (f"<div><p><b>Release</b> by {html.escape(self.mechanism)}</p>{warn}{seeded}{post}{table}"
                f"{self.guarantee._repr_html_()}</div>")

    # -- JSON ------------------------------------------------------------------------------------------
    def to_dict(self, level: float = 0.95) -> dict[str, Any]:
        """Everything a recipient needs, as JSON-ready lists, floats and strings.

        Keys: ``value``, ``components``, ``query``, ``mechanism``, ``seeded``, ``protected``,
        ``variables``, ``ledger_id``, ``guarantee`` (its fields), ``established``, ``verified``,
        ``noise`` (:meth:`ReleaseNoise.to_dict`, with ``cov`` and ``sd``), ``noise_sd``,
        ``interval`` (``level``, ``low``, ``high``: :meth:`interval` at ``level``), ``valid_range``
        (pairs; ``None`` for an infinite end: JSON has no infinity), ``postprocessed`` and
        ``summary`` (:meth:`summary`). :meth:`from_dict` reads it back.
        """
        g = self.guarantee
        out: dict[str, Any] = {
            "value": [float(v) for v in self.value], "components": list(self.component_names), "query": self.query,
            "mechanism": self.mechanism, "seeded": bool(self.seeded), "protected": list(self.protected),
            "variables": list(self.variables), "ledger_id": self.ledger_id,
            "guarantee": {"epsilon": g.epsilon, "delta": g.delta, "confidence": g.confidence,
                          "assumptions": list(g.assumptions), "failed_assumptions": list(g.failed_assumptions),
                          "unchecked_assumptions": list(g.unchecked_assumptions), "theorem": g.theorem},
            "established": bool(g.established), "verified": bool(self.verified),
            "noise": None if self.noise is None else self.noise.to_dict(),
            "noise_sd": None if self.noise is None else [float(v) for v in self.noise.sd],
            "interval": None, "valid_range": None, "postprocessed": list(self.postprocessed),
            "summary": list(self.summary()),
        }
        if self.noise is not None:
            bounds = self.interval(level)
            out["interval"] = {"level": float(level), "low": bounds[:, 0].tolist(), "high": bounds[:, 1].tolist()}
        if self.valid_range is not None:
            out["valid_range"] = [[_finite_or_none(lo), _finite_or_none(hi)] for lo, hi in self.valid_range]
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "Release":
        """The Release written by :meth:`to_dict` (other keys, such as the command line's, are ignored)."""
        if not isinstance(data, dict):
            raise fail("data", "a mapping written by Release.to_dict", data)
        try:
            g = data["guarantee"]
            guarantee = Guarantee(g["epsilon"], g["delta"], g["confidence"], tuple(g["assumptions"]), g["theorem"],
                                  tuple(g["failed_assumptions"]), tuple(g["unchecked_assumptions"]))
            noise = None if data.get("noise") is None else ReleaseNoise.from_dict(data["noise"])
            bounds = data.get("valid_range")
            valid = None if bounds is None else np.array(
                [[-np.inf if lo is None else lo, np.inf if hi is None else hi] for lo, hi in bounds], dtype=float)
            return cls(np.array(data["value"], dtype=float), guarantee, data["mechanism"], bool(data["seeded"]),
                       query=data.get("query"), component_names=tuple(data.get("components", ())),
                       variables=tuple(data.get("variables", ())), protected=tuple(data.get("protected", ())),
                       ledger_id=data.get("ledger_id"), noise=noise, valid_range=valid,
                       postprocessed=tuple(data.get("postprocessed", ())))
        except KeyError as exc:
            raise fail("data", f"a mapping with the key {exc.args[0]!r} (written by Release.to_dict)",
                       sorted(data)) from None


@dataclass(frozen=True, kw_only=True)
class ReleaseOptions:
    """The opt-ins and declarations of one release (``Mechanism.release(..., options=...)``), checked once.

    Every field is True or False (checked at construction, so a release reads them without checking
    again); the default, ``ReleaseOptions()``, opts into nothing and declares nothing.

    Attributes
    ----------
    accept_failed_assumptions : bool
        Release even though an assumption of the proof failed its check on the calibration; the
        Release and the ledger row then record the guarantee as NOT ESTABLISHED. Default False: refuse
        (:class:`~bayespriv.errors.AssumptionFailedError`).
    accept_unverified : bool
        Release even though the calibration was loaded with ``trust="unverified"`` from a file that
        did not verify (its guarantee names ``unverified_calibration``). Default False: refuse
        (:class:`~bayespriv.errors.UnverifiedCalibrationError`).
    independent : bool
        Declare the release independent of the others on the same data: the ledger charges its own
        (ε, δ) instead of accounting it jointly, and records the assumption ``declared_independent``.
        If the releases are not independent, their joint ε is unbounded.
    clip : bool
        Project the noisy value into the query's valid range (:meth:`Release.clipped`), recorded as
        ``postprocessed=("clip",)``: post-processing, free of privacy cost. Default False.

    Examples
    --------
    >>> from bayespriv.privacy import ReleaseOptions
    >>> ReleaseOptions(clip=True)
    ReleaseOptions(accept_failed_assumptions=False, accept_unverified=False, independent=False, clip=True)
    >>> ReleaseOptions(clip="yes")
    Traceback (most recent call last):
        ...
    bayespriv.errors.ParameterTypeError: clip must be True or False; got 'yes'
    """

    accept_failed_assumptions: bool = False
    accept_unverified: bool = False
    independent: bool = False
    clip: bool = False

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, bool):
                raise ParameterTypeError(f"{f.name} must be True or False; got {value!r:.80}")


#: The defaults of :class:`Release`'s optional fields (immutable values), for :meth:`Release._issued`.
_RELEASE_DEFAULTS = {f.name: f.default_factory() if f.default is dataclasses.MISSING else f.default
                     for f in dataclasses.fields(Release) if not (f.default is dataclasses.MISSING
                                                                  and f.default_factory is dataclasses.MISSING)}


def _checked_range(value: Any, k: int) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.shape != (k, 2) or np.any(np.isnan(arr)) or np.any(arr[:, 0] > arr[:, 1]):
        raise fail("valid_range", f"an array of shape ({k}, 2) of (low, high) with low <= high (±inf allowed)", value)
    return sealed(arr)


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _format_estimate(value: float, sd: float | None) -> str:
    """``148.52 ± 12.3 (sd)``: sd to three significant digits, the value to one more decimal (none below
    the units)."""
    if sd is None:
        return f"{value:.6g}"
    if not sd > 0:
        return f"{value:.6g} (no noise)"
    if not (1e-6 <= sd < 1e9) or abs(value) >= 1e12:
        return f"{value:.6g} ± {sd:.3g} (sd)"
    magnitude = math.floor(math.log10(sd))
    return f"{value:.{max(0, 3 - magnitude)}f} ± {sd:.{max(0, 2 - magnitude)}f} (sd)"
