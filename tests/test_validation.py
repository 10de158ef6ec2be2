"""Bad input is refused at the boundary with a clear message: parameter, rule, value.

Every error is a ``BayesPrivError`` and a ``ValueError`` (``ValidationError``)
or ``TypeError`` (``ParameterTypeError``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import bayespriv as bp
from bayespriv.mechanisms import APGM, ExpM, GroupDP

A = bp.DatasetSecret.mean("height", 64.0)
B = bp.DatasetSecret.mean("height", 66.0)
PAIR = bp.SecretPair(A, B)


def calibration(query: bp.Query | None = None, k: int = 1) -> bp.Calibration:
    return bp.Calibration.from_moments(
        {A: np.full(k, 150.0), B: np.full(k, 155.0)}, {A: np.eye(k), B: np.eye(k)}, PAIR, query, n_records=20
    )


def bounded_calibration() -> bp.Calibration:
    return calibration(bp.mean("weight", bounds=(0.0, 300.0)))


def model() -> bp.GaussianDataModel:
    return bp.GaussianDataModel([65.0, 160.0], [[9.0, 30.0], [30.0, 225.0]], ["height", "weight"], n_records=20)


# One constructor per mechanism and noise: (name, builder(epsilon, delta), accepts delta = 0).
MECHANISMS = [
    ("APGM", lambda e, d: APGM(calibration(), epsilon=e, delta=d), False),
    ("ExpM-gaussian", lambda e, d: ExpM(calibration(), epsilon=e, delta=d), False),
    ("ExpM-laplace", lambda e, d: ExpM(calibration(), epsilon=e, delta=d, noise="laplace"), True),
    ("GroupDP-gaussian", lambda e, d: GroupDP(bounded_calibration(), epsilon=e, delta=d), False),
    ("GroupDP-laplace", lambda e, d: GroupDP(bounded_calibration(), epsilon=e, delta=d, noise="laplace"), True),
]
MECH_IDS = [m[0] for m in MECHANISMS]


def assert_message(exc: BaseException, *parts: str) -> None:
    message = str(exc)
    for part in parts:
        assert part in message, f"{part!r} not in {message!r}"
    assert isinstance(exc, bp.BayesPrivError)


# -- epsilon and delta, for every mechanism --------------------------------------------------------


@pytest.mark.parametrize("name, build, _", MECHANISMS, ids=MECH_IDS)
@pytest.mark.parametrize("epsilon", [0, 0.0, -1, -1e-9, math.inf, -math.inf, math.nan])
def test_epsilon_must_be_positive_and_finite(name, build, _, epsilon):
    with pytest.raises(bp.ValidationError) as info:
        build(epsilon, 1e-3)
    assert_message(info.value, "epsilon", "finite number > 0", f"got {epsilon!r}")


@pytest.mark.parametrize("name, build, _", MECHANISMS, ids=MECH_IDS)
@pytest.mark.parametrize("epsilon", ["1", True, None, [1.0]])
def test_epsilon_must_be_a_real_number(name, build, _, epsilon):
    with pytest.raises(bp.ParameterTypeError) as info:
        build(epsilon, 1e-3)
    assert_message(info.value, "epsilon", "real number", repr(epsilon))


@pytest.mark.parametrize("name, build, allows_zero", MECHANISMS, ids=MECH_IDS)
@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 1.5, math.nan, math.inf])
def test_delta_outside_unit_interval(name, build, allows_zero, delta):
    if allows_zero and delta == 0.0:
        assert build(1.0, delta).guarantee.delta == 0.0  # pure ε-DP noise accepts δ = 0
        return
    with pytest.raises(bp.ValidationError) as info:
        build(1.0, delta)
    assert_message(info.value, "delta", f"got {delta!r}")
    assert "(0, 1)" in str(info.value) or "[0, 1)" in str(info.value)


@pytest.mark.parametrize("name, build, _", MECHANISMS, ids=MECH_IDS)
def test_delta_wrong_type(name, build, _):
    with pytest.raises(bp.ParameterTypeError) as info:
        build(1.0, "1e-3")
    assert_message(info.value, "delta", "'1e-3'")


def test_mechanism_needs_a_calibration():
    with pytest.raises(bp.ParameterTypeError, match="calibration must be a bayespriv Calibration; got dict"):
        APGM({"means": 1}, epsilon=1.0, delta=1e-3)


def test_unknown_gaussian_calibration():
    with pytest.raises(bp.ValidationError) as info:
        APGM(calibration(), epsilon=1.0, delta=1e-3, gaussian_calibration="optimal")
    assert_message(info.value, "gaussian_calibration", "'analytic'", "'classic'", "got 'optimal'")


# -- calibration inputs ------------------------------------------------------------------------------


def test_secret_on_missing_column():
    pair = bp.SecretPair(bp.DatasetSecret.mean("age", 30.0), bp.DatasetSecret.mean("age", 40.0))
    with pytest.raises(bp.ValidationError) as info:
        bp.calibrate(model(), pair, bp.mean("weight"), n_draws=10, rng=0)
    assert_message(info.value, "secret column", "'age'", "'height'", "'weight'")


def test_query_on_missing_column():
    with pytest.raises(bp.ValidationError) as info:
        bp.calibrate(model(), PAIR, bp.mean("income"), n_draws=10, rng=0)
    assert_message(info.value, "query columns", "'income'")


@pytest.mark.parametrize(
    "fn, shape",
    [
        (lambda b: b["weight"].mean(axis=1), "(10,)"),  # (draws,): forgot the component axis
        (lambda b: np.zeros((b["weight"].shape[0] + 1, 1)), "(11, 1)"),  # (draws + 1, k)
        (lambda b: b["weight"].mean(axis=1)[None, :], "(1, 10)"),  # transposed
    ],
    ids=["draws", "draws+1", "transposed"],
)
def test_query_returning_wrong_shape(fn, shape):
    query = bp.Query(fn, ["weight"], "bad")
    with pytest.raises(bp.ValidationError) as info:
        bp.calibrate(model(), PAIR, query, n_draws=10, rng=0)
    assert_message(info.value, "'bad'", "(draws, k)", f"got shape {shape}")


def test_query_returning_nan():
    query = bp.Query(lambda b: np.full((b["weight"].shape[0], 1), np.nan), ["weight"], "nanq")
    with pytest.raises(bp.ValidationError) as info:
        bp.calibrate(model(), PAIR, query, n_draws=10, rng=0)
    assert_message(info.value, "'nanq'", "finite", "NaN")


@pytest.mark.parametrize("n_draws, error", [(1, bp.ValidationError), (0, bp.ValidationError),
                                            (10.0, bp.ParameterTypeError)])
def test_n_draws(n_draws, error):
    with pytest.raises(error) as info:
        bp.calibrate(model(), PAIR, bp.mean("weight"), n_draws=n_draws, rng=0)
    assert_message(info.value, "n_draws", repr(n_draws))


@pytest.mark.parametrize("confidence", [0.0, 1.0, 1.5, -0.1])
def test_confidence(confidence):
    with pytest.raises(bp.ValidationError) as info:
        bp.calibrate(model(), PAIR, bp.mean("weight"), n_draws=10, rng=0, confidence=confidence)
    assert_message(info.value, "confidence", repr(confidence))


# -- release inputs -----------------------------------------------------------------------------------


@pytest.fixture()
def weight_mechanism() -> APGM:
    return APGM(calibration(bp.mean("weight")), epsilon=1.0, delta=1e-3)


def test_nan_in_the_data(weight_mechanism):
    data = pd.DataFrame({"weight": [150.0, np.nan, 170.0], "height": [60.0, 65.0, 70.0]})
    with pytest.raises(bp.ValidationError) as info:
        weight_mechanism.release(data, rng=0)
    assert_message(info.value, "'weight'", "missing values", "1 NaN")


def test_nan_in_an_unused_column_is_fine(weight_mechanism):
    data = pd.DataFrame({"weight": [150.0, 170.0], "height": [np.nan, 65.0]})
    assert weight_mechanism.release(data, rng=0).value.shape == (1,)


def test_missing_column_at_release(weight_mechanism):
    with pytest.raises(bp.ValidationError) as info:
        weight_mechanism.release(pd.DataFrame({"height": [60.0, 65.0]}), rng=0)
    assert_message(info.value, "dataset", "'weight'", "missing")


def test_empty_dataset(weight_mechanism):
    with pytest.raises(bp.ValidationError, match="dataset must be non-empty"):
        weight_mechanism.release(pd.DataFrame({"weight": pd.Series([], dtype=float)}), rng=0)


def test_release_needs_a_dataframe(weight_mechanism):
    with pytest.raises(bp.ParameterTypeError, match="DataFrame"):
        weight_mechanism.release([150.0, 170.0], rng=0)


def test_release_without_query_points_to_release_value():
    mech = APGM(calibration(), epsilon=1.0, delta=1e-3)
    with pytest.raises(bp.ValidationError, match="release_value"):
        mech.release(pd.DataFrame({"weight": [150.0]}), rng=0)


@pytest.mark.parametrize("answer, shape", [([1.0, 2.0], "(2,)"), ([[1.0]], "(1, 1)"), (np.zeros(3), "(3,)")])
def test_answer_of_wrong_length(answer, shape):
    mech = APGM(calibration(k=1 if shape == "(2,)" else 2), epsilon=1.0, delta=1e-3)
    k = mech.k
    with pytest.raises(bp.ValidationError) as info:
        mech.release_value(answer, rng=0)
    # (the value is currently shown quoted: "got 'shape (3,)'")
    assert_message(info.value, "answer", f"of shape ({k},)", f"shape {shape}")


@pytest.mark.parametrize("answer", [[np.nan], [np.inf]])
def test_answer_not_finite(answer):
    mech = APGM(calibration(), epsilon=1.0, delta=1e-3)
    with pytest.raises(bp.ValidationError) as info:
        mech.release_value(answer, rng=0)
    assert_message(info.value, "answer", "finite")


def test_answer_not_numeric():
    mech = APGM(calibration(), epsilon=1.0, delta=1e-3)
    with pytest.raises(bp.ParameterTypeError, match="answer must be numeric"):
        mech.release_value(["heavy"], rng=0)


@pytest.mark.parametrize("rng", [-1, "seed", 1.5])
def test_bad_rng(rng):
    mech = APGM(calibration(), epsilon=1.0, delta=1e-3)
    with pytest.raises(bp.ParameterTypeError, match="rng"):
        mech.release_value([1.0], rng=rng)


# -- secrets ----------------------------------------------------------------------------------------------


def test_identical_secrets():
    s = bp.DatasetSecret.proportion("sex", "Female", 0.25)
    with pytest.raises(bp.ValidationError) as info:
        bp.SecretPair(s, s)
    assert_message(info.value, "must differ", s.label)
    t = bp.DistributionSecret("p_female", 0.5)
    with pytest.raises(bp.ValidationError, match="must differ"):
        bp.SecretPair(t, bp.DistributionSecret("p_female", 0.5))  # equal, not the same object


def test_pair_on_different_columns():
    with pytest.raises(bp.ValidationError) as info:
        bp.SecretPair(bp.DatasetSecret.mean("height", 64.0), bp.DatasetSecret.mean("weight", 150.0))
    assert_message(info.value, "one attribute", "'height'", "'weight'")
    with pytest.raises(bp.ValidationError, match="one attribute"):
        bp.SecretPair(bp.DistributionSecret("p_female", 0.3), bp.DistributionSecret("p_old", 0.6))


def test_pair_of_different_kinds_or_statistics():
    with pytest.raises(bp.ValidationError, match="one kind"):
        bp.SecretPair(bp.DatasetSecret.mean("p", 0.3), bp.DistributionSecret("p", 0.6))
    with pytest.raises(bp.ValidationError, match="one statistic"):
        bp.SecretPair(bp.DatasetSecret.proportion("sex", "F", 0.3), bp.DatasetSecret.proportion("sex", "M", 0.6))


def test_pair_needs_secrets():
    with pytest.raises(bp.ParameterTypeError, match="SecretPair.b must be a DatasetSecret or DistributionSecret"):
        bp.SecretPair(A, 0.5)


@pytest.mark.parametrize("p", [-0.1, 1.5, 2.0])
def test_proportion_outside_unit_interval(p):
    with pytest.raises(bp.ValidationError) as info:
        bp.DatasetSecret.proportion("sex", "Female", p)
    assert_message(info.value, "[0, 1]", repr(p))


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_proportion_at_the_ends_is_fine(p):
    assert bp.DatasetSecret.proportion("sex", "Female", p).value == p


@pytest.mark.parametrize("value, error", [(math.nan, bp.ValidationError), (math.inf, bp.ValidationError),
                                          ("0.5", bp.ParameterTypeError)])
def test_secret_value_not_finite(value, error):
    with pytest.raises(error, match="value"):
        bp.DatasetSecret.mean("height", value)
    with pytest.raises(error, match="value"):
        bp.DistributionSecret("p_female", value)


def test_proportion_needs_a_category():
    with pytest.raises(bp.ValidationError, match="category"):
        bp.DatasetSecret("sex", "proportion", 0.5)


# -- from_moments --------------------------------------------------------------------------------------


def test_from_moments_missing_secret():
    with pytest.raises(bp.ValidationError, match="every secret"):
        bp.Calibration.from_moments({A: [1.0]}, {A: 1.0, B: 1.0}, PAIR)


def test_from_moments_inconsistent_shapes():
    with pytest.raises(bp.ValidationError, match=r"of shape \(2,\)"):
        bp.Calibration.from_moments({A: [1.0, 2.0], B: [1.0]}, {A: np.eye(2), B: np.eye(2)}, PAIR)


def test_from_moments_covariance_not_psd():
    with pytest.raises(bp.ValidationError, match="positive semi-definite"):
        bp.Calibration.from_moments({A: [1.0, 2.0], B: [1.0, 3.0]}, {A: [[1.0, 2.0], [2.0, 1.0]], B: np.eye(2)}, PAIR)
    with pytest.raises(bp.ValidationError, match="symmetric"):
        bp.Calibration.from_moments({A: [1.0, 2.0], B: [1.0, 3.0]}, {A: [[1.0, 0.5], [0.0, 1.0]], B: np.eye(2)}, PAIR)


def test_from_moments_nan_mean():
    with pytest.raises(bp.ValidationError, match="finite"):
        bp.Calibration.from_moments({A: [np.nan], B: [1.0]}, {A: 1.0, B: 1.0}, PAIR)
