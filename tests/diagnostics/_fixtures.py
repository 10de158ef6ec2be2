"""Small results shared by the diagnostics tests (built once per module, each in about a second)."""

from __future__ import annotations

import numpy as np

import bayespriv as bp


def _normal_sampler(secret, n_draws, rng):
    return {"x": rng.normal(secret.value, 1.0, (n_draws, 10)), "y": rng.normal(0.0, 1.0, (n_draws, 10))}


def _skewed_sampler(secret, n_draws, rng):
    """One record drawn from an exponential: F = mean(x) is far from Gaussian."""
    return {"x": rng.exponential(1.0 + secret.value, (n_draws, 1))}


SECRETS = [bp.DatasetSecret.mean("x", v) for v in (0.0, 0.5, 2.0)]


def gaussian_calibration(n_draws: int = 20_000, seed: int = 0, two_components: bool = True) -> bp.Calibration:
    """Enough draws (three pairs) for the accountant to certify δ = 1e-3."""
    model = bp.FunctionDataModel(_normal_sampler, columns=["x", "y"], n_records=10)
    query = bp.stack(bp.mean("x"), bp.mean("y")) if two_components else bp.mean("x")
    return bp.calibrate(model, bp.all_pairs(SECRETS), query, n_draws=n_draws, rng=seed)


def skewed_calibration(n_draws: int = 4000, seed: int = 0) -> bp.Calibration:
    model = bp.FunctionDataModel(_skewed_sampler, columns=["x"], n_records=1)
    pairs = bp.all_pairs([bp.DatasetSecret.mean("x", v) for v in (0.0, 0.2)])
    return bp.calibrate(model, pairs, bp.mean("x"), n_draws=n_draws, rng=seed)


def chain_network():
    """a -> b -> c, binary, as a network over parameters (each node governs its own column)."""
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    from bayespriv.networks.quilts import ParameterNetwork

    bn = DiscreteBayesianNetwork([("a", "b"), ("b", "c")])
    bn.add_cpds(TabularCPD("a", 2, [[0.5], [0.5]]),
                TabularCPD("b", 2, [[0.8, 0.3], [0.2, 0.7]], evidence=["a"], evidence_card=[2]),
                TabularCPD("c", 2, [[0.9, 0.4], [0.1, 0.6]], evidence=["b"], evidence_card=[2]))
    return ParameterNetwork(bn, columns={v: v for v in "abc"})


def quilt_calibration():
    from bayespriv.networks.quilts import calibrate_quilts

    query = bp.stack(bp.count(lambda b: b["b"] > 0, "b", name="b>0"), bp.count(lambda b: b["c"] > 0, "c", name="c>0"))
    return calibrate_quilts(chain_network(), "a", query, n_records=5)


def chain_calibration():
    from bayespriv.networks.quilts import MarkovChain, calibrate_chain

    chain = MarkovChain(np.array([[0.8, 0.2], [0.3, 0.7]]), np.array([0.5, 0.5]))
    return calibrate_chain(chain, bp.count(lambda b: b["x"] == 1, "x", name="ones"), length=6)
