"""GroupDP: the group differential privacy baseline (Chen & Ohrimenko 2023, §5.1).

Exact checks only: the noise is a closed form of the query's declared bounds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import bayespriv as bp
from bayespriv.calibration import calibration_from_samples
from bayespriv.mechanisms import GroupDP
from bayespriv.privacy import gaussian_radius

N = 50
LO, HI = 20.0, 120.0
A = bp.DatasetSecret.mean("income", 40.0)
B = bp.DatasetSecret.mean("income", 60.0)
PAIR = bp.SecretPair(A, B)


def stacked_query() -> bp.Query:
    return bp.stack(bp.count(lambda b: b["age"] > 40, "age"), bp.mean("income", bounds=(LO, HI)))


def make_calibration(query: bp.Query | None = None, n_records: int | None = N) -> bp.Calibration:
    query = stacked_query() if query is None else query
    return bp.Calibration.from_moments(
        {A: [20.0, 40.0], B: [22.0, 60.0]}, {A: np.eye(2), B: np.eye(2)}, PAIR, query, n_records=n_records
    )


def record_sensitivity(n: int) -> np.ndarray:
    """s = (1, (hi − lo)/n): one record moves a count by 1 and a bounded mean by (hi − lo)/n."""
    return np.array([1.0, (HI - LO) / n])


def test_gaussian_group_sensitivity_all_records():
    """L2 group sensitivity n‖s‖₂; σ = that / r*, with the classic r* = ε/c at ε < 1 computed here."""
    mech = GroupDP(make_calibration(), epsilon=0.5, delta=1e-5, gaussian_calibration="classic")
    sens = N * math.sqrt(1.0 + ((HI - LO) / N) ** 2)  # = sqrt(50² + 100²)
    assert sens == pytest.approx(math.hypot(50.0, 100.0))
    assert mech.sensitivity == pytest.approx(sens, rel=1e-14)
    np.testing.assert_allclose(mech.record_sensitivity, record_sensitivity(N), rtol=1e-15)
    r = 0.5 / math.sqrt(2 * math.log(1.25 / 1e-5))
    np.testing.assert_allclose(mech.noise_cov, (sens / r) ** 2 * np.eye(2), rtol=1e-12)
    assert mech.group_size == N and mech.n_records == N


def test_gaussian_group_sensitivity_analytic_and_group_size():
    mech = GroupDP(make_calibration(), epsilon=2.0, delta=1e-6, group_size=5)
    sens = 5 * np.linalg.norm(record_sensitivity(N))
    assert mech.sensitivity == pytest.approx(sens, rel=1e-14)
    np.testing.assert_allclose(mech.noise_cov, (sens / gaussian_radius(2.0, 1e-6)) ** 2 * np.eye(2), rtol=1e-12)


def test_laplace_group_sensitivity():
    """L1: n‖s‖₁ = n + (hi − lo) = 150; scale per component = 150/ε."""
    mech = GroupDP(make_calibration(), epsilon=0.5, noise="laplace")
    assert mech.sensitivity == pytest.approx(N + (HI - LO), rel=1e-15)
    np.testing.assert_allclose(mech.noise_scale, [300.0, 300.0], rtol=1e-15)
    np.testing.assert_array_equal(mech.noise_basis, np.eye(2))
    g = GroupDP(make_calibration(), epsilon=0.5, noise="laplace", group_size=3)
    assert g.sensitivity == pytest.approx(3 * (1 + (HI - LO) / N), rel=1e-15)


@pytest.mark.parametrize("noise, delta", [("gaussian", 1e-5), ("laplace", 0.0), ("laplace", 1e-5)])
def test_guarantee_exact_and_assumption_free(noise, delta):
    mech = GroupDP(make_calibration(), epsilon=0.5, delta=delta, noise=noise)
    g = mech.guarantee
    assert g.confidence == 1.0
    assert g.assumptions == ()
    assert g.epsilon == 0.5
    assert g.delta == (0.0 if noise == "laplace" else delta)
    assert f"{N} of {N}" in g.theorem


def test_guarantee_does_not_inherit_plug_in_assumptions():
    """Group DP never uses the moments: even on a plug-in calibration it is exact."""
    rng = np.random.default_rng(0)
    samples = rng.normal(size=(2, 100, 2))
    cal = calibration_from_samples(samples, (A, B), (PAIR,), stacked_query(), confidence=None, n_records=N)
    g = GroupDP(cal, epsilon=1.0, delta=1e-6).guarantee
    assert g.confidence == 1.0 and g.assumptions == ()


def test_n_records_from_a_sampled_calibration():
    """calibrate() records n_records from the data model; GroupDP uses it."""
    model = bp.GaussianDataModel([45.0, 50.0], [[100.0, 30.0], [30.0, 400.0]], ["age", "income"], n_records=30)
    cal = bp.calibrate(model, PAIR, stacked_query(), n_draws=200, rng=1)
    mech = GroupDP(cal, epsilon=1.0, noise="laplace")
    assert mech.n_records == 30
    assert mech.sensitivity == pytest.approx(30 * (1 + (HI - LO) / 30), rel=1e-15)


def test_release_on_a_dataset():
    import pandas as pd

    mech = GroupDP(make_calibration(), epsilon=1.0, noise="laplace")
    data = pd.DataFrame({"age": np.arange(N, dtype=float), "income": np.full(N, 500.0)})
    release = mech.release(data, rng=3)
    assert release.value.shape == (2,)
    assert release.component_names == ("count", "mean(income)")
    assert release.seeded


@pytest.mark.parametrize(
    "query",
    [
        bp.mean("income"),
        bp.stack(bp.count(lambda b: b["age"] > 40, "age"), bp.mean("income")),
        bp.Query(lambda b: np.stack([b["age"].mean(1), b["income"].mean(1)], axis=1), ["age", "income"], "custom"),
    ],
    ids=["mean-without-bounds", "stack-with-unbounded-mean", "custom-query"],
)
def test_query_without_bounds_refused(query):
    k = 1 if query.name == "mean(income)" else 2
    cal = bp.Calibration.from_moments({A: np.zeros(k), B: np.ones(k)}, {A: np.eye(k), B: np.eye(k)}, PAIR, query,
                                      n_records=N)
    with pytest.raises(bp.ValidationError) as info:
        GroupDP(cal, epsilon=1.0, noise="laplace")
    message = str(info.value)
    assert "bounds" in message and query.name in message


def test_calibration_without_query_refused():
    cal = bp.Calibration.from_moments({A: [0.0], B: [1.0]}, {A: 1.0, B: 1.0}, PAIR, n_records=N)
    with pytest.raises(bp.ValidationError, match="query"):
        GroupDP(cal, epsilon=1.0, noise="laplace")


def test_n_records_unknown_refused_unless_given():
    cal = make_calibration(n_records=None)
    with pytest.raises(bp.ValidationError, match="n_records"):
        GroupDP(cal, epsilon=1.0, noise="laplace")
    assert GroupDP(cal, epsilon=1.0, noise="laplace", n_records=10).sensitivity == pytest.approx(10 + (HI - LO))


@pytest.mark.parametrize("group_size", [N + 1, 1000])
def test_group_size_larger_than_n_refused(group_size):
    with pytest.raises(bp.ValidationError) as info:
        GroupDP(make_calibration(), epsilon=1.0, noise="laplace", group_size=group_size)
    message = str(info.value)
    assert "group_size" in message and str(group_size) in message and str(N) in message


@pytest.mark.parametrize("group_size, error", [(0, bp.ValidationError), (-2, bp.ValidationError),
                                               (2.5, bp.ParameterTypeError), (True, bp.ParameterTypeError)])
def test_group_size_invalid(group_size, error):
    with pytest.raises(error, match="group_size"):
        GroupDP(make_calibration(), epsilon=1.0, noise="laplace", group_size=group_size)


def test_a_group_smaller_than_the_dataset_covers_no_secret_and_is_refused():
    """The attack: group_size=1 against a secret on mean(x) would state "(1, 0)" with Laplace scale 0.02, which a
    likelihood-ratio test sees through every time. A share or a mean over the dataset can change all n records:
    the guarantee fails group_covers_secret and a release is refused, naming the remedy and spending nothing."""
    import pandas as pd

    mech = GroupDP(make_calibration(), epsilon=1.0, noise="laplace", group_size=1)
    assert not mech.guarantee.established and mech.guarantee.failed_assumptions == ("group_covers_secret",)
    data = pd.DataFrame({"age": np.full(N, 30.0), "income": np.full(N, 50.0)})
    with pytest.raises(bp.AssumptionFailedError, match="group_covers_secret.*default group_size"):
        mech.release(data)
    assert GroupDP(make_calibration(), epsilon=1.0, noise="laplace").guarantee.established  # the twin: g = n holds
