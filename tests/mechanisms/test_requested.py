"""No mechanism states more than it gives, and none states a guarantee weaker than the one asked for.

Every class in ``bp.mechanisms.__all__`` is built (``tests/_every_mechanism.py``) at several ε, on exact
and sampled calibrations where it takes one; its guarantee must state exactly the (ε, δ) requested
(``Mechanism.requested``), δ possibly 0 where a pure-ε theorem gives more, or construction refuses.
"""

from __future__ import annotations


import numpy as np
import pytest

import bayespriv as bp
from bayespriv import mechanisms as M

from tests import _every_mechanism as E


@pytest.mark.parametrize("name", E.mechanism_classes())
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
def test_guarantee_is_exactly_the_request(name, epsilon):
    try:
        mech, _ = E.BUILDERS[name](epsilon)
    except bp.ValidationError:
        return  # refusing is allowed; a weaker guarantee is not
    g, (eps, delta) = mech.guarantee, mech.requested
    assert g.epsilon == eps, (name, g.epsilon, eps)
    assert g.delta == delta or g.delta == 0.0, (name, g.delta, delta)
    if name != "WithExtraLaplace":  # its request is the relaxation of the base it was asked for
        assert (eps, delta) == (mech.epsilon, mech.delta)


SAMPLED_GAUSSIAN = [
    ("APGM", dict()),
    ("EigM", dict()),
    ("DauM", dict()),
    ("OptimalGaussian", dict()),
    ("ExpM", dict(noise="gaussian")),
    ("DirM", dict(noise="gaussian")),
    ("ExpM", dict(noise="laplace")),
]


def _skewed_two_d(n_draws: int) -> bp.Calibration:
    """Two components, one of them skewed (a Gamma mean), with unequal covariances: every structural check fails."""
    model = bp.FunctionDataModel(
        lambda secret, size, rng: {"x": rng.gamma(2.0 + secret.value, size=(size, 20)),
                                   "y": rng.normal(secret.value, 1.0 + secret.value, size=(size, 20))},
        columns=["x", "y"], n_records=20, secret_kinds=(bp.DistributionSecret,))
    pair = bp.SecretPair(bp.DistributionSecret("a", 0.0), bp.DistributionSecret("a", 0.5))
    return bp.calibrate(model, pair, bp.stack(bp.mean("x"), bp.mean("y")), n_draws=n_draws, rng=3)


@pytest.fixture(scope="module")
def skewed_two_d() -> bp.Calibration:
    """Enough draws to certify δ = 1e-3 (the floor of 20 000 draws is about 2.6e-4)."""
    return _skewed_two_d(20_000)


@pytest.mark.parametrize("name,kwargs", SAMPLED_GAUSSIAN, ids=[f"{n}{sorted(k.values())}" for n, k in SAMPLED_GAUSSIAN])
@pytest.mark.slow
def test_sampled_law_is_accounted_at_exactly_the_request(skewed_two_d, name, kwargs):
    delta = 1e-3
    mech = getattr(M, name)(skewed_two_d, epsilon=1.0, delta=delta, **kwargs)
    g = mech.guarantee
    assert (g.epsilon, g.delta) == (1.0, delta) and g.established and g.failed_assumptions == ()
    assert mech.accounting is not None and mech.accounting.account.delta <= delta
    assert "sampled_law" in g.assumptions and g.confidence == 0.95
    assert float(np.max(mech.privacy_curve([1.0]))) <= delta


@pytest.mark.parametrize("name,kwargs", SAMPLED_GAUSSIAN, ids=[f"{n}{sorted(k.values())}" for n, k in SAMPLED_GAUSSIAN])
def test_a_delta_the_draws_cannot_certify_is_refused_with_the_draws_needed(name, kwargs):
    """4 000 draws cannot show a region of mass 1e-6: every mechanism refuses δ = 1e-6 and names the draws (a
    weaker guarantee is never stated); the twin, δ = 1e-3 on 20 000 draws, is established above."""
    with pytest.raises(bp.DrawsNeededError) as info:
        getattr(M, name)(_skewed_two_d(4000), epsilon=1.0, delta=1e-6, **kwargs)
    assert info.value.draws == 4000 and info.value.draws_needed > 1_000_000
    assert f"n_draws={info.value.draws_needed}" in str(info.value)
