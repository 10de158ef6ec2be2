"""What every mechanism shares: its Guarantee, its noise, and release.

A mechanism is built from a :class:`~bayespriv.calibration.Calibration` and
(ε, δ); it knows its noise and its :class:`Guarantee` before it sees any data
(ask the cost first). ``release`` applies the calibration's query to a dataset;
``release_value`` takes an answer F(X) computed elsewhere. With a ledger, the
budget is checked and spent *before* any noise is drawn.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, NamedTuple, Protocol

import numpy as np
import pandas as pd

from .._validation import check_choice, check_delta, check_epsilon, check_real, fail, sealed, thaw
from ..calibration import Calibration
from ..calibration.persist import check_query
from ..calibration.assumptions import (
    CHECKABLE,
    DEFAULT_ALPHA,
    AssumptionReport,
    RelaxationEstimate,
    check_assumptions,
    default_eta,
    estimate_lambda_eta,
    estimate_w_infinity,
)
from ..errors import ImmutableError, ParameterTypeError, ValidationError
from ..random import RNGLike
from .exact_noise import (BitSource, DEFAULT_GRID_BITS, discretization_grid_bits, discretization_reserve, plan_gaussian,
                          plan_laplace)
from .guarantee import AccountingRecord, Guarantee, Release
from .release_noise import ReleaseNoise, noise_of_plans
from .noise import GAUSSIAN_CALIBRATIONS, gaussian_radius, sample_gaussian, sample_laplace
from .release_path import (
    MAX_NOISE_SCALE,
    bind_answer,
    bind_dataset,
    check_ledger,
    check_mechanism_epsilon,
    check_release_rng,
    dataset_key,
    premise_gate,
    unverified_gate,
    watch_seed,
)

__all__ = ["Guarantee", "Release", "Mechanism", "LedgerLike", "WithExtraLaplace", "relaxed_parameters"]

#: Assumptions about the law of F that the Gaussian approximations of Theorems 4.6 / 4.7 make unnecessary.
DISTRIBUTIONAL_ASSUMPTIONS = CHECKABLE


#: Properties a subclass may define that are computed once, when construction ends, and then fixed
#: (:meth:`Mechanism.__init_subclass__` moves a subclass's property to ``_compute_<name>``).
_FIXED_PROPERTIES = ("guarantee", "k", "protected", "variables")


class _FixedState(NamedTuple):
    """What the release path reads besides the noise and the charge, fixed at construction."""

    k: int
    protected: tuple[str, ...]
    variables: tuple[str, ...]
    records: int | None
    query: Any
    query_fingerprint: str | None
    query_name: str | None
    component_names: tuple[str, ...]
    valid_range: np.ndarray | None


class _Fixed:
    """A public attribute of a mechanism that only construction may set.

    A data descriptor, so ``object.__setattr__`` goes through it too and is refused once the
    mechanism is frozen. The value lives in the instance's ``__dict__`` under the same name.
    """

    def __init__(self, doc: str = "") -> None:
        self.__doc__ = doc
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        try:
            return obj.__dict__[self.name]
        except KeyError:
            raise AttributeError(f"{type(obj).__name__!r} object has no attribute {self.name!r}") from None

    def __set__(self, obj: Any, value: Any) -> None:
        if obj.__dict__.get("_frozen", False):
            raise ImmutableError(f"{type(obj).__name__} is immutable after construction; got an assignment to "
                                 f"{self.name!r} (through object.__setattr__). Build a new mechanism instead.")
        obj.__dict__[self.name] = value

    def __delete__(self, obj: Any) -> None:
        if obj.__dict__.get("_frozen", False):
            raise ImmutableError(f"{type(obj).__name__} is immutable after construction; got a deletion of {self.name!r}")
        try:
            del obj.__dict__[self.name]
        except KeyError:
            raise AttributeError(self.name) from None


def _seal_public_state(state: dict[str, Any]) -> None:
    """Make a mechanism's public attributes uneditable in place: arrays sealed, mappings read-only
    views, lists tuples, arrays inside frozen dataclasses sealed, tables moved out of ``state`` to
    be copied on each read (``Mechanism.__getattr__``)."""
    copies = {}
    for name, value in list(state.items()):
        if name.startswith("_"):
            continue
        if isinstance(value, (pd.DataFrame, pd.Series)):
            copies[name] = value.copy()
            del state[name]
        else:
            state[name] = _sealed_value(value)
    if copies:
        state["_copied_on_read"] = MappingProxyType(copies)


def _sealed_value(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return sealed(value)
    if isinstance(value, Mapping):
        return MappingProxyType({k: _sealed_value(v) for k, v in value.items()})
    if isinstance(value, list) or type(value) is tuple:
        return tuple(_sealed_value(v) for v in value)
    params = getattr(type(value), "__dataclass_params__", None)
    if params is not None and params.frozen and not isinstance(value, (type, Calibration)):
        for f in dataclasses.fields(value):
            v = getattr(value, f.name, None)
            if isinstance(v, np.ndarray) and not v.dtype.hasobject:
                try:
                    object.__setattr__(value, f.name, sealed(v))  # an equal copy: only writability changes
                except AttributeError:  # fields sealed by their class (ImmutableError): it seals its arrays itself
                    pass
    return value


class LedgerLike(Protocol):
    """What ``release(..., ledger=...)`` needs: ``charge`` checks and spends the
    budget for a mechanism, raising :class:`~bayespriv.BudgetExceededError`
    (and spending nothing) when it would be exceeded."""

    def charge(self, mechanism: "Mechanism", *, seeded: bool | None = None, dataset: str | None = None,
               independent: bool = False) -> Any: ...


class Mechanism(abc.ABC):
    """Base of every mechanism. Subclasses set the noise in ``__init__``.

    Exposes, before any data: :attr:`guarantee`, :attr:`noise_cov` and, for
    Laplace noise, :attr:`noise_scale` and :attr:`noise_basis`.

    Notes
    -----
    Honest assumptions. The assumptions of the proof (:attr:`proof_assumptions`, e.g.
    ``"gaussian_query"``, ``"equal_covariance"``, ``"translation"``) are
    tested on the calibration samples, lazily, the first time
    :attr:`guarantee` (or :attr:`assumption_checks`) is read
    (:func:`~bayespriv.calibration.assumptions.check_assumptions`, false-failure
    probability :attr:`assumption_alpha` per assumption; cached per
    calibration). The guarantee keeps every assumption named — a passed test
    is not a proof, and a ``from_moments`` calibration cannot be tested (the
    user vouches) — and lists those whose test failed in
    ``Guarantee.failed_assumptions``; no warning is emitted. Then:

    * :attr:`relaxed_guarantee` / :meth:`relaxed`: Theorem 4.6 of Chen &
      Ohrimenko (AISTATS 2023): (ε + 2λ, (1 + e^{ε+λ})η + e^λ δ) with λ an
      *estimate* of the η-approximate max-divergence between the true laws of
      F and Gaussian approximations for which the mechanism is private
      (assumption ``"estimated_divergence"``), or a λ you supply;
    * :meth:`with_extra_laplace`: Theorem 4.7 (η-trimmed): the same mechanism
      plus Laplace noise of scale W/λ per component, W bounding the
      ∞-Wasserstein distance between the true laws and the approximations
      (a confidence bound for k = 1);
    * :meth:`check` returns the report, or raises with ``strict=True``.

    Release noise (every mechanism). Noise is drawn by an exact grid plan of
    :mod:`~bayespriv.mechanisms.exact_noise`, built at construction from the
    mechanism's continuous noise (``noise_cov`` or ``noise_scale``/``noise_basis``),
    with random bits from the OS CSPRNG (a seed only for tests), so no release
    leaks the answer's low-order bits (Mironov 2012). How each theorem carries over:

    * Laplace-type proofs (ExpM(L), DirM(L), Wasserstein, GroupDP(L), APMQM, MQM,
      Theorem 4.7's extra noise) rest on the pointwise ratio bound
      exp(Σ_c |Δ_c|/b_c); :class:`~bayespriv.mechanisms.exact_noise.LaplaceGridPlan`
      keeps it verbatim (randomized rounding, integer scales t_c ≥ b_c/g + ½),
      so ε is unchanged.
    * Gaussian proofs (APGM, EigM, DauM, OptimalGaussian, ExpM(G), DirM(G),
      GroupDP(G)) are about the laws of F + N; the grid release is within total
      variation τ of a post-processing of that mechanism, so it is
      (ε, δ + (1 + e^ε)τ)-private
      (:func:`~bayespriv.mechanisms.exact_noise.delta_with_discretization`). The grid
      has b = min(1000, max(60, ⌈log2(200·(1 + e^ε)·k/δ)⌉)) bits (every noise
      coordinate is at least 2^b grid steps, τ ≤ 0.2·2^-b per coordinate), and the
      noise is calibrated at δ minus the reserve 1.001·(1 + e^ε)·k·τ(2^b) ≤ δ/1000
      (:func:`~bayespriv.mechanisms.exact_noise.discretization_grid_bits`; the
      plan's (1 + e^ε)τ is checked against it at construction), so the stated δ
      is exactly the one asked for. b = 60 for every ε ≤ 5, δ ≥ 1e-9.

    Immutability. When construction ends the mechanism is frozen: assignment and
    deletion raise :class:`~bayespriv.errors.ImmutableError`, and so does
    ``object.__setattr__`` on ``calibration``, ``epsilon``, ``delta`` and the
    properties. What is charged and what is drawn were fixed at construction in
    private state that no public attribute aliases: the ledger charges
    :attr:`accounting_record` (a tuple), :attr:`guarantee` is a new
    :class:`Guarantee` built from it at each access (editing one changes nothing
    else), ``k``, ``protected``, ``variables``, the calibrated size and the query
    are fixed, and the noise is drawn by an exact sampler planned from a private
    copy. Public arrays (``noise_cov``, ``noise_scale``, ``noise_basis`` and
    every other array attribute) are sealed — their memory cannot be made
    writable (:func:`~bayespriv._validation.sealed`); mappings are read-only
    views and tables (``pair_table``) are copied on each access. Python cannot
    stop ``object.__setattr__`` on a *private* attribute (leading underscore),
    nor writes to memory through ``ctypes``: those are outside what a mechanism
    can defend.
    """

    theorem: ClassVar[str] = ""
    #: How releases compose (a key of :data:`bayespriv.accounting.joint.COMPOSITIONS`), declared by the class
    #: and read through :attr:`composition`: Pufferfish mechanisms are accounted jointly by the ledger.
    _composition: ClassVar[str] = "joint"
    #: Assumptions of the mechanism's proof (the calibration's are added).
    proof_assumptions: ClassVar[tuple[str, ...]] = ()
    #: False-failure probability of each assumption check (set on an instance to change it).
    assumption_alpha: ClassVar[float] = DEFAULT_ALPHA

    def __init__(self, calibration: Calibration, *, epsilon: float, delta: float = 0.0) -> None:
        if not isinstance(calibration, Calibration):
            raise ParameterTypeError(f"calibration must be a bayespriv Calibration; got {type(calibration).__name__}")
        self.calibration = calibration
        self.epsilon = check_epsilon(epsilon)
        check_mechanism_epsilon(self.epsilon)
        self.delta = check_delta(delta, allow_zero=True)
        self._gaussian_cov: np.ndarray | None = None
        self._accounted: Any = None
        self._laplace: tuple[np.ndarray, np.ndarray] | None = None
        #: δ at which Gaussian noise is calibrated: δ less the exact sampler's reserve (≤ δ/1000, on a
        #: grid of b bits fine enough for it), so that the grid release is (ε, δ)-private with the δ
        #: asked for (:meth:`_discretized`).
        self._noise_grid_bits = (discretization_grid_bits(self.epsilon, self.delta, self.k) if self.delta > 0
                                 else DEFAULT_GRID_BITS)
        self._noise_reserve = (discretization_reserve(self.epsilon, self.k, grid_bits=self._noise_grid_bits)
                               if self.delta > 0 else 0.0)
        self._noise_delta = _below(self.delta, self._noise_reserve)
        if self.delta > 0 and not self._noise_delta > 0:
            raise fail("delta", f"larger than the exact sampler's reserve {self._noise_reserve:.3g} (grid of "
                       f"{self._noise_grid_bits} bits at epsilon={self.epsilon:g})", delta)

    # -- immutability ----------------------------------------------------------------------
    calibration = _Fixed("the calibration the noise was computed from")
    epsilon = _Fixed("ε asked for")
    delta = _Fixed("δ asked for")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Wrap each subclass's ``__init__`` so the instance freezes when the outermost one returns,
        and move a subclass's ``guarantee``, ``k``, ``protected`` or ``variables`` property to
        ``_compute_<name>``: each is computed once, at construction, and the base class's property
        returns that fixed value (:meth:`_finish_construction`)."""
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            cls.__init__ = _freezing(cls.__dict__["__init__"])  # type: ignore[method-assign]
        for name in _FIXED_PROPERTIES:
            prop = cls.__dict__.get(name)
            if isinstance(prop, property):
                setattr(cls, f"_compute_{name}", prop.fget)
                delattr(cls, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_frozen", False):
            raise ImmutableError(
                f"{type(self).__name__} is immutable after construction: its noise and guarantee were computed from "
                f"its arguments; got an assignment to {name!r}. Build a new mechanism instead.")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if self.__dict__.get("_frozen", False):
            raise ImmutableError(f"{type(self).__name__} is immutable after construction; got a deletion of {name!r}")
        object.__delattr__(self, name)

    def __getattr__(self, name: str) -> Any:
        """Tables (``pair_table``) are handed out as copies: a DataFrame can always be edited in place."""
        copies = self.__dict__.get("_copied_on_read")
        if copies is not None and name in copies:
            return copies[name].copy()
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self.__dict__.get("_copied_on_read", ())))

    # -- pickling: read-only mapping views do not pickle, and unpickled arrays are writable again --
    def __getstate__(self) -> dict[str, Any]:
        return {name: thaw(value) for name, value in self.__dict__.items()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        own = self.__dict__
        own.update(state)
        copies = own.get("_copied_on_read")
        if copies is not None:
            own["_copied_on_read"] = MappingProxyType(dict(copies))
        if own.get("_gaussian_cov") is not None:
            own["_gaussian_cov"] = sealed(own["_gaussian_cov"], float)
        if own.get("_laplace") is not None:
            own["_laplace"] = tuple(sealed(a, float) for a in own["_laplace"])
        _seal_public_state(own)

    def _finish_construction(self) -> None:
        """Last stage of construction: refuse unusable noise, plan the exact sampler, fix what is
        charged (the guarantee, with the discretization's cost) and what the release path reads,
        seal the public state, freeze."""
        self._check_noise_finite()
        state = self.__dict__
        state["_noise_plan"] = self._plan_noise()
        state["_record"] = AccountingRecord.of(self._discretized(self._compute_guarantee()))
        state["_fixed"] = self._fixed_state()
        state["_composition_kind"] = self._composition_kind()
        state["_release_noise"] = self._release_noise()
        _seal_public_state(state)
        state["_frozen"] = True

    def _fixed_state(self) -> "_FixedState":
        """What the release path reads, computed now (fixed once the mechanism is frozen)."""
        fixed = self.__dict__.get("_fixed")
        if fixed is not None:
            return fixed
        cal = self.calibration
        query = getattr(cal, "query", None)
        n = getattr(self, "n_records", None)
        records = getattr(cal, "n_records", None) if n is None else int(n)
        k = int(self._compute_k())
        return _FixedState(k, tuple(self._compute_protected()), tuple(self._compute_variables()),
                           records, query, getattr(cal, "query_fingerprint", None),
                           getattr(query, "name", None), tuple(getattr(cal, "component_names", ())),
                           _valid_range(query, records, k))

    def _composition_kind(self) -> str:
        """How releases compose (fixed at construction): the class's declaration, or ``"dataset_dp"`` for a
        Pufferfish mechanism whose noise alone hides every difference its query can show between two datasets
        (:mod:`bayespriv.mechanisms.whole_dataset`)."""
        declared = type(self)._composition
        fixed = self.__dict__["_fixed"]
        if declared != "joint" or fixed.query is None or getattr(fixed.query, "output_range", None) is not None:
            return declared
        from .whole_dataset import gaussian_covers_box, laplace_covers_box

        gauss, lap = self.__dict__.get("_gaussian_cov"), self.__dict__.get("_laplace")
        if gauss is not None and lap is None and self.delta > 0:
            radius = gaussian_radius(self.epsilon, self._noise_delta, "analytic")
            covered = gaussian_covers_box(gauss, fixed.valid_range, radius)
        elif lap is not None and gauss is None:
            covered = laplace_covers_box(lap[0], lap[1], fixed.valid_range, self.epsilon)
        else:
            covered = False
        return "dataset_dp" if covered else declared

    def _release_noise(self) -> ReleaseNoise:
        """The law of the noise a release carries: what the exact sampler draws from (fixed at construction)."""
        return noise_of_plans(self.k, self.__dict__.get("_noise_plan"))

    @property
    def accounting_record(self) -> AccountingRecord:
        """What a ledger charges for one release: the guarantee fixed at construction, as a tuple
        that cannot be edited (:class:`~bayespriv.mechanisms.guarantee.AccountingRecord`)."""
        record = self.__dict__.get("_record")
        return AccountingRecord.of(self._discretized(self._compute_guarantee())) if record is None else record

    def _noise_covariance(self) -> np.ndarray:
        """A fresh copy of the covariance of the noise, from the private state the exact sampler was
        planned from (for joint accounting, which must not read a public array)."""
        return np.array(self.noise_cov, dtype=float)

    def _plan_noise(self) -> Any:
        """The floating-point-safe sampler of this mechanism's noise (None: no noise to add)."""
        if self._laplace is not None:
            scale, basis = self._laplace
            return plan_laplace(scale, basis) if np.any(scale > 0) else None
        if self._gaussian_cov is None or not np.any(self._gaussian_cov):
            return None
        return plan_gaussian(self._gaussian_cov, grid_bits=self._noise_grid_bits)

    def _discretized(self, g: Guarantee) -> Guarantee:
        """The guarantee of the grid release (:mod:`~bayespriv.mechanisms.exact_noise`).

        Laplace noise keeps ε exactly: the plan preserves the pointwise ratio bound every
        Laplace-type proof rests on. Gaussian noise is within total variation τ of a
        post-processing of the continuous mechanism, which costs (1 + e^ε)τ of δ
        (:func:`~bayespriv.mechanisms.exact_noise.delta_with_discretization`); the noise was
        calibrated at δ − reserve with reserve ≥ (1 + e^ε)τ (checked here), so the stated δ holds
        for the grid release as it is.
        """
        plan = self.__dict__.get("_noise_plan")
        if plan is None:
            return g
        tv = float(getattr(plan, "tv_bound", 0.0))
        if tv:
            spent = (1.0 + math.exp(min(self.epsilon, 700.0))) * tv
            if spent > self._noise_reserve:  # pragma: no cover - plans keep σ ≥ 2^grid_bits steps
                raise ValidationError(f"the exact Gaussian sampler's cost (1 + e^ε)τ = {spent:.3g} must fit in the "
                                      f"reserve {self._noise_reserve:.3g}; got a plan with τ = {tv:.3g}")
        note = f"; noise: {plan.theorem}" + (f", τ={tv:.2g} within δ" if tv else "")
        return dataclasses.replace(g, theorem=g.theorem + note)

    def _check_noise_finite(self) -> None:
        cov = self.noise_cov
        scales = np.sqrt(np.clip(np.diag(cov), 0, None)) if cov is not None else np.zeros(0)
        if cov is not None and not np.all(np.isfinite(cov)) or np.any(scales > MAX_NOISE_SCALE):
            worst = float(np.max(scales)) if scales.size and np.all(np.isfinite(scales)) else math.inf
            raise fail("epsilon", f"large enough that the noise scale stays finite and at most {MAX_NOISE_SCALE:g} "
                       f"(here it would be {worst:g}: the release would carry no information)", self.epsilon)

    # -- noise (set by subclasses) ------------------------------------------------------
    def _set_gaussian(self, cov: np.ndarray) -> None:
        self._gaussian_cov = sealed(cov, float)

    def _set_laplace(self, scale: np.ndarray, basis: np.ndarray) -> None:
        scale = np.asarray(scale, dtype=float).reshape(-1)
        self._laplace = (sealed(scale), sealed(np.asarray(basis, dtype=float).reshape(self.k, scale.shape[0])))

    def _set_isotropic(self, noise: str | None, l1: float, l2: float, gaussian_calibration: str) -> None:
        """Laplace noise of scale ``l1/ε`` per component, or N(0, (l2/r*)² I).

        ``l1`` / ``l2`` are the L1 / L2 sensitivities the noise must cover
        (Laplace mechanism: Dwork & Roth 2014, Thm 3.6; Gaussian: r*(ε, δ)).
        Sets ``noise_kind``, ``sensitivity`` and, for Gaussian noise,
        ``radius`` and ``sigma``.
        """
        if noise is None:  # the default that works: Laplace for δ = 0 (pure ε), Gaussian when a δ is given
            noise = "gaussian" if self.delta > 0 else "laplace"
        self.noise_kind = check_noise(noise)
        self.gaussian_calibration = gaussian_calibration
        if self.noise_kind == "laplace":
            self.sensitivity = float(l1)
            self._set_laplace(np.full(self.k, self.sensitivity / self.epsilon), np.eye(self.k))
        else:
            self.radius = check_gaussian_params(self, gaussian_calibration)
            self.sensitivity = float(l2)
            self.sigma = self.sensitivity / self.radius
            self._set_gaussian(self.sigma**2 * np.eye(self.k))

    @property
    def k(self) -> int:
        """Dimension of the released value (the query's k; fixed at construction)."""
        fixed = self.__dict__.get("_fixed")
        return self._compute_k() if fixed is None else fixed.k

    @property
    def protected(self) -> tuple[str, ...]:
        """Attributes whose secrets this mechanism protects (a ledger charges these budgets; fixed at construction)."""
        fixed = self.__dict__.get("_fixed")
        return self._compute_protected() if fixed is None else fixed.protected

    @property
    def variables(self) -> tuple[str, ...]:
        """Columns the released value depends on (empty when the query is unknown; fixed at construction)."""
        fixed = self.__dict__.get("_fixed")
        return self._compute_variables() if fixed is None else fixed.variables

    def _compute_k(self) -> int:
        return self.calibration.k

    def _compute_protected(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.attribute for p in self.calibration.pairs for s in p.secrets))

    def _compute_variables(self) -> tuple[str, ...]:
        q = self.calibration.query
        return q.columns if q is not None else ()

    @property
    def noise(self) -> str:
        """Kind of noise added: ``"gaussian"`` or ``"laplace"``."""
        return "laplace" if self._laplace is not None else "gaussian"

    @property
    def noise_cov(self) -> np.ndarray:
        """Covariance (k × k) of the added noise (for Laplace: 2 B diag(b²) Bᵀ); sealed (read-only for good)."""
        if self._laplace is not None:
            scale, basis = self._laplace
            return sealed(2.0 * (basis * scale**2) @ basis.T)
        return self._gaussian_cov

    @property
    def noise_scale(self) -> np.ndarray | None:
        """Laplace scales b (d,), or None for Gaussian noise."""
        return None if self._laplace is None else self._laplace[0]

    @property
    def noise_basis(self) -> np.ndarray | None:
        """Laplace directions (k × d, columns), or None for Gaussian noise."""
        return None if self._laplace is None else self._laplace[1]

    @property
    def noise_tv_bound(self) -> float:
        """τ: total-variation distance between the exact grid sampler's release and a
        post-processing of the continuous noise, for every answer (0 for Laplace noise and for
        no noise; below 1e-18 per coordinate for Gaussian noise, see
        :class:`~bayespriv.mechanisms.exact_noise.GaussianGridPlan`)."""
        return float(getattr(self.__dict__.get("_noise_plan"), "tv_bound", 0.0))

    @property
    def noiseless(self) -> bool:
        """True when no noise is added (e.g. Theorem 4.4's noiseless release)."""
        return not np.any(self.noise_cov)

    @property
    def expected_abs_error(self) -> np.ndarray:
        """E|noise| per component (exact): σ√(2/π) for Gaussian noise; for
        Laplace noise along the coordinate axes, the scale b."""
        if self._laplace is None:
            return np.sqrt(2.0 / math.pi) * np.sqrt(np.clip(np.diag(self._gaussian_cov), 0, None))
        scale, basis = self._laplace
        if np.all((basis != 0).sum(axis=1) <= 1):
            return np.abs(basis) @ scale
        raise ValidationError("expected_abs_error is exact only for axis-aligned Laplace noise; use noise_cov instead")

    # -- guarantee ---------------------------------------------------------------------
    def _guarantee(self, delta: float | None = None, extra: tuple[str, ...] = ()) -> "Guarantee":
        cal = self.calibration
        accounted = self.__dict__.get("_accounted")
        if accounted is not None:  # the released law's profile meets (ε, δ): no structural premise to check
            assumptions = tuple(dict.fromkeys(accounted.account.assumptions + extra + cal.assumptions))
            return Guarantee(self.epsilon, self.delta if delta is None else delta, accounted.account.confidence,
                             assumptions, self.theorem)
        proof = getattr(self, "_proof_assumptions", self.proof_assumptions)
        assumptions = tuple(dict.fromkeys(tuple(proof) + extra + cal.assumptions))
        failed, unchecked = self._check_outcome(assumptions)
        return Guarantee(self.epsilon, self.delta if delta is None else delta, cal.confidence, assumptions, self.theorem,
                         failed, unchecked)

    # -- the accountant of the released law -------------------------------------------------
    def _account_gaussian(self, shape: np.ndarray) -> np.ndarray:
        """Scale (and floor) a Gaussian noise shape by the accountant (:mod:`~bayespriv.mechanisms.accounted`);
        returns the noise covariance and records the account."""
        from .accounted import account_gaussian_shape

        acc = account_gaussian_shape(self, shape)
        self._accounted = acc
        return np.array(acc.noise.cov)

    @property
    def composition(self) -> str:
        """How this mechanism's releases compose with others on the same data, as its class declares it
        (``"joint"``: accounted jointly by the ledger; ``"dp"``, ``"subset"``, ``"chain"``, ``"quilt"``: by a
        theorem, see :mod:`bayespriv.accounting.joint`), or ``"dataset_dp"`` when its noise alone makes it
        differentially private for any change of the dataset (fixed at construction,
        :mod:`bayespriv.mechanisms.whole_dataset`)."""
        return self.__dict__.get("_composition_kind") or type(self)._composition

    @property
    def requested(self) -> tuple[float, float]:
        """The (ε, δ) the caller asked for. The guarantee states exactly this (δ may read 0 where a
        pure-ε theorem gives more), or construction refused."""
        return (self.epsilon, self.delta)

    @property
    def accounting(self) -> Any:
        """The accountant's calibration of this mechanism's noise
        (:class:`~bayespriv.mechanisms.accounted.Accounted`: factor, floor and the
        :class:`~bayespriv.mechanisms.accountant.PrivacyAccount` at (ε, δ)), or None
        when the noise rests on its theorem's premises instead."""
        return self.__dict__.get("_accounted")

    def privacy_curve(self, epsilons: Any) -> np.ndarray:
        """δ(ε) of the released law for each ε (upper bounds), by the accountant that calibrated the noise.

        Mechanisms whose noise rests on a theorem's premise instead (pure-ε Laplace, GroupDP,
        Wasserstein, quilt mechanisms) have no such curve here; the Gaussian mechanisms compute
        theirs exactly for Gaussian laws (``accountant="gaussian"``).
        """
        if self.accounting is None:
            raise ValidationError(f"privacy_curve needs noise calibrated by the accountant of the released law; "
                                  f"{type(self).__name__}'s guarantee rests on {self.guarantee.theorem.split(';')[0]!r}")
        return self._accounted_curve(epsilons)

    def _accounted_curve(self, epsilons: Any) -> np.ndarray:
        """δ(ε) of the released law for each ε, by the accountant (upper bounds)."""
        from ..calibration.laws import conditions_of
        from .accountant import account
        from .privacy_loss import _check_epsilons

        conds = conditions_of(self.calibration)
        noise = self._accounted.noise
        return np.array([account(conds, noise, float(e), confidence=self.calibration.confidence).delta
                         for e in _check_epsilons(epsilons)])

    def _check_outcome(self, names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(failed, unchecked) among the checkable ``names``."""
        checkable = tuple(n for n in names if n in CHECKABLE)
        if not checkable:
            return (), ()
        report = check_assumptions(self.calibration, checkable, alpha=self.assumption_alpha)
        return report.failed, report.unchecked

    def _compute_guarantee(self) -> Guarantee:
        """The guarantee, computed from the mechanism's state (subclasses override through a
        ``guarantee`` property, which :meth:`__init_subclass__` moves here)."""
        return self._guarantee()

    @property
    def guarantee(self) -> Guarantee:
        """What this mechanism promises, fixed at construction (ask it before any data).

        A new :class:`Guarantee` at each access, equal to :attr:`accounting_record`: editing one
        (even with ``object.__setattr__``) changes neither what the ledger charges nor what a later
        release states or gates on.
        """
        record = self.__dict__.get("_record")
        return self._compute_guarantee() if record is None else record.guarantee()

    # -- assumptions and relaxed guarantees ------------------------------------------------
    def _checked_names(self) -> tuple[str, ...]:
        if self.__dict__.get("_accounted") is not None:  # diagnostics: the premises the noise shape came from
            return tuple(n for n in self.proof_assumptions if n in CHECKABLE)
        named = self.guarantee.assumptions
        proof = tuple(getattr(self, "_proof_assumptions", self.proof_assumptions))
        return tuple(dict.fromkeys(proof + tuple(n for n in named if n in CHECKABLE)))

    @property
    def assumption_checks(self) -> AssumptionReport:
        """The checks of the proof's assumptions on the calibration samples
        (computed lazily, cached per calibration)."""
        return check_assumptions(self.calibration, self._checked_names(), alpha=self.assumption_alpha)

    def check(self, *, strict: bool = False, alpha: float | None = None) -> AssumptionReport:
        """Check the proof's assumptions on the calibration samples.

        Parameters
        ----------
        strict : bool
            Raise :class:`~bayespriv.ValidationError` when a check fails.
        alpha : float, optional
            False-failure probability per assumption (default
            :attr:`assumption_alpha`); does not change :attr:`guarantee`.

        Returns
        -------
        AssumptionReport
            Shows as a table in notebooks; ``.summary()`` is a DataFrame.
        """
        report = check_assumptions(self.calibration, self._checked_names(),
                                   alpha=self.assumption_alpha if alpha is None else alpha)
        if strict and report.failed:
            worst = {c.name: c for c in report.checks if c.holds is False}
            details = "; ".join(f"{n} (p={worst[n].p_value:.3g} for {worst[n].subject})" if worst[n].p_value is not None
                                else f"{n} ({worst[n].subject})" for n in report.failed)
            raise ValidationError(
                f"assumptions of {type(self).__name__}'s proof must hold on the calibration samples; got failed checks at "
                f"alpha={report.alpha:g}: {details}. The nominal guarantee is not established; relaxed_guarantee gives "
                "Theorem 4.6's fallback and with_extra_laplace(...) Theorem 4.7's."
            )
        return report

    def _lambda_estimate(self, eta: float, confidence: float) -> RelaxationEstimate:
        cache = self.__dict__.setdefault("_lambda_cache", {})
        key = (eta, confidence)
        if key not in cache:
            cache[key] = estimate_lambda_eta(self.calibration, eta, confidence=confidence)
        return cache[key]

    def relaxed(self, eta: float | None = None, *, lambda_eta: float | None = None, confidence: float = 0.95) -> Guarantee:
        """Theorem 4.6 of Chen & Ohrimenko (AISTATS 2023): the guarantee without
        the distributional assumptions.

        With Gaussian approximations f̃ for which this mechanism is (ε, δ)-private
        (N(μ̂_a, C_ab), N(μ̂_b, C_ab), C_ab = (Σ̂_a + Σ̂_b)/2, see
        :mod:`bayespriv.calibration.assumptions`), if
        max(D^η_∞(f ‖ f̃), D^η_∞(f̃ ‖ f)) ≤ λ for every secret, the mechanism is
        (ε + 2λ, (1 + e^{ε+λ})η + e^λ δ)-private.

        Parameters
        ----------
        eta : float in (0, 1), optional
            Default :func:`~bayespriv.calibration.assumptions.default_eta`
            (max(δ, 500/n_draws)).
        lambda_eta : float ≥ 0, optional
            A bound you vouch for (assumption ``"divergence_bound_given"``);
            otherwise λ is *estimated* from the calibration samples
            (:func:`~bayespriv.calibration.assumptions.estimate_lambda_eta`,
            assumption ``"estimated_divergence"``: an estimate, not a bound).
        confidence : float
            Level of the Monte-Carlo margins of the estimate.

        Returns
        -------
        Guarantee

        Raises
        ------
        ValidationError
            When the relaxed guarantee would promise nothing (δ' ≥ 1, or no
            finite λ at this η from these draws): refused, never returned.
        ValidationError
            When the guarantee assumes none of ``gaussian_query``,
            ``equal_covariance``, ``translation`` (nothing to relax), or λ must
            be estimated from a calibration without samples.

        Notes
        -----
        Paper notes (appendix B.4): the proof's step "f_θ(t) ≤ e^λ f̃_θ(t) + η"
        mixes a density with a probability; the conclusion
        P(M_f ∈ S) ≤ e^λ P(M_f̃ ∈ S) + η holds anyway, since D^η_∞ ≤ λ means
        E_f[g] ≤ e^λ E_f̃[g] + η for every g with values in [0, 1] (integrate the
        set inequality over the level sets of g). Its "Similarly" line should
        read Pr(M_f̃θj ∈ S) ≤ e^λ Pr(M_fθj ∈ S) + η (θ_j on both sides).
        """
        nominal = self.guarantee
        _require_distributional(self, nominal)
        cal = self.calibration
        eta = default_eta(cal, nominal.delta) if eta is None else check_delta(eta, "eta")
        lam, label = self._divergence(eta, lambda_eta, confidence)
        eps, delta = meaningful_relaxation(*relaxed_parameters(nominal.epsilon, nominal.delta, lam, eta), eta=eta, lam=lam)
        assumptions = tuple(a for a in nominal.assumptions if a not in DISTRIBUTIONAL_ASSUMPTIONS) + (label,)
        theorem = f"Chen & Ohrimenko 2023, Theorem 4.6 (η={eta:g}, λ_η={lam:.4g}) applied to {nominal.theorem}"
        return Guarantee(eps, delta, nominal.confidence, assumptions, theorem)

    def _divergence(self, eta: float, lambda_eta: float | None, confidence: float) -> tuple[float, str]:
        """λ_η and how it was obtained: estimated from the calibration samples,
        or given by the user (then it is their bound)."""
        if lambda_eta is None:
            return self._lambda_estimate(eta, confidence).value, "estimated_divergence"
        return check_nonnegative(lambda_eta, "lambda_eta"), "divergence_bound_given"

    @property
    def relaxed_guarantee(self) -> Guarantee:
        """:meth:`relaxed` at the default η (estimated λ_η; needs calibration samples)."""
        return self.relaxed()

    def with_extra_laplace(self, lam: float, *, eta: float | None = None, confidence: float = 0.95,
                           w_infinity: float | None = None) -> "WithExtraLaplace":
        """Theorem 4.7 of Chen & Ohrimenko (AISTATS 2023), η-trimmed: this
        mechanism plus Laplace noise Lap(W/λ) on every component.

        See :class:`WithExtraLaplace` for W, η and the guarantee
        (ε + 2λ, e^λ δ + (1 + e^{ε+λ})η).
        """
        return WithExtraLaplace(self, lam, eta=eta, confidence=confidence, w_infinity=w_infinity)

    # -- release -------------------------------------------------------------------------
    def _calibrated_records(self) -> int | None:
        """The dataset size the noise was calibrated for: the mechanism's own ``n_records`` (GroupDP,
        quilt mechanisms) or the calibration's; None when unknown (fixed at construction)."""
        return self._fixed_state().records

    def release(self, dataset: pd.DataFrame, *, rng: RNGLike = None, ledger: LedgerLike | None = None,
                accept_failed_assumptions: bool = False, accept_unverified: bool = False,
                dataset_name: str | None = None, independent: bool = False, clip: bool = False) -> Release:
        """Compute the calibration's query on ``dataset`` and add the noise.

        Parameters
        ----------
        dataset : pandas.DataFrame
            Must have the query's columns (unique names) and exactly the
            calibrated number of rows (the calibration's ``n_records``, or the
            mechanism's own for GroupDP and the quilt mechanisms): the noise covers
            datasets of that size only.
        rng : None, int, SeedSequence or Generator
            None (default): fresh entropy from the OS CSPRNG. A seed makes the
            noise replayable — for tests only; the Release says ``seeded``,
            and reusing an integer seed on one mechanism warns.
        ledger : Ledger, optional
            Checked and charged (atomically) before any noise is drawn. Releases on the same data are
            accounted together (:mod:`bayespriv.accounting.joint`): the dataset is the table's
            fingerprint (:func:`~bayespriv.mechanisms.release_path.dataset_key`) unless named.
        accept_failed_assumptions : bool
            Release even though an assumption of the proof failed its check
            (see :meth:`check`); the Release and the ledger row then record
            the guarantee as NOT ESTABLISHED. Default False: refuse.
        accept_unverified : bool
            Release even though the calibration was loaded with
            ``trust="unverified"`` from a file that did not verify (its
            guarantee names ``unverified_calibration``). Default False: refuse
            with :class:`~bayespriv.errors.UnverifiedCalibrationError`.
        dataset_name : str, optional
            The name under which the ledger accounts this release with the others on the same data
            (default: the table's fingerprint).
        independent : bool
            Declare this release independent of the others on the same data: the ledger charges its
            own (ε, δ) instead of accounting it jointly, and records the assumption
            ``declared_independent``.
        clip : bool
            Project the noisy value into the query's valid range (:meth:`Release.clipped`: counts
            into [0, n], proportions into [0, 1], bounded means into their bounds), recorded as
            ``postprocessed=("clip",)``. Post-processing: free of privacy cost. Default False: the
            value is never clipped unless asked.

        Returns
        -------
        Release
            The noisy value with its guarantee, the law of its noise (``noise_cov``, ``noise_sd``,
            ``interval(level)``) and the query's ``valid_range``.

        Raises
        ------
        ReleaseMismatchError
            The dataset does not match the calibration (rows, columns).
        AssumptionFailedError
            The guarantee is not established and the caller did not opt in.
        BudgetExceededError
            The ledger's budget would be exceeded.

        In every case nothing is spent and no noise is drawn.
        """
        fixed = self._fixed_state()
        query = fixed.query
        if query is None:
            raise ValidationError(
                "release needs a calibration with a query; this one has none (built with from_moments(query=None)). "
                "Use release_value(answer) with an answer computed elsewhere."
            )
        check_ledger(ledger)
        check_release_rng(rng)
        fingerprint = fixed.query_fingerprint
        if fingerprint is not None:  # the query's code or state changed since calibration
            check_query(query, fingerprint)
        bind_dataset(dataset, tuple(query.columns), self._calibrated_records())
        name = dataset_name if dataset_name is not None or ledger is None else dataset_key(dataset)
        return self.release_value(query(dataset), rng=rng, ledger=ledger, n_records=len(dataset),
                                  accept_failed_assumptions=accept_failed_assumptions,
                                  accept_unverified=accept_unverified, dataset=name, independent=independent,
                                  clip=clip)

    def release_value(self, answer: Any, *, rng: RNGLike = None, ledger: LedgerLike | None = None,
                      n_records: int | None = None, accept_failed_assumptions: bool = False,
                      accept_unverified: bool = False, dataset: str | None = None,
                      independent: bool = False, clip: bool = False) -> Release:
        """Add the noise to an answer F(X) of shape ``(k,)`` computed elsewhere.

        The answer must come from the calibrated query on a dataset of the
        calibrated size: pass ``n_records=`` to have the size checked;
        without it the caller vouches for it. ``dataset`` names the data the
        answer was computed on: a ledger accounts the releases on the same
        dataset together, and every release without a name shares the dataset
        ``"unnamed"``. Other parameters and errors as :meth:`release`.
        """
        check_ledger(ledger)
        if not isinstance(clip, bool):
            raise ParameterTypeError(f"clip must be True or False; got {clip!r}")
        seeded = check_release_rng(rng)
        value = bind_answer(answer, self.k, n_records=n_records, calibrated_n=self._calibrated_records())
        guarantee = self.guarantee
        premise_gate(self, guarantee, accept_failed_assumptions)
        unverified_gate(self, guarantee, accept_unverified)
        watch_seed(self, rng)
        charge = (ledger.charge(self, seeded=seeded, dataset=dataset, independent=independent)
                  if ledger is not None else None)  # raises before any noise
        try:
            out = self._noisy(value, rng)
        except BaseException as exc:  # a failure after the spend: void the ledger row, spend nothing
            _void(ledger, charge, exc)
            raise
        fixed = self._fixed_state()
        release = Release(out, guarantee, type(self).__name__, seeded, fixed.query_name, fixed.component_names,
                          fixed.variables, fixed.protected, getattr(charge, "release_id", None),
                          self.__dict__.get("_release_noise"), fixed.valid_range)
        return release.clipped() if clip else release

    def _noisy(self, value: np.ndarray, rng: RNGLike) -> np.ndarray:
        """``value`` plus one draw of the noise from the exact grid sampler, finite (checked).

        Random bits come from the OS CSPRNG, or from ``rng`` when the caller seeds (tests).
        """
        bits = BitSource.system() if rng is None else BitSource.from_rng(rng)
        out = self._apply_noise(value, bits)
        if not np.all(np.isfinite(out)):
            raise ValidationError(f"the noisy value of {type(self).__name__} must be finite; got {out} "
                                  "(noise scale near the floating-point range)")
        return out

    def _apply_noise(self, value: np.ndarray, bits: BitSource) -> np.ndarray:
        plan = self.__dict__.get("_noise_plan")
        return value.copy() if plan is None else np.array(plan.release(value, bits))

    def _draw_noise(self, gen: np.random.Generator) -> np.ndarray:
        """One float draw of the noise law (k,), for simulations and audits — never used by a
        release, whose noise comes from the exact sampler (:meth:`_apply_noise`)."""
        if self._laplace is not None:
            return sample_laplace(*self._laplace, gen)
        return sample_gaussian(self._gaussian_cov, gen)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon:g}, delta={self.delta:g}, noise={self.noise}, k={self.k})"

    def _repr_html_(self) -> str:
        """Notebook view: parameters, noise per component, the guarantee and each assumption check."""
        from .._display import view

        return view("mechanism_html", self)


def _valid_range(query: Any, records: int | None, k: int) -> np.ndarray | None:
    """The query's valid range ``(k, 2)`` at the calibrated number of records; unbounded without a query."""
    if query is None or not callable(getattr(query, "valid_range", None)):
        return sealed(np.tile([-np.inf, np.inf], (k, 1)))
    return sealed(query.valid_range(records, k=k))


def _below(delta: float, reserve: float) -> float:
    """The largest float d with d + reserve ≤ δ in exact arithmetic (0 when δ = 0).

    δ − reserve in floating point can round back up to δ when the reserve is far below δ's ulp;
    stepping down until the exact rational sum fits keeps the stated δ an honest bound.
    """
    if delta <= 0:
        return 0.0
    from fractions import Fraction

    d = delta - reserve
    while d > 0 and Fraction(d) + Fraction(reserve) > Fraction(delta):
        d = math.nextafter(d, 0.0)
    return d


def _freezing(init: Any) -> Any:
    """Wrap ``__init__``: ε is range-checked before any arithmetic on it, and the instance
    finishes construction (noise checked, guarantee fixed, frozen) when the outermost
    ``__init__`` of the class chain returns."""

    @functools.wraps(init)
    def wrapped(self: "Mechanism", *args: Any, **kwargs: Any) -> None:
        depth = self.__dict__.get("_init_depth", 0)
        if depth == 0 and "epsilon" in kwargs:
            check_mechanism_epsilon(kwargs["epsilon"])
        self.__dict__["_init_depth"] = depth + 1
        try:
            init(self, *args, **kwargs)
        finally:
            self.__dict__["_init_depth"] = depth
        if depth == 0:
            del self.__dict__["_init_depth"]
            self._finish_construction()

    return wrapped


Mechanism.__init__ = _freezing(Mechanism.__init__)  # type: ignore[method-assign]


def _void(ledger: Any, charge: Any, exc: BaseException) -> None:
    """Undo a spend whose release could not be completed (the ledger records the void)."""
    void = getattr(ledger, "void", None)
    rid = getattr(charge, "release_id", None)
    if callable(void) and rid is not None:
        void(rid, f"release failed after the spend: {type(exc).__name__}: {exc}")


def _require_distributional(mech: Mechanism, nominal: Guarantee) -> None:
    """Theorems 4.6 / 4.7 replace a distributional assumption by Gaussian approximations
    for which the mechanism is private; a guarantee resting on none has nothing to relax
    (and its mechanism is not known to be private for the approximations)."""
    if not any(a in DISTRIBUTIONAL_ASSUMPTIONS for a in nominal.assumptions):
        raise ValidationError(
            f"a relaxed guarantee (Chen & Ohrimenko 2023, Theorems 4.6 / 4.7) must be asked of a mechanism whose "
            f"guarantee assumes one of {DISTRIBUTIONAL_ASSUMPTIONS}; got {type(mech).__name__}, whose guarantee "
            f"assumes {nominal.assumptions or 'nothing'}"
        )


def check_nonnegative(value: Any, name: str) -> float:
    v = check_real(name, value)
    if not (math.isfinite(v) and v >= 0):
        raise fail(name, "a finite number >= 0", value)
    return v


def meaningful_relaxation(epsilon: float, delta: float, *, eta: float, lam: float) -> tuple[float, float]:
    """Refuse a relaxed (ε', δ') that promises nothing (δ' ≥ 1 or ε' infinite)."""
    if not math.isfinite(epsilon) or delta >= 1.0:
        raise ValidationError(
            f"the relaxed guarantee promises nothing: with eta={eta:g} and λ_η={lam:.4g} it is (ε={epsilon:g}, "
            f"δ={delta:g}), which every mechanism satisfies, so it guarantees nothing. Draw more samples (λ_η shrinks), "
            "choose another eta, or use a calibration that does not need the relaxation.")
    return epsilon, delta


def relaxed_parameters(epsilon: float, delta: float, lam: float, eta: float) -> tuple[float, float]:
    """(ε', δ') = (ε + 2λ, (1 + e^{ε+λ})η + e^λ δ), Theorem 4.6 of Chen & Ohrimenko 2023.

    δ' is capped at 1 (vacuous); λ = inf gives (inf, 1).
    """
    if not math.isfinite(lam):
        return math.inf, 1.0
    try:
        d = (1.0 + math.exp(epsilon + lam)) * eta + math.exp(lam) * delta
    except OverflowError:
        d = math.inf
    return epsilon + 2.0 * lam, float(min(1.0, d))


class WithExtraLaplace(Mechanism):
    """A mechanism plus Laplace noise that pays for a wrong distributional
    assumption (Theorem 4.7 of Chen & Ohrimenko, AISTATS 2023, η-trimmed).

    Built by :meth:`Mechanism.with_extra_laplace`. Releases
    ``base(F) + Z'`` with Z'_c ~ Lap(W/λ) i.i.d. on every component.

    Privacy
    -------
    Definition: (ε', δ')-Pufferfish privacy for the base mechanism's pairs.

    Theorem 4.7 (paper; proof in its B.5, via Lemma B.1): if M = F + Z is
    (ε, δ)-private for approximations f̃_θ, and W ≥ W∞(f_θ, f̃_θ) for the L1
    norm, then M + Z' is (ε + 2λ, e^λ δ)-private. Between a Gaussian f̃ and a
    law with lighter or bounded tails W∞ is infinite, so we use the trimmed
    version the paper's closing remark allows: W bounds |X − Y| under a
    coupling except on probability η, which gives
    D^η_∞(M_f + Z' ‖ M_f̃ + Z') ≤ λ (both ways) and, chained as in
    Theorem 4.6, (ε' , δ') = (ε + 2λ, e^λ δ + (1 + e^{ε+λ})η).

    W: for each Gaussian approximation N(μ̂_s, C_ab) and component, the
    η/k-trimmed W∞ of the quantile coupling, bounded with DKW bands
    (:func:`~bayespriv.calibration.assumptions.estimate_w_infinity`), summed
    over components (L1). For k = 1 this is a confidence bound (the
    guarantee's confidence is lowered by 1 − ``confidence``); for k > 1 the
    sum couples the joint laws only if their copulas agree (assumption
    ``"componentwise_coupling"``). ``w_infinity=`` replaces the estimate by a
    value you vouch for (assumption ``"w_infinity_given"``).

    Attributes
    ----------
    base : Mechanism
    lam : float
    eta : float
    w_infinity : float
    extra_scale : float
        W/λ.
    """

    proof_assumptions: ClassVar[tuple[str, ...]] = ()
    base = _Fixed("the mechanism whose noise is drawn first")

    def __init__(self, base: Mechanism, lam: float, *, eta: float | None = None, confidence: float = 0.95,
                 w_infinity: float | None = None) -> None:
        if not isinstance(base, Mechanism):
            raise ParameterTypeError(f"base must be a bayespriv Mechanism; got {type(base).__name__}")
        super().__init__(base.calibration, epsilon=base.epsilon, delta=base.delta)
        self.base = base
        self.lam = check_epsilon(lam, "lam")
        nominal = base.guarantee
        _require_distributional(base, nominal)
        self._nominal = nominal
        cal = base.calibration
        if w_infinity is None:
            self.eta = (default_eta(cal, nominal.delta, kind="w_infinity", confidence=confidence) if eta is None
                        else check_delta(eta, "eta"))
            est = estimate_w_infinity(cal, self.eta, confidence=confidence)
            if not math.isfinite(est.value):
                raise fail("eta", f"large enough for {cal.n_draws} draws to bound W∞ (η/(2k) above the DKW half-width)",
                           self.eta)
            self.w_infinity = est.value
            self._w_label = None if est.rigorous else "componentwise_coupling"
            self._confidence_loss = 1.0 - float(confidence)
        else:
            self.eta = 0.0 if eta is None else check_delta(eta, "eta", allow_zero=True)
            self.w_infinity = check_nonnegative(w_infinity, "w_infinity")
            self._w_label = "w_infinity_given"
            self._confidence_loss = 0.0
        self.extra_scale = self.w_infinity / self.lam
        self._gaussian_cov = base._gaussian_cov
        self._laplace = base._laplace
        self.theorem = f"Chen & Ohrimenko 2023, Theorem 4.7 (η-trimmed, η={self.eta:g}, W={self.w_infinity:.4g}) on {nominal.theorem}"
        meaningful_relaxation(*relaxed_parameters(nominal.epsilon, nominal.delta, self.lam, self.eta), eta=self.eta,
                              lam=self.lam)

    @property
    def requested(self) -> tuple[float, float]:
        """What the caller asked for by relaxing the base with λ (Theorem 4.7): its relaxed (ε', δ')."""
        return relaxed_parameters(self._nominal.epsilon, self._nominal.delta, self.lam, self.eta)

    @property
    def noise(self) -> str:
        """The base mechanism's noise plus Laplace, e.g. ``"gaussian+laplace"``."""
        return f"{self.base.noise}+laplace"

    @property
    def noise_cov(self) -> np.ndarray:
        return sealed(self.base.noise_cov + 2.0 * self.extra_scale**2 * np.eye(self.k))

    @property
    def noise_scale(self) -> np.ndarray | None:
        """None: the noise is a sum (see ``base.noise_scale`` and ``extra_scale``)."""
        return None

    @property
    def noise_basis(self) -> np.ndarray | None:
        return None

    @property
    def expected_abs_error(self) -> np.ndarray:
        raise ValidationError("expected_abs_error has no closed form for a sum of noises; use noise_cov instead")

    @property
    def guarantee(self) -> Guarantee:
        nominal = self._nominal
        eps, delta = relaxed_parameters(nominal.epsilon, nominal.delta, self.lam, self.eta)
        assumptions = tuple(a for a in nominal.assumptions if a not in DISTRIBUTIONAL_ASSUMPTIONS)
        if self._w_label is not None:
            assumptions += (self._w_label,)
        conf = nominal.confidence
        if conf is not None and self._confidence_loss:
            conf = round(max(0.0, conf - self._confidence_loss), 12)
        return Guarantee(eps, delta, conf, assumptions, self.theorem)

    def relaxed(self, eta: float | None = None, *, lambda_eta: float | None = None, confidence: float = 0.95) -> Guarantee:
        """Already relaxed: returns :attr:`guarantee`."""
        return self.guarantee

    def _plan_noise(self) -> Any:
        """The base mechanism's exact sampler, then the extra Laplace noise's (see :meth:`_apply_noise`)."""
        extra = plan_laplace(np.full(self.k, self.extra_scale), np.eye(self.k)) if self.extra_scale > 0 else None
        self.__dict__["_extra_plan"] = extra
        return self.base.__dict__.get("_noise_plan")

    def _discretized(self, g: Guarantee) -> Guarantee:
        return g  # the nominal guarantee is the base's, discretization included; the extra plan keeps ε

    def _release_noise(self) -> ReleaseNoise:
        """The base mechanism's noise plus the extra Laplace noise, drawn independently."""
        return noise_of_plans(self.k, self.__dict__.get("_noise_plan"), self.__dict__.get("_extra_plan"))

    def _apply_noise(self, value: np.ndarray, bits: BitSource) -> np.ndarray:
        """Base noise (exact sampler), then the extra Laplace noise added to that private output by
        its own exact plan — whose pointwise ratio bound is Theorem 4.7's premise."""
        out = self.base._apply_noise(value, bits)
        extra = self.__dict__.get("_extra_plan")
        return out if extra is None else np.array(extra.release(out, bits))

    def _draw_noise(self, gen: np.random.Generator) -> np.ndarray:
        out = self.base._draw_noise(gen)
        if self.extra_scale > 0:
            out = out + gen.laplace(0.0, self.extra_scale, size=self.k)
        return out

    def __repr__(self) -> str:
        return f"WithExtraLaplace({self.base!r}, lam={self.lam:g}, eta={self.eta:g}, extra_scale={self.extra_scale:.4g})"


def check_noise(noise: str) -> str:
    return check_choice(noise, "noise", ("gaussian", "laplace"))


def check_gaussian_params(mech: Mechanism, gaussian_calibration: str) -> float:
    """Validate δ for Gaussian noise and return r*(ε, δ)."""
    check_choice(gaussian_calibration, "gaussian_calibration", GAUSSIAN_CALIBRATIONS)
    if not mech.delta > 0:
        raise ValidationError(f"{fail('delta', 'in the open interval (0, 1)', mech.delta)} — Gaussian noise needs "
                              'δ > 0: pass delta=..., or noise="laplace" for δ = 0')
    check_delta(mech.delta)
    return gaussian_radius(mech.epsilon, getattr(mech, "_noise_delta", mech.delta), gaussian_calibration)
