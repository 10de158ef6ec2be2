"""Guarantee and Release are self-checking frozen values; a relaxed guarantee that
promises nothing is refused, never returned."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import bayespriv as bp
from bayespriv.mechanisms import Guarantee, Release


@pytest.mark.parametrize("kwargs, name", [
    (dict(epsilon=-1.0, delta=0.0), "epsilon"),
    (dict(epsilon=float("nan"), delta=0.0), "epsilon"),
    (dict(epsilon=float("inf"), delta=0.0), "epsilon"),
    (dict(epsilon=1.0, delta=1.0), "delta"),
    (dict(epsilon=1.0, delta=-0.1), "delta"),
    (dict(epsilon=1.0, delta=0.0, confidence=1.5), "confidence"),
    (dict(epsilon=1.0, delta=0.0, assumptions="gaussian_query"), "assumptions"),
])
def test_guarantee_refuses_what_promises_nothing(kwargs, name):
    kwargs.setdefault("confidence", 1.0)
    with pytest.raises(bp.ValidationError, match=name):
        Guarantee(**kwargs)


def test_guarantee_reports_failed_and_unchecked():
    g = Guarantee(1.0, 1e-3, 0.95, ("gaussian_query", "equal_covariance"), "T", ("equal_covariance",),
                  ("gaussian_query",))
    assert not g.established and "FAILED check: equal_covariance" in str(g) and "unchecked: gaussian_query" in str(g)
    assert "NOT ESTABLISHED" in g._repr_html_()
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.epsilon = 0.1


def test_release_value_is_finite_and_read_only():
    g = Guarantee(1.0, 0.0, 1.0)
    with pytest.raises(bp.ValidationError, match="value"):
        Release(np.array([np.inf]), g, "M", False)
    rel = Release(np.array([1.0, 2.0]), g, "M", True, query="q", component_names=("a", "b"))
    with pytest.raises(ValueError):
        rel.value[0] = 3.0
    assert "seeded" in repr(rel) and "a=1" in repr(rel) and rel.established


def test_relaxed_guarantee_that_promises_nothing_is_refused():
    """300 draws cannot support a finite λ_η at small η, and at η = 0.5 δ' ≥ 1: both refused."""
    model = bp.GaussianDataModel([0.0, 1.0], [[1.0, 0.5], [0.5, 1.0]], ["x", "y"], n_records=50)
    pair = bp.SecretPair(bp.DatasetSecret.mean("x", -0.2), bp.DatasetSecret.mean("x", 0.2))
    cal = bp.calibrate(model, pair, bp.mean("y"), n_draws=300, rng=0)
    mech = bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3, accountant="gaussian")
    for eta in (1e-3, 0.5):
        with pytest.raises(bp.ValidationError, match="guarantees nothing"):
            mech.relaxed(eta)
