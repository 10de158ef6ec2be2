"""A user's table of the Gaussian-family mechanisms on one calibration: requested vs accounted δ, error, attack.

Each mechanism is built with default arguments at (ε, δ) and read the way a user reads it: established,
the requested (ε, δ), the accountant's δ of the released law (upper bound and point estimate), the expected L2
error of its noise, and the likelihood-ratio attack on released values (accuracy, the most any test may reach
under the claim, and ``n_leaked``, the records one would have to see directly to guess as well). Each may be
followed by a deliberately broken twin (:class:`HalfNoise`: half the noise variance) that the accountant and
the attack catch. Used by the census study (``examples/census_study.py``) and the example notebooks, which run
wherever they are copied because these functions ship with the package.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._deprecation import option_value
from .._validation import check_sequence, fail
from ..calibration.laws import conditions_of
from ..datamodels.base import DataModel
from ..secrets import SecretPair
from ..errors import ParameterTypeError, ValidationError
from ..mechanisms import APGM, DauM, DirM, EigM, ExpM, OptimalGaussian
from bayespriv.privacy.accountant import GaussianNoise, PrivacyAccount, account
from .attack import noise_sampler
from .likelihood import AttackTrials, _attack_trials, likelihood_ratio_attack

if TYPE_CHECKING:
    from bayespriv.calibration import Calibration
    from bayespriv.mechanisms import Mechanism

__all__ = ["FAMILY", "HalfNoise", "TableRows", "calibration_rows", "family_mechanisms", "l2_error", "user_row"]

#: δ of the rows when none is given.
DELTA = 1e-3

#: The Gaussian-family mechanisms of the table, by the name the papers give them.
FAMILY: tuple[tuple[str, Callable[..., Any]], ...] = (
    ("APGM", APGM), ("EigM", EigM), ("DauM", DauM), ("OptimalGaussian", OptimalGaussian),
    ("ExpM(G)", ExpM), ("DirM(G)", lambda cal, **kw: DirM(cal, noise="gaussian", **kw)),
)


@dataclass(frozen=True)
class HalfNoise:
    """A deliberately broken twin of a Gaussian mechanism: the same calibration with half its noise variance.

    Exposes what :func:`~bayespriv.audit.likelihood_ratio_attack` reads (``calibration``, ``noise_cov``,
    ``guarantee``: the claim of the mechanism it halves), so the attack audits the same claim."""

    mechanism: Any

    @property
    def calibration(self) -> Any:
        """The halved mechanism's calibration."""
        return self.mechanism.calibration

    @property
    def noise_cov(self) -> np.ndarray:
        """Half the halved mechanism's noise covariance."""
        return self.mechanism.noise_cov / 2.0

    @property
    def guarantee(self) -> Any:
        """The halved mechanism's claim (which the twin does not meet)."""
        return self.mechanism.guarantee

    @property
    def k(self) -> int:
        """Components of the query."""
        return self.mechanism.k

    @property
    def accounting_of_twin(self) -> PrivacyAccount:
        """The accountant's profile at the mechanism's ε for this noise (same confidence as the mechanism's)."""
        cal = self.calibration
        return account(conditions_of(cal), GaussianNoise(self.noise_cov), self.mechanism.epsilon,
                       confidence=cal.confidence)


@dataclass(frozen=True, kw_only=True)
class TableRows:
    """Which rows :func:`calibration_rows` writes (``calibration_rows(..., rows=...)``), checked once.

    Keyword-only and frozen; the default, ``TableRows()``, writes every Gaussian-family mechanism of
    :data:`FAMILY`, each followed by its half-noise twin. A wrong type is a
    :class:`~bayespriv.errors.ParameterTypeError` and a value out of range a
    :class:`~bayespriv.errors.ValidationError`, each naming the field.

    Attributes
    ----------
    names : sequence of str, optional
        The mechanisms of the table, by their names in :data:`FAMILY` (``"APGM"``, ``"EigM"``, ``"DauM"``,
        ``"OptimalGaussian"``, ``"ExpM(G)"``, ``"DirM(G)"``); the rows keep :data:`FAMILY`'s order.
        Default: all of them.
    twin : bool, default True
        Follow each mechanism with its deliberately broken twin (:class:`HalfNoise`: half the noise
        variance), which the accountant and the attack must catch.

    Examples
    --------
    >>> from bayespriv.audit import TableRows
    >>> TableRows(names=["APGM", "OptimalGaussian"], twin=False)
    TableRows(names=('APGM', 'OptimalGaussian'), twin=False)
    >>> TableRows(names=["APGM", "Laplace"])
    Traceback (most recent call last):
        ...
    bayespriv.errors.ValidationError: names must be names of FAMILY ('APGM', 'EigM', 'DauM', 'OptimalGaussian', \
'ExpM(G)', 'DirM(G)'); got 'Laplace'
    """

    names: Sequence[str] | None = None
    twin: bool = True

    def __post_init__(self) -> None:
        if self.names is not None:
            names = check_sequence(self.names, "names", what="mechanism names")
            known = tuple(name for name, _ in FAMILY)
            for name in names:
                if name not in known:
                    raise fail("names", f"names of FAMILY {known!r}", name)
            object.__setattr__(self, "names", names)
        if not isinstance(self.twin, (bool, np.bool_)):
            raise ParameterTypeError(f"twin must be True or False; got {self.twin!r:.80} of type "
                                     f"{type(self.twin).__name__}")
        object.__setattr__(self, "twin", bool(self.twin))


#: The keywords of their own that :class:`TableRows`'s fields were (deprecated spellings, kept for one release).
_ROWS_FIELDS = ("names", "twin")
#: The attack's keywords of :func:`user_row` and :func:`calibration_rows`, once keywords of their own, and the
#: :class:`~bayespriv.audit.AttackTrials` field each now is.
_TRIALS_KEYWORDS = {"n_trials": "n_trials", "reference": "reference_draws"}


def _row_trials(owner: str, trials: Any, old: Mapping[str, Any]) -> AttackTrials:
    """The ``trials=`` of a call of ``owner`` (None: the defaults), with the deprecated ``n_trials=`` and
    ``reference=`` of ``old`` folded in, warning (``reference=`` is the field ``reference_draws``). An old keyword
    given with ``trials=`` is a :class:`~bayespriv.errors.ValidationError`; a keyword that was never accepted, a
    ``TypeError`` (as Python's)."""
    unknown = [name for name in old if name not in _TRIALS_KEYWORDS]
    if unknown:
        raise TypeError(f"{owner}() got an unexpected keyword argument {unknown[0]!r}")
    return _attack_trials(owner, trials, {_TRIALS_KEYWORDS[name]: value for name, value in old.items()})


def _table_rows(owner: str, rows: Any, old: Mapping[str, Any]) -> TableRows:
    """The ``rows=`` of a call of ``owner`` (None: the defaults), with the deprecated ``names=`` and ``twin=`` of
    ``old`` folded in, warning; an old keyword given with ``rows=`` is a
    :class:`~bayespriv.errors.ValidationError`."""
    return option_value(owner, "rows", TableRows, rows, old)


def family_mechanisms(cal: Calibration, eps: float, delta: float = DELTA,
                      names: Sequence[str] | None = None) -> dict[str, Any]:
    """Each Gaussian-family mechanism (or those in ``names``) with default arguments at (eps, delta), or the
    reason it refuses."""
    out: dict[str, Any] = {}
    for name, make in FAMILY:
        if names is not None and name not in names:
            continue
        try:
            out[name] = make(cal, epsilon=eps, delta=delta)
        except ValidationError as err:
            out[name] = f"refused: {str(err).split(';')[0]}"
    return out


def l2_error(mech: Mechanism | HalfNoise | None, rng: np.random.Generator, n: int = 20_000) -> float:
    """E‖release − F(X)‖₂ = E‖noise‖₂, by Monte Carlo over the mechanism's noise
    (the paper averages over 50 released subsets; the noise does not depend on them)."""
    if mech is None:
        return 0.0
    return float(np.linalg.norm(noise_sampler(mech, mech.k)(n, rng), axis=1).mean())


def user_row(name: str, mech: Mechanism | HalfNoise, model: DataModel, pair: SecretPair,
             rng: np.random.Generator, *, trials: AttackTrials | None = None, **deprecated: Any) -> dict[str, object]:
    """What a user reads off one mechanism: established, requested (ε, δ), the accounted δ (upper bound,
    point estimate, method), the L2 error, and the likelihood-ratio attack on released values (accuracy, the
    claim's accuracy bound, n_leaked). ``trials``: what the attack runs on (:class:`~bayespriv.audit.AttackTrials`;
    default: 2000 datasets per secret, densities from the mechanism's calibration; any draws give a valid
    attack, held-out ones an unbiased one). ``n_trials=`` and ``reference=`` are its deprecated spelling, kept
    for one release."""
    trials = _row_trials("user_row", trials, deprecated)
    twin = isinstance(mech, HalfNoise)
    base = mech.mechanism if twin else mech
    acc = mech.accounting_of_twin if twin else (base.accounting.account if base.accounting is not None else None)
    attack = likelihood_ratio_attack(mech, model, pair, trials=trials, rng=rng)
    return {
        "mechanism": name + (" (half noise)" if twin else ""),
        "established": (False if twin else base.guarantee.established),
        "requested (ε, δ)": f"({base.requested[0]:g}, {base.requested[1]:g})",
        "accounted δ": acc.delta if acc else np.nan,
        "δ estimate": acc.estimate if acc else np.nan,
        "method": acc.method if acc else "gaussian route",
        "L2 error": l2_error(mech, rng),
        "attack accuracy": attack.accuracy,
        "accuracy bound": attack.accuracy_bound,
        "n_leaked": attack.n_leaked if attack.n_leaked is not None else np.nan,
    }


#: Spawn key of the seed :func:`calibration_rows` prepares its model with: a child of the rows' seed sequence that
#: no spawn reaches (they count from 0), so preparing does not move the streams the rows' attacks draw.
_PREPARE_CHILD = 2**32 - 1


def _side_seed(rng: np.random.Generator) -> np.random.SeedSequence:
    """A seed of its own for preparing the model, from ``rng``'s seed sequence without advancing it (from its
    numbers when it has none)."""
    seq = rng.bit_generator.seed_seq
    if isinstance(seq, np.random.SeedSequence):
        return np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, _PREPARE_CHILD),
                                      pool_size=seq.pool_size)
    return np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist())


def calibration_rows(cal: Calibration, model: DataModel, pair: SecretPair, eps: float, *,
                     delta: float = DELTA, rows: TableRows | None = None, rng: np.random.Generator | None = None,
                     trials: AttackTrials | None = None, **deprecated: Any) -> list[dict[str, object]]:
    """:func:`user_row` of each Gaussian-family mechanism built on ``cal`` at (eps, delta) with default
    arguments.

    Parameters
    ----------
    cal : Calibration
    model : DataModel
        Θ the attack's trials are drawn from.
    pair : SecretPair
        The secrets the attack tells apart.
    eps : float
    delta : float, default 1e-3
        The (ε, δ) each mechanism is asked for.
    rows : TableRows, optional
        Which mechanisms, and whether each is followed by its half-noise twin (:class:`TableRows`; default:
        all, each with its twin). ``names=`` and ``twin=`` are its deprecated spelling, kept for one release.
    rng : None, int or Generator
        The attacks' and the L2 errors' draws, one stream over the rows in order. The model is prepared
        once for all rows (a PyMC model's posterior given each secret is run once, not per row), from a
        seed of its own that does not move that stream.
    trials : AttackTrials, optional
        What each row's attack runs on (:class:`~bayespriv.audit.AttackTrials`, the value
        :func:`~bayespriv.audit.likelihood_ratio_attack` takes). ``n_trials=`` and ``reference=`` are its
        deprecated spelling, kept for one release.

    Returns
    -------
    list of dict
        One row per mechanism (a refusal is a row with its reason under ``"method"``), each followed by its
        twin's when ``rows.twin``.
    """
    old_rows = {name: value for name, value in deprecated.items() if name in _ROWS_FIELDS}
    old_trials = {name: value for name, value in deprecated.items() if name not in _ROWS_FIELDS}
    trials = _row_trials("calibration_rows", trials, old_trials)  # first: an unknown keyword is a TypeError
    rows = _table_rows("calibration_rows", rows, old_rows)
    rng = np.random.default_rng(rng)
    if isinstance(model, DataModel) and isinstance(pair, SecretPair):  # anything else: the attack says why not
        model = model.prepare(pair.secrets, np.random.default_rng(_side_seed(rng)))  # once for every row's attack
    table: list[dict[str, object]] = []
    for name, mech in family_mechanisms(cal, eps, delta, names=rows.names).items():
        if isinstance(mech, str):
            table.append({"mechanism": name, "established": False, "method": mech})
            continue
        table.append(user_row(name, mech, model, pair, rng, trials=trials))
        if rows.twin:
            table.append(user_row(name, HalfNoise(mech), model, pair, rng, trials=trials))
    return table
