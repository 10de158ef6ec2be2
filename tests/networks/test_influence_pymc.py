"""Max-influence of continuous parameters (PyMC models) against independent computations.

The references never use PyMC or bayespriv: conditional densities are written
with :mod:`scipy.stats` (``truncnorm``, ``norm``), integrals with
:func:`scipy.integrate.quad`, and a supremum over (x, a, b) in a box is found
by :func:`sup3` — a dense grid that contains the box's corners, then L-BFGS-B
from the five best grid points.

The computations are deterministic (no random draws), so there is no
false-failure probability α to state. The estimate must be **conservative**,
``value >= truth - 1e-6``, and **close**, ``value <= truth + 1e-3·max(1, truth)
+ 1e-2``: the refinement margin added to the estimate is |grid max at 2G − grid
max at G|, about 4e-4 at G = 256 and 5e-3 at G = 79 in these models. Each
finite case also checks that the reference has power: a plausible mistake
(no Bayes normalisation, a coarse grid without margin, the wrong pair) moves
the value by more than the tolerance.
"""

from __future__ import annotations

import math
from functools import lru_cache

import networkx as nx
import numpy as np
import pytest
from scipy import integrate, optimize, stats

import bayespriv as bp
from bayespriv.networks.influence import MaxInfluence, max_influence
from bayespriv.networks.quilts import calibrate_quilts
from bayespriv.datamodels.parameters import ParameterDensity, parameter_density
from bayespriv.datamodels.pymc import PyMCDataModel
from bayespriv.mechanisms.quilt import APMQM

pm = pytest.importorskip("pymc")


def tn_logpdf(x, mu, s, lo=0.0, hi=1.0):
    """log density of N(mu, s²) truncated to [lo, hi] (SciPy)."""
    return stats.truncnorm.logpdf(x, (lo - mu) / s, (hi - mu) / s, loc=mu, scale=s)


def sup3(f, box, n=41) -> float:
    """sup of f(x, a, b) over a box: a dense grid (corners included), then L-BFGS-B from the 5 best points."""
    axes = [np.linspace(lo, hi, n) for lo, hi in box]
    grids = np.meshgrid(*axes, indexing="ij")
    vals = np.asarray(f(*grids), dtype=float).ravel()
    best = float(np.max(vals))
    for o in np.argsort(vals)[::-1][:5]:
        x0 = [g.ravel()[o] for g in grids]
        res = optimize.minimize(lambda z: -float(f(*z)), x0, method="L-BFGS-B", bounds=box)
        best = max(best, -float(res.fun))
    return best


def close_and_conservative(value: float, truth: float) -> None:
    assert value >= truth - 1e-6, (value, truth)
    assert value <= truth + 1e-3 * max(1.0, truth) + 1e-2, (value, truth)


# -- models (module-scoped: each PyMC density compiles its log densities once) -------------------------------------
@pytest.fixture(scope="module")
def fork():
    """φ_i ~ U(0, 1); φ_q1 | φ_i ~ TN(φ_i, 0.3; 0, 1); φ_q2 | φ_i ~ TN(1 − φ_i, 0.5; 0, 1)."""
    with pm.Model() as m:
        i = pm.Uniform("i", 0, 1)
        pm.TruncatedNormal("q1", mu=i, sigma=0.3, lower=0, upper=1)
        pm.TruncatedNormal("q2", mu=1 - i, sigma=0.5, lower=0, upper=1)
    return parameter_density(m)


@pytest.fixture(scope="module")
def chain():
    """φ_i ~ U(0, 1) → φ_r | φ_i ~ TN(φ_i, 0.3; 0, 1) → φ_q | φ_r ~ TN(φ_r, 0.3; 0, 1)."""
    with pm.Model() as m:
        i = pm.Uniform("i", 0, 1)
        r = pm.TruncatedNormal("r", mu=i, sigma=0.3, lower=0, upper=1)
        pm.TruncatedNormal("q", mu=r, sigma=0.3, lower=0, upper=1)
    return m


# -- the density adapter -----------------------------------------------------------------------------------------
def test_parameter_density_graph_supports_and_log_density():
    with pm.Model() as m:
        i = pm.Uniform("i", 0.5, 1)
        d = pm.Deterministic("twice", 2 * i)
        s = pm.Uniform("s", 0, i)  # support depends on the parent: (0, 1) over i ∈ (0.5, 1)
        h = pm.HalfNormal("h", 1)
        pm.Normal("n", d + s, h)
        pm.Beta("b", 2, 3, default_transform=None)  # support from the distribution, not the (absent) transform
        pm.Normal("records", 0, 1, shape=4)  # non-scalar, no parameter downstream: left out
    dens = parameter_density(m)
    assert dens.names == ("i", "s", "h", "n", "b")
    assert set(dens.graph.edges()) == {("i", "s"), ("i", "n"), ("s", "n"), ("h", "n")}
    assert dens.supports == {"i": (0.5, 1.0), "s": (0.0, 1.0), "h": (0.0, math.inf),
                             "n": (-math.inf, math.inf), "b": (0.0, 1.0)}
    rng = np.random.default_rng(3)
    n = 2000
    pts = {"i": rng.uniform(0.4, 1.05, n), "s": rng.uniform(-0.1, 1.0, n), "h": rng.uniform(0.1, 2, n),
           "n": rng.normal(0, 2, n), "b": rng.uniform(0.01, 0.99, n)}
    got = dens.log_density(pts)
    ref = (stats.uniform.logpdf(pts["i"], 0.5, 0.5)
           + np.where((pts["s"] >= 0) & (pts["s"] <= pts["i"]), -np.log(pts["i"]), -np.inf)
           + stats.halfnorm.logpdf(pts["h"])
           + stats.norm.logpdf(pts["n"], 2 * pts["i"] + pts["s"], pts["h"])
           + stats.beta.logpdf(pts["b"], 2, 3))
    finite = np.isfinite(ref)
    assert finite.sum() > 500 and np.array_equal(finite, np.isfinite(got))
    # PyMC computes some normalising constants in float32 (log of the int8 / float32 constants 2, 3, 0.5):
    # its log densities differ from SciPy's by up to ~3e-8.
    np.testing.assert_allclose(got[finite], ref[finite], rtol=0, atol=1e-7)
    # Broadcasting a tensor grid; an ancestral subset gives that subset's marginal exactly.
    grid = dens.log_density({"i": np.array([0.6, 0.9])[:, None], "s": np.array([0.1, 0.7])[None, :]})
    np.testing.assert_allclose(grid, np.log(2.0) - np.log([[0.6, 0.6], [0.9, 0.9]]) + np.array([[0, -np.inf], [0, 0]]),
                               rtol=0, atol=1e-7)
    assert float(dens.log_density({"h": 1.0})) == pytest.approx(stats.halfnorm.logpdf(1.0))
    with pytest.raises(bp.ValidationError, match="points must be an ancestral set .* missing parents \\['i'\\]"):
        dens.log_density({"s": 0.2})
    with pytest.raises(bp.ValidationError, match="points must be keyed by parameters"):
        dens.log_density({"zz": 0.2})
    assert set(dens.typical) == set(dens.names) and dens.typical["h"][1] > 0
    assert isinstance(dens, ParameterDensity) and "ParameterDensity(" in repr(dens)


def test_parameter_density_of_a_data_model_drops_the_records():
    def build(n):
        with pm.Model() as m:
            i = pm.Uniform("i", 0, 1)
            q = pm.TruncatedNormal("q", mu=i, sigma=0.3, lower=0, upper=1)
            pm.Normal("y", q, 1.0, shape=n)
        return m

    dm = PyMCDataModel(build, n_records=3, columns=["y"], parameters=["i", "q"])
    dens = parameter_density(dm)
    assert dens.names == ("i", "q") and list(dens.graph.edges()) == [("i", "q")]
    assert parameter_density(lambda: build(2), ["i"]).names == ("i",)


def test_parameter_density_refusals():
    with pm.Model() as m:
        i = pm.Uniform("i", 0, 1)
        pm.Normal("q", i, 1)
        pm.Normal("vec", 0, 1, shape=3)
        pm.Bernoulli("k", 0.3)
    with pytest.raises(bp.ValidationError, match="parameters must be scalar parameters .* 'vec'"):
        parameter_density(m, ["vec"])
    with pytest.raises(bp.ValidationError, match="parameters must be continuous parameters .* 'k'"):
        parameter_density(m, ["k"])
    with pytest.raises(bp.ValidationError, match="parameters must be closed under parents .* 'q' has parent\\(s\\) 'i'"):
        parameter_density(m, ["q"])
    with pytest.raises(bp.ValidationError, match="parameters must be free random variables of the model"):
        parameter_density(m, ["nope"])
    with pytest.raises(bp.ParameterTypeError, match="parameters must be a sequence"):
        parameter_density(m, "q")
    with pm.Model() as vec_parent:
        mu = pm.Normal("mu", 0, 1, shape=2)
        pm.Normal("q", mu[0], 1)
    with pytest.raises(bp.ValidationError, match="'q' has parent\\(s\\) 'mu' \\(non-scalar\\)"):
        parameter_density(vec_parent)
    with pm.Model() as observed:
        i = pm.Uniform("i", 0, 1)
        pm.Normal("public", i, 1, observed=[0.2, 0.4])
    with pytest.raises(bp.ValidationError, match="must not observe data depending on the parameters.*'public'"):
        parameter_density(observed)
    with pm.Model() as potential:
        i = pm.Uniform("i", 0, 1)
        pm.Potential("pot", -i)
    with pytest.raises(bp.ValidationError, match="must not contain pm.Potential"):
        parameter_density(potential)
    with pytest.raises(bp.ParameterTypeError, match="model must be a pymc.Model"):
        parameter_density(42)


# -- (a) a child of φ_i with a known supremum ------------------------------------------------------------------------
@pytest.mark.slow
def test_truncated_normal_child_matches_closed_form(fork):
    """e({q1} | i) = 1/(2·0.3²) = 5.5556 at x = 0, a = 0, b = 1 (log Z(0) = log Z(1) by symmetry)."""
    truth = sup3(lambda x, a, b: tn_logpdf(x, a, 0.3) - tn_logpdf(x, b, 0.3), [(0, 1)] * 3)
    assert truth == pytest.approx(1 / (2 * 0.09), rel=1e-9)
    r = max_influence(fork, ["q1"], "i")
    close_and_conservative(r.value, truth)
    assert not r.exact and r.assumptions == ("numerical_influence",) and r.margin > 0
    assert "numerical estimate" in r.reason and "G=256" in r.reason and "refinement margin" in r.reason
    assert r.assignment is not None and abs(r.pair[0] - r.pair[1]) > 0.99
    # Power: a coarse grid without edge analysis and margin lands below the truth by more than 1e-6.
    coarse = max_influence(fork, ["q1"], "i", resolution=8)
    assert coarse.value >= truth - 1e-6  # still conservative: the edge limits and the local search reach the corner
    nodes = np.polynomial.legendre.leggauss(8)[0] * 0.5 + 0.5
    x, a, b = np.meshgrid(nodes, nodes, nodes, indexing="ij")
    assert np.max(tn_logpdf(x, a, 0.3) - tn_logpdf(x, b, 0.3)) < truth - 0.1


@pytest.mark.slow
def test_two_children_quilt(fork):
    """Q = {q1, q2}: given a and b the supremum over x separates, both terms linear in x."""

    def both(a, b):
        out = -np.inf
        for x1 in (0.0, 1.0):
            for x2 in (0.0, 1.0):
                out = np.maximum(out, tn_logpdf(x1, a, 0.3) - tn_logpdf(x1, b, 0.3)
                                 + tn_logpdf(x2, 1 - a, 0.5) - tn_logpdf(x2, 1 - b, 0.5))
        return out

    truth = sup3(lambda _, a, b: both(a, b), [(0, 1)] * 3, n=21)
    assert truth == pytest.approx(1 / 0.18 + 1 / 0.5, rel=1e-9)
    r = max_influence(fork, ["q1", "q2"], "i")
    close_and_conservative(r.value, truth)
    assert "G=79" in r.reason and set(r.assignment) == {"q1", "q2"}
    assert float(max_influence(fork, ["q2"], "i")) < r.value


@pytest.mark.slow
def test_a_hand_written_density_object_is_accepted():
    """The protocol (names, graph, supports, log_density) without PyMC: the same model as (a) in NumPy."""

    class Density:
        names = ("i", "q")
        graph = nx.DiGraph([("i", "q")])
        supports = {"i": (0.0, 1.0), "q": (0.0, 1.0)}

        def __init__(self, s):
            self.s = s

        def log_density(self, points):
            i = np.asarray(points["i"], dtype=float)
            out = np.where((i > 0) & (i < 1), 0.0, -np.inf)
            if "q" in points:
                out = out + tn_logpdf(np.asarray(points["q"], dtype=float), i, self.s)
            return out

    r = max_influence(Density(0.3), ["q"], "i")
    close_and_conservative(r.value, 1 / 0.18)
    fam = max_influence([Density(0.5), Density(0.3)], ["q"], "i")
    assert fam.member == 1 and fam.value == r.value and "worst of 2 members: 1" in fam.reason


# -- (b) φ_q is a parent of φ_i: Bayes' rule ---------------------------------------------------------------------------
@pytest.mark.slow
def test_parent_quilt_uses_bayes_rule():
    """φ_q ~ U(0, 1), φ_i | φ_q ~ TN(φ_q, 0.25; 0, 2): p(x | a) = TN(a; x) / p(a), p(a) = ∫ TN(a; q) dq (quad)."""
    s = 0.25

    @lru_cache(maxsize=None)
    def log_p_i(a: float) -> float:
        val, _ = integrate.quad(lambda q: math.exp(tn_logpdf(a, q, s, 0, 2)), 0, 1, epsabs=0, epsrel=1e-12)
        return math.log(val)

    lp = np.vectorize(lambda a: log_p_i(float(a)))

    def ratio(x, a, b):
        return tn_logpdf(a, x, s, 0, 2) - lp(a) - tn_logpdf(b, x, s, 0, 2) + lp(b)

    box = [(0, 1), (0, 2), (0, 2)]
    truth = sup3(ratio, box, n=21)
    with pm.Model() as m:
        q = pm.Uniform("q", 0, 1)
        pm.TruncatedNormal("i", mu=q, sigma=s, lower=0, upper=2)
    r = max_influence(m, ["q"], "i")
    close_and_conservative(r.value, truth)
    # Power: the likelihood ratio without Bayes' normalisation p(a) is far off (32 vs 22.0).
    naive = sup3(lambda x, a, b: tn_logpdf(a, x, s, 0, 2) - tn_logpdf(b, x, s, 0, 2), box)
    assert abs(naive - truth) > 5


# -- (c) unbounded support -------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_normal_shift_is_unbounded_and_closed_form_with_bounds():
    """φ_i ~ U(−1, 1), φ_q | φ_i ~ N(φ_i, 1).

    Unbounded: log N(x; a, 1) − log N(x; b, 1) = (a − b)(x − (a + b)/2), linear in x.
    With bounds φ_q ∈ [−2, 2] (Θ restricted: φ_q | φ_i ~ N(φ_i, 1) truncated to [−2, 2]) the ratio
    gains −log Z(a) + log Z(b), Z(m) = Φ(2 − m) − Φ(−2 − m), even in m. It is linear in x, so
    x = ±2; take x = 2 (the other side is the mirror). ∂/∂a = 2 − a − Z'(a)/Z(a) > 0 on [−1, 1]
    (2 − a ≥ 1 and |Z'/Z| ≤ 0.29) and ∂/∂b = b − 2 + Z'(b)/Z(b) < 0, so a = 1, b = −1, where the
    log Z terms cancel: e = |a − b| · |x − (a + b)/2| = 2 · 2 = 4.
    """
    with pm.Model() as m:
        i = pm.Uniform("i", -1, 1)
        pm.Normal("q", mu=i, sigma=1)
    r = max_influence(m, ["q"], "i")
    assert r.value == math.inf and not r.finite
    assert "grows without bound" in r.reason and "unbounded support" in r.reason and "bounds=" in r.reason

    def log_z(mu):
        return np.log(stats.norm.cdf(2 - mu) - stats.norm.cdf(-2 - mu))

    def ratio(x, a, b):
        return (a - b) * (x - (a + b) / 2) - log_z(a) + log_z(b)

    truth = sup3(ratio, [(-2, 2), (-1, 1), (-1, 1)])
    assert truth == pytest.approx(4.0, abs=1e-9)
    rb = max_influence(m, ["q"], "i", bounds={"q": (-2, 2)})
    close_and_conservative(rb.value, 4.0)
    assert rb.assumptions == ("numerical_influence", "truncated_prior") and "q∈[-2, 2]" in rb.reason
    # Power: the untruncated closed form at the same points is the same 4 only because log Z cancels;
    # the wrong pair (a, b) = (1, 0) gives 1.5 — far below.
    assert ratio(2.0, 1.0, 0.0) < 4.0 - 2


@pytest.mark.slow
def test_unbounded_sensitive_parameter_and_corners():
    """φ_i ~ N(0, 1), φ_q | φ_i ~ TN(φ_i, 1; 0, 1): as a → −∞, p(1 | a) / p(1 | b) → 0 exponentially (inf);
    with the secrets restricted to φ_i ∈ [−3, 3] the supremum is finite (SciPy reference)."""
    with pm.Model() as m:
        i = pm.Normal("i", 0, 1)
        pm.TruncatedNormal("q", mu=i, sigma=1, lower=0, upper=1)
    r = max_influence(m, ["q"], "i")
    assert r.value == math.inf and "φ_i → -∞" in r.reason
    truth = sup3(lambda x, a, b: tn_logpdf(x, a, 1.0) - tn_logpdf(x, b, 1.0), [(0, 1), (-3, 3), (-3, 3)])
    rb = max_influence(m, ["q"], "i", bounds={"i": (-3, 3)})
    close_and_conservative(rb.value, truth)
    assert "only secrets in the bounds" in rb.reason


# -- (d) the support of φ_Q depends on φ_i; log singularities at a finite edge -----------------------------------
@pytest.mark.slow
def test_support_depending_on_node_is_infinite():
    with pm.Model() as m:
        i = pm.Uniform("i", 0.5, 1)
        pm.Uniform("q", 0, i)
    r = max_influence(m, ["q"], "i")
    assert r.value == math.inf and "support of φ_Q depends on φ_i" in r.reason
    a, b = r.pair
    assert b < r.assignment["q"] < a  # x is possible under a, impossible under b


@pytest.mark.slow
def test_log_singularity_at_a_finite_edge_is_infinite():
    """Beta(1 + 2a, 3 − 2a) vs Beta(1 + 2b, 3 − 2b): the log-ratio is 2(a − b)·log(x / (1 − x)) + const."""
    with pm.Model() as m:
        i = pm.Uniform("i", 0, 1)
        pm.Beta("q", 1 + 2 * i, 1 + 2 * (1 - i))
    r = max_influence(m, ["q"], "i")
    assert r.value == math.inf and "grows without bound as φ_q →" in r.reason and "edge of its support" in r.reason


# -- (e) integrating a third parameter ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_chain_integrates_the_middle_parameter(chain):
    """p(x | a) = ∫ TN(r; a, 0.3) TN(x; r, 0.3) dr (quad); the chain's quilt {q} integrates r."""

    @lru_cache(maxsize=None)
    def log_p(x: float, a: float) -> float:
        val, _ = integrate.quad(lambda r: math.exp(tn_logpdf(r, a, 0.3) + tn_logpdf(x, r, 0.3)), 0, 1,
                                epsabs=0, epsrel=1e-12)
        return math.log(val)

    f = np.vectorize(lambda x, a, b: log_p(float(x), float(a)) - log_p(float(x), float(b)))
    truth = sup3(f, [(0, 1)] * 3, n=11)
    r = max_influence(chain, ["q"], "i")
    close_and_conservative(r.value, truth)
    assert "integrating ['r']" in r.reason
    # Power: without integrating r (treating q as a child of i directly), the value is 5.56, not 2.31.
    assert abs(1 / 0.18 - truth) > 1
    # Marginalising cannot increase a max-ratio: e({q} | i) <= e({r} | i).
    assert r.value <= float(max_influence(chain, ["r"], "i")) + 1e-9


@pytest.mark.slow
def test_hierarchical_scale_unbounded_then_bounded():
    """τ ~ HalfNormal(1); φ_i, φ_q | τ ~ TN(0, τ; −1, 1), both children of τ (Q and i share an integrated parent).

    Unbounded: p(φ_q = 0, φ_i = 0) = ∫ p(τ) TN(0; 0, τ)² dτ diverges (TN(0; 0, τ) ~ 1/(τ√(2π)) as τ → 0)
    while p(0, 1) is finite, so e = inf; the grid sees it as quadrature that does not converge. With
    τ ∈ [0.2, 3] (Θ restricted) the value is finite: reference by nested quad.
    """
    with pm.Model() as m:
        tau = pm.HalfNormal("tau", 1)
        pm.TruncatedNormal("i", 0, tau, lower=-1, upper=1)
        pm.TruncatedNormal("q", 0, tau, lower=-1, upper=1)
    r = max_influence(m, ["q"], "i")
    assert r.value == math.inf and "quadrature did not converge" in r.reason

    def prior(t):
        return stats.halfnorm.logpdf(t)

    @lru_cache(maxsize=None)
    def log_joint(x: float, a: float) -> float:
        val, _ = integrate.quad(lambda t: math.exp(prior(t) + tn_logpdf(a, 0, t, -1, 1) + tn_logpdf(x, 0, t, -1, 1)),
                                0.2, 3, epsabs=0, epsrel=1e-11)
        return math.log(val)

    @lru_cache(maxsize=None)
    def log_marginal(a: float) -> float:
        val, _ = integrate.quad(lambda t: math.exp(prior(t) + tn_logpdf(a, 0, t, -1, 1)), 0.2, 3, epsabs=0, epsrel=1e-11)
        return math.log(val)

    f = np.vectorize(lambda x, a, b: log_joint(float(x), float(a)) - log_marginal(float(a))
                     - log_joint(float(x), float(b)) + log_marginal(float(b)))
    truth = sup3(f, [(-1, 1)] * 3, n=9)
    rb = max_influence(m, ["q"], "i", bounds={"tau": (0.2, 3)})
    close_and_conservative(rb.value, truth)
    assert "integrating ['tau']" in rb.reason and rb.assumptions == ("numerical_influence", "truncated_prior")
    # Power: ignoring the shared parent (τ fixed at its prior median 0.674) gives e = 0 — far off.
    assert truth > 0.5


def test_d_separated_parameters_have_zero_influence():
    with pm.Model() as m:
        pm.Uniform("i", 0, 1)
        pm.Uniform("q", 0, 1)
    r = max_influence(m, ["q"], "i")
    assert r.value == 0.0 and r.exact and "d-separated" in r.reason and r.assumptions == ()


# -- families -----------------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_builder_and_grid_family_of_pymc_models():
    def build(sigma):
        with pm.Model() as m:
            i = pm.Uniform("i", 0, 1)
            pm.TruncatedNormal("q", mu=i, sigma=sigma, lower=0, upper=1)
        return m

    r = max_influence(build, ["q"], "i", grid={"sigma": [0.5, 0.3]})
    assert r.member == {"sigma": 0.3} and "worst of 2 members" in r.reason
    close_and_conservative(r.value, 1 / 0.18)
    assert not r.exact and r.assumptions == ("numerical_influence",)


# -- (f) quilts and APMQM ----------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_calibrate_quilts_and_apmqm_carry_numerical_influence(chain):
    """Chain i → r → q, the query counts q's column. Quilts of i: ∅ (Δ = 5, e = 0), {r} (Δ = 0,
    e = 1/(2·0.3²) = 5.56) and {q} (Δ = 0, e = 2.31, the chain test's value)."""
    query = bp.count(lambda b: b["sat"] > 0.5, "sat", name="sat>0.5")
    columns = {"i": "income", "r": "other", "q": "sat"}
    cal = calibrate_quilts(chain, "i", query, n_records=5, columns=columns)
    assert cal.assumptions == ("parameters_bayes_net", "numerical_influence") and cal.confidence is None
    by_quilt = {c.quilt.quilt: c for c in cal.candidates["i"]}
    assert set(by_quilt) == {frozenset(), frozenset({"r"}), frozenset({"q"})}
    assert by_quilt[frozenset()].influence.exact and by_quilt[frozenset()].sensitivity == 5.0
    assert by_quilt[frozenset({"r"})].sensitivity == 0.0 and not by_quilt[frozenset({"r"})].influence.exact
    close_and_conservative(by_quilt[frozenset({"r"})].max_influence, 1 / 0.18)
    e_q = by_quilt[frozenset({"q"})].max_influence
    assert e_q == float(max_influence(chain, ["q"], "i")) and 2.3 < e_q < 2.33
    # ε below every e: the trivial quilt (exact, e = 0) is used and the guarantee is exact.
    low = APMQM(cal, epsilon=1.0)
    assert low.scale == pytest.approx(5.0) and low.guarantee.confidence == 1.0
    assert low.guarantee.assumptions == ("parameters_bayes_net",)
    # ε above e({q}): the quilt {q} (Δ = 0) is used; its e is a numerical estimate, and the guarantee says so.
    high = APMQM(cal, epsilon=3.0)
    assert high.scale == 0.0 and high.chosen["i"].quilt.quilt == {"q"}
    g = high.guarantee
    assert g.assumptions == ("parameters_bayes_net", "numerical_influence") and g.confidence is None
    assert "numerical_influence" in g.details() and "numerically computed max-influences" in str(g)
    # A grid that does not fit is skipped ({q} needs i, r, q on the grid: d = 3); the others stay.
    small = calibrate_quilts(chain, "i", query, n_records=5, columns=columns, influence_options={"max_points": 300})
    assert small.skipped["i"] == 1 and {c.quilt.quilt for c in small.candidates["i"]} == {frozenset(), frozenset({"r"})}


# -- bad input ---------------------------------------------------------------------------------------------------------
def test_bad_input(chain, fork):
    with pytest.raises(bp.ValidationError, match="node must be a node of the network"):
        max_influence(fork, ["q1"], "nope")
    with pytest.raises(bp.ValidationError, match="quilt must be nodes of the network"):
        max_influence(fork, ["zz"], "i")
    with pytest.raises(bp.ValidationError, match="resolution must keep the grid within max_points=4000000.*G=2000"):
        max_influence(fork, ["q1"], "i", resolution=2000)
    with pytest.raises(bp.ValidationError, match="max_points must allow at least 8 grid points per parameter"):
        max_influence(chain, ["q"], "i", max_points=300)
    with pytest.raises(bp.ValidationError, match="resolution must be an integer >= 8"):
        max_influence(fork, ["q1"], "i", resolution=2)
    with pytest.raises(bp.ValidationError, match="bounds must be keyed by parameters"):
        max_influence(fork, ["q1"], "i", bounds={"zz": (0, 1)})
    with pytest.raises(bp.ValidationError, match=r"bounds\['q1'\] must be a pair \(lo, hi\) with lo < hi"):
        max_influence(fork, ["q1"], "i", bounds={"q1": (1, 0)})
    with pytest.raises(bp.ValidationError, match=r"bounds\['q1'\] must be an interval overlapping the support"):
        max_influence(fork, ["q1"], "i", bounds={"q1": (2, 3)})
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    bn = DiscreteBayesianNetwork([("i", "q")])
    bn.add_cpds(TabularCPD("i", 2, [[0.5], [0.5]]),
                TabularCPD("q", 2, [[0.8, 0.4], [0.2, 0.6]], evidence=["i"], evidence_card=[2]))
    with pytest.raises(bp.ValidationError, match="bounds must be None for pgmpy networks"):
        max_influence(bn, ["q"], "i", bounds={"q": (0, 1)})
    with pytest.raises(bp.ValidationError, match="networks of a family must all be of one kind"):
        max_influence([bn, fork], ["q"], "i")
    exact = max_influence(bn, ["q"], "i")
    assert isinstance(exact, MaxInfluence) and exact.exact and exact.assumptions == () and exact.margin == 0.0
