"""Published pgmpy benchmark networks as a user has them: record-level secrets on a root and on the deepest node.

The networks are small gzipped BIF copies in ``tests/data/networks`` (asia 8 nodes, alarm 37, insurance 27,
hepar2 70, andes 223), written by pgmpy's ``BIFWriter`` from its example models. A secret on the deepest node
conditions on a node with up to 164 ancestors (andes): the ancestors are drawn by variable elimination
(``datamodels/network_elimination.py``), whose factors stay small where the ancestral joint table has up to
4.7e49 entries. The exact parts are checked against a brute-force product of the CPDs on asia (256 joint
entries): every marginal, and the law of the ancestors given the deepest node's state from 400 000 draws, within
five standard errors per cell (false-failure probability below 1e-5 for the 64 cells, by a union bound).
"""

from __future__ import annotations

import gzip
import warnings
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import bayespriv as bp

pgmpy = pytest.importorskip("pgmpy")

NETWORKS = Path(__file__).resolve().parents[1] / "data" / "networks"
NAMES = ["asia", "alarm", "insurance", "hepar2", "andes"]


@cache
def _network(name: str):
    from pgmpy.readwrite import BIFReader

    text = gzip.decompress((NETWORKS / f"{name}.bif.gz").read_bytes()).decode()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pgmpy's notes on state-name types
        return BIFReader(string=text).get_model()


def _secret_and_query(network, where: str) -> tuple[bp.SecretPair, bp.Query]:
    """A proportion secret on a root (with children) or on the node with the most ancestors, its first state at
    about its marginal share and 10 points more; the query is the share of a neighbour's first state."""
    nodes = sorted(network.nodes())
    if where == "root":
        node = next(v for v in nodes if not network.get_parents(v) and network.get_children(v))
        other = sorted(network.get_children(node))[0]
    else:
        node = max(nodes, key=lambda v: (len(network.get_ancestral_graph([v]).nodes()), v))
        other = sorted(network.get_parents(node))[0]
    cpd = network.get_cpds(node)
    state = cpd.state_names[node][0]
    marginal = float(_marginal(network, node)[0])
    low = min(max(round(marginal, 1), 0.1), 0.8)
    pair = bp.SecretPair(bp.DatasetSecret.proportion(node, state, low),
                         bp.DatasetSecret.proportion(node, state, round(low + 0.1, 1)))
    return pair, bp.proportion(other, network.get_cpds(other).state_names[other][0])


def _marginal(network, node):
    from bayespriv.datamodels.compiled_networks import _compile_discrete

    net = _compile_discrete(network)
    return net.marginal(net.index(node))


@pytest.mark.parametrize("where", ["root", "deep"])
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.slow
def test_record_level_secrets_calibrate_and_release_with_defaults(name, where):
    network = _network(name)
    model = bp.BayesNetDataModel(network, n_records=100)
    pair, query = _secret_and_query(network, where)
    cal = bp.calibrate(model, pair, query, n_draws=2_000, rng=0)
    mech = bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3)
    assert mech.guarantee.established, mech.guarantee
    data = {c: v[0] for c, v in model.sample(None, 1, rng=1).items()}
    import pandas as pd

    release = mech.release(pd.DataFrame(data), rng=2)
    assert np.all(np.isfinite(release.value))


def _brute_force_joint(net) -> np.ndarray:
    n = len(net.nodes)
    full = np.ones([net.cards[j] for j in range(n)])
    for j in range(n):
        axes = list(net.parents[j]) + [j]
        shape = [1] * n
        for a in axes:
            shape[a] = net.cards[a]
        full = full * net.probs[j].transpose(np.argsort(axes)).reshape(shape)
    return full


def test_elimination_matches_the_brute_force_product_on_asia():
    from bayespriv.datamodels.compiled_networks import _compile_discrete
    from bayespriv.datamodels.network_elimination import sample_eliminated

    net = _compile_discrete(_network("asia"))
    full = _brute_force_joint(net)
    n = len(net.nodes)
    for subset in ([3], [5, 1], [7, 0, 2], list(range(n))[::-1]):
        keep = sorted(subset)
        want = full.sum(axis=tuple(a for a in range(n) if a not in subset)).transpose([keep.index(v) for v in subset])
        np.testing.assert_allclose(net.joint(subset), want, rtol=0, atol=1e-15)
    deep = max(range(n), key=lambda j: len(net.ancestors(j)))
    ancestors = net.ancestors(deep)
    draws = 400_000
    drawn = {deep: np.ones(draws, dtype=np.intp)}
    sample_eliminated(net.ancestor_plan(deep), drawn, np.random.default_rng(0))
    cond = full.sum(axis=tuple(a for a in range(n) if a not in ancestors + [deep]))
    cond = np.take(cond, 1, axis=sorted(ancestors + [deep]).index(deep)).ravel()
    cond = cond / cond.sum()
    flat = np.ravel_multi_index([drawn[a] for a in sorted(ancestors)], [net.cards[a] for a in sorted(ancestors)])
    seen = np.bincount(flat, minlength=cond.size) / draws
    assert np.all(np.abs(seen - cond) <= 5 * np.sqrt(cond * (1 - cond) / draws) + 1e-12)
    # the twin: ancestors drawn from their marginal law, ignoring the node's state, are caught
    prior = full.sum(axis=tuple(a for a in range(n) if a not in ancestors)).ravel()
    assert np.any(np.abs(prior - cond) > 5 * np.sqrt(cond * (1 - cond) / draws) + 1e-12)


def test_an_exact_law_too_large_to_tabulate_falls_back_to_sampling_and_says_so(monkeypatch):
    """``exact_laws="auto"`` samples when the model refuses to tabulate a law (UnsupportedSecretError, e.g. a factor
    above the limit), and records why in the diagnostics; ``exact_laws=True`` refuses."""
    network = _network("asia")
    model = bp.BayesNetDataModel(network, n_records=30)
    pair, query = _secret_and_query(network, "deep")
    assert bp.calibrate(model, pair, query, n_draws=500, rng=0).exact

    def too_large(self, secret, query):
        raise bp.errors.UnsupportedSecretError("a factor of 1e+12 entries is above the limit")

    monkeypatch.setattr(bp.BayesNetDataModel, "exact_law", too_large)
    cal = bp.calibrate(model, pair, query, n_draws=500, rng=0)
    assert not cal.exact and "1e+12 entries" in cal.diagnostics["exact_laws"]
    with pytest.raises(bp.errors.UnsupportedSecretError, match="1e\\+12 entries"):
        bp.calibrate(model, pair, query, n_draws=500, rng=0, exact_laws=True)


def _grid_delta(law_a, law_b, sd: float, eps: float) -> float:
    """H_ε of two finite laws convolved with N(0, sd²), both directions, on a dense grid (trapezoid)."""
    from scipy.special import logsumexp

    lo = min(law_a.points.min(), law_b.points.min()) - 12 * sd
    hi = max(law_a.points.max(), law_b.points.max()) + 12 * sd
    y = np.linspace(lo, hi, 200_001)

    def density(law):
        z = (y[:, None] - law.points[:, 0]) / sd
        return np.exp(logsumexp(-0.5 * z * z + np.log(law.weights), axis=1)) / (sd * np.sqrt(2 * np.pi))

    pa, pb = density(law_a), density(law_b)
    return max(np.trapezoid(np.clip(pa - np.e ** eps * pb, 0, None), y),
               np.trapezoid(np.clip(pb - np.e ** eps * pa, 0, None), y))


@pytest.mark.slow
def test_a_zero_theorem_noise_is_scaled_from_the_law_until_the_exact_delta_is_met():
    """On asia's root secret the query's own variance hides the mean shift (APGM's theorem noise is 0) but the exact
    count law alone does not meet δ: the accountant scales F's own covariance until it does. Independent check: δ of
    the released mixture on a grid meets the request; the twin with half the noise variance does not."""
    from bayespriv.calibration.laws import conditions_of

    network = _network("asia")
    pair, query = _secret_and_query(network, "root")
    cal = bp.calibrate(bp.BayesNetDataModel(network, n_records=100), pair, query, n_draws=2_000, rng=0)
    mech = bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3)
    (cond,) = conditions_of(cal)
    sd = float(np.sqrt(mech.noise_cov[0, 0]))
    assert sd > 0 and cond.kind == "finite"
    assert _grid_delta(cond.law_a, cond.law_b, sd, 1.0) <= 1e-3 * (1 + 1e-6)
    assert _grid_delta(cond.law_a, cond.law_b, sd / np.sqrt(2), 1.0) > 1e-3
