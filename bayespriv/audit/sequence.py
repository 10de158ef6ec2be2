"""The likelihood-ratio attack on several releases made on the same data, seen as one release."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import block_diag

from .._validation import check_real, fail
from ..calibration.result import Calibration
from ..datamodels.base import DataModel
from ..errors import ValidationError
from ..random import RNGLike, as_seed_sequence
from ..secrets import SecretPair
from .likelihood import AttackTrials, LikelihoodRatioResult, likelihood_ratio_attack


__all__ = ["sequence_attack"]

@dataclass(frozen=True)
class _ReleaseSequence:
    """Several releases on the same data seen as one: the stacked query (calibrated jointly from Θ), the
    block-diagonal noise, and the joint claim a ledger charged for them."""

    calibration: Calibration
    noise_cov: np.ndarray
    guarantee: Any
    noise: str = "gaussian"
    noise_scale: Any = None
    noise_basis: Any = None


@dataclass(frozen=True)
class _Claim:
    epsilon: float
    delta: float


def sequence_attack(
    mechanisms: Any,
    model: DataModel,
    pair: SecretPair | None = None,
    *,
    claimed: tuple[float, float],
    n_trials: int = 2000,
    n_draws: int = 4000,
    rng: RNGLike = None,
    alpha: float = 0.05,
) -> LikelihoodRatioResult:
    """The likelihood-ratio attack on several releases made on the same dataset.

    Every trial draws one dataset from ``model`` per secret, computes each mechanism's query on it and
    adds each mechanism's noise; the attacker decides on the whole sequence with the likelihood ratio of
    the joint released laws (the stacked query drawn jointly from Θ, ``n_draws`` per secret, convolved
    with the block-diagonal noise). ``claimed`` is what a ledger charged for the sequence (its total
    (ε, δ) on the dataset): the result says whether the attack contradicts it. A ledger that adds the
    guarantees of releases that together reveal the secret is caught this way.

    Parameters
    ----------
    mechanisms : sequence of Mechanism
        The releases, in order; each with Gaussian noise (or none) and a calibration with its query.
    model : DataModel
    pair : SecretPair, optional
        Default: the first mechanism's calibration's worst pair.
    claimed : (float, float)
        The (ε, δ) charged for the whole sequence.
    n_trials, n_draws : int
    rng : None, int, SeedSequence or Generator
    alpha : float

    Returns
    -------
    LikelihoodRatioResult
    """
    from ..calibration import calibrate
    from ..queries import stack

    mechs = list(mechanisms)
    if not mechs:
        raise fail("mechanisms", "a non-empty sequence of mechanisms", mechs)
    covs = []
    for m in mechs:
        if getattr(m, "noise", "gaussian") != "gaussian" or getattr(m, "calibration", None) is None:
            raise ValidationError(f"sequence_attack needs Gaussian noise and a calibration on every release; got "
                                  f"{type(m).__name__} with noise {getattr(m, 'noise', None)!r}")
        covs.append(np.asarray(m.noise_cov, dtype=float))
    block = block_diag(*covs)
    pair = mechs[0].calibration.worst_pair if pair is None else pair
    s_cal, s_attack = as_seed_sequence(rng).spawn(2)
    joint = calibrate(model, pair, stack(*[m.calibration.query for m in mechs]), n_draws=n_draws, rng=s_cal)
    eps, dlt = (check_real("claimed", claimed[0]), check_real("claimed", claimed[1]))
    seq = _ReleaseSequence(joint, block, _Claim(eps, dlt))
    return likelihood_ratio_attack(seq, model, pair, trials=AttackTrials(n_trials=n_trials), rng=s_attack, alpha=alpha)
