"""Mechanisms are immutable once built: every public attribute of every class in
``bp.mechanisms.__all__`` refuses assignment and deletion, and the guarantee is
fixed at construction."""

from __future__ import annotations


import numpy as np
import pytest

import bayespriv as bp

from tests._every_mechanism import BUILDERS, mechanism_classes


def test_every_mechanism_class_has_a_builder():
    assert set(mechanism_classes()) <= set(BUILDERS), set(mechanism_classes()) - set(BUILDERS)


def _public_attributes(mech) -> list[str]:
    names = []
    for name in dir(mech):
        if name.startswith("_"):
            continue
        try:
            getattr(mech, name)
        except bp.BayesPrivError:
            pass  # e.g. relaxed_guarantee of a quilt mechanism: refused, but still an attribute to protect
        names.append(name)
    return names


@pytest.mark.parametrize("name", mechanism_classes())
def test_every_public_attribute_refuses_assignment(name):
    mech, _ = BUILDERS[name](1.0)
    attrs = _public_attributes(mech)
    assert {"epsilon", "delta", "guarantee", "noise_cov", "calibration"} <= set(attrs)
    for attr in attrs:
        with pytest.raises(AttributeError):
            setattr(mech, attr, None)
        with pytest.raises(AttributeError):
            delattr(mech, attr)
    with pytest.raises(bp.errors.ImmutableError, match="immutable after construction"):
        mech.brand_new_attribute = 1


@pytest.mark.parametrize("name", mechanism_classes())
def test_guarantee_is_fixed_at_construction_and_noise_read_only(name):
    mech, _ = BUILDERS[name](1.0)
    g = mech.guarantee
    assert mech.guarantee == g and mech.guarantee is not g  # fixed once, handed out as a new object each time
    assert tuple(mech.accounting_record) == tuple(getattr(g, f) for f in mech.accounting_record._fields)
    cov = mech.noise_cov
    if isinstance(cov, np.ndarray) and cov.size:
        with pytest.raises(ValueError):
            cov[0, 0] = 123.0
        with pytest.raises(ValueError):
            cov.setflags(write=True)


def test_apgm_epsilon_cannot_be_lowered_after_construction():
    """m = APGM(cal, epsilon=10, ...); m.epsilon = 0.1 would state ε = 0.1 with the noise of ε = 10."""
    s1, s2 = bp.DistributionSecret("p", 0.2), bp.DistributionSecret("p", 0.8)
    cal = bp.Calibration.from_moments({s1: np.array([0.0]), s2: np.array([1.0])},
                                      {s1: np.array([[1.0]]), s2: np.array([[1.0]])}, [bp.SecretPair(s1, s2)])
    m = bp.mechanisms.APGM(cal, epsilon=10, delta=1e-3)
    with pytest.raises(bp.errors.ImmutableError, match="'epsilon'"):
        m.epsilon = 0.1
    assert m.guarantee.epsilon == 10
