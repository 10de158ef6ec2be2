"""Bad input is refused at the boundary with a clear message: parameter, rule, value.

Every error is a ``BayesPrivError`` and a ``ValueError`` (``ValidationError``)
or ``TypeError`` (``ParameterTypeError``).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import pickle
from types import MappingProxyType

import numpy as np
import pandas as pd
import pytest

import bayespriv as bp
from bayespriv.mechanisms import APGM, ExpM, GroupDP

from tests._every_mechanism import BUILDERS, NOISE_PARAMETER, mechanism_classes

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
    ("ExpM-gaussian", lambda e, d: ExpM(calibration(), epsilon=e, delta=d, noise="gaussian"), False),
    ("ExpM-laplace", lambda e, d: ExpM(calibration(), epsilon=e, delta=d, noise="laplace"), True),
    ("GroupDP-gaussian", lambda e, d: GroupDP(bounded_calibration(), epsilon=e, delta=d, noise="gaussian"), False),
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
    weight = np.full(20, 160.0)
    weight[1] = np.nan
    data = pd.DataFrame({"weight": weight, "height": np.full(20, 65.0)})
    with pytest.raises(bp.ValidationError) as info:
        weight_mechanism.release(data, rng=0)
    assert_message(info.value, "'weight'", "missing values", "1 NaN")


def test_nan_in_an_unused_column_is_fine(weight_mechanism):
    data = pd.DataFrame({"weight": np.full(20, 160.0), "height": np.r_[np.nan, np.full(19, 65.0)]})
    assert weight_mechanism.release(data, rng=0).value.shape == (1,)


def test_missing_column_at_release(weight_mechanism):
    with pytest.raises(bp.ValidationError) as info:
        weight_mechanism.release(pd.DataFrame({"height": [60.0, 65.0]}), rng=0)
    assert_message(info.value, "dataset", "'weight'", "missing")


def test_empty_dataset(weight_mechanism):
    with pytest.raises(bp.ValidationError, match="dataset must have 20 rows"):
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
    with pytest.raises(error, match="^a must"):  # DatasetSecret.mean(column, a)
        bp.DatasetSecret.mean("height", value)
    with pytest.raises(error, match="^value must"):
        bp.DatasetSecret("height", "mean", value)
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


# == every bad input gets a BayesPrivError naming the parameter ============================================
#
# Each case: (id, call, error class, text the message must contain — the parameter's name first).

TABLE = pd.DataFrame({"sex": ["F", "M"] * 10, "height": np.arange(20.0), "u": ["a", "b"] * 10, "v": ["x"] * 20})
DUPLICATED = pd.DataFrame([[1.0, 2.0, 3.0]] * 4, columns=["weight", "weight", "height"])
P40, P60 = bp.DatasetSecret.proportion("sex", "F", 0.4), bp.DatasetSecret.proportion("sex", "F", 0.6)


def _text_query(value: object) -> bp.Query:
    return bp.Query(lambda b: np.full((b["height"].shape[0], 1), value, dtype=object if value is None else None),
                    ["height"], "textq")


def _calibration_fields(**changes) -> dict:
    fields = dict(secrets=(A, B), pairs=(PAIR,), mean_array=[[0.0], [1.0]], cov_array=[[[1.0]], [[1.0]]],
                  mean_se=[[0.1], [0.1]], cov_se=[[[0.1]], [[0.1]]], cov_se_white=[[[0.1]], [[0.1]]],
                  confidence=0.95, z=3.0, n_draws=100, n_records=20)
    fields.update(changes)
    return fields


BAD_INPUTS = [
    # duplicate DataFrame column names, wherever a DataFrame enters
    ("dup-release", lambda: APGM(calibration(bp.mean("weight")), epsilon=1.0, delta=1e-3).release(DUPLICATED, rng=0),
     bp.ValidationError, ["dataset", "unique column names", "'weight'"]),
    ("dup-query", lambda: bp.mean("weight")(DUPLICATED), bp.ValidationError, ["dataset", "unique column names"]),
    ("dup-empirical", lambda: bp.EmpiricalDataModel(DUPLICATED, 2), bp.ValidationError, ["table", "unique column names"]),
    ("dup-subset", lambda: bp.subset_count_table(DUPLICATED, protected="weight", public="height", epsilon=1.0),
     bp.ValidationError, ["table", "unique column names"]),
    # columns None / [] / a str / not names
    ("Query-columns-None", lambda: bp.Query(lambda b: b, None, "q"), bp.ParameterTypeError, ["columns", "None"]),
    ("Query-columns-empty", lambda: bp.Query(lambda b: b, [], "q"), bp.ValidationError, ["columns", "non-empty"]),
    ("Query-columns-int", lambda: bp.Query(lambda b: b, 3, "q"), bp.ParameterTypeError, ["columns", "3"]),
    ("count-columns-None", lambda: bp.count(lambda b: b["x"] > 0, None), bp.ParameterTypeError, ["columns", "None"]),
    ("count-columns-empty", lambda: bp.count(lambda b: b["x"] > 0, []), bp.ValidationError, ["columns", "non-empty"]),
    ("proportion-columns-dup", lambda: bp.proportion(lambda b: b["x"] > 0, ["x", "x"]), bp.ValidationError,
     ["columns", "distinct", "'x'"]),
    ("Gaussian-columns-None", lambda: bp.GaussianDataModel([0.0], [[1.0]], None, 3), bp.ParameterTypeError, ["columns", "None"]),
    ("Gaussian-columns-empty", lambda: bp.GaussianDataModel([], [[]], [], 3), bp.ValidationError, ["columns", "non-empty"]),
    ("Gaussian-columns-str", lambda: bp.GaussianDataModel([0.0, 0.0], np.eye(2), "hw", 3), bp.ParameterTypeError,
     ["columns", "single string", "'hw'", "['hw']"]),
    ("Function-columns-str", lambda: bp.FunctionDataModel(lambda s, n, r: {}, columns="x", n_records=3),
     bp.ParameterTypeError, ["columns", "single string"]),
    ("Function-columns-int", lambda: bp.FunctionDataModel(lambda s, n, r: {}, columns=[1], n_records=3),
     bp.ParameterTypeError, ["columns", "non-empty strings"]),
    # queries returning text, objects, complex numbers: refused at calibration and at release
    ("query-str-calibrate", lambda: bp.calibrate(model(), PAIR, _text_query("a"), n_draws=10, rng=0),
     bp.ParameterTypeError, ["query 'textq'", "numeric", "<U1"]),
    ("query-numeric-text-calibrate", lambda: bp.calibrate(model(), PAIR, _text_query("1.5"), n_draws=10, rng=0),
     bp.ParameterTypeError, ["query 'textq'", "numeric"]),
    ("query-object-calibrate", lambda: bp.calibrate(model(), PAIR, _text_query(None), n_draws=10, rng=0),
     bp.ParameterTypeError, ["query 'textq'", "numeric", "object"]),
    ("query-complex-calibrate", lambda: bp.calibrate(model(), PAIR, _text_query(1 + 1j), n_draws=10, rng=0),
     bp.ParameterTypeError, ["query 'textq'", "complex"]),
    ("query-text-release", lambda: APGM(calibration(_text_query("1.5")), epsilon=1.0, delta=1e-3).release(
        pd.DataFrame({"height": np.arange(20.0)}), rng=0), bp.ParameterTypeError, ["query 'textq'", "numeric"]),
    ("mean-of-text-column", lambda: bp.calibrate(bp.EmpiricalDataModel(TABLE, 5), bp.SecretPair(P40, P60),
                                                 bp.mean("sex"), n_draws=10, rng=0),
     bp.ParameterTypeError, ["mean(sex)", "numeric"]),
    # sizes that cannot fit in memory: refused up front, naming the memory needed
    ("n_records-1e12", lambda: bp.GaussianDataModel([0.0], [[1.0]], ["height"], 10**12), bp.ValidationError,
     ["n_records", "memory", "TB", "10000000000"]),
    ("n_draws-1e15", lambda: bp.calibrate(model(), PAIR, bp.mean("weight"), n_draws=10**15, rng=0),
     bp.ValidationError, ["n_draws", "memory", "calibration samples"]),
    ("sample-n_draws-1e15", lambda: model().sample(None, 10**15, rng=0), bp.ValidationError, ["n_draws", "memory"]),
    ("two_sided_geometric-size", lambda: bp.ledger.two_sided_geometric(1.0, 10**15, rng=0), bp.ValidationError,
     ["size", "memory"]),
    ("pair_matrix-n", lambda: bp.ledger.pair_matrix(10**6), bp.ValidationError, ["n", "memory"]),
    ("subset_count_array-size", lambda: bp.ledger.subset_count_array([[1, 2]], 1.0, size=10**15, rng=0),
     bp.ValidationError, ["size", "memory"]),
    # from_moments
    ("from_moments-n_records-negative", lambda: bp.Calibration.from_moments({A: [0.0], B: [1.0]}, {A: 1.0, B: 1.0}, PAIR,
                                                                            n_records=-3),
     bp.ValidationError, ["n_records", ">= 1", "-3"]),
    ("from_moments-n_records-float", lambda: bp.Calibration.from_moments({A: [0.0], B: [1.0]}, {A: 1.0, B: 1.0}, PAIR,
                                                                         n_records=2.5),
     bp.ParameterTypeError, ["n_records", "2.5"]),
    ("from_moments-n_records-bool", lambda: bp.Calibration.from_moments({A: [0.0], B: [1.0]}, {A: 1.0, B: 1.0}, PAIR,
                                                                        n_records=True),
     bp.ParameterTypeError, ["n_records", "True"]),
    ("from_moments-query", lambda: bp.Calibration.from_moments({A: [0.0], B: [1.0]}, {A: 1.0, B: 1.0}, PAIR, query=5),
     bp.ParameterTypeError, ["query", "int"]),
    ("from_moments-mean-inf", lambda: bp.Calibration.from_moments({A: [np.inf], B: [1.0]}, {A: 1.0, B: 1.0}, PAIR),
     bp.ValidationError, ["means[", "finite"]),
    ("from_moments-cov-nan", lambda: bp.Calibration.from_moments({A: [0.0], B: [1.0]}, {A: np.nan, B: 1.0}, PAIR),
     bp.ValidationError, ["covs[", "finite"]),
    ("from_moments-mean-text", lambda: bp.Calibration.from_moments({A: "1.5", B: [1.0]}, {A: 1.0, B: 1.0}, PAIR),
     bp.ParameterTypeError, ["means[", "numeric"]),
    ("from_moments-cov-bool", lambda: bp.Calibration.from_moments({A: [0.0], B: [1.0]}, {A: True, B: 1.0}, PAIR),
     bp.ParameterTypeError, ["covs[", "numeric"]),
    # Calibration built by hand: confidence must match z, arrays must be consistent
    ("Calibration-z0-confidence", lambda: bp.Calibration(**_calibration_fields(confidence=0.99, z=0.0)),
     bp.ValidationError, ["z must be >=", "confidence=0.99"]),
    ("Calibration-z-too-small", lambda: bp.Calibration(**_calibration_fields(confidence=0.95, z=1.96)),
     bp.ValidationError, ["z must be >=", "4 intervals"]),
    ("Calibration-plug-in-z", lambda: bp.Calibration(**_calibration_fields(confidence=None, z=2.0)),
     bp.ValidationError, ["z", "confidence is None"]),
    ("Calibration-sure-with-error", lambda: bp.Calibration(**_calibration_fields(confidence=1.0)),
     bp.ValidationError, ["confidence", "standard errors"]),
    ("Calibration-z-nan", lambda: bp.Calibration(**_calibration_fields(z=math.nan)), bp.ValidationError, ["z", "finite"]),
    ("Calibration-z-text", lambda: bp.Calibration(**_calibration_fields(z="3")), bp.ParameterTypeError, ["z", "'3'"]),
    ("Calibration-confidence-2", lambda: bp.Calibration(**_calibration_fields(confidence=2.0)), bp.ValidationError,
     ["confidence", "2.0"]),
    ("Calibration-secrets", lambda: bp.Calibration(**_calibration_fields(secrets=None)), bp.ParameterTypeError, ["secrets"]),
    ("Calibration-pairs-stray", lambda: bp.Calibration(**_calibration_fields(pairs=(bp.SecretPair(A, P40.__class__.mean("height", 1.0)),))),
     bp.ValidationError, ["pairs", "calibration's secrets"]),
    ("Calibration-mean-shape", lambda: bp.Calibration(**_calibration_fields(mean_array=[0.0, 1.0])), bp.ValidationError,
     ["mean_array", "2-dimensional"]),
    ("Calibration-mean-nan", lambda: bp.Calibration(**_calibration_fields(mean_array=[[np.nan], [1.0]])),
     bp.ValidationError, ["mean_array", "finite"]),
    ("Calibration-cov-shape", lambda: bp.Calibration(**_calibration_fields(cov_array=[[1.0], [1.0]])), bp.ValidationError,
     ["cov_array", "(2, 1, 1)"]),
    ("Calibration-se-negative", lambda: bp.Calibration(**_calibration_fields(mean_se=[[-0.1], [0.1]])),
     bp.ValidationError, ["mean_se", "non-negative"]),
    ("Calibration-n_draws", lambda: bp.Calibration(**_calibration_fields(n_draws=0)), bp.ValidationError, ["n_draws", "0"]),
    ("Calibration-n_records", lambda: bp.Calibration(**_calibration_fields(n_records=-1)), bp.ValidationError,
     ["n_records", "-1"]),
    ("Calibration-names", lambda: bp.Calibration(**_calibration_fields(component_names=("a", "b"))), bp.ValidationError,
     ["component_names", "1 strings"]),
    ("Calibration-query", lambda: bp.Calibration(**_calibration_fields(query="q")), bp.ParameterTypeError, ["query", "str"]),
    ("Calibration-theta", lambda: bp.Calibration(**_calibration_fields(theta=[1])), bp.ParameterTypeError, ["theta", "list"]),
    ("Calibration-diagnostics", lambda: bp.Calibration(**_calibration_fields(diagnostics=None)), bp.ParameterTypeError,
     ["diagnostics", "NoneType"]),
    ("Calibration-family", lambda: bp.Calibration(**_calibration_fields(family=(1,))), bp.ParameterTypeError, ["family"]),
    # subset_count_table: counts beyond 2**53 would wrap int64
    ("subset-count-1e20", lambda: bp.subset_count_table(
        pd.DataFrame({"u": ["a", "b"], "v": ["x", "x"], "c": [1e20, 1.0]}), protected="u", public="v", epsilon=1.0,
        layout=bp.TableLayout(count="c", protected_values=["a", "b"])), bp.ValidationError,
     ["count", "2**53", "1e+20"]),
    ("subset-count-sum-overflows", lambda: bp.subset_count_table(
        pd.DataFrame({"u": ["a", "a"], "v": ["x", "x"], "c": [2**62, 2**62]}), protected="u", public="v", epsilon=1.0,
        layout=bp.TableLayout(count="c", protected_values=["a", "b"])), bp.ValidationError, ["count", "2**53"]),
    ("subset_count_array-huge", lambda: bp.ledger.subset_count_array([[1e20, 0.0]], 1.0, rng=0), bp.ValidationError,
     ["counts", "2**53"]),
    ("subset-protected_values-int", lambda: bp.TableLayout(protected_values=3), bp.ParameterTypeError,
     ["protected_values", "3"]),
    ("subset-public_values-float", lambda: bp.TableLayout(protected_values=["a", "b"], public_values=1.5),
     bp.ParameterTypeError, ["public_values", "1.5"]),
    ("subset-ledger", lambda: bp.SubsetCountMechanism(protected="u", public="v", epsilon=1.0).release(
        TABLE, layout=bp.TableLayout(protected_values=["a", "b"]), ledger="ledger.db"),
     bp.ParameterTypeError, ["ledger", "str"]),
    ("two_sided_geometric-size-float", lambda: bp.ledger.two_sided_geometric(1.0, 2.5, rng=0), bp.ValidationError,
     ["size", "2.5"]),
    ("two_sided_geometric-size-negative", lambda: bp.ledger.two_sided_geometric(1.0, -1, rng=0), bp.ValidationError,
     ["size", "-1"]),
    ("two_sided_geometric_pmf-z", lambda: bp.ledger.two_sided_geometric_pmf("x", 1.0), bp.ParameterTypeError,
     ["z", "numeric"]),
    ("two_sided_geometric_pmf-z-fraction", lambda: bp.ledger.two_sided_geometric_pmf([0.5], 1.0),
     bp.ValidationError, ["z", "integers"]),
    ("cell_variance-n", lambda: bp.ledger.cell_variance("x", 1.0), bp.ParameterTypeError, ["n", "numeric"]),
    ("cell_variance-n-negative", lambda: bp.ledger.cell_variance(-1, 1.0), bp.ValidationError, ["n", "whole numbers"]),
    ("pair_matrix-None", lambda: bp.ledger.pair_matrix(None), bp.ParameterTypeError, ["n", "None"]),
    ("pair_matrix-bool", lambda: bp.ledger.pair_matrix(True), bp.ParameterTypeError, ["n", "True"]),
    ("nonnegative_rows-scalar", lambda: bp.ledger.nonnegative_rows(3), bp.ValidationError, ["table", "1-dimensional"]),
    ("SubsetCountMechanism-name", lambda: bp.ledger.SubsetCountMechanism(protected=None, public="v", epsilon=1.0), bp.ParameterTypeError,
     ["protected", "None"]),
    # epsilon tables
    ("epsilon_table-releases-None", lambda: bp.epsilon_table(None), bp.ParameterTypeError, ["releases", "None"]),
    ("epsilon_on-releases-int", lambda: bp.epsilon_on(3, ["a"]), bp.ParameterTypeError, ["releases", "3"]),
    ("epsilon_table-release-text", lambda: bp.epsilon_table(["r"]), bp.ParameterTypeError, ["releases[0]", "str"]),
    ("epsilon_table-total", lambda: bp.epsilon_table([bp.VariableRelease("r", 1.0, ("a",))], total=3),
     bp.ParameterTypeError, ["total", "3"]),
    ("VariableRelease-name", lambda: bp.VariableRelease("", 1.0, ("a",)), bp.ParameterTypeError, ["name", "''"]),
    # queries
    ("mean-bounds-empty", lambda: bp.mean("x", bounds=[]), bp.ParameterTypeError, ["bounds", "pair"]),
    ("mean-bounds-triple", lambda: bp.mean("x", bounds=(0, 1, 2)), bp.ParameterTypeError, ["bounds", "pair"]),
    ("mean-column-empty", lambda: bp.mean(""), bp.ParameterTypeError, ["column", "non-empty"]),
    ("mean-name-array", lambda: bp.mean("x", name=np.zeros(2)), bp.ParameterTypeError, ["name", "ndarray"]),
    ("count-name-int", lambda: bp.count(lambda b: b["x"] > 0, "x", name=0), bp.ParameterTypeError, ["name", "0"]),
    ("stack-name-list", lambda: bp.stack(bp.mean("x"), name=["a"]), bp.ParameterTypeError, ["name", "list"]),
    # secrets
    ("statistic-array", lambda: bp.DatasetSecret("height", np.zeros(2), 1.0), bp.ValidationError, ["statistic"]),
    ("proportion-p-nan", lambda: bp.DatasetSecret.proportion("sex", "F", math.nan), bp.ValidationError, ["p", "finite"]),
    ("proportion-p-text", lambda: bp.DatasetSecret.proportion("sex", "F", "0.5"), bp.ParameterTypeError, ["p", "'0.5'"]),
    ("all_pairs-None", lambda: bp.all_pairs(None), bp.ParameterTypeError, ["secrets", "None"]),
    ("all_pairs-numbers", lambda: bp.all_pairs([1, 2]), bp.ParameterTypeError, ["secrets", "int"]),
    ("pairs_between-first", lambda: bp.pairs_between(3, [B]), bp.ParameterTypeError, ["first", "3"]),
    ("pairs_between-second-text", lambda: bp.pairs_between([A], "B"), bp.ParameterTypeError, ["second", "'B'"]),
    # data models and calibrate
    ("Gaussian-cov-bool", lambda: bp.GaussianDataModel([0.0], True, ["h"], 3), bp.ParameterTypeError, ["cov", "numeric"]),
    ("Gaussian-mean-text", lambda: bp.GaussianDataModel(["0"], [[1.0]], ["h"], 3), bp.ParameterTypeError, ["mean", "numeric"]),
    ("model-theta", lambda: bp.GaussianDataModel([0.0], [[1.0]], ["h"], 3, theta=[1]), bp.ParameterTypeError, ["theta", "list"]),
    ("calibrate-progress", lambda: bp.ExecutionOptions(progress=np.zeros(2)), bp.ParameterTypeError, ["progress"]),
    ("calibrate-chunk_size", lambda: bp.ExecutionOptions(chunk_size=0), bp.ValidationError, ["chunk_size", "0"]),
    ("calibrate-execution", lambda: bp.calibrate(model(), PAIR, bp.mean("weight"), n_draws=10, rng=0, execution=2),
     bp.ParameterTypeError, ["execution", "int"]),
    # inputs that raised TypeError / OverflowError from deep inside, or were silently accepted
    ("Function-secret_kinds-str", lambda: bp.FunctionDataModel(lambda s, n, r: {}, columns=["x"], n_records=3,
                                                               secret_kinds="abc"),
     bp.ValidationError, ["secret_kinds", "tuple of secret classes", "'abc'"]),
    ("Function-secret_kinds-empty", lambda: bp.FunctionDataModel(lambda s, n, r: {}, columns=["x"], n_records=3,
                                                                 secret_kinds=()),
     bp.ValidationError, ["secret_kinds", "non-empty", "()"]),
    ("Function-secret_kinds-int", lambda: bp.FunctionDataModel(lambda s, n, r: {}, columns=["x"], n_records=3,
                                                               secret_kinds=(int,)),
     bp.ValidationError, ["secret_kinds", "secret classes", "int"]),
    ("proportion-category-list", lambda: bp.DatasetSecret.proportion("sex", ["F"], 0.4), bp.ValidationError,
     ["category", "hashable", "['F']"]),
    ("proportion-category-list-calibrate", lambda: bp.calibrate(
        bp.EmpiricalDataModel(TABLE, 5), bp.SecretPair(bp.DatasetSecret("sex", "proportion", 0.4, ["F"]), P60),
        bp.mean("height"), n_draws=10, rng=0), bp.ValidationError, ["category", "hashable", "['F']"]),
    ("proportion-category-nan", lambda: bp.DatasetSecret.proportion("sex", math.nan, 0.4), bp.ValidationError,
     ["category", "not NaN", "nan"]),
    ("proportion-category-NA", lambda: bp.DatasetSecret.proportion("sex", pd.NA, 0.4), bp.ValidationError,
     ["category", "pd.NA", "<NA>"]),
    ("Query-output_names-int", lambda: bp.Query(lambda b: b["x"][:, :1], ["x"], "q", output_names=5),
     bp.ValidationError, ["output_names", "sequence of non-empty strings", "5"]),
    ("Query-output_names-int-items", lambda: bp.Query(lambda b: b["x"][:, :2], ["x"], "q", output_names=[1, 2]),
     bp.ValidationError, ["output_names", "non-empty strings", "[1, 2]"]),
    ("Query-output_names-empty", lambda: bp.Query(lambda b: b["x"][:, :1], ["x"], "q", output_names=[]),
     bp.ValidationError, ["output_names", "one per component", "[]"]),
    ("subset-cells-lists", lambda: bp.subset_count_table(TABLE.assign(u=[["a"], ["b"]] * 10), protected="u", public="v",
                                                          epsilon=1.0), bp.ValidationError,
     ["table['u']", "hashable categories", "list ['a'] at row 0"]),
    ("subset-public-cells-lists", lambda: bp.subset_count_table(TABLE.assign(v=[["x"]] * 20), protected="u", public="v",
                                                                 epsilon=1.0,
                                                                 layout=bp.TableLayout(protected_values=["a", "b"])),
     bp.ValidationError, ["table['v']", "hashable categories", "row 0"]),
    ("subset-protected_values-lists", lambda: bp.TableLayout(protected_values=[["a"], ["b"]]),
     bp.ValidationError, ["protected_values", "hashable", "['a']"]),
    ("subset-epsilon-1e-20", lambda: bp.subset_count_table(TABLE, protected="u", public="v", epsilon=1e-20,
                                                           layout=bp.TableLayout(protected_values=["a", "b"])),
     bp.ValidationError, ["epsilon", "at least 1e-09", "1e-20"]),
    ("subset-epsilon-1e-300", lambda: bp.subset_count_table(TABLE, protected="u", public="v", epsilon=1e-300,
                                                            layout=bp.TableLayout(protected_values=["a", "b"]),
                                                            geometric_calibration="paper"),
     bp.ValidationError, ["epsilon", "at least 1e-09", "1e-300"]),
    ("subset_count_array-epsilon-1e-20", lambda: bp.ledger.subset_count_array([[1, 2]], 1e-20, rng=0),
     bp.ValidationError, ["epsilon", "at least 1e-09", "1e-20"]),
    ("two_sided_geometric-epsilon-1e-300", lambda: bp.ledger.two_sided_geometric(1e-300, 3, rng=0),
     bp.ValidationError, ["epsilon", "at least 1e-09", "1e-300"]),
    ("SubsetCountMechanism-epsilon-1e-20", lambda: bp.ledger.SubsetCountMechanism(protected="u", public="v", epsilon=1e-20),
     bp.ValidationError, ["epsilon", "at least 1e-09", "1e-20"]),
    ("ExpM-gaussian-delta-0", lambda: ExpM(calibration(), epsilon=1.0, delta=0, noise="gaussian"), bp.ValidationError,
     ["delta", "(0, 1)", "got 0", "Gaussian noise needs δ > 0"]),
    ("GroupDP-gaussian-delta-0", lambda: GroupDP(bounded_calibration(), epsilon=1.0, delta=0, noise="gaussian"),
     bp.ValidationError, ["delta", "(0, 1)", "got 0", "Gaussian noise needs δ > 0"]),
    *[(f"Empirical-missing-{label}", (lambda col: lambda: bp.EmpiricalDataModel(
        pd.DataFrame({"height": np.arange(6.0), "sex": col}), 3))(col), bp.ValidationError,
       ["table", "missing values", f"{shown} in column 'sex' at row 4", "(1 missing in that column)"])
      for label, col, shown in [
          ("None-object", pd.Series(["F", "M", "F", "M", None, "F"], dtype=object), "None"),
          ("nan-object", pd.Series(["F", "M", "F", "M", np.nan, "F"], dtype=object), "nan"),
          ("NA-object", pd.Series(["F", "M", "F", "M", pd.NA, "F"], dtype=object), "<NA>"),
          ("NaT-object", pd.Series(["F", "M", "F", "M", pd.NaT, "F"], dtype=object), "NaT"),
          ("None-string", pd.Series(["F", "M", "F", "M", None, "F"], dtype="string"), "<NA>"),
          ("None-categorical", pd.Series(pd.Categorical(["F", "M", "F", "M", None, "F"])), "nan"),
          ("nan-float", pd.Series([1.0, 0.0, 1.0, 0.0, np.nan, 1.0]), "nan"),
      ]],
]


@pytest.mark.parametrize("call, error, parts", [c[1:] for c in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gets_a_clear_error(call, error, parts):
    """Each bad input raises the stated BayesPrivError subclass; the message names the parameter (and the rule/value)."""
    with pytest.raises(bp.BayesPrivError) as info:
        call()
    assert isinstance(info.value, error), f"{type(info.value).__name__}: {info.value}"
    assert_message(info.value, *parts)


def test_a_string_is_one_column_name_for_queries():
    """Queries read ``columns="hw"`` as the one column "hw" (documented), never as "h" and "w"."""
    assert bp.Query(lambda b: b["hw"], "hw", "q").columns == ("hw",)
    assert bp.count(lambda b: b["hw"] > 0, "hw").components[0].columns == ("hw",)
    assert bp.Query(lambda b: b["hw"][:, :1], "hw", "q", output_names="total").output_names == ("total",)


def test_noise_none_keeps_its_default_and_a_single_secret_class_is_one_kind():
    """``noise=None``: Laplace for δ = 0, Gaussian for δ > 0 (only an explicit Gaussian with δ = 0 is refused)."""
    assert ExpM(calibration(), epsilon=1.0, delta=0.0).noise == "laplace"
    assert ExpM(calibration(), epsilon=1.0, delta=1e-3).noise == "gaussian"
    assert GroupDP(bounded_calibration(), epsilon=1.0, delta=0.0).noise == "laplace"
    assert GroupDP(bounded_calibration(), epsilon=1.0, delta=1e-3).noise == "gaussian"
    model = bp.FunctionDataModel(lambda s, n, r: {"x": r.normal(size=(n, 3))}, columns=["x"], n_records=3,
                                 secret_kinds=bp.DistributionSecret)
    assert model.secret_kinds == (bp.DistributionSecret,)
    with pytest.raises(bp.UnsupportedSecretError):
        model.check_secret(bp.DatasetSecret.mean("x", 0.0))


def test_counts_up_to_two_to_the_53_are_exact():
    """The boundary of the count check: 2**53 in one cell is kept exactly (no wrap, no refusal)."""
    table = pd.DataFrame({"u": ["a", "b"], "v": ["x", "x"], "c": [float(2**53 - 1), 1.0]})
    out = bp.subset_count_table(table, protected="u", public="v", epsilon=1.0, rng=0,
                                layout=bp.TableLayout(count="c", protected_values=["a", "b"]))
    assert int(out.loc["x"].sum()) == 2**53  # the public margin is exact


# == read-only diagnostics and parameters, still picklable =================================================


def _sampled_calibration(secrets=(A, B)) -> bp.Calibration:
    from bayespriv.calibration import DrawReport, calibration_from_samples

    rng = np.random.default_rng(0)
    samples = rng.normal(size=(len(secrets), 200, 1)) + np.arange(len(secrets))[:, None, None]
    report = DrawReport(diagnostics={"mcmc": {"s": {"route": "forward", "variables": ["z"]}}})
    cal = calibration_from_samples(samples, secrets, (bp.SecretPair(*secrets),), None, confidence=0.95, n_records=20,
                                   theta={"mu": 1.0}, report=report)
    return cal


def test_diagnostics_and_theta_are_read_only_deeply():
    cal = _sampled_calibration()
    with pytest.raises(TypeError):
        cal.diagnostics["new"] = 1
    with pytest.raises(TypeError):
        cal.diagnostics["mcmc"]["s"]["route"] = "mcmc"  # nested mappings too
    with pytest.raises(AttributeError):
        cal.diagnostics["mcmc"]["s"]["variables"].append("w")  # lists become tuples
    with pytest.raises(TypeError):
        cal.theta["mu"] = 2.0
    with pytest.raises(ValueError):
        cal.mean_array[0, 0] = 1.0
    assert cal.diagnostics == {"mcmc": {"s": {"route": "forward", "variables": ("z",)}}}


def test_caller_dict_is_copied_not_wrapped():
    """Editing the dict given to the calibration afterwards does not change it."""
    diagnostics = {"note": {"a": 1}}
    cal = dataclasses.replace(calibration(), diagnostics=diagnostics)
    diagnostics["note"]["a"] = 2
    diagnostics["other"] = 3
    assert cal.diagnostics == {"note": {"a": 1}}


def test_read_only_calibration_and_query_pickle_and_copy():
    cal = dataclasses.replace(_sampled_calibration(), query=bp.Query(_FirstColumn(), ["x"], "q", column_sensitivities={"x": 1.0}))
    for clone in (pickle.loads(pickle.dumps(cal)), copy.deepcopy(cal)):
        assert clone.diagnostics == cal.diagnostics and isinstance(clone.diagnostics, MappingProxyType)
        assert isinstance(clone.diagnostics["mcmc"], MappingProxyType)
        assert clone.theta == {"mu": 1.0} and isinstance(clone.theta, MappingProxyType)
        assert isinstance(clone.query.column_sensitivities, MappingProxyType)
        assert clone.query.column_sensitivity("x", 20) == 1.0
        np.testing.assert_array_equal(clone.mean_array, cal.mean_array)
        assert clone.z == cal.z and clone.confidence == cal.confidence


def test_nothing_in_the_library_writes_to_a_calibration_mapping():
    """A family calibration (the engine rebuilds diagnostics with replace) ends read-only too."""
    fam = bp.DataModelFamily(lambda mu: bp.GaussianDataModel([mu, 160.0], [[9.0, 30.0], [30.0, 225.0]],
                                                             ["height", "weight"], n_records=20), {"mu": [64.0, 66.0]})
    cal = bp.calibrate(fam, PAIR, bp.mean("weight"), n_draws=200, rng=1)
    assert isinstance(cal.diagnostics["family"], MappingProxyType)
    assert cal.diagnostics["family"]["worst_theta"] == dict(cal.theta)
    assert all(isinstance(m.theta, MappingProxyType) for m in cal.family)


@dataclasses.dataclass(frozen=True)
class _FirstColumn:
    def __call__(self, batch):
        return batch["x"][:, :1]


# == confidence and z agree ==================================================================================


def test_engine_calibrations_pass_the_confidence_z_check():
    """Every z the engine produces is the Bonferroni quantile the check asks for (built twice: no error)."""
    from bayespriv.calibration.moments import bonferroni_z
    from bayespriv.calibration.fields import n_intervals

    cal = _sampled_calibration()
    assert cal.z == pytest.approx(bonferroni_z(0.95, n_intervals(2, 1)))
    dataclasses.replace(cal)  # re-validates
    dataclasses.replace(cal, z=cal.z * 1.5)  # a larger z is conservative: accepted


# == proportion secrets name exchangeability ==================================================================


def test_proportion_secrets_carry_exchangeable_records():
    pair = bp.SecretPair(P40, P60)
    cal = bp.calibrate(bp.EmpiricalDataModel(TABLE, 5), pair, bp.proportion(lambda b: b["sex"] == "F", "sex"),
                       n_draws=100, rng=0, confidence=None)
    assert "exchangeable_records" in cal.assumptions
    exact = bp.Calibration.from_moments({P40: [0.4], P60: [0.6]}, {P40: 0.01, P60: 0.01}, pair)
    assert exact.assumptions == ("exchangeable_records",)
    assert "exchangeable_records" not in calibration().assumptions  # mean secrets: not assumed
    dist = bp.SecretPair(bp.DistributionSecret("p", 0.2), bp.DistributionSecret("p", 0.8))
    s1, s2 = dist.secrets
    assert "exchangeable_records" not in bp.Calibration.from_moments({s1: [0.0], s2: [1.0]}, {s1: 1.0, s2: 1.0}, dist).assumptions


# == mechanism constructors and the release path (base.py) =======================================================
#
# Every Mechanism subclass in bp.mechanisms.__all__, built small; extreme ε, a non-Ledger ``ledger=``,
# a wrong ``rng=`` and an unknown noise kind must each be refused with a BayesPrivError naming the
# parameter (or, for extreme ε, release a finite value).


MECHANISM_CLASSES = mechanism_classes()


def _case(name: str, case: str):
    return pytest.param(name, case, id=f"{name}-{case}")


def test_every_mechanism_class_has_a_builder():
    assert sorted(BUILDERS) == sorted(MECHANISM_CLASSES)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_each_builder_releases_at_epsilon_one(name):
    release = _release(*BUILDERS[name](1.0), rng=0)
    assert np.all(np.isfinite(release.value))


EXTREME_EPSILONS = {"eps-1e-17": 1e-17, "eps-1e300": 1e300, "eps-5e-324": 5e-324}
RELEASE_CASES = ["ledger-str", "ledger-dict", "rng-str", "rng-negative", "rng-float", "noise-unknown"]


def _release(mech, answer, **kwargs):
    return mech.release_value(answer, options=bp.ReleaseOptions(accept_failed_assumptions=True), **kwargs)


@pytest.mark.parametrize("name, case", [_case(n, c) for n in sorted(BUILDERS) for c in EXTREME_EPSILONS])
def test_extreme_epsilon_is_refused_or_releases_a_finite_value(name, case):
    """ε = 1e-17, 1e300, 5e-324: a BayesPrivError naming epsilon, or a finite release — never inf/NaN or a raw error."""
    try:
        release = _release(*BUILDERS[name](EXTREME_EPSILONS[case]), rng=0)
    except bp.BayesPrivError as exc:
        assert "epsilon" in str(exc) or "ε" in str(exc), str(exc)
        return
    assert np.all(np.isfinite(release.value)), release.value


@pytest.mark.parametrize("name, case", [_case(n, c) for n in sorted(BUILDERS) for c in RELEASE_CASES
                                        if c != "noise-unknown" or n in NOISE_PARAMETER])
def test_bad_release_arguments_are_refused(name, case):
    if case == "noise-unknown":
        noise_param = NOISE_PARAMETER[name]
        with pytest.raises(bp.BayesPrivError) as info:
            BUILDERS[name](1.0, **{noise_param: "uniform"})
        assert_message(info.value, noise_param, "'uniform'")
        return
    mech, answer = BUILDERS[name](1.0)
    param, value = {"ledger-str": ("ledger", "ledger.db"), "ledger-dict": ("ledger", {}), "rng-str": ("rng", "seed"),
                    "rng-negative": ("rng", -1), "rng-float": ("rng", 1.5)}[case]
    kwargs = {"rng": 0, param: value}
    with pytest.raises(bp.BayesPrivError) as info:
        _release(mech, answer, **kwargs)
    assert_message(info.value, param)
