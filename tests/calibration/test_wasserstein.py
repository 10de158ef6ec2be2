"""W∞ and (W, δ)-closeness bounds from calibration draws (Chen & Ohrimenko 2023, §3).

Exact parts are checked against independent computations (north-west-corner
coupling of two pmfs, direct evaluation of the DKW band at every jump point,
closed forms). Statistical parts state their false-failure probability α:

* coverage over R runs: if a bound holds with probability ≥ 0.95, the number
  of runs where it fails is stochastically below Binomial(R, 0.05); the test
  fails when the count exceeds that binomial's (1 − α) quantile, α = 1e-3. The
  twin (plug-in estimates) fails the same check.
* single-run checks use confidence 1 − 1e-6, so "bound ≥ truth" fails with
  probability ≤ 1e-6; upper checks use a second DKW event at 1e-6 per sample.
* the default band ("order") is the intersection of a Beta order-statistic band
  and the DKW band at half the failure probability, so it lies inside that DKW
  band: upper references built from DKW use (1 − confidence)/4 per sample
  (two samples, half each to DKW).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

import bayespriv as bp
from bayespriv.calibration import Calibration, calibration_from_samples
from bayespriv.calibration.w_distances import (
    PairWasserstein,
    dkw_epsilon,
    query_support,
    resolve_support,
    w_infinity_discrete,
    w_infinity_from_quantiles,
    w_infinity_samples,
    wasserstein_bounds,
)

A = bp.DistributionSecret("theta", 0.0)
B = bp.DistributionSecret("theta", 1.0)
PAIR = bp.SecretPair(A, B)
R = 200
CONFIDENCE = 0.95
ALPHA = 1e-3
SURE = 1 - 1e-6  # confidence of single-run checks


def _identity(batch):
    return batch["x"][:, :1]


QUERY = bp.Query(_identity, ["x"], "F")  # a user query: no provable support


def cal_from(samples_a, samples_b, confidence=CONFIDENCE, query=QUERY) -> Calibration:
    arr = np.stack([np.asarray(samples_a, float), np.asarray(samples_b, float)])
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return calibration_from_samples(arr, (A, B), (PAIR,), query, confidence=confidence)


def coverage_limit(p_fail: float) -> float:
    """(1 − ALPHA) quantile of Binomial(R, p_fail)."""
    return stats.binom.ppf(1 - ALPHA, R, p_fail)


# -- independent references ------------------------------------------------------------------------


def northwest_corner(xs_a, p_a, xs_b, p_b, delta=0.0):
    """W∞ (or δ-trimmed) of the monotone coupling built cell by cell (north-west corner rule)."""
    i = j = 0
    ra, rb = p_a[0], p_b[0]
    cells = []
    while i < len(xs_a) and j < len(xs_b):
        m = min(ra, rb)
        if m > 1e-13:
            cells.append((abs(xs_a[i] - xs_b[j]), m))
        ra -= m
        rb -= m
        if ra <= 1e-13:
            i += 1
            ra = p_a[i] if i < len(xs_a) else 0.0
        if rb <= 1e-13:
            j += 1
            rb = p_b[j] if j < len(xs_b) else 0.0
    cells.sort(key=lambda c: -c[0])
    dropped = 0.0
    for dist, mass in cells:
        if dropped + mass > delta + 1e-12:
            return dist
        dropped += mass
    return 0.0


def q_ext(sorted_x, v, lo, hi):
    """Empirical quantile X_(⌈nv⌉), lo for v ≤ 0, hi for v > 1 (direct formula)."""
    n = len(sorted_x)
    out = np.empty_like(v)
    out[v <= 0] = lo
    out[v > 1] = hi
    mid = (v > 0) & (v <= 1)
    out[mid] = sorted_x[np.ceil(n * v[mid]).astype(int) - 1]
    return out


def band_sup_brute_force(a, b, eps_a, eps_b, lo, hi):
    """sup_u D(u), evaluating D just left of every jump level and on a fine grid."""
    a, b = np.sort(a), np.sort(b)
    levels = []
    for n, e in ((len(a), eps_a), (len(b), eps_b)):
        j = np.arange(0, n + 1) / n
        levels += [j - e, j + e]
    u = np.concatenate(levels + [np.array([1.0])]) - 1e-9
    u = np.concatenate([u[(u > 0) & (u < 1)], (np.arange(100_000) + 0.5) / 100_000])
    d1 = q_ext(a, u + eps_a, lo, hi) - q_ext(b, u - eps_b, lo, hi)
    d2 = q_ext(b, u + eps_b, lo, hi) - q_ext(a, u - eps_a, lo, hi)
    return float(np.maximum(d1, d2).max())


def population_band_sup(dist_a, dist_b, t, lo, hi):
    """sup_u max(Q_a(u+t) − Q_b(u−t), Q_b(u+t) − Q_a(u−t)) for integer-valued
    distributions on [lo, hi] (quantiles extended by lo / hi), exactly: all
    terms are constant between the levels F(k) ± t, evaluated at midpoints."""
    ks = np.arange(lo, hi + 1)
    levels = np.concatenate([dist_a.cdf(ks), dist_b.cdf(ks)])
    cuts = np.concatenate([levels - t, levels + t, [t, 1 - t]])
    cuts = np.unique(cuts[(cuts > 0) & (cuts < 1)])
    edges = np.concatenate([[0.0], cuts, [1.0]])
    mid = 0.5 * (edges[1:] + edges[:-1])

    def q(dist, v):
        out = dist.ppf(np.clip(v, 1e-300, 1.0)).astype(float)
        out[v <= 0] = lo
        out[v > 1] = hi
        return out

    return float(np.maximum(q(dist_a, mid + t) - q(dist_b, mid - t), q(dist_b, mid + t) - q(dist_a, mid - t)).max())


# -- exact helpers ---------------------------------------------------------------------------------------


PAPER_MU = stats.rv_discrete(values=([1, 2, 3, 100], [0.6, 0.2, 0.0, 0.2]))
PAPER_NU = stats.rv_discrete(values=([1, 2, 3, 100], [0.4, 0.3, 0.2, 0.1]))
PAPER_JUMPS = [0.6, 0.8, 1.0, 0.4, 0.7, 0.9]


def test_paper_figure_1_example():
    """§3.1: W∞(μ, ν) = 97, yet μ and ν are (1, 0.1)-close (Figure 1)."""
    assert w_infinity_from_quantiles(PAPER_MU.ppf, PAPER_NU.ppf, jumps=PAPER_JUMPS) == 97.0
    assert w_infinity_from_quantiles(PAPER_MU.ppf, PAPER_NU.ppf, jumps=PAPER_JUMPS, delta=0.1) == 1.0
    # less than the 0.1 mass moved 97 cannot be disregarded
    assert w_infinity_from_quantiles(PAPER_MU.ppf, PAPER_NU.ppf, jumps=PAPER_JUMPS, delta=0.09) == 97.0
    # mass moved by 1: levels (0.4, 0.6] and (0.7, 0.8], 0.3 in all; dropping all
    # moved mass (0.4) leaves only exact matches, dropping 0.3 does not
    assert w_infinity_from_quantiles(PAPER_MU.ppf, PAPER_NU.ppf, jumps=PAPER_JUMPS, delta=0.3) == 1.0
    assert w_infinity_from_quantiles(PAPER_MU.ppf, PAPER_NU.ppf, jumps=PAPER_JUMPS, delta=0.4) == 0.0
    xs = [1, 2, 3, 100]
    assert northwest_corner(xs, [0.6, 0.2, 0.0, 0.2], xs, [0.4, 0.3, 0.2, 0.1]) == 97
    assert northwest_corner(xs, [0.6, 0.2, 0.0, 0.2], xs, [0.4, 0.3, 0.2, 0.1], delta=0.1) == 1


@pytest.mark.parametrize("params_a, params_b", [((2, 3), (3, 2)), ((1, 1), (5, 2)), ((0.5, 4), (4, 0.5)), ((2, 2), (2, 2.5))])
@pytest.mark.parametrize("delta", [0.0, 0.05, 0.2])
def test_discrete_helper_matches_northwest_corner(params_a, params_b, delta):
    da, db = stats.betabinom(20, *params_a), stats.betabinom(20, *params_b)
    xs = np.arange(21)
    expected = northwest_corner(xs, da.pmf(xs), xs, db.pmf(xs), delta)
    assert w_infinity_discrete(da, db, delta=delta) == expected


def test_continuous_helper_closed_forms():
    """Shifted uniforms: W∞ = 0.3 at every δ. N(0,1) vs N(0, 2²): |Q_a − Q_b| =
    |Φ⁻¹(u)|, so the δ-trimmed W∞ is Φ⁻¹(1 − δ/2); grid error ≤ the oscillation
    of Φ⁻¹ over one cell of width 1/200 000 near that level (< 1e-3)."""
    ua, ub = stats.uniform(0, 1), stats.uniform(0.3, 1)
    assert w_infinity_from_quantiles(ua.ppf, ub.ppf) == pytest.approx(0.3, abs=1e-12)
    assert w_infinity_from_quantiles(ua.ppf, ub.ppf, delta=0.2) == pytest.approx(0.3, abs=1e-12)
    na, nb = stats.norm(0, 1), stats.norm(0, 2)
    for delta in (0.01, 0.1, 0.3):
        assert w_infinity_from_quantiles(na.ppf, nb.ppf, delta=delta) == pytest.approx(stats.norm.ppf(1 - delta / 2), abs=1e-3)
    assert w_infinity_from_quantiles(stats.uniform(0, 1).ppf, stats.uniform(0, 0.5).ppf) == pytest.approx(0.5)


# -- the DKW band: exact supremum ---------------------------------------------------------------------------


def test_dkw_epsilon_formula_and_coverage():
    assert dkw_epsilon(1000, 0.05) == pytest.approx(math.sqrt(math.log(40) / 2000))
    assert dkw_epsilon(10, 0.0) == math.inf
    with pytest.raises(ValueError, match="alpha"):
        dkw_epsilon(10, 1.5)


@pytest.mark.parametrize("seed", range(6))
def test_band_supremum_is_exact(seed):
    """The library's sup of D over (0, 1) equals a direct evaluation of the
    DKW band (formula Q̂(v) = X_(⌈nv⌉)) just left of every jump level."""
    g = np.random.default_rng(seed)
    na, nb = g.integers(3, 12, size=2)
    a = np.round(g.normal(0, 1, na), 2)  # rounding makes ties in the draws
    b = np.round(g.normal(0.5, 1.5, nb), 2)
    lo, hi = -8.0, 9.0
    for conf in (0.5, 0.9):
        alpha = (1 - conf) / 2
        eps_a, eps_b = dkw_epsilon(na, alpha), dkw_epsilon(nb, alpha)
        got = w_infinity_samples(a, b, confidence=conf, support=(lo, hi), band="dkw")
        assert got == pytest.approx(band_sup_brute_force(a, b, eps_a, eps_b, lo, hi), abs=1e-12)
    got = w_infinity_samples(a, b, confidence=None)
    assert got == pytest.approx(band_sup_brute_force(a, b, 0.0, 0.0, lo, hi), abs=1e-12)
    # plug-in of two samples = W∞ of the two empirical distributions (north-west corner)
    xa, ca = np.unique(a, return_counts=True)
    xb, cb = np.unique(b, return_counts=True)
    xs = np.union1d(xa, xb)
    pa = np.array([ca[xa == x].sum() for x in xs]) / na
    pb = np.array([cb[xb == x].sum() for x in xs]) / nb
    assert got == pytest.approx(northwest_corner(xs, pa, xs, pb), abs=1e-12)


def test_trimmed_band_excludes_at_most_delta():
    """On a fine grid, Leb{D > W_δ} ≤ δ and Leb{D > W_δ − 1e-9} > δ (up to the grid's 1e-6 resolution)."""
    g = np.random.default_rng(11)
    a, b = np.sort(g.normal(0, 1, 300)), np.sort(g.normal(0, 2, 300))
    eps = dkw_epsilon(300, 0.05)
    u = (np.arange(1_000_000) + 0.5) / 1_000_000
    d = np.maximum(q_ext(a, u + eps, -np.inf, np.inf) - q_ext(b, u - eps, -np.inf, np.inf),
                   q_ext(b, u + eps, -np.inf, np.inf) - q_ext(a, u - eps, -np.inf, np.inf))
    for delta in (0.2, 0.4):
        w = w_infinity_samples(a, b, confidence=0.9, delta=delta, band="dkw")
        assert math.isfinite(w)
        assert (d > w).mean() <= delta + 1e-5
        assert (d > w - 1e-9).mean() > delta - 1e-5
    # too little trimming for the DKW tails without a support: infinite
    assert w_infinity_samples(a, b, confidence=0.9, delta=1.5 * eps, band="dkw") == math.inf


# -- coverage: bound ≥ truth, and not far above --------------------------------------------------------------


def _uniform_runs(shift_b: float, width_b: float, confidence):
    seeds = np.random.SeedSequence(2025).spawn(R)
    out = []
    for seed in seeds:
        g = np.random.default_rng(seed)
        cal = cal_from(g.uniform(0, 1, 2000), g.uniform(shift_b, shift_b + width_b, 2000), confidence)
        out.append(wasserstein_bounds(cal, support=(0.0, max(1.0, shift_b + width_b))).bound)
    return np.array(out)


def test_shifted_uniforms_bound_brackets_truth():
    """U(0,1) vs U(0.3,1.3), W∞ = 0.3. Lower: coverage at 0.95 (α = 1e-3).
    Upper: on a second DKW event of half-width η (probability 1e-3 of failing
    per sample), Q̂(v) ∈ [Q(v − η), Q(v + η)], so the bound is at most
    sup_u Q_b(u + t) − Q_a(u − t) = 0.3 + 2t with t = ε + η (quantiles have
    slope 1; clipping at the support only lowers it). The count of runs above
    it is below Binomial(R, 2e-3)'s (1 − α) quantile."""
    bounds = _uniform_runs(0.3, 1.0, CONFIDENCE)
    assert (bounds < 0.3).sum() <= coverage_limit(1 - CONFIDENCE)
    t = dkw_epsilon(2000, (1 - CONFIDENCE) / 4) * (1 + 1e-9) + dkw_epsilon(2000, 1e-3)
    assert (bounds > 0.3 + 2 * t).sum() <= coverage_limit(2e-3)
    assert bounds.min() > 0.3  # in practice always above


def test_plug_in_fails_coverage_when_truth_is_at_the_tail():
    """Twin: U(0,1) vs U(0,0.5) has W∞ = 0.5 attained only as u → 1; the
    empirical quantile coupling falls short in about half of the runs, so the
    plug-in estimate fails the coverage check that the bound passes."""
    assert (_uniform_runs(0.0, 0.5, CONFIDENCE) < 0.5).sum() <= coverage_limit(1 - CONFIDENCE)
    assert (_uniform_runs(0.0, 0.5, None) < 0.5).sum() > coverage_limit(1 - CONFIDENCE)


def test_beta_binomial_counts_bound_brackets_truth():
    """Counts of 20 Bernoulli(p) records with p ~ Beta: betabinom(20, 2, 3) vs
    betabinom(20, 3, 2), exact W∞ = 5 (north-west corner). Support [0, 20].
    Upper reference: the same band built from the true quantiles with
    t = ε + η (exact, :func:`population_band_sup`), exceeded with probability
    ≤ 2e-3 per run."""
    da, db = stats.betabinom(20, 2, 3), stats.betabinom(20, 3, 2)
    xs = np.arange(21)
    truth = northwest_corner(xs, da.pmf(xs), xs, db.pmf(xs))
    assert truth == 5
    n = 2000
    t = dkw_epsilon(n, (1 - CONFIDENCE) / 4) * (1 + 1e-9) + dkw_epsilon(n, 1e-3)
    upper = population_band_sup(da, db, t, 0, 20)
    assert truth < upper < 20
    bounds = []
    for seed in np.random.SeedSequence(7).spawn(R):
        g = np.random.default_rng(seed)
        cal = cal_from(da.rvs(n, random_state=g), db.rvs(n, random_state=g))
        bounds.append(wasserstein_bounds(cal, support=(0, 20)).bound)
    bounds = np.array(bounds)
    assert (bounds < truth).sum() <= coverage_limit(1 - CONFIDENCE)
    assert (bounds > upper).sum() <= coverage_limit(2e-3)


def _beta_binomial_model() -> bp.FunctionDataModel:
    def draw(secret, n_draws, rng):
        a = secret.value
        p = rng.beta(a, 5.0 - a, size=n_draws)
        return {"x": (rng.random((n_draws, 20)) < p[:, None]).astype(float)}

    return bp.FunctionDataModel(draw, columns=["x"], n_records=20)


def test_calibrate_count_query_derives_support():
    """Through calibrate(): a count over 20 records is provably in [0, 20], so
    no support needs declaring; the bound covers the exact W∞ = 5 (confidence
    1 − 1e-6) and lies below the population band with t = ε + η (η at 1e-6)."""
    pair = bp.SecretPair(bp.DistributionSecret("a", 2.0), bp.DistributionSecret("a", 3.0))
    query = bp.count(lambda b: b["x"] == 1.0, "x")
    cal = bp.calibrate(_beta_binomial_model(), pair, query, n_draws=20_000, rng=5, confidence=SURE)
    lo, hi = resolve_support(cal)
    assert (lo[0], hi[0]) == (0.0, 20.0)
    res = wasserstein_bounds(cal)
    t = dkw_epsilon(20_000, (1 - SURE) / 4) * (1 + 1e-9) + dkw_epsilon(20_000, 1e-6)
    upper = population_band_sup(stats.betabinom(20, 2, 3), stats.betabinom(20, 3, 2), t, 0, 20)
    assert 5.0 <= res.bound <= upper
    assert res.pairs[0].estimate == pytest.approx(5.0, abs=1.0)
    assert res.confidence == SURE and res.assumptions == ()


# -- trimmed bound for unbounded F ----------------------------------------------------------------------------


def _normal_cal(confidence=SURE, n=20_000, seed=3):
    g = np.random.default_rng(seed)
    return cal_from(g.normal(0, 1, n), g.normal(0, 2, n), confidence)


def test_normals_untrimmed_bound_is_infinite_trimmed_is_finite_and_brackets_truth():
    """N(0,1) vs N(0, 2²) (scale 2): W∞ = ∞; δ-trimmed W∞ = Φ⁻¹(1 − δ/2).
    Lower: holds with probability ≥ 1 − 1e-6. Upper: on the second DKW event
    (η at 1e-6 per sample), D(u) ≤ D_pop(u) = max(Q_a(u+t) − Q_b(u−t),
    Q_b(u+t) − Q_a(u−t)) (±∞ outside (0,1)), so W_δ(D) ≤ W_δ(D_pop), computed
    here on a grid of 10⁶ cells (error < 1e-3 at these levels)."""
    n = 20_000
    cal = _normal_cal(n=n)
    assert wasserstein_bounds(cal).bound == math.inf
    t = dkw_epsilon(n, (1 - SURE) / 4) * (1 + 1e-9) + dkw_epsilon(n, 1e-6)
    u = (np.arange(1_000_000) + 0.5) / 1_000_000
    with np.errstate(invalid="ignore"):
        qa = lambda v: np.where(v >= 1, np.inf, np.where(v <= 0, -np.inf, stats.norm.ppf(np.clip(v, 1e-300, 1 - 1e-16))))
        qb = lambda v: 2 * qa(v)
        d_pop = np.maximum(qa(u + t) - qb(u - t), qb(u + t) - qa(u - t))
    previous = math.inf
    for delta in (0.1, 0.2, 0.3):
        res = wasserstein_bounds(cal, delta=delta)
        exact = stats.norm.ppf(1 - delta / 2)
        upper = float(np.quantile(d_pop, 1 - delta)) + 1e-3
        assert exact <= res.bound <= upper, (delta, exact, res.bound, upper)
        assert res.bound < previous  # smaller δ, larger bound
        previous = res.bound
        assert res.pairs[0].estimate == pytest.approx(exact, abs=0.05)
        assert res.method == "quantile" and res.delta == delta


# -- Theorem 3.3 route --------------------------------------------------------------------------------------------


MU_A, MU_B = np.array([0.0, 0.0]), np.array([1.0, -0.5])
SD_A, SD_B = np.array([1.0, 2.0]), np.array([1.5, 1.0])
DELTA_33 = 0.1


def l1_quantile(sd: np.ndarray, q: float) -> float:
    """q-quantile of ‖X − μ‖₁ = sd₁|Z₁| + sd₂|Z₂| (independent normals), by quadrature."""
    s1, s2 = sd

    def cdf(c):
        f = lambda z: 2 * stats.norm.pdf(z) * (2 * stats.norm.cdf((c - s1 * z) / s2) - 1)
        return integrate.quad(f, 0, c / s1, epsabs=1e-12)[0]

    return optimize.brentq(lambda c: cdf(c) - q, 1e-9, 50 * (s1 + s2), xtol=1e-12)


def _theorem_33_runs(confidence):
    seeds = np.random.SeedSequence(33).spawn(R)
    out = []
    for seed in seeds:
        g = np.random.default_rng(seed)
        cal = cal_from(g.normal(MU_A, SD_A, (2000, 2)), g.normal(MU_B, SD_B, (2000, 2)), confidence)
        out.append(wasserstein_bounds(cal, delta=DELTA_33).bound)
    return np.array(out)


def test_theorem_3_3_bound_covers_population_value():
    """k = 2 normals with diagonal covariances: the population value of the
    route, ‖μ_a − μ_b‖₁ + c_a + c_b with P(‖F − μ‖₁ ≤ c) = 1 − δ/2, is covered
    at 0.95 (α = 1e-3); the plug-in twin is not."""
    q = 1 - DELTA_33 / 2
    truth = np.abs(MU_A - MU_B).sum() + l1_quantile(SD_A, q) + l1_quantile(SD_B, q)
    bounds = _theorem_33_runs(CONFIDENCE)
    assert (bounds < truth).sum() <= coverage_limit(1 - CONFIDENCE)
    assert np.median(bounds) < 1.15 * truth  # not absurdly loose
    assert (_theorem_33_runs(None) < truth).sum() > coverage_limit(1 - CONFIDENCE)


def test_theorem_3_3_formula_by_hand():
    """The bound is ‖|μ̂_a − μ̂_b|‖₁ + Σ_s (2‖h_s‖₁ + Ŷ_s,(r_s)) with h = z·se,
    z = Φ⁻¹(1 − α_e/2), α_e = (1 − confidence)/(S·(k+1)), and r the smallest
    rank with P(Binomial(n, 1 − δ/2) ≥ r) ≤ α_e (searched one by one here)."""
    g = np.random.default_rng(1)
    xa, xb = g.normal(MU_A, SD_A, (400, 2)), g.normal(MU_B, SD_B, (400, 2))
    conf, delta = 0.9, 0.2
    res = wasserstein_bounds(cal_from(xa, xb, conf), delta=delta).pairs[0]
    alpha_e = (1 - conf) / (2 * 3)
    z = stats.norm.ppf(1 - alpha_e / 2)
    q = 1 - delta / 2
    r = next(r for r in range(1, 401) if stats.binom.sf(r - 1, 400, q) <= alpha_e)
    terms = []
    for x in (xa, xb):
        mu = x.mean(0)
        h = z * x.std(0, ddof=1) / math.sqrt(400)
        y = np.sort(np.abs(x - mu).sum(1))
        terms.append((mu, h.sum(), y[r - 1] + h.sum(), y[math.ceil(400 * q) - 1]))
    mean_term = np.abs(terms[0][0] - terms[1][0]).sum() + terms[0][1] + terms[1][1]
    assert res.mean_term == pytest.approx(mean_term, rel=1e-12)
    assert res.deviation_term == pytest.approx(terms[0][2] + terms[1][2], rel=1e-12)
    assert res.bound == pytest.approx(mean_term + terms[0][2] + terms[1][2], rel=1e-12)
    assert res.estimate == pytest.approx(np.abs(terms[0][0] - terms[1][0]).sum() + terms[0][3] + terms[1][3], rel=1e-12)
    assert res.assumptions == ("monte_carlo_clt",) and res.method == "mean_deviation"


def test_theorem_3_3_too_few_draws_is_infinite_unless_support():
    """With n = 30 and δ = 0.01, P(Bin(30, 0.995) ≥ 30) = 0.86 > α: no order
    statistic bounds the quantile. A declared support caps c by the radius."""
    g = np.random.default_rng(2)
    cal = cal_from(g.uniform(0, 1, (30, 2)), g.uniform(0, 1, (30, 2)))
    assert wasserstein_bounds(cal, delta=0.01).bound == math.inf
    capped = wasserstein_bounds(cal, delta=0.01, support=(0.0, 1.0)).bound
    assert math.isfinite(capped) and capped <= 2.0  # the support's L1 diameter


# -- families and the union bound ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class FamilyCalibration(Calibration):
    """Stand-in for the coming Calibration.members (one Calibration per θ)."""

    members: tuple = ()


def _family(confidence=CONFIDENCE):
    g = np.random.default_rng(8)
    m0 = cal_from(g.uniform(0, 1, 1000), g.uniform(0.2, 1.2, 1000), confidence)
    m1 = cal_from(g.uniform(0, 1, 1000), g.uniform(0.4, 1.4, 1000), confidence)
    fields = {f.name: getattr(m0, f.name) for f in dataclasses.fields(Calibration)}
    return FamilyCalibration(**fields, members=(m0, m1)), m0, m1


def test_family_takes_supremum_with_bonferroni_over_members():
    """Two members, two secrets each: each of the 4 distributions gets failure
    probability (1 − c)/4, i.e. each single member is computed at confidence
    1 − (1 − c)·2/4 — the family bound is the larger of the two."""
    fam, m0, m1 = _family()
    res = wasserstein_bounds(fam, support=(0, 1.4))
    assert res.n_distributions == 4 and res.confidence == CONFIDENCE
    per_member_conf = 1 - (1 - CONFIDENCE) * 2 / 4
    b0 = wasserstein_bounds(m0, support=(0, 1.4), confidence=per_member_conf).bound
    b1 = wasserstein_bounds(m1, support=(0, 1.4), confidence=per_member_conf).bound
    assert res.bound == max(b0, b1) and res.pairs[0].worst_member == int(np.argmax([b0, b1]))
    assert res.pairs[0].estimate == max(wasserstein_bounds(m, confidence=None).estimate for m in (m0, m1))
    # the split costs something: one member alone at the full confidence is tighter
    assert wasserstein_bounds(m1, support=(0, 1.4)).bound < b1
    assert wasserstein_bounds(m0, support=(0, 1.4)).bound < b0


def test_several_pairs_and_plug_in_labels():
    g = np.random.default_rng(4)
    s = [bp.DistributionSecret("theta", v) for v in (0.0, 1.0, 2.0)]
    samples = np.stack([g.uniform(0, 1, 500), g.uniform(0.1, 1.1, 500), g.uniform(0.5, 1.5, 500)])[:, :, None]
    pairs = bp.all_pairs(s)
    cal = calibration_from_samples(samples, s, pairs, QUERY, confidence=None)
    res = wasserstein_bounds(cal)
    assert len(res.pairs) == 3 and res.n_distributions == 3
    assert all(p.bound == p.estimate for p in res.pairs)
    assert res.confidence is None and res.assumptions == ("estimated_moments",)
    assert res.worst.pair == bp.SecretPair(s[0], s[2])
    table = res.table()
    assert list(table.index) == [p.label for p in pairs]
    assert {"estimate", "bound", "method", "worst member"} <= set(table.columns)
    # an explicit confidence turns a plug-in calibration's draws into bounds
    conservative = wasserstein_bounds(cal, confidence=0.9, support=(0, 1.5))
    assert conservative.confidence == 0.9 and conservative.bound > res.bound


# -- support -----------------------------------------------------------------------------------------------------------


def test_query_support_is_derived_only_when_provable():
    flag = lambda b: b["x"] > 0
    lo, hi = query_support(bp.proportion(flag, "x"), 1, 50)
    assert (lo[0], hi[0]) == (0.0, 1.0)
    lo, hi = query_support(bp.count(flag, "x"), 1, 50)
    assert (lo[0], hi[0]) == (0.0, 50.0)
    lo, hi = query_support(bp.count(flag, "x"), 1, None)
    assert (lo[0], hi[0]) == (-math.inf, math.inf)
    lo, hi = query_support(bp.stack(bp.mean("x", bounds=(-2.0, 3.0)), bp.mean("y")), 2, 10)
    np.testing.assert_array_equal(lo, [-2.0, -math.inf])
    np.testing.assert_array_equal(hi, [3.0, math.inf])
    lo, hi = query_support(QUERY, 1, 10)
    assert (lo[0], hi[0]) == (-math.inf, math.inf)


def test_user_support_is_intersected_and_checked():
    g = np.random.default_rng(0)
    cal = cal_from(g.uniform(0, 1, 100), g.uniform(0, 1, 100), query=bp.proportion(lambda b: b["x"] > 0, "x"))
    lo, hi = resolve_support(cal, (-5.0, 0.999999))
    assert (lo[0], hi[0]) == (0.0, 0.999999)
    with pytest.raises(ValueError, match="support must contain every calibration draw"):
        resolve_support(cal, (0.0, 0.5))


@pytest.mark.parametrize("support, match", [
    ((0.0, 1.0, 2.0), "support must be a pair"),
    (([0.0, 0.0], [1.0, 1.0]), r"support\[0\] \(lo\) must be a scalar or an array of shape \(1,\)"),
    ((1.0, 0.0), "lo <= hi"),
    ((float("nan"), 1.0), "free of NaN"),
    ("01", "support must be a pair"),
])
def test_bad_support(support, match):
    g = np.random.default_rng(0)
    cal = cal_from(g.uniform(0, 1, 50), g.uniform(0, 1, 50))
    with pytest.raises(ValueError, match=match):
        wasserstein_bounds(cal, support=support)


# -- errors ---------------------------------------------------------------------------------------------------------------


def test_refusals_and_bad_arguments():
    g = np.random.default_rng(0)
    cal = cal_from(g.uniform(0, 1, 50), g.uniform(0, 1, 50))
    moments = bp.Calibration.from_moments({A: [0.0], B: [1.0]}, {A: 1.0, B: 1.0}, PAIR)
    with pytest.raises(ValueError, match="from_moments"):
        wasserstein_bounds(moments)
    with pytest.raises(ValueError, match="delta must be in"):
        wasserstein_bounds(cal, delta=1.0)
    with pytest.raises(ValueError, match="method must be one of"):
        wasserstein_bounds(cal, method="sinkhorn")
    with pytest.raises(ValueError, match="confidence must be"):
        wasserstein_bounds(cal, confidence=1.5)
    with pytest.raises(ValueError, match="confidence must be"):
        wasserstein_bounds(cal, confidence="calib")
    with pytest.raises(ValueError, match="delta must be > 0 for method='mean_deviation'"):
        wasserstein_bounds(cal, method="mean_deviation")
    with pytest.raises(TypeError, match="calibration must be a bayespriv Calibration"):
        wasserstein_bounds("cal")
    cal2 = cal_from(g.uniform(0, 1, (50, 2)), g.uniform(0, 1, (50, 2)))
    with pytest.raises(ValueError, match="method='quantile' needs a one-dimensional query"):
        wasserstein_bounds(cal2, delta=0.1, method="quantile")
    with pytest.raises(ValueError, match="delta must be > 0"):
        wasserstein_bounds(cal2)
    with pytest.raises(ValueError, match="support must be an interval containing every draw"):
        w_infinity_samples([0.5, 2.0], [0.1], support=(0, 1))
    with pytest.raises(ValueError, match="method must be one of"):
        PairWasserstein(PAIR, 0.1, 0.2, 0.0, 0.9, "auto")


# -- the order-statistic band (default) ------------------------------------------------------------------


def _band_violated(sorted_v: np.ndarray, upper: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """For uniform draws (Q(u) = u), per run: does some claim fail? "Q(u) ≤ X_(j) for u ≤ l_j" fails
    iff V_(j) < l_j, "Q(u) ≥ X_(j) for u > h_j" iff V_(j) > h_j."""
    return np.any(sorted_v < upper, axis=-1) | np.any(sorted_v > lower, axis=-1)


def test_order_band_levels():
    """At the constrained order statistics the levels are the DKW levels at α/2 or the
    Beta(j, n − j + 1) quantiles at η = α/(4|J|) (half of α to the Beta band, two-sided Bonferroni),
    checked with scipy's Beta CDF, whichever is narrower (the Beta ones in the tails); elsewhere
    they come from monotonicity; the band lies inside the DKW band at α/2; the levels are
    non-decreasing; the plug-in "band" is the empirical quantile function."""
    from bayespriv.calibration.quantile_bands import _order_indices, quantile_band

    n, alpha = 500, 0.05
    band = quantile_band(n, alpha)
    j = np.arange(1, n + 1)
    eps = dkw_epsilon(n, alpha / 2)
    assert np.all(band.upper_levels >= j / n - eps - 1e-12) and np.all(band.lower_levels <= (j - 1) / n + eps + 1e-12)
    assert np.all(np.diff(band.upper_levels) >= 0) and np.all(np.diff(band.lower_levels) >= 0)
    assert np.all(band.upper_levels < band.lower_levels + 1 / n)
    idx = _order_indices(n)
    assert idx[0] == 1 and idx[-1] == n and np.all(np.diff(idx) >= 1)
    assert set(range(1, 31)) | set(range(n - 29, n + 1)) <= set(idx.tolist())
    eta = alpha / 2 / (2 * idx.size)
    up, low = band.upper_levels[idx - 1], band.lower_levels[idx - 1]
    from_dkw_up = np.abs(up - (idx / n - eps)) < 1e-9  # where DKW is the narrower of the two
    from_dkw_low = np.abs(low - ((idx - 1) / n + eps)) < 1e-9
    beta_up = stats.beta.cdf(up, idx, n - idx + 1) / eta
    beta_low = stats.beta.sf(low, idx, n - idx + 1) / eta
    assert np.all(from_dkw_up | (np.abs(beta_up - 1) < 1e-6))
    assert np.all(from_dkw_low | (np.abs(beta_low - 1) < 1e-6))
    tails = (idx <= 30) | (idx > n - 30)  # there the Beta band is the narrower
    assert not np.any(from_dkw_up[tails]) and not np.any(from_dkw_low[tails])
    plug = quantile_band(n, 0.0)
    np.testing.assert_array_equal(plug.upper_levels, j / n)
    np.testing.assert_array_equal(plug.lower_levels, (j - 1) / n)
    assert band.unbounded_mass == pytest.approx(band.lower_levels[0] + 1 - band.upper_levels[-1])


@pytest.mark.parametrize("n", [50, 2000])
def test_order_band_simultaneous_coverage_and_pointwise_twin(n):
    """Simultaneous coverage at α = 0.05 by simulation: 2000 runs of n uniforms (the event every
    claim rests on, for any F); failures are below Binomial(2000, 0.05)'s (1 − 1e-3) quantile with
    probability ≥ 1 − 1e-3. The twin — the Beta quantiles at η = α/2 for every j, a pointwise band
    without the union bound — under-covers and is caught by the same check."""
    from bayespriv.calibration.w_distances import quantile_band

    runs, alpha = 2000, 0.05
    v = np.sort(np.random.default_rng(n).random((runs, n)), axis=1)
    band = quantile_band(n, alpha)
    limit = stats.binom.ppf(1 - 1e-3, runs, alpha)
    assert _band_violated(v, band.upper_levels, band.lower_levels).sum() <= limit
    j = np.arange(1, n + 1)
    twin_l, twin_h = stats.beta.ppf(alpha / 2, j, n - j + 1), stats.beta.isf(alpha / 2, j, n - j + 1)
    assert _band_violated(v, twin_l, twin_h).sum() > limit


def test_order_band_covers_a_discrete_quantile_function():
    """Binomial(20, 0.3) draws (ties, jumps): on 1000 runs of 200 draws, L(u) ≤ Q(u) ≤ U(u) at every
    u, checked at the midpoints of all intervals between band levels and CDF jumps (where all three
    are constant), with U, L computed here by their definition. α = 1e-3 as above; a band that
    trusts the empirical quantile (the plug-in levels) fails."""
    from bayespriv.calibration.w_distances import quantile_band

    n, runs, alpha = 200, 1000, 0.05
    dist = stats.binom(20, 0.3)
    g = np.random.default_rng(77)
    x = np.sort(dist.rvs((runs, n), random_state=g), axis=1).astype(float)

    def failures(band):
        cuts = np.concatenate([band.upper_levels, band.lower_levels, dist.cdf(np.arange(21))])
        cuts = np.unique(np.concatenate([[0.0, 1.0], cuts[(cuts > 0) & (cuts < 1)]]))
        u = 0.5 * (cuts[1:] + cuts[:-1])
        q = dist.ppf(u)
        first = np.argmax(band.upper_levels[None, :] >= u[:, None], axis=1)  # first j with u ≤ l_j
        has_up = band.upper_levels[-1] >= u
        n_below = (band.lower_levels[None, :] < u[:, None]).sum(axis=1)  # last j with h_j < u
        upper = np.where(has_up, x[:, first], 20.0)
        lower = np.where(n_below > 0, x[:, np.maximum(n_below - 1, 0)], 0.0)
        return int(np.any((q > upper) | (q < lower), axis=1).sum())

    assert failures(quantile_band(n, alpha)) <= stats.binom.ppf(1 - 1e-3, runs, alpha)
    assert failures(quantile_band(n, 0.0)) > stats.binom.ppf(1 - 1e-3, runs, alpha)


def test_order_band_is_tighter_than_dkw_and_still_covers():
    """N(0,1) vs N(0, 2²), δ = 0.05, 20 000 draws, confidence 1 − 1e-6: both bounds are ≥ the exact
    Φ⁻¹(0.975) = 1.96 (each fails with probability ≤ 1e-6); the order band's is well below DKW's
    (measured 2.33 against 3.40 at this seed; the gap is many times the run-to-run spread) and the
    order band is finite at δ = 0.01, where DKW (tail mass 2ε ≈ 0.03) is not."""
    cal = _normal_cal()
    exact = stats.norm.ppf(0.975)
    order = wasserstein_bounds(cal, delta=0.05)
    dkw = wasserstein_bounds(cal, delta=0.05, band="dkw")
    assert order.band == "order" and dkw.band == "dkw"
    assert exact <= order.bound < dkw.bound - 0.15
    assert math.isfinite(wasserstein_bounds(cal, delta=0.01).bound)
    assert wasserstein_bounds(cal, delta=0.01, band="dkw").bound == math.inf
    with pytest.raises(bp.ValidationError, match="band must be one of"):
        wasserstein_bounds(cal, delta=0.05, band="beta")


# -- exact laws (Calibration.finite_laws): W∞ from the laws, no band ----------------------------------------
import pandas as pd  # noqa: E402

from bayespriv.calibration.laws import FiniteLaw  # noqa: E402
from bayespriv.calibration.w_distances import w_infinity_finite  # noqa: E402


@pytest.mark.parametrize("delta", [0.0, 0.05, 0.2])
@pytest.mark.parametrize("params_a, params_b", [((2, 3), (3, 2)), ((1, 1), (5, 2)), ((2, 2), (2, 2.5))])
def test_finite_law_helper_matches_northwest_corner(params_a, params_b, delta):
    """Points given in any order; the reference builds the monotone coupling cell by cell."""
    xs = np.arange(21.0)
    pa, pb = stats.betabinom(20, *params_a).pmf(xs), stats.betabinom(20, *params_b).pmf(xs)
    perm = np.random.default_rng(0).permutation(21)
    got = w_infinity_finite(FiniteLaw(xs[perm], pa[perm]), FiniteLaw(xs[::-1] + 3, pb[::-1]), delta=delta)
    assert got == northwest_corner(xs, pa, xs + 3, pb, delta)


def test_finite_law_helper_on_the_paper_example():
    mu, nu = FiniteLaw([1, 2, 3, 100], [0.6, 0.2, 0.0, 0.2]), FiniteLaw([1, 2, 3, 100], [0.4, 0.3, 0.2, 0.1])
    assert w_infinity_finite(mu, nu) == 97.0 and w_infinity_finite(mu, nu, delta=0.1) == 1.0
    with pytest.raises(bp.ParameterTypeError, match="law_a must be a one-dimensional FiniteLaw"):
        w_infinity_finite(FiniteLaw([[0, 1]], [1.0]), nu)


def _census_calibration(n_draws: int = 300, **kw) -> Calibration:
    g = np.random.default_rng(8)
    sex = g.choice(["F", "M"], 400)
    table = pd.DataFrame({"sex": sex, "xray": np.where(g.random(400) < np.where(sex == "F", 0.2, 0.5), "pos", "neg")})
    pair = bp.SecretPair(*[bp.DatasetSecret.proportion("sex", "F", p) for p in (0.3, 0.7)])
    return bp.calibrate(bp.EmpiricalDataModel(table, 40), pair, bp.count("xray", "pos"), n_draws=n_draws, rng=2, **kw)


@pytest.mark.parametrize("confidence", ["calibration", 0.95, None])
@pytest.mark.parametrize("delta", [0.0, 0.01])
def test_exact_laws_give_exact_w_infinity_with_confidence_one(confidence, delta):
    cal = _census_calibration()
    laws = [cal.finite_laws[s.label] for s in cal.pairs[0].secrets]
    truth = northwest_corner(laws[0].points[:, 0], laws[0].weights, laws[1].points[:, 0], laws[1].weights, delta)
    wb = wasserstein_bounds(cal, delta=delta, confidence=confidence)
    assert wb.bound == wb.estimate == truth and wb.confidence == 1.0 and wb.assumptions == ()
    assert truth >= 1.0
    sampled = wasserstein_bounds(_census_calibration(exact_laws=False), delta=delta)
    assert sampled.bound >= truth  # the band of the draws covers the truth, far more loosely


def test_wasserstein_mechanisms_on_exact_laws():
    cal = _census_calibration()
    w = bp.mechanisms.Wasserstein(cal, epsilon=0.5)
    assert w.guarantee.confidence == 1.0 and w.guarantee.assumptions == ()
    assert w.sensitivity == wasserstein_bounds(cal).bound and w.noise_scale.tolist() == [w.sensitivity / 0.5]
    a = bp.mechanisms.ApproxWasserstein(cal, epsilon=0.5, delta=0.05)
    assert a.guarantee.confidence == 1.0 and a.sensitivity <= w.sensitivity
    # a calibration from the laws alone (no draws) is enough for the quantile route, not for Theorem 3.3's
    laws = bp.Calibration.from_laws({s: cal.finite_laws[s.label] for s in cal.secrets}, cal.pairs, cal.query)
    assert bp.mechanisms.Wasserstein(laws, epsilon=0.5).sensitivity == w.sensitivity
    with pytest.raises(bp.ValidationError, match="support must contain every value of the exact law of F"):
        bp.mechanisms.Wasserstein(laws, epsilon=0.5, support=(0, 10))
    with pytest.raises(bp.ValidationError, match="need draws"):
        wasserstein_bounds(laws, delta=0.05, method="mean_deviation")


def test_a_family_of_exact_laws_takes_the_supremum_over_members():
    a, b = bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.5)
    near = bp.Calibration.from_laws({a: ([0, 1], [0.5, 0.5]), b: ([0, 1], [0.4, 0.6])}, bp.SecretPair(a, b))
    far = bp.Calibration.from_laws({a: ([0, 1], [0.9, 0.1]), b: ([2, 3], [0.1, 0.9])}, bp.SecretPair(a, b))
    fam = dataclasses.replace(far, family=(near, far))
    wb = wasserstein_bounds(fam)
    assert wb.bound == 3.0 and wb.pairs[0].worst_member == 1 and wb.n_distributions == 4
