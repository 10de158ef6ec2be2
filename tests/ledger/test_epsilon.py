"""Per-variable ε (Tan, Propositions 3.2–3.5): Example 3.6 and its Table 1, exactly."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import bayespriv as bp
from bayespriv.ledger import (
    TableLayout,
    VariableRelease,
    as_variable_release,
    epsilon_on,
    epsilon_table,
    subset_count_table,
)
from bayespriv.mechanisms import ExpM

VARIABLES = ["age", "sex", "residential region", "race", "other variable"]
EXAMPLE_3_6 = [
    VariableRelease("Table A", 1, ["age", "sex"]),
    VariableRelease("Table B", 1, ["residential region", "race"]),
    VariableRelease("Table C", 1, ["residential region", "age"]),
]


def test_table_1_reproduced_exactly():
    """Table 1 of the paper, cell by cell (columns are the singleton subsets {variable})."""
    expected = pd.DataFrame(
        [[1, 1, 0, 0, 0], [0, 0, 1, 1, 0], [1, 0, 1, 0, 0], [2, 1, 2, 1, 0]],
        index=pd.Index(["Table A", "Table B", "Table C", "Tables A, B & C"], name="release"),
        columns=pd.Index(VARIABLES, name="variable"),
        dtype=float,
    )
    got = epsilon_table(EXAMPLE_3_6, VARIABLES, total="Tables A, B & C")
    pd.testing.assert_frame_equal(got, expected, check_exact=True)


def test_epsilon_on_subsets():
    assert epsilon_on(EXAMPLE_3_6, "age") == 2.0  # the paper's worked case
    assert epsilon_on(EXAMPLE_3_6, ["other variable"]) == 0.0  # Proposition 3.3
    assert epsilon_on(EXAMPLE_3_6, ["age", "sex"]) == 2.0  # A (1) + C (1); B does not use them
    assert epsilon_on(EXAMPLE_3_6, VARIABLES) == 3.0  # every release, as DP (Propositions 3.1, 3.4)
    assert epsilon_on(EXAMPLE_3_6[0], ["race"]) == 0.0


def test_composition_is_exact_for_decimal_epsilons():
    rel = [VariableRelease(f"r{i}", 0.1, ["x"]) for i in range(10)]
    assert epsilon_on(rel, "x") == 1.0
    assert epsilon_table(rel).loc["Total", "x"] == 1.0


def test_subset_table_is_private_on_protected_not_on_public():
    rec = pd.DataFrame({"degree": ["BA", "BSc", "BA", "BSc"], "income": ["low", "high", "high", "low"]})
    t = subset_count_table(rec, protected="income", public="degree", epsilon=0.5, rng=0,
                           layout=TableLayout(protected_values=["low", "high"]))
    dp = VariableRelease("age table", 1.0, ["age"])
    table = epsilon_table({"incomes": t, "ages": dp}, ["income", "degree", "age", "sex"])
    assert table.loc["incomes"].tolist() == [0.5, math.inf, 0.0, 0.0]
    assert table.loc["Total"].tolist() == [0.5, math.inf, 1.0, 0.0]
    assert epsilon_on(t, ["income", "sex"]) == 0.5  # unused variables join the protected set for free
    assert epsilon_on(t, ["income", "degree"]) == math.inf


def test_bayespriv_release_is_counted_on_its_variables():
    s1, s2 = bp.DatasetSecret.proportion("sex", "F", 0.4), bp.DatasetSecret.proportion("sex", "F", 0.6)
    q = bp.proportion(lambda b: b["sex"] == "F", "sex", name="share F")
    cal = bp.Calibration.from_moments({s1: [0.4], s2: [0.6]}, {s1: [[0.01]], s2: [[0.01]]}, bp.SecretPair(s1, s2), q)
    rel = ExpM(cal, epsilon=0.3, noise="laplace").release_value([0.5], rng=1)
    vr = as_variable_release(rel)
    assert vr.epsilon == 0.3 and vr.variables == ("sex",) and vr.protected == ("sex",)
    assert epsilon_on([rel, rel], "sex") == 0.6
    assert epsilon_on(rel, "age") == 0.0


def test_unknown_variables_count_everywhere():
    r = VariableRelease("opaque", 0.2, None)
    assert epsilon_on(r, "anything") == 0.2
    r2 = VariableRelease("opaque but protects sex", 0.2, None, ["sex"])
    assert epsilon_on(r2, "sex") == 0.2 and epsilon_on(r2, "age") == math.inf


def test_validation():
    with pytest.raises(bp.ValidationError, match="epsilon must be a finite number >= 0; got -1"):
        VariableRelease("r", -1, ["x"])
    with pytest.raises(bp.ValidationError, match=r"protected must be a subset of variables \('x',\); got \['y'\]"):
        VariableRelease("r", 1, ["x"], ["y"])
    with pytest.raises(bp.ParameterTypeError, match="a release must have a guarantee and variables"):
        epsilon_table([object()])
    with pytest.raises(bp.ParameterTypeError, match="attrs"):
        epsilon_table([pd.DataFrame({"a": [1]})])
    assert epsilon_table(EXAMPLE_3_6, total=None).shape == (3, 4)
    assert np.isinf(epsilon_on([VariableRelease("r", 1, ["x"], [])], "x"))
