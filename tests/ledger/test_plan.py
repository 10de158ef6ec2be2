"""plan_releases: the mechanism class chosen on the plan (``ReleasePlan.with_mechanism``), and the deprecated
``mechanism=`` keyword, which warns and plans exactly what ``with_mechanism`` plans."""

from __future__ import annotations

import numpy as np
import pytest

import bayespriv as bp
from bayespriv.errors import BayesPrivDeprecationWarning
from bayespriv.ledger import ReleasePlan, plan_releases
from bayespriv.mechanisms import APGM, OptimalGaussian

MODEL = bp.GaussianDataModel([0.0, 0.0, 0.0], [[1, .5, .5], [.5, 1, .5], [.5, .5, 1]], ["s", "a", "b"], n_records=40)
PAIR = bp.SecretPair(bp.DatasetSecret.mean("s", 0.0), bp.DatasetSecret.mean("s", 0.3))
QUERIES = [bp.mean("a"), bp.mean("b")]
ARGS = dict(epsilon=1.0, delta=1e-3, n_draws=20_000, rng=0)


def _same_plan(one: ReleasePlan, other: ReleasePlan) -> bool:
    """The same mechanism class, guarantee and noise, planned together and separately."""
    pairs = [(one.mechanism, other.mechanism), *zip(one.separate, other.separate)]
    return (len(one.separate) == len(other.separate) and one.guarantee == other.guarantee
            and all(type(a) is type(b) and (a.epsilon, a.delta) == (b.epsilon, b.delta)
                    and np.array_equal(a.noise_cov, b.noise_cov) for a, b in pairs))


@pytest.mark.slow
def test_with_mechanism_reuses_the_calibrations_and_the_old_keyword_plans_the_same():
    plan = plan_releases(MODEL, PAIR, QUERIES, **ARGS)
    assert type(plan.mechanism) is OptimalGaussian
    other = plan.with_mechanism(APGM)
    assert type(other.mechanism) is APGM and other.queries == plan.queries
    assert other.calibration is plan.calibration  # nothing drawn again
    assert [m.calibration for m in other.separate] == [m.calibration for m in plan.separate]
    assert [(m.epsilon, m.delta) for m in other.separate] == [(0.5, 5e-4)] * 2
    advice = r"plan_releases\(mechanism=\.\.\.\) is deprecated.*plan_releases\(\.\.\.\)\.with_mechanism\(\.\.\.\)"
    with pytest.warns(BayesPrivDeprecationWarning, match=advice) as caught:
        old = plan_releases(MODEL, PAIR, QUERIES, mechanism=APGM, **ARGS)
    assert len(caught) == 1
    assert _same_plan(old, other) and old.summary().equals(other.summary())


def test_an_unknown_keyword_and_a_mechanism_that_is_not_a_class_are_refused_before_any_draw():
    with pytest.raises(TypeError, match=r"^plan_releases\(\) got an unexpected keyword argument 'mechanisms'$"):
        plan_releases(MODEL, PAIR, QUERIES, mechanisms=APGM, **ARGS)
    with pytest.warns(BayesPrivDeprecationWarning), \
            pytest.raises(bp.ParameterTypeError, match="^mechanism must be a Mechanism class; got 'APGM'"):
        plan_releases(MODEL, PAIR, QUERIES, mechanism="APGM", **ARGS)
    with pytest.raises(bp.ParameterTypeError, match="^mechanism must be a Mechanism class; got <class 'int'>"):
        ReleasePlan((), None, None, ()).with_mechanism(int)
