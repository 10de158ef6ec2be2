"""The model a calibration file is bound to (``datamodels/signature.py``).

Exact checks: two builds of one model have one signature (no ids, addresses or caches in it), and every change
that alters the law — a parameter, a reference table's value, a module-level value a sampler reads, a
conditional table of a network, the θ grid, the records — is named by :func:`signature_differences`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import bayespriv as bp
from bayespriv.datamodels.signature import SIGNATURE_SCHEME, model_signature, signature_differences

#: Read by ``_sampler`` at call time: a weight loaded from a file, say.
SCALE = {"x": 1.0}


def _sampler(secret, n, rng):
    return {"x": rng.normal(0.0 if secret is None else secret.value, SCALE["x"], (n, 1))}


def _gaussian(mean_y: float = 1.0, n: int = 20) -> bp.GaussianDataModel:
    return bp.GaussianDataModel([0.0, mean_y], [[1.0, 0.5], [0.5, 1.0]], ["x", "y"], n)


def _table(shift: float = 0.0) -> pd.DataFrame:
    return pd.DataFrame({"x": np.arange(40.0) + shift * (np.arange(40) == 3), "g": ["a", "b"] * 20})


def _differences(a, b) -> list[str]:
    diffs, compared = signature_differences(model_signature(a), model_signature(b))
    assert compared
    return diffs


def test_two_builds_of_one_model_have_one_signature():
    assert model_signature(_gaussian()) == model_signature(_gaussian())
    model = bp.EmpiricalDataModel(_table(), n_records=10)
    before = model_signature(model)
    model.sample(bp.DatasetSecret.proportion("g", "a", 0.3), 5, rng=0)  # fills the model's caches
    assert model_signature(model) == before == model_signature(bp.EmpiricalDataModel(_table(), n_records=10))
    assert before["scheme"] == SIGNATURE_SCHEME and before["members"][0]["digest"] is not None


@pytest.mark.parametrize("pair, named", [
    (lambda: (_gaussian(), _gaussian(mean_y=1.5)), "other parameters"),
    (lambda: (_gaussian(), _gaussian(n=21)), "n_records 21"),
    (lambda: (bp.EmpiricalDataModel(_table(), n_records=20), bp.EmpiricalDataModel(_table(shift=0.5), n_records=20)),
     "other parameters"),
])
def test_a_changed_model_is_named(pair, named):
    base, other = pair()
    diffs = _differences(base, other)
    assert any(named in d for d in diffs), diffs


def test_a_module_level_value_the_sampler_reads_is_part_of_the_signature():
    model = bp.FunctionDataModel(_sampler, columns=["x"], n_records=1)
    before = model_signature(model)
    assert before["members"][0]["digest"] is not None
    SCALE["x"] = 3.0
    try:
        diffs, compared = signature_differences(before, model_signature(model))
    finally:
        SCALE["x"] = 1.0
    assert compared and any("other parameters" in d for d in diffs), diffs


def test_the_theta_grid_is_compared():
    family = bp.DataModelFamily(lambda mu: bp.GaussianDataModel([mu], [[1.0]], ["x"], 5), {"mu": [0.0, 1.0]})
    other = bp.DataModelFamily(lambda mu: bp.GaussianDataModel([mu], [[1.0]], ["x"], 5), {"mu": [0.0, 2.0]})
    assert _differences(family, family) == []
    diffs = _differences(family, other)
    assert any("θ grid" in d and "2.0" in d for d in diffs), diffs


def test_a_conditional_table_of_a_network_is_compared():
    pytest.importorskip("pgmpy")
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    def net(p: float):
        g = DiscreteBayesianNetwork([("a", "b")])
        g.add_cpds(TabularCPD("a", 2, [[p], [1 - p]]), TabularCPD("b", 2, [[0.9, 0.2], [0.1, 0.8]], ["a"], [2]))
        return bp.BayesNetDataModel(g, n_records=10)

    assert _differences(net(0.3), net(0.3)) == []
    assert any("other parameters" in d for d in _differences(net(0.3), net(0.31)))


def test_another_scheme_or_a_partial_digest_is_reported_as_not_compared():
    sig = model_signature(_gaussian())
    older = dict(sig, scheme=0)
    diffs, compared = signature_differences(older, sig)
    assert diffs == [] and not compared
    partial = dict(sig, members=[dict(sig["members"][0], digest=None)])
    assert signature_differences(partial, sig) == ([], False)
    assert signature_differences(sig, model_signature(bp.GaussianDataModel([0.0], [[1.0]], ["x"], 20)))[0]
