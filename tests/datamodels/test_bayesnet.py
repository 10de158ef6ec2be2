"""BayesNetDataModel: pgmpy networks as Θ.

Statistical tests use a fixed seed and a tolerance derived for a stated
false-failure probability α (each docstring gives α and the derivation); the
references are independent of the sampler: closed forms, pgmpy's
VariableElimination and ``to_joint_gaussian``, pgmpy's own forward sampler,
and (for the exact laws of counts) brute-force sums over the full joint table
with binomials in 30-digit arithmetic. Every statistical check has a broken
twin that it catches.

χ² tests pool the cells whose expected count is below 5 into one cell, so the
χ² approximation of the goodness-of-fit statistic holds.
"""

from __future__ import annotations

import dataclasses
import pickle
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from scipy import stats

import bayespriv as bp
from bayespriv.calibration import ExecutionOptions
from bayespriv.datamodels.bayesnet import BayesNetDataModel

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)  # pgmpy's own deprecation notices on import
    from pgmpy.factors.continuous import LinearGaussianCPD
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.inference import VariableElimination
    from pgmpy.models import DiscreteBayesianNetwork, LinearGaussianBayesianNetwork
    from pgmpy.sampling import BayesianModelSampling


# -- networks ---------------------------------------------------------------------------------
MU0, MU1, SIGMA = 160.0, 175.0, 6.0
HEIGHTS = [MU0 - SIGMA, MU0 + SIGMA, MU1 - SIGMA, MU1 + SIGMA]


def hierarchical_net(p: float = 0.5) -> DiscreteBayesianNetwork:
    """gender ~ Bernoulli(p) on {0, 1}; height | gender = g is μ_g ± σ with probability 1/2 each.

    So E[height | g] = μ_g and Var[height | g] = σ².
    """
    net = DiscreteBayesianNetwork([("gender", "height")])
    net.add_cpds(
        TabularCPD("gender", 2, [[1 - p], [p]], state_names={"gender": [0, 1]}),
        TabularCPD(
            "height", 4, [[0.5, 0.0], [0.5, 0.0], [0.0, 0.5], [0.0, 0.5]],
            evidence=["gender"], evidence_card=[2], state_names={"height": HEIGHTS, "gender": [0, 1]},
        ),
    )
    return net


def five_node_net() -> DiscreteBayesianNetwork:
    """A → S ← B, S → C ← B, A → D: the sensitive node S has two ancestors.

    S depends strongly on A, so forgetting to condition A on S is visible; D is
    not a descendant of S but depends on it through A; C has numeric states.
    """
    net = DiscreteBayesianNetwork([("A", "S"), ("B", "S"), ("S", "C"), ("B", "C"), ("A", "D")])
    sa, sb, ss = ["a0", "a1", "a2"], [0, 1], ["lo", "mid", "hi"]
    net.add_cpds(
        TabularCPD("A", 3, [[0.5], [0.3], [0.2]], state_names={"A": sa}),
        TabularCPD("B", 2, [[0.6], [0.4]], state_names={"B": sb}),
        TabularCPD(
            "S", 3,
            # columns: (A, B) = (a0,0), (a0,1), (a1,0), (a1,1), (a2,0), (a2,1)
            [[0.80, 0.60, 0.20, 0.10, 0.10, 0.05],
             [0.15, 0.30, 0.60, 0.50, 0.20, 0.15],
             [0.05, 0.10, 0.20, 0.40, 0.70, 0.80]],
            evidence=["A", "B"], evidence_card=[3, 2], state_names={"S": ss, "A": sa, "B": sb},
        ),
        TabularCPD(
            "C", 2,
            # columns: (S, B) = (lo,0), (lo,1), (mid,0), (mid,1), (hi,0), (hi,1)
            [[0.9, 0.7, 0.5, 0.4, 0.2, 0.1], [0.1, 0.3, 0.5, 0.6, 0.8, 0.9]],
            evidence=["S", "B"], evidence_card=[3, 2], state_names={"C": [1.0, 3.0], "S": ss, "B": sb},
        ),
        TabularCPD("D", 2, [[0.8, 0.5, 0.2], [0.2, 0.5, 0.8]], evidence=["A"], evidence_card=[3],
                   state_names={"D": ["no", "yes"], "A": sa}),
    )
    return net


def gaussian_net() -> LinearGaussianBayesianNetwork:
    net = LinearGaussianBayesianNetwork([("x1", "x2"), ("x2", "x3"), ("x1", "x3")])
    net.add_cpds(
        LinearGaussianCPD("x1", [1.0], 2.0),
        LinearGaussianCPD("x2", [-1.0, 0.5], 1.5, ["x1"]),
        LinearGaussianCPD("x3", [2.0, -1.0, 0.8], 1.0, ["x2", "x1"]),
    )
    return net


def _cpd_snapshot(net) -> dict:
    out = {}
    for cpd in net.get_cpds():
        if isinstance(cpd, TabularCPD):
            out[cpd.variable] = (np.array(cpd.values, copy=True), {k: list(v) for k, v in cpd.state_names.items()})
        else:
            out[cpd.variable] = (np.array(cpd.beta, dtype=float, copy=True), float(cpd.std), list(cpd.evidence))
    return out


def _same_snapshot(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    for k in a:
        for x, y in zip(a[k], b[k]):
            if isinstance(x, np.ndarray):
                if x.shape != y.shape or not np.array_equal(x, y):
                    return False
            elif x != y:
                return False
    return True


def _chi2_pvalue(observed: np.ndarray, probs: np.ndarray) -> float:
    """Goodness-of-fit p-value, cells with expected count < 5 pooled into one."""
    observed, probs = np.asarray(observed, float).ravel(), np.asarray(probs, float).ravel()
    assert observed[probs == 0].sum() == 0, "a cell of probability 0 was drawn"
    n = observed.sum()
    expected = n * probs / probs.sum()
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    return float(stats.chisquare(obs[keep], exp[keep]).pvalue)


# -- the hierarchical model under distribution secrets ------------------------------------------
N_REC = 50
N_DRAWS = 4000
PAIR = bp.SecretPair(bp.DistributionSecret("P(gender=1)", 0.3), bp.DistributionSecret("P(gender=1)", 0.7))


def _record_moments(p: float) -> tuple[float, float, float]:
    """Mean, variance and 4th cumulant of one height record when P(gender=1) = p (exact)."""
    probs = np.array([(1 - p) / 2, (1 - p) / 2, p / 2, p / 2])
    h = np.array(HEIGHTS)
    m = probs @ h
    c = h - m
    var = probs @ c**2
    return m, var, probs @ c**4 - 3 * var**2


class SecretAsShare(BayesNetDataModel):
    """Broken twin: reads "P(gender=1) = p" as "exactly p·n records have gender 1" (a dataset secret)."""

    def _sample(self, secret, n_draws, rng, columns):
        return super()._sample(bp.DatasetSecret.proportion("gender", 1, secret.value), n_draws, rng, columns)


class IgnoresSecret(BayesNetDataModel):
    """Broken twin: draws from the user's network whatever the secret."""

    def _sample(self, secret, n_draws, rng, columns):
        return super()._sample(None, n_draws, rng, columns)


def _hierarchical_checks(cls, seed: int) -> tuple[bool, bool]:
    """(sensitivity ok, variances ok) of mean(height) under P(gender=1) = 0.3 vs 0.7.

    Closed forms (the same as for the PyMC version of this model): E F = μ0 + p(μ1 − μ0), so the
    sensitivity is 0.4·|μ1 − μ0|; Var F = (σ² + p(1 − p)(μ1 − μ0)²)/n.
    α = 1e-4 in all, Bonferroni over 3 checks. The sensitivity estimate is a
    difference of two means of N i.i.d. draws of F (each a mean of n i.i.d. records, so normal
    to an excellent approximation): |Δ̂ − Δ| ≤ z_{α/6} √((v_a + v_b)/N). Each sample variance s²
    is asymptotically normal with Var s² = (μ4 − σ⁴(N − 3)/(N − 1))/N, where the 4th central
    moment of F is exact: μ4 = κ4(X)/n³ + 3 (Var X / n)².
    """
    model = cls(hierarchical_net(), n_records=N_REC)
    cal = bp.calibrate(model, PAIR, bp.mean("height"), n_draws=N_DRAWS, rng=seed)
    z = stats.norm.isf(1e-4 / 3 / 2)
    var = {}
    ok_var = True
    for secret in PAIR.secrets:
        _, v, k4 = _record_moments(secret.value)
        vf = v / N_REC
        mu4 = k4 / N_REC**3 + 3 * vf**2
        se = np.sqrt((mu4 - vf**2 * (N_DRAWS - 3) / (N_DRAWS - 1)) / N_DRAWS)
        ok_var &= abs(cal.covs[secret][0, 0] - vf) <= z * se
        var[secret] = vf
    delta = 0.4 * abs(MU1 - MU0)
    ok_sens = abs(cal.sensitivity(1) - delta) <= z * np.sqrt(sum(var.values()) / N_DRAWS)
    return bool(ok_sens), bool(ok_var)


def test_hierarchical_model_matches_closed_form():
    assert _hierarchical_checks(BayesNetDataModel, seed=11) == (True, True)


def test_distribution_secret_read_as_dataset_secret_is_caught():
    sens_ok, var_ok = _hierarchical_checks(SecretAsShare, seed=11)
    assert not var_ok  # the p(1 − p)(μ1 − μ0)² term of the variance is missing


def test_model_ignoring_the_secret_is_caught():
    sens_ok, _ = _hierarchical_checks(IgnoresSecret, seed=11)
    assert not sens_ok


def test_exact_moments_match_closed_form():
    model = BayesNetDataModel(hierarchical_net(), n_records=N_REC)
    d = MU1 - MU0
    for p in (0.0, 0.3, 1.0):
        m, c = model.moments(bp.DistributionSecret("P(gender=1)", p), bp.mean("height"))
        assert m[0] == pytest.approx(MU0 + p * d, rel=1e-12)
        assert c[0, 0] == pytest.approx((SIGMA**2 + p * (1 - p) * d**2) / N_REC, rel=1e-12)
    # dataset secret: exactly 15 of 50 records have gender 1 — only the within-gender variance is left
    m, c = model.moments(bp.DatasetSecret.proportion("gender", 1, 0.3), bp.mean("height"))
    assert m[0] == pytest.approx(0.3 * MU1 + 0.7 * MU0, rel=1e-12)
    assert c[0, 0] == pytest.approx(SIGMA**2 / N_REC, rel=1e-12)
    m, c = model.moments(bp.DatasetSecret.proportion("gender", 1, 0.3), bp.mean("gender"))
    assert m[0] == pytest.approx(0.3, rel=1e-12) and c[0, 0] == pytest.approx(0.0, abs=1e-15)
    # a stack: Cov(mean(gender), mean(height)) = p(1 − p) d / n
    m, c = model.moments(bp.DistributionSecret("P(gender=1)", 0.3), bp.stack(bp.mean("gender"), bp.mean("height")))
    assert m == pytest.approx([0.3, MU0 + 0.3 * d])
    assert c[0, 1] == pytest.approx(0.21 * d / N_REC, rel=1e-12)
    with pytest.raises(bp.UnsupportedSecretError, match="linear query"):
        model.moments(None, bp.mean("height", bounds=(0, 200)))


def test_conditional_cpd_entry_secret():
    """"P(height=166 | gender=0)" sets that entry and rescales the column; the rest is untouched."""
    model = BayesNetDataModel(hierarchical_net(0.5), n_records=10)
    secret = bp.DistributionSecret(f"P(height={MU0 + SIGMA:g} | gender=0)", 0.8)
    cpd = model.network_for(secret).get_cpds("height")
    expected = np.array([[0.2, 0.0], [0.8, 0.0], [0.0, 0.5], [0.0, 0.5]])
    np.testing.assert_allclose(cpd.values, expected, atol=1e-15)
    m, _ = model.moments(secret, bp.mean("height"))
    assert m[0] == pytest.approx(0.5 * (0.2 * HEIGHTS[0] + 0.8 * HEIGHTS[1]) + 0.5 * MU1)
    # root probabilities: others rescaled proportionally
    three = DiscreteBayesianNetwork()
    three.add_node("c")
    three.add_cpds(TabularCPD("c", 3, [[0.2], [0.3], [0.5]], state_names={"c": ["x", "y", "z"]}))
    cpd = BayesNetDataModel(three, n_records=5).network_for(bp.DistributionSecret("P(c=z)", 0.75)).get_cpds("c")
    np.testing.assert_allclose(cpd.values, [0.1, 0.15, 0.75])


def test_user_network_is_never_mutated():
    net, gnet = hierarchical_net(0.5), gaussian_net()
    before, gbefore = _cpd_snapshot(net), _cpd_snapshot(gnet)
    model = BayesNetDataModel(net, n_records=N_REC)
    bp.calibrate(model, PAIR, bp.mean("height"), n_draws=100, rng=0)
    model.moments(PAIR.a, bp.mean("height"))
    model.network_for(PAIR.b).get_cpds("gender").values[:] = 0.0  # the copy handed out is the caller's
    assert model.moments(PAIR.b, bp.mean("height"))[0][0] == pytest.approx(MU0 + 0.7 * (MU1 - MU0))
    gmodel = BayesNetDataModel(gnet, n_records=10)
    gpair = bp.SecretPair(bp.DistributionSecret("x3.coef[x1]", 0.0), bp.DistributionSecret("x3.coef[x1]", 2.0))
    bp.calibrate(gmodel, gpair, bp.mean("x3"), n_draws=100, rng=0)
    bp.calibrate(gmodel, bp.SecretPair(bp.DistributionSecret("x2.std", 0.1), bp.DistributionSecret("x2.std", 3.0)),
                 bp.mean("x3"), n_draws=100, rng=0)
    assert _same_snapshot(_cpd_snapshot(net), before)
    assert _same_snapshot(_cpd_snapshot(gnet), gbefore)
    # and the twin check: the snapshot comparison does see a change
    gnet.get_cpds("x3").beta[2] = 0.0
    assert not _same_snapshot(_cpd_snapshot(gnet), gbefore)


# -- forward sampling of a discrete network -------------------------------------------------------
NODES5 = ["A", "B", "S", "C", "D"]


def _joint_counts(batch: dict, net: DiscreteBayesianNetwork, nodes: list[str], mask=None) -> np.ndarray:
    """Counts of every joint configuration of ``nodes`` over the records (selected by ``mask``)."""
    shape = [len(net.states[v]) for v in nodes]
    codes = np.zeros(np.shape(batch[nodes[0]]), dtype=np.intp)
    for v in nodes:
        col = np.asarray(batch[v])
        code = np.full(col.shape, -1)
        for i, state in enumerate(net.states[v]):
            code[col == (state if isinstance(state, str) else float(state))] = i
        assert np.all(code >= 0), f"column {v} holds a value that is not a state"
        codes = codes * len(net.states[v]) + code
    if mask is not None:
        codes = codes[mask]
    return np.bincount(codes.ravel(), minlength=int(np.prod(shape))).reshape(shape)


def _exact_joint(net, nodes, evidence=None) -> np.ndarray:
    q = VariableElimination(net).query(nodes, evidence=evidence, joint=True, show_progress=False)
    return np.transpose(q.values, [q.variables.index(v) for v in nodes])


def _forward_pvalues(model: BayesNetDataModel, net: DiscreteBayesianNetwork, seed: int) -> tuple[float, float]:
    """p-values: our forward samples vs the exact joint (VE); vs pgmpy's forward sampler (homogeneity)."""
    batch = model.sample(None, 400, rng=seed)  # 400 × 30 = 12 000 records
    ours = _joint_counts(batch, net, NODES5)
    p_exact = _chi2_pvalue(ours, _exact_joint(net, NODES5))
    frame = BayesianModelSampling(net).forward_sample(size=12_000, seed=seed, show_progress=False)
    theirs = _joint_counts({v: frame[v].to_numpy()[None, :] for v in NODES5}, net, NODES5)
    table = np.stack([ours.ravel(), theirs.ravel()])
    table = table[:, table.sum(axis=0) > 0]
    p_homog = float(stats.chi2_contingency(table).pvalue)
    return p_exact, p_homog


def test_forward_sampling_matches_exact_joint_and_pgmpy():
    """α = 1e-4 for each of two χ² tests (24 · 2 = 48 cells, small ones pooled)."""
    net = five_node_net()
    p_exact, p_homog = _forward_pvalues(BayesNetDataModel(net, n_records=30), net, seed=3)
    assert p_exact > 1e-4 and p_homog > 1e-4


def test_parent_order_bug_is_caught():
    """Broken twin: the CPD of S indexed with its parents in the wrong order."""
    net = five_node_net()
    model = BayesNetDataModel(net, n_records=30)
    base = model._base
    i = base.index("S")
    parents = list(base.parents)
    parents[i] = parents[i][::-1]
    model._base = dataclasses.replace(base, parents=tuple(parents), cache={})
    p_exact, p_homog = _forward_pvalues(model, net, seed=3)
    assert p_exact < 1e-4 and p_homog < 1e-4


# -- dataset secrets on a non-root node ------------------------------------------------------------
N5, K5 = 40, 10
SECRET5 = bp.DatasetSecret.proportion("S", "mid", K5 / N5)


class ForgetsAncestors(BayesNetDataModel):
    """Broken twin: draws the ancestors of the secret node from their prior, not given its value."""

    def _draw_ancestors(self, net, i, B, idx, rng):
        prior = {}
        net.forward(net.closure(list(B)), prior, idx[i].shape, rng)  # their own law, blind to node i's state
        for b in B:
            idx[b] = prior[b]


def _dataset_secret_pvalues(cls, seed: int, others=("A", "B", "C", "D")) -> tuple[float, float, float]:
    """p-values of (records with S = mid vs P(others | S=mid); records with S ≠ mid vs
    P(S, others | S ≠ mid); position of the mid records: record 0 is mid in k/n of the draws).

    Given the S values, records are independent, so pooling records over draws gives a
    multinomial sample for each χ² test; the position check is an exact binomial test.
    Only the columns S and ``others`` are drawn.
    """
    net = five_node_net()
    model = cls(net, n_records=N5)
    others = list(others)
    batch = model.sample(SECRET5, 1500, rng=seed, columns=["S"] + others)
    mid = batch["S"] == "mid"
    assert np.all(mid.sum(axis=1) == K5)
    p_in = _chi2_pvalue(_joint_counts(batch, net, others, mid), _exact_joint(net, others, {"S": "mid"}))
    full = _exact_joint(net, ["S"] + others)
    full[1] = 0.0  # state "mid" is index 1
    p_out = _chi2_pvalue(_joint_counts(batch, net, ["S"] + others, ~mid), full / full.sum())
    p_pos = float(stats.binomtest(int(mid[:, 0].sum()), mid.shape[0], K5 / N5).pvalue)
    return p_in, p_out, p_pos


def test_dataset_secret_on_non_root_node_is_exact():
    """α = 1e-4 per test (3 tests): the conditional law of every other column matches VE."""
    p_in, p_out, p_pos = _dataset_secret_pvalues(BayesNetDataModel, seed=21)
    assert min(p_in, p_out, p_pos) > 1e-4


def test_forgetting_to_condition_ancestors_is_caught():
    p_in, p_out, _ = _dataset_secret_pvalues(ForgetsAncestors, seed=21)
    assert p_in < 1e-4 and p_out < 1e-4


def test_dataset_secret_with_an_ancestor_summed_out():
    """Columns S and D only: the ancestor B of S is summed out, A is drawn given S (α = 1e-4 per test)."""
    p_in, p_out, p_pos = _dataset_secret_pvalues(BayesNetDataModel, seed=22, others=("D",))
    assert min(p_in, p_out, p_pos) > 1e-4
    p_in, p_out, _ = _dataset_secret_pvalues(ForgetsAncestors, seed=22, others=("D",))
    assert p_in < 1e-4 and p_out < 1e-4


def test_dataset_secret_moments_match_variable_elimination():
    """mean(C) under the secret: (k E[C | S=mid] + (n − k) E[C | S≠mid]) / n, variances likewise."""
    net = five_node_net()
    model = BayesNetDataModel(net, n_records=N5)
    m, c = model.moments(SECRET5, bp.mean("C"))
    joint = _exact_joint(net, ["S", "C"])  # rows lo, mid, hi; columns C = 1, 3
    vals = np.array([1.0, 3.0])
    given_mid = joint[1] / joint[1].sum()
    given_not = (joint[0] + joint[2]) / (joint[0] + joint[2]).sum()
    e_in, e_out = given_mid @ vals, given_not @ vals
    v_in, v_out = given_mid @ vals**2 - e_in**2, given_not @ vals**2 - e_out**2
    assert m[0] == pytest.approx((K5 * e_in + (N5 - K5) * e_out) / N5, rel=1e-10)
    assert c[0, 0] == pytest.approx((K5 * v_in + (N5 - K5) * v_out) / N5**2, rel=1e-10)


def test_string_states_work_with_count_queries():
    model = BayesNetDataModel(five_node_net(), n_records=N5)
    q = bp.count(lambda b: b["S"] == "mid", ["S"])
    out = bp.calibrate(model, bp.SecretPair(SECRET5, bp.DatasetSecret.proportion("S", "mid", 0.5)), q, n_draws=20, rng=0, confidence=None)
    assert out.means[SECRET5][0] == K5
    assert out.sensitivity(1) == pytest.approx(N5 * 0.5 - K5)


# -- linear Gaussian networks ------------------------------------------------------------------------
NG = 20


class ShiftOnlySecretNode(BayesNetDataModel):
    """Broken twin: forces the node's mean but does not move the correlated nodes."""

    def _sample(self, secret, n_draws, rng, columns):
        batch = dict(super()._sample(None, n_draws, rng, self.columns))
        x = batch[secret.column]
        batch[secret.column] = x + (secret.value - x.mean(axis=1))[:, None]
        return {c: batch[c] for c in columns}


def _gaussian_checks(cls, seed: int) -> tuple[bool, bool]:
    """(means ok, variances ok) of (mean(x1), mean(x3)) given mean(x2) = a, vs pgmpy's joint Gaussian.

    Closed form: E = μ_j + Σ_2j/Σ_22 (a − μ_2), Var = (Σ_jj − Σ_2j²/Σ_22)/n; F is exactly Gaussian, so
    the sample mean is N(E, Var/N) and (N − 1)s²/Var ~ χ²_{N−1}. α = 1e-4 split over 2 + 2 checks.
    """
    net = gaussian_net()
    mu, S = net.to_joint_gaussian()  # nodes in topological order x1, x2, x3
    a, N = 3.0, 4000
    model = cls(net, n_records=NG)
    batch = model.sample(bp.DatasetSecret.mean("x2", a), N, rng=seed)
    alpha = 1e-4 / 4
    z = stats.norm.isf(alpha / 2)
    lo, hi = stats.chi2.ppf([alpha / 2, 1 - alpha / 2], N - 1) / (N - 1)
    ok_m = ok_v = True
    for j, col in ((0, "x1"), (2, "x3")):
        e = mu[j] + S[1, j] / S[1, 1] * (a - mu[1])
        v = (S[j, j] - S[1, j] ** 2 / S[1, 1]) / NG
        f = batch[col].mean(axis=1)
        ok_m &= abs(f.mean() - e) <= z * np.sqrt(v / N)
        ok_v &= lo <= f.var(ddof=1) / v <= hi
    return bool(ok_m), bool(ok_v)


def test_gaussian_mean_secret_is_exact():
    model = BayesNetDataModel(gaussian_net(), n_records=NG)
    batch = model.sample(bp.DatasetSecret.mean("x2", 3.0), 200, rng=0)
    np.testing.assert_allclose(batch["x2"].mean(axis=1), 3.0, atol=1e-9)
    assert _gaussian_checks(BayesNetDataModel, seed=5) == (True, True)


def test_gaussian_shift_only_twin_is_caught():
    ok_m, _ = _gaussian_checks(ShiftOnlySecretNode, seed=5)
    assert not ok_m


def test_gaussian_moments_and_distribution_secrets_match_pgmpy():
    net = gaussian_net()
    model = BayesNetDataModel(net, n_records=NG)
    mu, S = net.to_joint_gaussian()
    np.testing.assert_allclose(model._base.mean, mu, atol=1e-8)
    np.testing.assert_allclose(model._base.cov, S, atol=1e-8)
    m, c = model.moments(bp.DatasetSecret.mean("x2", 3.0), bp.mean("x3"))
    assert m[0] == pytest.approx(mu[2] + S[1, 2] / S[1, 1] * (3.0 - mu[1]))
    assert c[0, 0] == pytest.approx((S[2, 2] - S[1, 2] ** 2 / S[1, 1]) / NG)
    for parameter, value, edit in [
        ("x3.coef[x1]", 0.0, lambda n: n.get_cpds("x3").beta.__setitem__(2, 0.0)),
        ("x2.intercept", 4.0, lambda n: n.get_cpds("x2").beta.__setitem__(0, 4.0)),
        ("x1.std", 0.5, lambda n: setattr(n.get_cpds("x1"), "std", 0.5)),
    ]:
        by_hand = gaussian_net()
        edit(by_hand)
        mu2, S2 = by_hand.to_joint_gaussian()
        m, c = model.moments(bp.DistributionSecret(parameter, value), bp.stack(bp.mean("x1"), bp.mean("x3")))
        np.testing.assert_allclose(m, mu2[[0, 2]], atol=1e-7)
        np.testing.assert_allclose(c, S2[np.ix_([0, 2], [0, 2])] / NG, atol=1e-7)


# -- pickling, process pools -------------------------------------------------------------------------
@pytest.mark.subprocess
def test_pickling_and_process_pool():
    model = BayesNetDataModel(five_node_net(), n_records=N5)
    model.sample(bp.DistributionSecret("P(A=a2)", 0.5), 3, rng=0)  # fill the cache first
    clone = pickle.loads(pickle.dumps(model))
    for secret in (None, SECRET5, bp.DistributionSecret("P(A=a2)", 0.5)):
        a, b = model.sample(secret, 7, rng=1), clone.sample(secret, 7, rng=1)
        assert all(np.array_equal(a[c], b[c]) for c in model.columns)
    gmodel = BayesNetDataModel(gaussian_net(), n_records=5)
    gclone = pickle.loads(pickle.dumps(gmodel))
    assert np.array_equal(gmodel.sample(None, 3, rng=2)["x3"], gclone.sample(None, 3, rng=2)["x3"])
    pairs = bp.SecretPair(bp.DistributionSecret("P(A=a2)", 0.1), bp.DistributionSecret("P(A=a2)", 0.6))
    q = bp.mean("C")
    serial = bp.calibrate(model, pairs, q, n_draws=300, rng=9, execution=ExecutionOptions(chunk_size=100))
    with ProcessPoolExecutor(2) as pool:
        parallel = bp.calibrate(model, pairs, q, n_draws=300, rng=9,
                                execution=ExecutionOptions(chunk_size=100, executor=pool))
    np.testing.assert_array_equal(serial.sample_array, parallel.sample_array)


# -- bad input ---------------------------------------------------------------------------------------
def test_bad_input_is_refused():
    model = BayesNetDataModel(five_node_net(), n_records=N5)
    draw = lambda s: model.sample(s, 2, rng=0)  # noqa: E731
    with pytest.raises(bp.ValidationError, match="secret column"):
        draw(bp.DatasetSecret.proportion("nope", "mid", 0.5))
    with pytest.raises(bp.ValidationError, match=r"category must be a state of node 'S'.*'medium'"):
        draw(bp.DatasetSecret.proportion("S", "medium", 0.5))
    with pytest.raises(bp.UnsupportedSecretError, match="integer number of records"):
        draw(bp.DatasetSecret.proportion("S", "mid", 0.33))
    with pytest.raises(bp.UnsupportedSecretError, match="share of a state"):
        draw(bp.DatasetSecret.mean("C", 2.0))
    with pytest.raises(bp.ValidationError, match="parameter must be 'P\\(node=state\\)'"):
        draw(bp.DistributionSecret("p_A", 0.5))
    with pytest.raises(bp.ValidationError, match="parameter must name a node.*'Q'"):
        draw(bp.DistributionSecret("P(Q=a0)", 0.5))
    with pytest.raises(bp.ValidationError, match="parameter must name a state of node 'A'.*'a9'"):
        draw(bp.DistributionSecret("P(A=a9)", 0.5))
    with pytest.raises(bp.ValidationError, match="exactly the parents of 'S'"):
        draw(bp.DistributionSecret("P(S=mid | A=a0)", 0.5))
    with pytest.raises(bp.ValidationError, match="exactly the parents of 'A'"):
        draw(bp.DistributionSecret("P(A=a0 | B=0)", 0.5))
    with pytest.raises(bp.ValidationError, match=r"value must be a probability in \[0, 1\].*1.5"):
        draw(bp.DistributionSecret("P(S=mid | A=a0, B=1)", 1.5))
    with pytest.raises(bp.ValidationError, match=r"value must be a probability in \[0, 1\]"):
        draw(bp.DistributionSecret("P(A=a0)", -0.1))
    # a state of probability 0 cannot hold k > 0 records
    hier = BayesNetDataModel(hierarchical_net(1.0), n_records=10)
    with pytest.raises(bp.UnsupportedSecretError, match="must be positive"):
        hier.sample(bp.DatasetSecret.proportion("gender", 0, 0.5), 2, rng=0)
    with pytest.raises(bp.ValidationError, match="value must be 1"):
        hier.sample(bp.DistributionSecret("P(gender=1)", 0.5), 2, rng=0)
    # linear Gaussian networks
    g = BayesNetDataModel(gaussian_net(), n_records=5)
    with pytest.raises(bp.UnsupportedSecretError, match="node means only"):
        g.sample(bp.DatasetSecret.proportion("x1", 1.0, 0.2), 2, rng=0)
    with pytest.raises(bp.ValidationError, match="'node.intercept'"):
        g.sample(bp.DistributionSecret("P(x1=1)", 0.2), 2, rng=0)
    with pytest.raises(bp.ValidationError, match="parent of 'x2'.*'x3'"):
        g.sample(bp.DistributionSecret("x2.coef[x3]", 0.2), 2, rng=0)
    with pytest.raises(bp.ValidationError, match="standard deviation >= 0"):
        g.sample(bp.DistributionSecret("x2.std", -1.0), 2, rng=0)
    with pytest.raises(bp.ValidationError, match="parameter must name a node"):
        g.sample(bp.DistributionSecret("x9.std", 1.0), 2, rng=0)
    # networks
    with pytest.raises(bp.ParameterTypeError, match="DiscreteBayesianNetwork or LinearGaussianBayesianNetwork"):
        BayesNetDataModel({"A": [0.5, 0.5]}, n_records=5)
    broken = DiscreteBayesianNetwork([("u", "v")])
    broken.add_cpds(TabularCPD("u", 2, [[0.5], [0.5]]))
    with pytest.raises(bp.ValidationError, match="check_model"):
        BayesNetDataModel(broken, n_records=5)
    with pytest.raises(bp.ValidationError, match="n_records"):
        BayesNetDataModel(five_node_net(), n_records=0)


def test_parameter_names_are_all_accepted():
    model = BayesNetDataModel(five_node_net(), n_records=N5)
    names = model.parameter_names()
    assert len(names) == 3 + 2 + 3 * 6 + 2 * 6 + 2 * 3
    for name in names:
        model.check_secret(bp.DistributionSecret(name, 0.5))
    g = BayesNetDataModel(gaussian_net(), n_records=5)
    for name in g.parameter_names():
        g.check_secret(bp.DistributionSecret(name, 0.5))
    assert "x3.coef[x1]" in g.parameter_names()


# -- exact laws of counts (binomials, convolved) ------------------------------------------------------
#
# Independent references: the per-record probabilities by brute-force summation of the full joint table
# (the product of the CPDs over every assignment, tests/_bn_oracles.py) and by pgmpy's
# VariableElimination; the law of the count by the binomial formula in 30-digit mpmath, convolved by hand.
# Agreement to 1e-12. Against the calibration's draws: Pearson χ² (tests/_law_checks.py), α = 1e-3; the
# twin (a model that swaps the records in and out of the secret's state) is rejected, power > 1 − 1e-9.
import mpmath  # noqa: E402

from tests._bn_oracles import joint_table  # noqa: E402
from tests._law_checks import chi2_p_value, power  # noqa: E402

LAW_ALPHA = 1e-3
FIVE = ["A", "B", "S", "C", "D"]


def _brute_joint(net):
    """P(A, B, S, C, D) by the product of the CPDs over every assignment, and each node's state names."""
    cards = {v: net.get_cardinality(v) for v in FIVE}
    states = {v: list(net.get_cpds(v).state_names[v]) for v in FIVE}
    return joint_table(net, FIVE, cards), states


def _probabilities(net, secret, column, category):
    """[(records, probability of being counted)] by summation over the full joint table."""
    joint, states = _brute_joint(net)
    t = FIVE.index(column)
    counted = np.array([s == category for s in states[column]], dtype=float)
    p_t = np.moveaxis(joint, t, -1).reshape(-1, len(counted)).sum(axis=0)
    if not isinstance(secret, bp.DatasetSecret):
        return [(N_LAW, float(p_t @ counted))]
    i, j = FIVE.index(secret.column), states[secret.column].index(secret.category)
    k = round(secret.value * N_LAW)
    if t == i:
        pair = np.diag(p_t)
    else:
        pair = joint.sum(axis=tuple(a for a in range(5) if a not in (i, t)))
        pair = pair if i < t else pair.T
    inside, outside = pair[j], np.delete(pair, j, axis=0).sum(axis=0)
    return [(k, float(inside @ counted / inside.sum())), (N_LAW - k, float(outside @ counted / outside.sum()))]


def _binomial_law(groups, proportion=False):
    """The law of a sum of independent binomials, in 30-digit arithmetic, as {value: probability}."""
    with mpmath.workdps(30):
        pmf = [mpmath.mpf(1)]
        for m, q in groups:
            q = mpmath.mpf(q)
            part = [mpmath.binomial(m, x) * q**x * (1 - q) ** (m - x) for x in range(m + 1)]
            pmf = [sum(pmf[a] * part[x - a] for a in range(max(0, x - m), min(x, len(pmf) - 1) + 1))
                   for x in range(len(pmf) + m)]
        return {(x / N_LAW if proportion else float(x)): float(p) for x, p in enumerate(pmf)}


N_LAW = 12
P_A0 = 0.3
BN_LAW_CASES = [
    (None, "D", "yes"),
    (bp.DatasetSecret.proportion("S", "hi", 0.25), "D", "yes"),  # not a descendant of S, tied through A
    (bp.DatasetSecret.proportion("S", "hi", 0.25), "C", 3.0),  # numeric states
    (bp.DatasetSecret.proportion("S", "lo", 0.5), "A", "a1"),  # an ancestor
    (bp.DatasetSecret.proportion("S", "lo", 0.5), "S", "mid"),  # the secret's own node
    (bp.DatasetSecret.proportion("S", "lo", 0.5), "S", "lo"),  # ... and state: the count is k
    (bp.DistributionSecret("P(A=a0)", P_A0), "D", "yes"),
]


def _network_under(secret):
    """The network the records come from: a distribution secret sets P(A = a0) and rescales the others (by hand)."""
    net = five_node_net()
    if isinstance(secret, bp.DistributionSecret):
        old = net.get_cpds("A").values.ravel()
        new = np.concatenate([[P_A0], old[1:] * (1 - P_A0) / old[1:].sum()])
        net.remove_cpds("A")
        net.add_cpds(TabularCPD("A", 3, new.reshape(3, 1), state_names={"A": ["a0", "a1", "a2"]}))
    return net


@pytest.mark.parametrize("secret, column, category", BN_LAW_CASES, ids=lambda v: getattr(v, "label", str(v)))
@pytest.mark.parametrize("proportion", [False, True])
def test_exact_law_equals_binomials_of_brute_force_probabilities(secret, column, category, proportion):
    model = BayesNetDataModel(five_node_net(), n_records=N_LAW)
    query = (bp.proportion if proportion else bp.count)(column, category)
    points, weights = model.exact_law(secret, query)
    got = dict(zip(points[:, 0].tolist(), weights.tolist()))
    want = {v: p for v, p in _binomial_law(_probabilities(_network_under(secret), secret, column, category),
                                            proportion).items() if p > 1e-300}
    assert set(got) <= set(want) and abs(sum(got.values()) - 1) < 1e-12
    assert max(abs(got.get(v, 0.0) - p) for v, p in want.items()) <= 1e-12


def test_per_record_probabilities_agree_with_variable_elimination():
    """q₁ = P(D = yes | S = hi) and q₀ = P(D = yes | S ≠ hi) by pgmpy's VariableElimination."""
    net = five_node_net()
    ve = VariableElimination(net)
    p_yes = ve.query(["D"], show_progress=False).get_value(D="yes")
    q1 = ve.query(["D"], evidence={"S": "hi"}, show_progress=False).get_value(D="yes")
    p_hi = ve.query(["S"], show_progress=False).get_value(S="hi")
    q0 = (p_yes - q1 * p_hi) / (1 - p_hi)
    secret = bp.DatasetSecret.proportion("S", "hi", 0.25)
    (k, r1), (rest, r0) = _probabilities(net, secret, "D", "yes")
    assert (k, rest) == (3, 9) and abs(r1 - q1) < 1e-12 and abs(r0 - q0) < 1e-12
    model = BayesNetDataModel(net, n_records=N_LAW)
    (k, m1), (rest, m0) = model._counted_given_secret(model._base, secret, model._base.index("D"), np.array([0.0, 1.0]))
    assert (k, rest) == (3, 9) and abs(m1 - q1) < 1e-12 and abs(m0 - q0) < 1e-12


class SwappedGroups(BayesNetDataModel):
    """Broken twin: the records in the secret's state are counted with the chance of those outside it."""

    def _counted_given_secret(self, net, secret, t, counted):
        (k, q1), (rest, q0) = super()._counted_given_secret(net, secret, t, counted)
        return [(k, q0), (rest, q1)]


def test_calibration_draws_follow_the_exact_law_and_the_swapped_twin_is_rejected():
    """χ² at α = 1e-3 on 20 000 draws of a count of D = yes under S = hi for a quarter of 40 records."""
    secret = bp.DatasetSecret.proportion("S", "hi", 0.25)
    model = BayesNetDataModel(five_node_net(), n_records=40)
    query = bp.count("D", "yes")
    n = 20_000
    cal = bp.calibrate(model, bp.SecretPair(secret, bp.DatasetSecret.proportion("S", "hi", 0.5)), query,
                       n_draws=n, rng=5)
    law = model.exact_law(secret, query)
    np.testing.assert_allclose(cal.finite_laws[secret.label].weights, law[1], rtol=0, atol=1e-15)
    draws = cal.sample_array[cal.index(secret), :, 0]
    assert chi2_p_value(draws, law) > LAW_ALPHA
    twin = SwappedGroups(five_node_net(), n_records=40).exact_law(secret, query)
    assert power(law, twin, n, LAW_ALPHA) > 1 - 1e-9
    assert chi2_p_value(draws, twin) < LAW_ALPHA


def test_draws_under_a_distribution_secret_follow_the_exact_law():
    """χ² at α = 1e-3: one binomial on the modified network."""
    secret = bp.DistributionSecret("P(A=a0)", P_A0)
    model = BayesNetDataModel(five_node_net(), n_records=40)
    query = bp.proportion("D", "yes")
    draws = model.sample_query(secret, 20_000, np.random.default_rng(6), query)[:, 0]
    assert chi2_p_value(draws, model.exact_law(secret, query)) > LAW_ALPHA


def test_exact_law_only_for_discrete_networks_and_queries_that_say_what_they_count():
    model = BayesNetDataModel(five_node_net(), n_records=10)
    assert model.exact_law(None, bp.count(lambda b: b["D"] == "yes", "D")) is None
    assert model.exact_law(None, bp.mean("C")) is None
    gauss = BayesNetDataModel(gaussian_net(), n_records=10)
    assert gauss.exact_law(None, bp.count("x1", 1.0)) is None
    with pytest.raises(bp.ValidationError, match="a number for the numeric column 'C'"):
        model.exact_law(None, bp.count("C", "3.0"))
    law = model.exact_law(None, bp.count("D", "maybe"))  # a state the node never takes: the count is 0
    assert law[0].tolist() == [[0.0]] and law[1].tolist() == [1.0]
