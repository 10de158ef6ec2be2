"""APMQM and MQM: Algorithm 2 and Song et al.'s MQM against brute force, and an empirical privacy check.

Brute force (exact): for every subset Q of the other nodes, the remote set by
Lauritzen's moralisation criterion (written here, not networkx's), the column
sensitivity of a count by its definition (n when a queried attribute is
nearby, else 0), and the max-influence from the full joint table (product of
the CPDs over every assignment). For chains, every subset of positions is a
candidate quilt and the remote set is everything beyond the nearest quilt
position on each side.

Empirical check (:func:`loss_lower_bound`): for each bin B of the output and
each direction, a one-sided Clopper–Pearson lower bound of P(B | a) and upper
bound of P(B | b) at level a' = α / (4·bins) each. If the mechanism is
ε-private every bin has P(B | a) ≤ e^ε P(B | b), so the lower bound of the
log-ratio exceeds ε only when one of the 4·bins intervals fails: probability
≤ α = 1e-4 whatever the seed (the seed is fixed for determinism only). The
twin (half the noise scale) has a true log-ratio of about 1.93 > ε = 1 in the
tails of this setup, which the bound detects with large margin.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta as beta_dist

import bayespriv as bp
from bayespriv.networks.quilts import (
    MarkovChain,
    ParameterNetwork,
    Quilt,
    QuiltSearch,
    calibrate_chain,
    calibrate_quilts,
)
from bayespriv.mechanisms.quilt import APMQM, MQM


from tests._bn_oracles import d_separated, influence_brute_force, joint_table, random_network, tabular  # noqa: E402

ALPHA = 1e-4


def params(bn, **columns) -> ParameterNetwork:
    """``bn`` declared as a network over parameters: node v governs column ``columns.get(v, v)``."""
    return ParameterNetwork(bn, columns={v: columns.get(v, v) for v in bn.nodes()})


# -- references ------------------------------------------------------------------------------------------------
def brute_force_apmqm(bn, names, cards, sensitive, weights, eps) -> float:
    """``weights``: queried node -> the largest change of its own component (count: n; mean: range)."""
    joint = joint_table(bn, names, cards)
    edges = list(bn.edges())
    worst = 0.0
    for i in sensitive:
        others = [v for v in names if v != i]
        best = math.inf
        for r in range(len(others) + 1):
            for q in itertools.combinations(others, r):
                remote = {y for y in others if y not in q and d_separated(edges, names, i, {y}, set(q))}
                nearby = set(names) - set(q) - remote
                delta = float(sum(w for v, w in weights.items() if v in nearby))
                e = influence_brute_force(joint, names, q, i)
                if e < eps:
                    best = min(best, 0.0 if delta == 0 else delta / (eps - e))
        worst = max(worst, best)
    return worst


# -- APMQM ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(8))
def test_apmqm_attains_the_brute_force_minimum(seed):
    """F stacks one component per queried attribute — a count (Δ = n) or a mean with bounds (0, r)
    (Δ = r) — so that Δ_{A∩N} F = Σ of the nearby components' bounds takes many values."""
    rng = np.random.default_rng(seed)
    n_nodes = 5 + seed % 3
    bn, names, cards = random_network(seed, n_nodes, edge_prob=0.35, concentration=3.0)  # influences 0.1–3
    sensitive = list(rng.choice(names, size=1 + seed % 2, replace=False))
    queried = [str(v) for v in rng.choice(names, size=1 + int(rng.integers(0, 3)), replace=False)]
    n = 20
    parts, weights = [], {}
    for v in queried:
        if rng.random() < 0.4:
            parts.append(bp.count(lambda b, v=v: b[v] > 0, v, name=f"count {v}"))
            weights[v] = float(n)
        else:
            r = float(rng.choice([1.0, 4.0]))
            parts.append(bp.mean(v, bounds=(0.0, r)))
            weights[v] = r
    query = bp.stack(*parts)
    cal = calibrate_quilts(params(bn), sensitive, query, n_records=n)
    scales = []
    for eps in (0.2, 1.0, 3.0):
        mech = APMQM(cal, epsilon=eps)
        want = brute_force_apmqm(bn, names, cards, sensitive, weights, eps)
        assert mech.scale == pytest.approx(want, rel=1e-9)
        np.testing.assert_allclose(mech.noise_scale, np.full(len(queried), want), rtol=1e-9)
        for i, chosen in mech.chosen.items():
            assert chosen.max_influence < eps
            assert chosen.score(eps) <= mech.scale * (1 + 1e-12)
        scales.append(mech.scale)
    assert scales[0] >= scales[1] >= scales[2]


def test_apmqm_noise_guarantee_release_and_ledger(tmp_path):
    bn = two_node(0.8, 0.4)
    query = bp.count(lambda b: b["q"] > 0, "q", name="q>0")
    cal = calibrate_quilts(params(bn), "i", query, n_records=5)
    # Quilts: ∅ (Δ = 5, e = 0) and {q} (Δ = 0, e = ln 3 ≈ 1.0986).
    mech = APMQM(cal, epsilon=1.0)
    assert mech.scale == pytest.approx(5.0) and mech.chosen["i"].quilt.quilt == frozenset()
    np.testing.assert_allclose(mech.noise_cov, [[2 * 25.0]])
    np.testing.assert_allclose(mech.noise_basis, [[1.0]])
    assert mech.accuracy(0.05) == pytest.approx(5.0 * math.log(20.0))
    g = mech.guarantee
    assert (g.epsilon, g.delta, g.confidence) == (1.0, 0.0, 1.0) and "Theorem 3" in g.theorem
    free = APMQM(cal, epsilon=1.2)
    assert free.scale == 0.0 and free.noiseless and free.chosen["i"].quilt.quilt == {"q"}
    df = pd.DataFrame({"q": [0, 1, 1, 0, 1], "i": [0] * 5})
    assert free.release(df).value.tolist() == [3.0]
    rel = mech.release_value([3.0], rng=7)
    assert rel.seeded and rel.protected == ("i",) and rel.variables == ("q",)
    with pytest.raises(bp.ValidationError, match="dataset must have 5 rows"):
        mech.release(df.iloc[:3])
    ledger = bp.Ledger(tmp_path / "budget.sqlite")
    ledger.set_budget("i", epsilon=1.5)
    mech.release(df, ledger=ledger)
    assert ledger.spent("i")[0] == pytest.approx(1.0)
    with pytest.raises(bp.BudgetExceededError):
        mech.release(df, ledger=ledger)
    assert "APMQM" in repr(mech) and list(mech.report().columns)[:3] == ["quilt", "nearby", "remote"]
    # Nothing to test on samples, and no Gaussian-approximation relaxation applies: not offered at all.
    for name in ("check", "assumption_checks", "relaxed", "relaxed_guarantee", "with_extra_laplace"):
        assert not hasattr(mech, name), name


def test_apmqm_forced_quilts_and_refusals():
    bn = two_node(0.8, 0.4)
    cal = calibrate_quilts(params(bn), "i", bp.count(lambda b: b["q"] > 0, "q"), n_records=5)
    with pytest.raises(bp.ValidationError, match=r"quilts\['i'\] must have a max-influence e < epsilon=1; got e = 1.09861"):
        APMQM(cal, epsilon=1.0, quilts={"i": {"q"}})
    forced = APMQM(cal, epsilon=2.0, quilts={"i": Quilt({"q"}, {"i"}, set())})
    assert forced.scale == 0.0
    with pytest.raises(bp.ValidationError, match="quilt must be the Markov quilt"):
        APMQM(cal, epsilon=2.0, quilts={"i": Quilt({"q"}, set(), {"i"})})
    with pytest.raises(bp.ValidationError, match="quilts must be keyed by sensitive nodes"):
        APMQM(cal, epsilon=2.0, quilts={"q": set()})
    with pytest.raises(bp.ParameterTypeError, match="QuiltCalibration"):
        APMQM(bp.Calibration.from_moments({s: [0.0] for s in PAIR.secrets}, {s: [[1.0]] for s in PAIR.secrets}, PAIR),
              epsilon=1.0)
    with pytest.raises(bp.ValidationError, match="epsilon must be a finite number > 0"):
        APMQM(cal, epsilon=0.0)
    # ε ≤ e for every quilt: only possible when the search has no usable quilt, e.g. without the trivial one.
    stripped = cal.__class__(**{**cal.__dict__, "candidates": {"i": tuple(c for c in cal.candidates["i"] if c.quilt.quilt)}})
    with pytest.raises(bp.ValidationError, match=r"epsilon must exceed the max-influence of some Markov quilt of 'i'.*smallest e = 1.09861"):
        APMQM(stripped, epsilon=0.5)


PAIR = bp.SecretPair(bp.DistributionSecret("i", 0.0), bp.DistributionSecret("i", 1.0))


def two_node(p00: float, p01: float):
    """i -> q, both binary, P(i) uniform; P(q = 0 | i = 0) = p00, P(q = 0 | i = 1) = p01."""
    from pgmpy.models import DiscreteBayesianNetwork

    bn = DiscreteBayesianNetwork([("i", "q")])
    bn.add_cpds(tabular("i", 2, [[0.5], [0.5]]), tabular("q", 2, [[p00, p01], [1 - p00, 1 - p01]], ["i"], [2]))
    return bn


# -- empirical privacy ---------------------------------------------------------------------------------------------
def loss_lower_bound(xa: np.ndarray, xb: np.ndarray, edges: np.ndarray, alpha: float) -> float:
    """Largest lower confidence bound of |log P(B | a)/P(B | b)| over bins (see the module docstring)."""
    ca, _ = np.histogram(xa, edges)
    cb, _ = np.histogram(xb, edges)
    na, nb = len(xa), len(xb)
    a1 = alpha / (4 * len(ca))
    best = -np.inf
    for c1, n1, c2, n2 in ((ca, na, cb, nb), (cb, nb, ca, na)):
        lower = np.where(c1 > 0, beta_dist.ppf(a1, np.maximum(c1, 1), n1 - c1 + 1), 0.0)
        upper = np.where(c2 < n2, beta_dist.ppf(1 - a1, c2 + 1, np.maximum(n2 - c2, 1)), 1.0)
        with np.errstate(divide="ignore"):
            best = max(best, float(np.max(np.log(lower) - np.log(upper))))
    return best


def tight_setup():
    """φ_income → φ_sat, both binary with P(φ_sat = φ_income) = 0.99; one record whose sat equals
    φ_sat; F = count(sat > 0.5) ∈ {0, 1}. At ε = 1 no quilt but the trivial one is usable
    (e(sat | income) = ln 99), so APMQM adds Lap(1): the true loss is ln((0.99e + 0.01)/(0.01e + 0.99))
    = 0.977 ≤ 1; with Lap(1/2) it is 1.93."""
    bn = two_node(0.99, 0.01)
    query = bp.count(lambda b: b["sat"] > 0.5, "sat", name="high sat")
    cal = calibrate_quilts(params(bn, i="income", q="sat"), "i", query, n_records=1)
    return cal


def draws(rng, income: int, n: int) -> np.ndarray:
    """F(X) under φ_income = income: φ_sat = income with probability 0.99."""
    same = rng.random(n) < 0.99
    return np.where(same, income, 1 - income).astype(float)


EDGES = np.array([-np.inf, -3.0, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, np.inf])


def test_empirical_loss_within_epsilon_and_twin_caught():
    cal = tight_setup()
    eps = 1.0
    mech = APMQM(cal, epsilon=eps)
    assert mech.scale == pytest.approx(1.0) and mech.protected == ("income",)
    rng = np.random.default_rng(2024)
    n = 100_000
    fa, fb = draws(rng, 1, n), draws(rng, 0, n)
    za, zb = rng.laplace(size=n), rng.laplace(size=n)
    b = float(mech.noise_scale[0])
    assert loss_lower_bound(fa + b * za, fb + b * zb, EDGES, ALPHA) <= eps
    twin = b / 2  # the broken twin: half the noise
    assert loss_lower_bound(fa + twin * za, fb + twin * zb, EDGES, ALPHA) > eps


# -- MQM -------------------------------------------------------------------------------------------------------------
def chain_brute_force(chains, t: int, eps: float) -> np.ndarray:
    """σ_i = min over every subset Q of the other positions of card(N)/(ε − e), e from the joint of all paths."""
    seqs = np.array(list(itertools.product(range(chains[0].k), repeat=t)))
    joints = [ch.initial[seqs[:, 0]] * np.prod(ch.transition[seqs[:, :-1], seqs[:, 1:]], axis=1) for ch in chains]
    out = np.empty(t)
    for i in range(t):
        others = [j for j in range(t) if j != i]
        best = math.inf
        for r in range(len(others) + 1):
            for q in itertools.combinations(others, r):
                lo = max([j for j in q if j < i], default=-1)
                hi = min([j for j in q if j > i], default=t)
                nearby = hi - lo - 1
                e = 0.0
                for p in joints:
                    if not q:
                        break
                    key = np.ravel_multi_index(seqs[:, list(q)].T, [chains[0].k] * len(q))
                    table = np.zeros((chains[0].k ** len(q), chains[0].k))
                    np.add.at(table, (key, seqs[:, i]), p)
                    cond = table / table.sum(axis=0)
                    for a, b in itertools.permutations(range(chains[0].k), 2):
                        for x in range(len(cond)):
                            if cond[x, a] > 0:
                                e = max(e, math.inf if cond[x, b] == 0 else math.log(cond[x, a] / cond[x, b]))
                if e < eps:
                    best = min(best, nearby / (eps - e))
        out[i] = best
    return out


@pytest.mark.parametrize("seed, t", [(0, 4), (1, 5), (2, 6), (3, 7)])
def test_mqm_matches_brute_force_on_binary_chains(seed, t):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet([4.0, 2.0], size=2)
    p[1] = p[1][::-1]
    chain = MarkovChain(p, rng.dirichlet([1.0, 1.0]))
    query = bp.count(lambda b: b["x"] == 1, "x", name="ones")
    cal = calibrate_chain(chain, query, length=t)
    assert cal.lipschitz == 1.0
    for eps in (0.5, 1.5, 4.0):
        mech = MQM(cal, epsilon=eps)
        want = chain_brute_force([chain], t, eps)
        np.testing.assert_allclose(mech.sigma, want, rtol=1e-9)
        assert mech.sigma_max == pytest.approx(want.max(), rel=1e-9)
        assert mech.scale == pytest.approx(want.max(), rel=1e-9)
        w = mech.worst
        assert w.score == pytest.approx(want.max(), rel=1e-9)
        assert mech.quilt_of(w.position).score == pytest.approx(want[w.position], rel=1e-9)


def test_mqm_family_zero_transitions_and_release():
    """A family takes the supremum; a transition of probability 0 makes a neighbour's influence infinite."""
    a = MarkovChain([[0.9, 0.1], [0.2, 0.8]], [0.5, 0.5])
    b = MarkovChain([[0.7, 0.3], [0.4, 0.6]], [0.3, 0.7])
    query = bp.count(lambda x: x["s"] == 1, "s")
    fam = calibrate_chain([a, b], query, length=5)
    for eps in (0.7, 2.0):
        np.testing.assert_allclose(MQM(fam, epsilon=eps).sigma, chain_brute_force([a, b], 5, eps), rtol=1e-9)
    hard = MarkovChain([[1.0, 0.0], [0.5, 0.5]], [0.5, 0.5])
    cal = calibrate_chain(hard, query, length=5)
    assert np.isinf(cal.influence[2, 1, 0])  # X_1 given X_2: P(X_1 = 1 | X_2 = 0) = 0 < P(X_1 = 1 | X_2 = 1)
    np.testing.assert_allclose(MQM(cal, epsilon=1.0).sigma, chain_brute_force([hard], 5, 1.0), rtol=1e-9)
    mech = MQM(cal, epsilon=1.0)
    df = pd.DataFrame({"s": [0, 1, 1, 0, 1]})
    rel = mech.release(df, rng=3)
    assert rel.protected == ("s",) and rel.guarantee.delta == 0.0 and "Song" in rel.guarantee.theorem
    with pytest.raises(bp.ValidationError, match="dataset must have 5 rows"):
        mech.release(df.iloc[:4])
    prop = calibrate_chain(a, bp.proportion(lambda x: x["s"] == 1, "s"), length=5)
    assert prop.lipschitz == pytest.approx(0.2)
    assert MQM(prop, epsilon=1.0).scale == pytest.approx(0.2 * MQM(calibrate_chain(a, query, length=5), epsilon=1.0).scale)


def test_mqm_bad_input():
    q = bp.count(lambda x: x["s"] == 1, "s")
    with pytest.raises(bp.ValidationError, match="transition must be row-stochastic"):
        MarkovChain([[0.5, 0.6], [0.5, 0.5]], [0.5, 0.5])
    with pytest.raises(bp.ValidationError, match="initial must be a probability vector of length 2"):
        MarkovChain([[0.5, 0.5], [0.5, 0.5]], [1.0])
    with pytest.raises(bp.ValidationError, match="per-record bounds"):
        calibrate_chain(MarkovChain.stationary([[0.9, 0.1], [0.2, 0.8]]), bp.mean("s"), length=4)
    with pytest.raises(bp.ParameterTypeError, match="ChainCalibration"):
        MQM(object(), epsilon=1.0)
    ch = MarkovChain.stationary([[0.9, 0.1], [0.2, 0.8]])
    np.testing.assert_allclose(ch.initial, [2 / 3, 1 / 3])
    with pytest.raises(bp.ValidationError, match="position must be an integer"):
        MQM(calibrate_chain(ch, q, length=4), epsilon=1.0).quilt_of(9)


@pytest.mark.parametrize("seed", range(3))
def test_candidate_search_is_valid_and_never_beats_the_exhaustive_minimum(seed):
    """Candidate mode searches fewer quilts: its noise is at least the exhaustive minimum, and the quilt
    it uses is a valid Markov quilt (checked with the independent criterion above)."""
    bn, names, cards = random_network(50 + seed, 9, edge_prob=0.35, concentration=3.0)
    queried = names[5:]
    query = bp.stack(*[bp.mean(v, bounds=(0.0, 1.0 + k)) for k, v in enumerate(queried)])
    full = calibrate_quilts(params(bn), names[1], query, n_records=10)
    cand = calibrate_quilts(params(bn), names[1], query, n_records=10, search=QuiltSearch(exhaustive=False))
    assert cand.n_quilts[names[1]] < full.n_quilts[names[1]]
    for eps in (0.3, 1.0, 3.0):
        m_full, m_cand = APMQM(full, epsilon=eps), APMQM(cand, epsilon=eps)
        assert m_cand.scale >= m_full.scale * (1 - 1e-12)
        quilt = m_cand.chosen[names[1]].quilt
        for y in quilt.remote:
            assert d_separated(list(bn.edges()), names, names[1], {y}, set(quilt.quilt))


# -- per-θ quilts for families ---------------------------------------------------------------------------------------
def brute_force_family(bns, names, cards, sensitive, weights, eps, *, per_theta: bool) -> float:
    """Exact APMQM scale of a family by enumeration: every subset Q, remote sets by Lauritzen's criterion,
    e_θ from each member's full joint table. ``per_theta``: max over θ of the per-θ minimum; else the
    minimum with e_Θ = max over θ (Algorithm 2 with the sup inside)."""
    joints = [joint_table(bn, names, cards) for bn in bns]
    edges = list(bns[0].edges())
    worst = 0.0
    for i in sensitive:
        others = [v for v in names if v != i]
        table = []  # (Δ, [e_θ])
        for r in range(len(others) + 1):
            for q in itertools.combinations(others, r):
                remote = {y for y in others if y not in q and d_separated(edges, names, i, {y}, set(q))}
                nearby = set(names) - set(q) - remote
                delta = float(sum(w for v, w in weights.items() if v in nearby))
                table.append((delta, [influence_brute_force(j, names, q, i) for j in joints]))

        def best(es):
            s = [0.0 if d == 0 else d / (eps - e) for d, e in zip((t[0] for t in table), es) if e < eps]
            return min(s)

        if per_theta:
            worst = max(worst, max(best([t[1][m] for t in table]) for m in range(len(bns))))
        else:
            worst = max(worst, best([max(t[1]) for t in table]))
    return worst


def crossed_family():
    """i → a → t1, i → b → t2 (t = a copy of its parent), binary. Member 0: i moves a strongly
    (e(a | i) = ln(0.8/0.2)·… ≈ 0.92) and b weakly (≈ 0.10); member 1 the reverse. F = means of t1, t2
    (bounds (0, 1): Δ = 1 each). At ε = 1: {a} or {b} alone keeps one t remote with Δ = 1; both together
    have e ≈ 1.02 ≥ ε. Per θ the weakly moved side is free (score 1/(1 − 0.10)); with the sup over Θ both
    single quilts have e ≈ 0.92 and Algorithm 2 falls back to the trivial quilt (score 2)."""
    from pgmpy.models import DiscreteBayesianNetwork

    def member(hi_a: bool):
        bn = DiscreteBayesianNetwork([("i", "a"), ("i", "b"), ("a", "t1"), ("b", "t2")])
        strong, weak = 0.2152, 0.4750  # P(child = 1 | i = 0); P(child = 1 | i = 1) = 1 − that
        pa, pb = (strong, weak) if hi_a else (weak, strong)
        copy = [[1.0, 0.0], [0.0, 1.0]]
        bn.add_cpds(tabular("i", 2, [[0.5], [0.5]]),
                    tabular("a", 2, [[1 - pa, pa], [pa, 1 - pa]], ["i"], [2]),
                    tabular("b", 2, [[1 - pb, pb], [pb, 1 - pb]], ["i"], [2]),
                    tabular("t1", 2, copy, ["a"], [2]), tabular("t2", 2, copy, ["b"], [2]))
        return bn

    bns = [member(True), member(False)]
    names = ["i", "a", "b", "t1", "t2"]
    return bns, names, {v: 2 for v in names}


def test_apmqm_per_theta_quilts_match_the_per_theta_brute_force():
    """Exact (no randomness): the scale equals the enumerated max_θ max_i min_Q σ_θ, the coarser rule
    (sup over Θ inside the minimum) is 1.8× it on this constructed family, and every choice is a quilt
    whose e_θ < ε for its member."""
    bns, names, cards = crossed_family()
    query = bp.stack(bp.mean("t1", bounds=(0.0, 1.0)), bp.mean("t2", bounds=(0.0, 1.0)))
    net = ParameterNetwork(bns, columns={v: v for v in names})
    cal = calibrate_quilts(net, "i", query, n_records=10)
    eps = 1.0
    mech = APMQM(cal, epsilon=eps)
    weights = {"t1": 1.0, "t2": 1.0}
    new = brute_force_family(bns, names, cards, ["i"], weights, eps, per_theta=True)
    old = brute_force_family(bns, names, cards, ["i"], weights, eps, per_theta=False)
    assert mech.scale == pytest.approx(new, rel=1e-12)
    sup_rule = max(cal.best("i", eps).score(eps), 0.0)  # the choice with e_Θ = sup over θ
    assert sup_rule == pytest.approx(old, rel=1e-12)
    assert old / new == pytest.approx(1.8, abs=0.01)
    picks = {m: mech.chosen_per_member[m]["i"].quilt.quilt for m in range(2)}
    assert picks == {0: frozenset({"b"}), 1: frozenset({"a"})}
    report = mech.report()
    assert list(report.columns)[-2:] == ["theta", "binding"] and len(report) == 2 and report["binding"].sum() == 1
    # The broken twin: taking each member's own minimum without the max over θ would under-noise member 0 or 1.
    assert min(_member_minimum(cal, m, eps) for m in range(2)) <= mech.scale


def _member_minimum(cal, m, eps):
    return float(cal.member_scores("i", eps)[m].min())


@pytest.mark.parametrize("seed", range(3))
def test_per_theta_scale_never_exceeds_the_sup_rule_on_families(seed):
    """On random families the per-θ scale equals its brute force and is ≤ the sup-over-Θ rule's."""
    nets = [random_network(300 + 10 * seed + j, 5, edge_prob=0.4, concentration=3.0) for j in range(2)]
    bn0, names, cards = nets[0]
    bns = [bn0]
    for bn, _, _ in nets[1:]:  # same graph and cards: re-use member 0's structure with member 1's tables' shape
        from pgmpy.models import DiscreteBayesianNetwork

        other = DiscreteBayesianNetwork(list(bn0.edges()))
        other.add_nodes_from(names)
        rng = np.random.default_rng(seed)
        for v in names:
            parents = [p for p in names if (p, v) in set(bn0.edges())]
            ncol = int(np.prod([cards[p] for p in parents]))
            cols = rng.dirichlet(np.full(cards[v], 3.0), size=ncol)
            other.add_cpds(tabular(v, cards[v], cols.T, parents, [cards[p] for p in parents]))
        bns.append(other)
    weights = {names[-1]: 2.0, names[-2]: 1.0}
    query = bp.stack(bp.mean(names[-1], bounds=(0.0, 2.0)), bp.mean(names[-2], bounds=(0.0, 1.0)))
    cal = calibrate_quilts(ParameterNetwork(bns, columns={v: v for v in names}), names[0], query, n_records=10)
    for eps in (0.5, 1.5, 4.0):
        got = APMQM(cal, epsilon=eps).scale
        assert got == pytest.approx(brute_force_family(bns, names, cards, [names[0]], weights, eps, per_theta=True),
                                    rel=1e-9)
        assert got <= brute_force_family(bns, names, cards, [names[0]], weights, eps, per_theta=False) * (1 + 1e-12)


def chain_family():
    a = MarkovChain([[0.68, 0.32], [0.35, 0.65]], [0.22, 0.78])
    b = MarkovChain([[0.875, 0.125], [0.975, 0.025]], [0.92, 0.08])
    return a, b


def test_mqm_per_theta_matches_the_per_chain_brute_force():
    """σ_i = max over chains of each chain's own brute-force minimum; the sup rule's σ_max is 1.12× larger."""
    a, b = chain_family()
    query = bp.count(lambda x: x["s"] == 1, "s")
    fam = calibrate_chain([a, b], query, length=8)
    eps = 2.0
    mech = MQM(fam, epsilon=eps)
    want = np.maximum(chain_brute_force([a], 8, eps), chain_brute_force([b], 8, eps))
    np.testing.assert_allclose(mech.sigma, want, rtol=1e-9)
    old = chain_brute_force([a, b], 8, eps)  # e_Θ = sup over the chains inside the minimum
    assert old.max() / mech.sigma_max == pytest.approx(1.1187, abs=0.001)
    assert np.all(mech.sigma <= old * (1 + 1e-12))
    w = mech.worst
    assert w.member in (0, 1) and w.score == pytest.approx(mech.sigma_max)
    assert mech.quilt_of(w.position, member=w.member).score == pytest.approx(w.score)
    rep = mech.report()
    assert {"theta", "binding"} <= set(rep.columns) and rep["binding"].sum() == 8


def test_family_calibrations_round_trip_with_the_same_noise(tmp_path):
    from bayespriv.files import load_calibration

    bns, names, _ = crossed_family()
    query = bp.stack(bp.mean("t1", bounds=(0.0, 1.0)), bp.mean("t2", bounds=(0.0, 1.0)))
    cal = calibrate_quilts(ParameterNetwork(bns, columns={v: v for v in names}), "i", query, n_records=10)
    loaded = load_calibration(cal.to_netcdf(tmp_path / "q.nc"), query=query)
    a, b = APMQM(cal, epsilon=1.0), APMQM(loaded, epsilon=1.0)
    assert a.scale == b.scale and a.guarantee == b.guarantee
    assert [dict(x) for x in a.chosen_per_member] == [dict(x) for x in b.chosen_per_member]
    ca, cb = chain_family()
    cq = bp.count(lambda x: x["s"] == 1, "s")
    chain = calibrate_chain([ca, cb], cq, length=8)
    back = load_calibration(chain.to_netcdf(tmp_path / "c.nc"), query=cq)
    assert MQM(chain, epsilon=2.0).scale == MQM(back, epsilon=2.0).scale
    assert np.array_equal(chain.member_influence, back.member_influence, equal_nan=True)
