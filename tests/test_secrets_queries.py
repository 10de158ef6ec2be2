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
