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

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..calibration.laws import conditions_of
from ..errors import ValidationError
from ..mechanisms import APGM, DauM, DirM, EigM, ExpM, OptimalGaussian
from bayespriv.privacy.accountant import GaussianNoise, PrivacyAccount, account
from .attack import noise_sampler
from .likelihood import likelihood_ratio_attack

if TYPE_CHECKING:
    from bayespriv.calibration import Calibration
    from bayespriv.datamodels import DataModel
    from bayespriv.mechanisms import Mechanism
    from bayespriv.secrets import SecretPair

__all__ = ["FAMILY", "HalfNoise", "calibration_rows", "family_mechanisms", "l2_error", "user_row"]

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


def family_mechanisms(cal: Calibration, eps: float, delta: float = DELTA,
                      names: Iterable[str] | None = None) -> dict[str, Any]:
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
             rng: np.random.Generator, n_trials: int = 2000, reference: Any = None) -> dict[str, object]:
    """What a user reads off one mechanism: established, requested (ε, δ), the accounted δ (upper bound,
    point estimate, method), the L2 error, and the likelihood-ratio attack on released values (accuracy, the
    claim's accuracy bound, n_leaked). ``reference``: draws behind the attacker's densities (default: the
    mechanism's calibration; any draws give a valid attack, held-out ones an unbiased one)."""
    twin = isinstance(mech, HalfNoise)
    base = mech.mechanism if twin else mech
    acc = mech.accounting_of_twin if twin else (base.accounting.account if base.accounting is not None else None)
    attack = likelihood_ratio_attack(mech, model, pair, n_trials=n_trials, rng=rng, reference_draws=reference)
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


def calibration_rows(cal: Calibration, model: DataModel, pair: SecretPair, eps: float, *,
                     delta: float = DELTA, twin: bool = True, names: Iterable[str] | None = None,
                     rng: np.random.Generator | None = None, n_trials: int = 2000,
                     reference: Any = None) -> list[dict[str, object]]:
    """:func:`user_row` of each Gaussian-family mechanism (or those in ``names``) built on ``cal`` at
    (eps, delta) with default arguments, each followed by its half-noise twin when ``twin``."""
    rng = np.random.default_rng(rng)
    rows: list[dict[str, object]] = []
    for name, mech in family_mechanisms(cal, eps, delta, names=names).items():
        if isinstance(mech, str):
            rows.append({"mechanism": name, "established": False, "method": mech})
            continue
        rows.append(user_row(name, mech, model, pair, rng, n_trials, reference))
        if twin:
            rows.append(user_row(name, HalfNoise(mech), model, pair, rng, n_trials, reference))
    return rows
