"""The contract every mechanism provides: its Guarantee, its noise plan, and release.

:class:`Mechanism` is the abstract base: a mechanism knows its noise and its
:class:`Guarantee` before it sees any data (ask the cost first), fixes both at
construction, and then only releases. ``release`` applies the query to a dataset;
``release_value`` takes an answer F(X) computed elsewhere. With a ledger, the
budget is checked and spent *before* any noise is drawn. The mechanisms built on
sampled moments of F and their relaxations are in :mod:`~bayespriv.mechanisms.sampled_moments`.
"""

from __future__ import annotations

import abc
import dataclasses
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol

import numpy as np
import pandas as pd

from bayespriv._validation import all_finite, check_choice, check_delta, check_epsilon, fail, sealed, thaw
from bayespriv.calibration import Calibration, CalibrationLike
from bayespriv.calibration.contract import check_calibration
from bayespriv.files.calibration_io import check_query
from bayespriv.errors import ImmutableError, ValidationError
from bayespriv.random import RNGLike
from bayespriv.noise import (
    BitSource,
    DEFAULT_GRID_BITS,
    discretization_grid_bits,
    discretization_reserve,
    plan_gaussian,
    plan_laplace,
)
from bayespriv.privacy.guarantee import AccountingRecord, Guarantee, Release, ReleaseOptions
from bayespriv.noise.release_noise import ReleaseNoise, noise_of_plans
from bayespriv.noise.float_noise import sample_gaussian, sample_laplace
from bayespriv.privacy.analytic_gaussian import GAUSSIAN_CALIBRATIONS, gaussian_radius
from .release_path import (
    DEFAULT_OPTIONS,
    MAX_NOISE_SCALE,
    bind_answer,
    bind_dataset,
    check_dataset_name,
    check_ledger,
    check_mechanism_epsilon,
    check_release_rng,
    premise_gate,
    release_options,
    unverified_gate,
    watch_seed,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike
    from bayespriv.queries import Query

__all__ = ["Guarantee", "Release", "ReleaseOptions", "Mechanism", "LedgerLike"]


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


class _FrozenOnConstruction(abc.ABCMeta):
    """The metaclass of :class:`Mechanism`: constructing a mechanism freezes it.

    ``Cls(...)`` runs the whole constructor (the outermost ``__init__``, with every parent
    ``__init__`` it calls) and then :meth:`Mechanism._freeze`, once, unless the constructor already
    froze the instance. No subclass has to remember to freeze; a parent ``__init__`` called from a
    subclass's does not freeze early (only the class call freezes). Unpickling and copying build the
    instance without the class call and restore its frozen state (:meth:`Mechanism.__setstate__`).
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        mechanism = super().__call__(*args, **kwargs)
        if not mechanism.__dict__.get("_frozen", False):
            mechanism._freeze()
        return mechanism


class Mechanism(abc.ABC, metaclass=_FrozenOnConstruction):
    """The contract of every mechanism: a guarantee and a noise plan fixed at construction, then release.

    A concrete mechanism computes its noise from its arguments in ``__init__`` (after
    ``Mechanism.__init__``); when the constructor returns, the class call (the metaclass
    ``_FrozenOnConstruction``) runs :meth:`_freeze` once, which plans the exact sampler, fixes what is
    charged and what the release path reads, and freezes the instance — a subclass never calls it. A
    subclass may call a concrete parent's ``__init__``: freezing waits for the outermost constructor.
    An instance built without the class call (``object.__new__``) is never frozen, and cannot release.
    :meth:`release` and :meth:`release_value` are template methods on top of the members below.

    Abstract members (a subclass missing one cannot be instantiated: ``TypeError``)
    ----------------------------------------------------------------------------------
    _compute_guarantee() -> Guarantee
        What the mechanism promises, computed from the state construction set. Called once, by
        :meth:`_freeze`; :attr:`guarantee` and :attr:`accounting_record` then hand out that fixed
        value (with the exact sampler's discretization cost, :meth:`_discretized`). It must not
        depend on the data, and must state exactly the (ε, δ) asked for (:attr:`requested`) or a
        stronger one, or construction must refuse.
    _plan_noise() -> plan or None
        The exact sampler of the noise (:mod:`~bayespriv.noise`): an object whose
        ``release(value, bits)`` adds one draw to ``value`` (optional ``tv_bound`` and ``theorem``
        for :meth:`_discretized`), or None when nothing is added. Called once, by :meth:`_freeze`;
        additive-noise mechanisms return :meth:`_plan_additive_noise` (the noise set with
        :meth:`_set_gaussian` / :meth:`_set_laplace`).

    Members with a default, which a subclass overrides when its state differs
    --------------------------------------------------------------------------
    _compute_k(), _compute_protected(), _compute_variables()
        The released dimension, the attributes whose budgets a ledger charges (at least one) and
        the columns the value depends on; by default read off ``calibration`` (its ``k``, its
        pairs' secrets, its query's columns). Fixed at construction as :attr:`k`,
        :attr:`protected`, :attr:`variables`.
    _composition : ClassVar[str]
        How releases compose (a key of :data:`bayespriv.ledger.joint.COMPOSITIONS`), read by the
        ledger through :attr:`composition`: ``"joint"`` (Pufferfish, accounted jointly; the
        default), ``"dp"``, ``"subset"``, ``"chain"``, ``"quilt"``. The ledger never looks at the
        class itself.
    _checked_epsilon(epsilon) (classmethod)
        The ε the noise can take (default: > 0 and within
        :func:`~bayespriv.mechanisms.release_path.check_mechanism_epsilon`'s numerical range).

    What the ledger reads: :attr:`accounting_record`, :attr:`protected`, :attr:`variables`,
    :attr:`composition`, the noise (:attr:`noise`, :attr:`noise_scale`, :attr:`noise_basis`, a copy
    of the covariance) and ``calibration``; :meth:`privacy_curve` gives δ(ε) where an accountant
    calibrated the noise.

    Notes
    -----
    Release noise (every mechanism). Noise is drawn by an exact grid plan of
    :mod:`~bayespriv.noise`, built at construction from the
    mechanism's continuous noise (``noise_cov`` or ``noise_scale``/``noise_basis``),
    with random bits from the OS CSPRNG (a seed only for tests), so no release
    leaks the answer's low-order bits (Mironov 2012). How each theorem carries over:

    * Laplace-type proofs (ExpM(L), DirM(L), Wasserstein, GroupDP(L), APMQM, MQM,
      Theorem 4.7's extra noise) rest on the pointwise ratio bound
      exp(Σ_c |Δ_c|/b_c); :class:`~bayespriv.noise.LaplaceGridPlan`
      keeps it verbatim (randomized rounding, integer scales t_c ≥ b_c/g + ½),
      so ε is unchanged.
    * Gaussian proofs (APGM, EigM, DauM, OptimalGaussian, ExpM(G), DirM(G),
      GroupDP(G)) are about the laws of F + N; the grid release is within total
      variation τ of a post-processing of that mechanism, so it is
      (ε, δ + (1 + e^ε)τ)-private
      (:func:`~bayespriv.noise.delta_with_discretization`). The grid
      has b = min(1000, max(60, ⌈log2(200·(1 + e^ε)·k/δ)⌉)) bits (every noise
      coordinate is at least 2^b grid steps, τ ≤ 0.2·2^-b per coordinate), and the
      noise is calibrated at δ minus the reserve 1.001·(1 + e^ε)·k·τ(2^b) ≤ δ/1000
      (:func:`~bayespriv.noise.discretization_grid_bits`; the
      plan's (1 + e^ε)τ is checked against it at construction), so the stated δ
      is exactly the one asked for. b = 60 for every ε ≤ 5, δ ≥ 1e-9.

    Immutability. Once constructed (:meth:`_freeze` has run) the mechanism is frozen: assignment and
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
    #: How releases compose (a key of :data:`bayespriv.ledger.joint.COMPOSITIONS`), declared by the class
    #: and read through :attr:`composition`: Pufferfish mechanisms are accounted jointly by the ledger.
    _composition: ClassVar[str] = "joint"

    def __init__(self, calibration: CalibrationLike | None, *, epsilon: float, delta: float = 0.0) -> None:
        """Fix the calibration and (ε, δ), and the δ the Gaussian noise is calibrated at.

        ``calibration`` must provide what every mechanism reads
        (:class:`~bayespriv.calibration.CalibrationLike`: a :class:`~bayespriv.Calibration`,
        :class:`~bayespriv.networks.QuiltCalibration` or :class:`~bayespriv.networks.ChainCalibration`),
        or be None for a mechanism that needs none and computes its own state
        (:class:`~bayespriv.mechanisms.SubsetCountMechanism`).
        """
        self.calibration = calibration if calibration is None else check_calibration(calibration)
        self.epsilon = self._checked_epsilon(epsilon)
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

    @classmethod
    def _checked_epsilon(cls, epsilon: Any) -> float:
        """ε checked (> 0, finite), and within the range noise scales can be computed in."""
        eps = check_epsilon(epsilon)
        check_mechanism_epsilon(eps)
        return eps

    # -- the abstract contract ---------------------------------------------------------------
    @abc.abstractmethod
    def _compute_guarantee(self) -> Guarantee:
        """The guarantee, from the state construction set (called once, by :meth:`_freeze`)."""

    @abc.abstractmethod
    def _plan_noise(self) -> Any:
        """The exact sampler of the noise, or None (called once, by :meth:`_freeze`)."""

    # -- immutability ----------------------------------------------------------------------
    calibration = _Fixed("the calibration the noise was computed from")
    epsilon = _Fixed("ε asked for")
    delta = _Fixed("δ asked for")

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

    def _freeze(self) -> None:
        """Last stage of construction, run by the class call once the outermost constructor returned
        (never by a subclass): refuse unusable noise, plan the exact sampler, fix what is charged (the
        guarantee, with the discretization's cost) and what the release path reads, seal the public
        state, freeze. A subclass may extend it (calling ``super()._freeze()``)."""
        if self.__dict__.get("_frozen", False):
            raise ImmutableError(f"{type(self).__name__} is already frozen; _freeze ends construction once")
        self._check_noise_finite()
        state = self.__dict__
        state["_noise_plan"] = self._plan_noise()
        state["_record"] = AccountingRecord.of(self._discretized(self._compute_guarantee()))
        state["_fixed"] = self._fixed_state()
        state["_composition_kind"] = self._composition_kind()
        state["_release_noise"] = self._release_noise()
        fixed = state["_fixed"]
        state["_release_fields"] = Release._template(
            query=fixed.query_name, component_names=fixed.component_names, variables=fixed.variables,
            protected=fixed.protected, noise=state["_release_noise"], valid_range=fixed.valid_range)
        _seal_public_state(state)
        state["_frozen"] = True

    def _fixed_state(self) -> "_FixedState":
        """What the release path reads, computed now (fixed once the mechanism is frozen)."""
        fixed = self.__dict__.get("_fixed")
        if fixed is not None:
            return fixed
        cal: CalibrationLike | None = self.calibration
        own = getattr(self, "n_records", None)  # the mechanism's own size (GroupDP, quilt mechanisms)
        if cal is None:  # a mechanism without a calibration computes its own state
            query, records, fingerprint, names = None, None, None, ()
        else:
            query, records, fingerprint, names = cal.query, cal.n_records, cal.query_fingerprint, cal.component_names
        records = records if own is None else int(own)
        k = int(self._compute_k())
        return _FixedState(k, tuple(self._compute_protected()), tuple(self._compute_variables()),
                           records, query, fingerprint, None if query is None else query.name, tuple(names),
                           _valid_range(query, records, k))

    def _composition_kind(self) -> str:
        """How releases compose (fixed at construction): the class's declaration, or ``"dataset_dp"`` for a
        Pufferfish mechanism whose noise alone hides every difference its query can show between two datasets
        (:mod:`bayespriv.mechanisms.whole_dataset`)."""
        declared = type(self)._composition
        fixed = self.__dict__["_fixed"]
        if declared != "joint" or fixed.query is None:
            return declared
        from bayespriv.queries.query import verified_range
        from .whole_dataset import gaussian_covers_box, laplace_covers_box

        box = verified_range(fixed.query, fixed.records, fixed.k)  # a claimed range never makes releases summable
        if box is None:
            return declared

        gauss, lap = self.__dict__.get("_gaussian_cov"), self.__dict__.get("_laplace")
        if gauss is not None and lap is None and self.delta > 0:
            radius = gaussian_radius(self.epsilon, self._noise_delta, "analytic")
            covered = gaussian_covers_box(gauss, box, radius)
        elif lap is not None and gauss is None:
            covered = laplace_covers_box(lap[0], lap[1], box, self.epsilon)
        else:
            covered = False
        return "dataset_dp" if covered else declared

    def _release_noise(self) -> ReleaseNoise:
        """The law of the noise a release carries: what the exact sampler draws from (fixed at construction)."""
        return noise_of_plans(self.k, self.__dict__.get("_noise_plan"))

    @property
    def accounting_record(self) -> AccountingRecord:
        """What a ledger charges for one release: the guarantee fixed at construction, as a tuple
        that cannot be edited (:class:`~bayespriv.privacy.guarantee.AccountingRecord`)."""
        record = self.__dict__.get("_record")
        return AccountingRecord.of(self._discretized(self._compute_guarantee())) if record is None else record

    def _noise_covariance(self) -> np.ndarray:
        """A fresh copy of the covariance of the noise, from the private state the exact sampler was
        planned from (for joint accounting, which must not read a public array)."""
        return np.array(self.noise_cov, dtype=float)

    def _plan_additive_noise(self) -> Any:
        """The floating-point-safe sampler of the noise set by :meth:`_set_gaussian` or
        :meth:`_set_laplace` (None: no noise to add); what an additive-noise mechanism's
        :meth:`_plan_noise` returns."""
        if self._laplace is not None:
            scale, basis = self._laplace
            return plan_laplace(scale, basis) if np.any(scale > 0) else None
        if self._gaussian_cov is None or not np.any(self._gaussian_cov):
            return None
        return plan_gaussian(self._gaussian_cov, grid_bits=self._noise_grid_bits)

    def _discretized(self, g: Guarantee) -> Guarantee:
        """The guarantee of the grid release (:mod:`~bayespriv.noise`).

        Laplace noise keeps ε exactly: the plan preserves the pointwise ratio bound every
        Laplace-type proof rests on. Gaussian noise is within total variation τ of a
        post-processing of the continuous mechanism, which costs (1 + e^ε)τ of δ
        (:func:`~bayespriv.noise.delta_with_discretization`); the noise was
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
        :class:`~bayespriv.noise.GaussianGridPlan`)."""
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

    @property
    def composition(self) -> str:
        """How this mechanism's releases compose with others on the same data, as its class declares it
        (``"joint"``: accounted jointly by the ledger; ``"dp"``, ``"subset"``, ``"chain"``, ``"quilt"``: by a
        theorem, see :mod:`bayespriv.ledger.joint`), or ``"dataset_dp"`` when its noise alone makes it
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
        (:class:`~bayespriv.mechanisms.scale_search.Accounted`: factor, floor and the
        :class:`~bayespriv.privacy.accountant.PrivacyAccount` at (ε, δ)), or None
        when the noise rests on its theorem's premises instead."""
        return self.__dict__.get("_accounted")

    def privacy_curve(self, epsilons: ArrayLike) -> np.ndarray:
        """δ(ε) of the released law for each ε (upper bounds), by the accountant that calibrated the noise.

        Mechanisms whose noise rests on a theorem's premise instead (pure-ε Laplace, GroupDP,
        Wasserstein, quilt mechanisms) have no such curve here; the Gaussian mechanisms compute
        theirs exactly for Gaussian laws (``accountant="gaussian"``).
        """
        if self.accounting is None:
            raise ValidationError(f"privacy_curve needs noise calibrated by the accountant of the released law; "
                                  f"{type(self).__name__}'s guarantee rests on {self.guarantee.theorem.split(';')[0]!r}")
        return self._accounted_curve(epsilons)

    def _accounted_curve(self, epsilons: ArrayLike) -> np.ndarray:
        """δ(ε) of the released law for each ε, by the accountant (upper bounds)."""
        from bayespriv.calibration.laws import conditions_of
        from bayespriv.privacy.accountant import PrivacyProfile
        from bayespriv.privacy.privacy_loss import check_epsilons

        profile = PrivacyProfile(conditions_of(self.calibration), self._accounted.noise,
                                 confidence=self.calibration.confidence)
        return profile.curve(check_epsilons(epsilons))

    @property
    def guarantee(self) -> Guarantee:
        """What this mechanism promises, fixed at construction (ask it before any data).

        A new :class:`Guarantee` at each access, equal to :attr:`accounting_record`: editing one
        (even with ``object.__setattr__``) changes neither what the ledger charges nor what a later
        release states or gates on.
        """
        record = self.__dict__.get("_record")
        return self._compute_guarantee() if record is None else record.guarantee()

    # -- release -------------------------------------------------------------------------
    def _calibrated_records(self) -> int | None:
        """The dataset size the noise was calibrated for: the mechanism's own ``n_records`` (GroupDP,
        quilt mechanisms) or the calibration's; None when unknown (fixed at construction)."""
        return self._fixed_state().records

    def release(self, dataset: pd.DataFrame, *, rng: RNGLike = None, ledger: LedgerLike | None = None,
                dataset_name: str | None = None, options: ReleaseOptions | None = None,
                **deprecated: Any) -> Release:
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
            Checked and charged (atomically) before any noise is drawn. Every release charged to a
            budget without a ``dataset_name`` is on one dataset, the ledger's default account, and is
            accounted jointly with every earlier one there (:mod:`bayespriv.ledger.joint`) — whatever
            frame is passed: a copy, a column subset, shuffled rows or a changed value read the same
            protected data as far as the ledger is concerned.
        dataset_name : str, optional
            Declare that this release reads other data than the releases of the ledger's default
            account and of its other names: it is accounted only with the releases under the same name,
            and its row records the assumption ``declared_separate_data``. If the data is in fact the same,
            the releases under different names were never accounted together and their joint ε is
            unbounded (two releases each private alone can reveal the secret together). Default None:
            the default account (conservative). :class:`~bayespriv.ledger.Session` binds a name to
            one frame.
        options : ReleaseOptions, optional
            The opt-ins and declarations of this release (:class:`~bayespriv.privacy.ReleaseOptions`;
            default None: none of them):

            * ``accept_failed_assumptions`` — release even though an assumption of the proof failed its
              check (see :meth:`check`); the Release and the ledger row then record the guarantee as NOT
              ESTABLISHED. Default: refuse.
            * ``accept_unverified`` — release even though the calibration was loaded with
              ``trust="unverified"`` from a file that did not verify (its guarantee names
              ``unverified_calibration``). Default: refuse with
              :class:`~bayespriv.errors.UnverifiedCalibrationError`.
            * ``independent`` — declare this release independent of the others on the same data: the
              ledger charges its own (ε, δ) instead of accounting it jointly, and records the assumption
              ``declared_independent``. If the releases are not independent, their joint ε is unbounded
              in the same way.
            * ``clip`` — project the noisy value into the query's valid range (:meth:`Release.clipped`:
              counts into [0, n], proportions into [0, 1], bounded means into their bounds), recorded as
              ``postprocessed=("clip",)``. Post-processing: free of privacy cost. Default: never clipped
              unless asked.

            The same four as keywords of their own (``clip=True``) are a deprecated spelling, kept for one
            release (they warn; passing one with ``options`` is an error).

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
        if deprecated or not (options is None or isinstance(options, ReleaseOptions)):
            dataset_name, options = release_options(f"{type(self).__name__}.release", options, deprecated,
                                                    dataset_name=dataset_name)
        fixed = self._release_state()
        query = fixed.query
        if query is None:
            raise ValidationError(
                "release needs a calibration with a query; this one has none (built with from_moments(query=None)). "
                "Use release_value(answer) with an answer computed elsewhere."
            )
        check_ledger(ledger)
        check_release_rng(rng)
        check_dataset_name(dataset_name)
        fingerprint = fixed.query_fingerprint
        if fingerprint is not None:  # the query's code or state changed since calibration
            check_query(query, fingerprint)
        bind_dataset(dataset, tuple(query.columns), fixed.records)
        return self.release_value(query(dataset), rng=rng, ledger=ledger, n_records=len(dataset),
                                  dataset_name=dataset_name, options=options)

    def release_value(self, answer: Any, *, rng: RNGLike = None, ledger: LedgerLike | None = None,
                      n_records: int | None = None, dataset_name: str | None = None,
                      options: ReleaseOptions | None = None, **deprecated: Any) -> Release:
        """Add the noise to an answer F(X) of shape ``(k,)`` computed elsewhere.

        The answer must come from the calibrated query on a dataset of the
        calibrated size: pass ``n_records=`` to have the size checked;
        without it the caller vouches for it. ``dataset_name`` as in :meth:`release`:
        None (default) charges the ledger's default account, where every release
        without a name is accounted together; a name declares other data (recorded
        as ``declared_separate_data``). Other parameters and errors as :meth:`release`;
        ``dataset=`` is the deprecated spelling of ``dataset_name=``, kept for one release.
        """
        if deprecated or not (options is None or isinstance(options, ReleaseOptions)):
            dataset_name, options = release_options(f"{type(self).__name__}.release_value", options, deprecated,
                                                    dataset_name=dataset_name, renamed=True)
        elif options is None:
            options = DEFAULT_OPTIONS
        check_ledger(ledger)
        seeded = check_release_rng(rng)
        fixed = self._release_state()
        value = bind_answer(answer, fixed.k, n_records=n_records, calibrated_n=fixed.records)
        guarantee = self.guarantee
        premise_gate(self, guarantee, options.accept_failed_assumptions)
        unverified_gate(self, guarantee, options.accept_unverified)
        watch_seed(self, rng)
        charge = (ledger.charge(self, seeded=seeded, dataset=dataset_name, independent=options.independent)
                  if ledger is not None else None)  # raises before any noise
        try:
            out = self._noisy(value, rng)
        except BaseException as exc:  # a failure after the spend: void the ledger row, spend nothing
            _void(ledger, charge, exc)
            raise
        release = Release._issued(out, guarantee, type(self).__name__, seeded, self.__dict__["_release_fields"],
                                  getattr(charge, "release_id", None))
        return release.clipped() if options.clip else release

    def _release_state(self) -> "_FixedState":
        """What the release path reads, fixed at construction; refused for an instance that was never
        frozen (built without its class call, e.g. ``object.__new__``: no noise planned, no charge fixed)."""
        fixed = self.__dict__.get("_fixed")
        if fixed is None or not self.__dict__.get("_frozen", False):
            raise ValidationError(f"{type(self).__name__} cannot release: it was not constructed by calling its class "
                                  "(never frozen: its noise and guarantee were never fixed); build it with "
                                  f"{type(self).__name__}(...)")
        return fixed

    def _noisy(self, value: np.ndarray, rng: RNGLike) -> np.ndarray:
        """``value`` plus one draw of the noise from the exact grid sampler, finite (checked).

        Random bits come from the OS CSPRNG (the calling thread's source, kept between releases:
        :meth:`BitSource.for_release`), or from ``rng`` when the caller seeds (tests).
        """
        bits = BitSource.for_release() if rng is None else BitSource.from_rng(rng)
        out = self._apply_noise(value, bits)
        if not all_finite(out):
            raise ValidationError(f"the noisy value of {type(self).__name__} must be finite; got {out} "
                                  "(noise scale near the floating-point range)")
        return out

    def _apply_noise(self, value: np.ndarray, bits: BitSource) -> np.ndarray:
        plan = self.__dict__.get("_noise_plan")
        return value.copy() if plan is None else plan._release(value, bits)

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
        from bayespriv._late import late

        return late("mechanism_html")(self)


def _valid_range(query: Query | None, records: int | None, k: int) -> np.ndarray | None:
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



def _void(ledger: LedgerLike | None, charge: Any, exc: BaseException) -> None:
    """Undo a spend whose release could not be completed (the ledger records the void)."""
    void = getattr(ledger, "void", None)
    rid = getattr(charge, "release_id", None)
    if callable(void) and rid is not None:
        void(rid, f"release failed after the spend: {type(exc).__name__}: {exc}")


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
