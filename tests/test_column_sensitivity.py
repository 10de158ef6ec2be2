"""Query.column_sensitivity: Δ_A F, the largest change of F when the columns in A change arbitrarily.

Each derived bound is checked against its definition: a pair of A-column
neighbours (datasets equal outside A) attaining it, found by hand, and a
random search over neighbours never exceeding it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import bayespriv as bp

N = 6


def query() -> bp.Query:
    return bp.stack(
        bp.count(lambda b: b["h"] > 66, "h", name="tall"),
        bp.mean("w", bounds=(100.0, 200.0), name="weight"),
        bp.proportion(lambda b: (b["h"] > 66) & (b["s"] > 1300), ["h", "s"], name="tall & high"),
    )


def test_derived_from_components():
    q = query()
    assert q.column_sensitivity("h", N) == N + 1.0  # count: n; share reading h: 1
    assert q.column_sensitivity(["w"], N) == 100.0  # bounded mean: its range
    assert q.column_sensitivity(["s"], N) == 1.0
    assert q.column_sensitivity(["x", "y"], N) == 0.0  # columns the query does not read
    assert q.column_sensitivity(["h", "w", "s"], N) == N + 100.0 + 1.0
    assert q.column_sensitivity(["h", "w"], N, ord=2) == pytest.approx(np.sqrt(N**2 + 100.0**2 + 1.0))
    assert q.column_sensitivity(["h", "w"], N, ord="inf") == 100.0
    assert bp.count(lambda b: b["h"] > 0, "h").column_sensitivity("h", 50) == 50.0


def test_bounds_are_attained_and_never_exceeded():
    """Hand-built neighbours attain Δ_{h} and Δ_{w}; random neighbours stay within every bound."""
    q = query()
    base = pd.DataFrame({"h": [60.0] * N, "w": [100.0] * N, "s": [1400.0] * N})
    moved = base.assign(h=[70.0] * N, w=[200.0] * N)
    diff = np.abs(q(moved) - q(base))
    assert diff[0] == N and diff[1] == 100.0 and diff[2] == 1.0
    rng = np.random.default_rng(0)
    for cols in (["h"], ["w"], ["s"], ["h", "s"]):
        bound = q.column_sensitivity(cols, N)
        for _ in range(200):
            x = pd.DataFrame({"h": rng.uniform(55, 75, N), "w": rng.uniform(50, 250, N), "s": rng.uniform(800, 1600, N)})
            y = x.copy()
            for c in cols:
                y[c] = rng.permutation(x[c].to_numpy()) + rng.normal(0, 50, N)
            assert np.abs(q(x) - q(y)).sum() <= bound + 1e-9


def test_user_query_declarations():
    q = bp.Query(lambda b: b["x"].max(axis=1, keepdims=True), ["x", "y"], "max x",
                 column_sensitivities={("x", "y"): lambda n: 2.0 * n, "x": 1.5})
    assert q.column_sensitivity("x", 10) == 1.5
    assert q.column_sensitivity("y", 10) == 20.0  # covered by the superset {x, y}
    assert q.column_sensitivity(["x", "y"], 10) == 20.0
    assert q.column_sensitivity("z", 10) == 0.0
    assert q.column_sensitivity("x", 10, ord=2) == 1.5  # declared as L1: an upper bound for every norm
    # a declaration overrides the components' bound when it covers A
    tight = bp.Query(query().fn, query().columns, "tight", components=query().components,
                     column_sensitivities={"w": 50.0})
    assert tight.column_sensitivity("w", N) == 50.0 and tight.column_sensitivity("h", N) == N + 1.0


def test_existing_construction_is_unchanged():
    q = bp.Query(lambda b: b["x"][:, :1], ["x"], "first", ["a"])
    assert q.column_sensitivities is None and q.output_names == ("a",)
    assert bp.mean("x").components[0].record_range is None


def test_clear_errors():
    with pytest.raises(bp.ValidationError, match=r"query 'first' must declare a column sensitivity for columns \['x'\]"):
        bp.Query(lambda b: b["x"][:, :1], ["x"], "first").column_sensitivity("x", 5)
    with pytest.raises(bp.ValidationError, match=r"must bound component 'mean\(x\)'.*unbounded mean"):
        bp.mean("x").column_sensitivity("x", 5)
    assert bp.mean("x").column_sensitivity("y", 5) == 0.0
    with pytest.raises(bp.ValidationError, match="ord must be 1, 2 or inf; got 3"):
        query().column_sensitivity("h", N, ord=3)
    with pytest.raises(bp.ValidationError, match="n_records must be an integer >= 1; got 0"):
        query().column_sensitivity("h", 0)
    with pytest.raises(bp.ValidationError, match="column_sensitivities"):
        bp.Query(lambda b: b["x"][:, :1], ["x"], "f", column_sensitivities={"x": -1.0})
    with pytest.raises(bp.ParameterTypeError, match="column_sensitivities must be a mapping"):
        bp.Query(lambda b: b["x"][:, :1], ["x"], "f", column_sensitivities=[("x", 1.0)])
    with pytest.raises(bp.ValidationError, match="columns must be a column name"):
        query().column_sensitivity([1, 2], N)
