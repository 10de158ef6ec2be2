"""Secrets, pairs, queries and the randomness helpers."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import bayespriv as bp
from bayespriv.random import as_generator, release_generator, spawn_seeds


def test_secrets_are_frozen_hashable_and_labelled():
    s = bp.DatasetSecret.proportion("sex", "Female", 0.25)
    assert s.label == "share(sex=Female)=0.25"
    assert {s: 1}[bp.DatasetSecret.proportion("sex", "Female", 0.25)] == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.value = 0.3
    assert bp.DistributionSecret("p_female", 0.5).label == "p_female=0.5"


def test_pairs_between_and_all_pairs():
    below = [bp.DatasetSecret.proportion("g", "f", p) for p in (0.3, 0.4)]
    above = [bp.DatasetSecret.proportion("g", "f", p) for p in (0.6, 0.7, 0.8)]
    assert len(bp.pairs_between(below, above)) == 6
    assert len(bp.all_pairs(below + above)) == 10
    with pytest.raises(bp.ValidationError, match="at least two"):
        bp.all_pairs(below[:1])


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: bp.SecretPair(bp.DatasetSecret.mean("a", 1), bp.DatasetSecret.mean("a", 1)), "must differ"),
        (lambda: bp.SecretPair(bp.DatasetSecret.mean("a", 1), bp.DatasetSecret.mean("b", 2)), "one attribute"),
        (lambda: bp.SecretPair(bp.DatasetSecret.mean("a", 1), bp.DistributionSecret("a", 2)), "one kind"),
        (lambda: bp.SecretPair(bp.DatasetSecret.mean("a", 1), 3), "DatasetSecret or DistributionSecret"),
        (lambda: bp.DatasetSecret.proportion("a", "x", 1.5), r"p must be a proportion in \[0, 1\]; got 1.5"),
        (lambda: bp.DatasetSecret.mean("a", float("nan")), "finite"),
        (lambda: bp.DatasetSecret.mean("", 1.0), "column"),
    ],
)
def test_bad_secrets_are_refused(make, match):
    with pytest.raises(bp.BayesPrivError, match=match):
        make()


def test_queries_on_frames_and_batches():
    df = pd.DataFrame({"w": [1.0, 2.0, 3.0, 10.0], "sex": ["F", "M", "F", "F"]})
    q = bp.stack(bp.mean("w"), bp.count(lambda b: b["sex"] == "F", "sex", name="women"),
                 bp.proportion(lambda b: b["w"] > 1.5, "w"), bp.mean("w", bounds=(0, 5), name="clipped"))
    np.testing.assert_allclose(q(df), [4.0, 3.0, 0.75, 2.75])
    assert q.output_names == ("mean(w)", "women", "proportion", "clipped")
    batch = {"w": np.ones((7, 4)), "sex": np.full((7, 4), "F")}
    assert q(batch).shape == (7, 4)
    with pytest.raises(bp.ValidationError, match="missing"):
        q(df.drop(columns="sex"))
    with pytest.raises(bp.ValidationError, match="NaN"):
        q(df.assign(w=[1.0, np.nan, 2.0, 3.0]))


def test_record_sensitivity_requires_declared_bounds():
    q = bp.stack(bp.count(lambda b: b["x"] > 0, "x"), bp.mean("x", bounds=(0, 10)))
    np.testing.assert_allclose(q.record_sensitivity(50), [1.0, 0.2])
    with pytest.raises(bp.ValidationError, match="per-record bounds"):
        bp.mean("x").record_sensitivity(50)


def test_custom_query_shape_is_checked():
    bad = bp.Query(lambda b: b["x"].mean(axis=1), ["x"], "flat")
    with pytest.raises(bp.ValidationError, match=r"shape \(draws, k\)"):
        bad({"x": np.ones((3, 4))})
    good = bp.Query(lambda b: np.stack([b["x"].min(1), b["x"].max(1)], 1), ["x"], "range", output_names=["lo", "hi"])
    assert good({"x": np.arange(8.0).reshape(2, 4)}).tolist() == [[0, 3], [4, 7]]
    with pytest.raises(bp.ValidationError, match="predicate"):
        bp.count(lambda b: b["x"], "x")({"x": np.ones((2, 3))})


def test_randomness_helpers():
    assert as_generator(5).random() == as_generator(5).random()
    g = np.random.default_rng(1)
    assert as_generator(g) is g
    a, b = spawn_seeds(9, 2)
    assert np.random.default_rng(a).random() != np.random.default_rng(b).random()
    assert release_generator(None)[1] is False and release_generator(3)[1] is True
    with pytest.raises(bp.ParameterTypeError, match="rng"):
        as_generator(-1)


# -- count / proportion in the column-and-category form ------------------------------------------
FRAME = pd.DataFrame({"xray": ["pos", "neg", "pos", "neg", "pos"], "age": [70, 40, 66, 12, 70],
                      "smoker": [True, False, False, True, True]})


@pytest.mark.parametrize("func, per", [(bp.count, 1), (bp.proportion, 5)])
def test_column_and_category_form_counts_the_category_and_says_so(func, per):
    q = func("xray", "pos")
    assert q(FRAME).tolist() == [3 / per]
    assert q.indicator == bp.queries.Indicator("xray", "pos", func.__name__)
    assert q.name == f"{func.__name__}(xray=pos)" and q.columns == ("xray",) and q.k == 1
    assert func("age", 70)(FRAME).tolist() == [2 / per]  # numeric column: compared as a number
    assert func("smoker", True)(FRAME).tolist() == [3 / per]  # boolean column: with a bool
    assert func("xray", "pos", name="positives").name == "positives"
    np.testing.assert_array_equal(q.record_sensitivity(5), [1 / per])
    # on a batch of datasets, as data models draw them
    batch = {"xray": np.array([["pos", "neg"], ["pos", "pos"]])}
    n = 1 if func is bp.count else 2
    assert q.evaluate(batch)[:, 0].tolist() == [1 / n, 2 / n]
    # the same numbers as the predicate form, which stays opaque
    old = func(lambda b: b["xray"] == "pos", "xray")
    assert old(FRAME).tolist() == q(FRAME).tolist() and old.indicator is None


def test_indicator_only_for_the_column_and_category_form():
    assert bp.stack(bp.count("xray", "pos")).indicator is not None  # a stack of one is the same query
    assert bp.stack(bp.count("xray", "pos"), bp.count("xray", "neg")).indicator is None
    assert bp.mean("age").indicator is None and bp.mean("age", bounds=(0, 100)).indicator is None
    assert bp.Query(lambda b: b["age"][:, :1], ["age"], "first").indicator is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        bp.count("xray", "pos").indicator.category = "neg"


def test_indicator_is_part_of_the_fingerprint():
    prints = {bp.count("xray", "pos").fingerprint, bp.count("xray", "neg").fingerprint,
              bp.count("age", 70).fingerprint, bp.count("age", 70.5).fingerprint,
              bp.proportion("xray", "pos").fingerprint,
              bp.count(lambda b: b["xray"] == "pos", "xray", name="count(xray=pos)").fingerprint}
    assert len(prints) == 6
    assert bp.count("xray", "pos").fingerprint == bp.count("xray", "pos").fingerprint


@pytest.mark.parametrize("call, error, match", [
    (lambda: bp.proportion("xray"), bp.ParameterTypeError, r"category must be given.*proportion\(predicate, columns\)"),
    (lambda: bp.count(lambda b: b["x"] > 0), bp.ParameterTypeError, r"columns must be given.*count\(column, category\)"),
    (lambda: bp.proportion(3, "x"), bp.ParameterTypeError, r"predicate must be a column name \(str\) or a callable.*"
                                                           r"proportion\(column, category\).*got 3 of type int"),
    (lambda: bp.count("xray", ["pos"]), bp.ValidationError, r"category must be one value of column 'xray'"),
    (lambda: bp.count("xray", float("nan")), bp.ValidationError, r"category must be one value"),
    (lambda: bp.count("", "pos"), bp.ValidationError, r"column must be a non-empty column name"),
    (lambda: bp.count("age", "70")(FRAME), bp.ValidationError, r"category must be a number for the numeric column 'age'"),
    (lambda: bp.count("smoker", 1)(FRAME), bp.ValidationError, r"category must be a bool for the boolean column"),
])
def test_a_wrong_call_names_the_parameter_and_shows_both_forms(call, error, match):
    with pytest.raises(error, match=match):
        call()
