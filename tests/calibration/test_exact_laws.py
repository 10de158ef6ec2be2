"""Calibrations that hold exact laws (``Calibration.finite_laws``): calibrate(exact_laws=...), from_laws, validation.

Deterministic: the laws are computed, not sampled; where draws are compared, the comparison is exact
(the same seed gives the same draws whether or not the laws are taken).
"""

from __future__ import annotations

import copy
import dataclasses
import pickle

import numpy as np
import pandas as pd
import pytest

import bayespriv as bp
from bayespriv.calibration.laws import FiniteLaw, conditions_of
from bayespriv.errors import ImmutableError, ParameterTypeError, ValidationError


def _table(n_rows: int = 400, seed: int = 2) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    sex = g.choice(["F", "M"], n_rows)
    xray = np.where(g.random(n_rows) < np.where(sex == "F", 0.2, 0.5), "pos", "neg")
    return pd.DataFrame({"sex": sex, "xray": xray, "age": g.integers(20, 80, n_rows).astype(float)})


TABLE = _table()
A, B = bp.DatasetSecret.proportion("sex", "F", 0.4), bp.DatasetSecret.proportion("sex", "F", 0.6)
PAIR = bp.SecretPair(A, B)


def _model(n: int = 30) -> bp.EmpiricalDataModel:
    return bp.EmpiricalDataModel(TABLE, n)


def test_calibrate_takes_the_exact_laws_of_a_count_of_a_category():
    query = bp.count("xray", "pos")
    cal = bp.calibrate(_model(), PAIR, query, n_draws=500, rng=1)
    model = _model()
    assert list(cal.finite_laws) == [A.label, B.label]
    for s in (A, B):
        points, weights = model.exact_law(s, query)
        law = cal.finite_laws[s.label]
        assert law.points.tobytes() == points.tobytes()
        np.testing.assert_allclose(law.weights, weights, rtol=0, atol=1e-15)
        assert cal.means[s].tobytes() == law.mean.tobytes() and cal.covs[s].tobytes() == law.cov.tobytes()
    assert cal.confidence == 1.0 and cal.z == 0.0 and cal.exact
    assert not np.any(cal.mean_se) and not np.any(cal.cov_se) and not np.any(cal.cov_se_white)
    assert cal.assumptions == ("exchangeable_records",)  # no monte_carlo_clt: no bound rests on the draws
    assert cal.n_draws == 500 and cal.sample_array.shape == (2, 500, 1)  # the draws stay, for diagnostics
    assert cal.sensitivity(2, bound=True) == cal.sensitivity(2) and cal.sensitivity_se() == 0.0
    assert "exact laws" in repr(cal) and len(cal.summary()) == 1
    assert {c.kind for c in conditions_of(cal)} == {"finite"}


def test_the_laws_take_no_randomness_the_draws_are_those_of_the_sampled_calibration():
    query = bp.proportion("xray", "pos")
    exact = bp.calibrate(_model(), PAIR, query, n_draws=300, rng=7)
    sampled = bp.calibrate(_model(), PAIR, query, n_draws=300, rng=7, exact_laws=False)
    assert exact.sample_array.tobytes() == sampled.sample_array.tobytes()
    assert not sampled.finite_laws and sampled.confidence == 0.95 and "monte_carlo_clt" in sampled.assumptions


def test_auto_samples_as_before_when_the_model_cannot_tabulate():
    opaque = bp.count(lambda b: b["xray"] == "pos", "xray")
    for query in (opaque, bp.mean("age"), bp.stack(bp.count("xray", "pos"), bp.count("xray", "neg"))):
        cal = bp.calibrate(_model(), PAIR, query, n_draws=300, rng=1)
        assert not cal.finite_laws and cal.confidence == 0.95
    gaussian = bp.GaussianDataModel([0.0], [[1.0]], ["x"], 10)
    pair = bp.SecretPair(bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 1.0))
    assert not bp.calibrate(gaussian, pair, bp.count("x", 1.0), n_draws=100, rng=1).finite_laws


def test_exact_laws_true_requires_them_false_refuses_them():
    opaque = bp.count(lambda b: b["xray"] == "pos", "xray")
    with pytest.raises(ValidationError, match=r"exact_laws must be 'auto' or False for EmpiricalDataModel, which cannot "
                                              r"tabulate the law of query 'count' under secret 'share\(sex=F\)=0.4'"):
        bp.calibrate(_model(), PAIR, opaque, n_draws=300, rng=1, exact_laws=True)
    assert bp.calibrate(_model(), PAIR, bp.count("xray", "pos"), n_draws=300, rng=1, exact_laws=True).finite_laws
    for bad in ("yes", None, 1):
        with pytest.raises(ValidationError, match="exact_laws must be 'auto', True or False"):
            bp.calibrate(_model(), PAIR, opaque, n_draws=300, rng=1, exact_laws=bad)


def test_with_exact_laws_the_draws_are_not_held_to_the_bounds_minimum():
    """No bound rests on the draws, so a few suffice (as diagnostics); the sampled route still refuses them."""
    cal = bp.calibrate(_model(), PAIR, bp.count("xray", "pos"), n_draws=10, rng=1)
    assert cal.n_draws == 10 and cal.exact
    with pytest.raises(ValidationError, match="n_draws must be at least"):
        bp.calibrate(_model(), PAIR, bp.count("xray", "pos"), n_draws=10, rng=1, exact_laws=False)


class _NoLaws(bp.EmpiricalDataModel):
    def exact_law(self, secret, query):
        return None


TABLES = {2: TABLE, 3: _table(seed=3)}


def _builder(seed: int, tabulate: bool = True):
    return (bp.EmpiricalDataModel if tabulate else _NoLaws)(TABLES[seed], 30, theta={"seed": seed})


def test_a_family_takes_the_laws_of_every_member_or_none():
    query = bp.count("xray", "pos")
    family = bp.DataModelFamily(lambda seed: _builder(seed), {"seed": [2, 3]})
    cal = bp.calibrate(family, PAIR, query, n_draws=200, rng=1)
    assert cal.is_family and all(m.finite_laws and m.exact for m in cal.family)
    for m in cal.family:
        assert m.finite_laws[A.label].points.tobytes() == \
            _builder(m.theta["seed"]).exact_law(A, query)[0].tobytes()
    worst = max(cal.family, key=lambda m: m.sensitivity(2, bound=True))
    assert cal.finite_laws[A.label] is worst.finite_laws[A.label] and cal.theta == worst.theta
    assert {c.kind for c in conditions_of(cal)} == {"finite"} and len(conditions_of(cal)) == 2
    mixed = bp.DataModelFamily(lambda seed: _builder(seed, tabulate=seed == 2), {"seed": [2, 3]})
    cal = bp.calibrate(mixed, PAIR, query, n_draws=200, rng=1)
    assert not cal.finite_laws and not any(m.finite_laws for m in cal.family) and cal.confidence == 0.95


def test_bayesian_network_distribution_secrets_get_binomial_laws():
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    net = DiscreteBayesianNetwork([("smoker", "xray")])
    net.add_cpds(TabularCPD("smoker", 2, [[0.7], [0.3]], state_names={"smoker": ["no", "yes"]}),
                 TabularCPD("xray", 2, [[0.9, 0.6], [0.1, 0.4]], evidence=["smoker"], evidence_card=[2],
                            state_names={"xray": ["neg", "pos"], "smoker": ["no", "yes"]}))
    model = bp.BayesNetDataModel(net, n_records=25)
    pair = bp.SecretPair(bp.DistributionSecret("P(smoker=yes)", 0.2), bp.DistributionSecret("P(smoker=yes)", 0.4))
    cal = bp.calibrate(model, pair, bp.count("xray", "pos"), n_draws=100, rng=1)
    q = 0.8 * 0.1 + 0.2 * 0.4  # P(xray = pos) when P(smoker = yes) = 0.2
    assert cal.means[pair.a][0] == pytest.approx(25 * q, rel=1e-12)
    assert cal.covs[pair.a][0, 0] == pytest.approx(25 * q * (1 - q), rel=1e-12)
    assert cal.assumptions == ()


# -- Calibration.from_laws and the field's rules ----------------------------------------------------------
def _laws():
    return {A: ([0, 1, 2], [0.49, 0.42, 0.09]), B: FiniteLaw([0, 1, 2], [0.25, 0.5, 0.25])}


def test_from_laws_gives_exact_moments_and_keeps_the_laws():
    cal = bp.Calibration.from_laws(_laws(), PAIR, bp.count("xray", "pos"), n_records=2)
    assert cal.means[A][0] == pytest.approx(0.6, rel=1e-15) and cal.covs[A][0, 0] == pytest.approx(0.42, rel=1e-14)
    assert cal.confidence == 1.0 and cal.n_draws is None and cal.sample_array is None and cal.assumptions == (
        "exchangeable_records",)
    assert cal.component_names == ("count(xray=pos)",) and cal.n_records == 2
    assert cal.finite_laws[B.label].weights.tolist() == [0.25, 0.5, 0.25]


@pytest.mark.parametrize("laws, error, match", [
    ({A: ([0, 1], [0.5, 0.5])}, ValidationError, r"laws must give a law for every secret of the pairs; missing 'share\(sex=F\)=0.6'"),
    ({A: ([0, 1], [0.5, 0.6]), B: ([0, 1], [0.5, 0.5])}, ValidationError, r"laws\[share\(sex=F\)=0.4\] must be a FiniteLaw or a pair"),
    ({A: [0.5, 0.5], B: ([0, 1], [0.5, 0.5])}, ValidationError, r"laws\[share\(sex=F\)=0.4\] must be a FiniteLaw or a pair"),
    ({A: "law", B: ([0, 1], [0.5, 0.5])}, ParameterTypeError, r"laws\[share\(sex=F\)=0.4\] must be a FiniteLaw or a pair"),
    ({A: ([[0, 1]], [1.0]), B: ([0, 1], [0.5, 0.5])}, ValidationError, r"laws\[share\(sex=F\)=0.6\] must be of dimension k = 2"),
    ([0.5], ParameterTypeError, "laws must be a mapping"),
])
def test_from_laws_errors_name_the_argument(laws, error, match):
    with pytest.raises(error, match=match):
        bp.Calibration.from_laws(laws, PAIR)


def test_the_laws_and_the_calibration_cannot_be_changed():
    cal = bp.Calibration.from_laws(_laws(), PAIR)
    law = cal.finite_laws[A.label]
    with pytest.raises(TypeError):
        cal.finite_laws[A.label] = law  # a read-only mapping
    with pytest.raises(ImmutableError):
        object.__setattr__(cal, "finite_laws", {})
    with pytest.raises(ImmutableError):
        object.__setattr__(law, "weights", np.array([1.0, 0, 0]))
    with pytest.raises(ValueError):
        law.weights.setflags(write=True)
    for other in (pickle.loads(pickle.dumps(cal)), copy.deepcopy(cal)):
        w = other.finite_laws[A.label].weights
        assert w.tobytes() == law.weights.tobytes() and not w.flags.writeable
        with pytest.raises(ValueError):
            w.setflags(write=True)


def test_a_calibration_with_laws_must_agree_with_them():
    good = bp.Calibration.from_laws(_laws(), PAIR)
    fields = {f.name: getattr(good, f.name) for f in dataclasses.fields(good)}
    law_a = good.finite_laws[A.label]
    cases = [
        ({"finite_laws": {A.label: law_a}}, r"finite_laws must be one law per secret"),
        ({"finite_laws": {A.label: law_a, B.label: FiniteLaw([[0, 0]], [1.0])}}, r"finite_laws\[.*\] must be a law of F's dimension"),
        ({"finite_laws": {A.label: law_a, B.label: ([0, 1], [0.5, 0.5])}}, r"finite_laws\[.*\] must be a FiniteLaw"),
        ({"mean_array": good.mean_array + [[1e-6], [0.0]]}, r"mean_array and cov_array must be the moments of finite_laws; "
                                                            r"got mean of secret 'share\(sex=F\)=0.4'"),
        ({"confidence": 0.95, "z": 3.0}, r"confidence must be 1.0 with exact laws"),
        ({"finite_laws": [law_a]}, r"finite_laws must be a mapping"),
    ]
    for change, match in cases:
        with pytest.raises((ValidationError, ParameterTypeError), match=match):
            bp.Calibration(**{**fields, **change})
    # secrets of categories 1 and "1" have the same label: laws keyed by label cannot tell them apart
    one, text = ([bp.DatasetSecret.proportion("sex", c, p) for p in (0.4, 0.6)] for c in (1, "1"))
    with pytest.raises(ValidationError, match="keyed by distinct secret labels"):
        bp.Calibration.from_laws({s: ([0], [1.0]) for s in one + text}, [bp.SecretPair(*one), bp.SecretPair(*text)])


def test_a_family_root_and_members_all_hold_laws_or_none():
    member = bp.Calibration.from_laws(_laws(), PAIR)
    plain = bp.Calibration.from_moments({A: [0.6], B: [1.0]}, {A: [[0.42]], B: [[0.5]]}, PAIR)
    with pytest.raises(ValidationError, match="finite_laws must be given for every member of a family and its root"):
        dataclasses.replace(member, family=(member, plain))
    with pytest.raises(ValidationError, match="finite_laws must be given for every member"):
        dataclasses.replace(plain, family=(member, member))
    assert dataclasses.replace(member, family=(member, member)).is_family


def test_convergence_of_the_draws_is_refused_for_exact_laws():
    """Nothing rests on the draws of an exact-law calibration: their number has nothing to converge."""
    cal = bp.calibrate(_model(), PAIR, bp.count("xray", "pos"), n_draws=100, rng=1)
    for call in (cal.convergence, lambda: cal.draws_for_slack(0.1), lambda: bp.diagnostics.plot_convergence(cal)):
        with pytest.raises(ValidationError, match="no bound rests on its draws"):
            call()
    assert cal.to_inference_data().posterior.sizes["draw"] == 100  # the draws themselves stay available


def test_a_plug_in_request_is_exact_with_the_laws_and_plug_in_without():
    query = bp.count("xray", "pos")
    cal = bp.calibrate(_model(), PAIR, query, n_draws=50, rng=1, confidence=None)
    assert cal.exact and not cal.plug_in and "estimated_moments" not in cal.assumptions
    plug = bp.calibrate(_model(), PAIR, query, n_draws=50, rng=1, confidence=None, exact_laws=False)
    assert plug.plug_in and "estimated_moments" in plug.assumptions
