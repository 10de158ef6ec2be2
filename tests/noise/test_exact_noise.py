"""Exact discrete samplers and grid release plans (bayespriv.noise).

Statistical tests use fixed seeds, and each tolerance is derived so that it holds for ANY seed
with false-failure probability α = 1e-3 per test (stated per test):

* chi-square goodness of fit: the statistic over B bins (expected counts ≥ 5, tails merged) is
  compared with the (1 − α) quantile of χ²(B − 1) (asymptotic; with ≥ 2·10⁵ draws per test and
  every expected count ≥ 20 the approximation error is far below α);
* frequencies of exact Bernoulli laws: a two-sided exact binomial test at level α;
* Kolmogorov–Smirnov for the standardized noise of a plan (continuous law up to a 2^-60 grid).

Each law test has a twin: the same draws against a shifted (or rescaled) pmf must be rejected.
Exact parts (the TV bound, the Laplace ratio lemma, exact linear maps, Gershgorin dominance)
are checked against independent mpmath / Fraction computations. Total draws from the samplers
in the chi-square tests: 4·10⁵ discrete Laplace + 6·10⁵ discrete Gaussian (small σ) + 10⁵
discrete Gaussian at σ = 2^136 grid steps (the grid of ε = 50, δ = 1e-15, k = 64) = 1.1·10⁶.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from bayespriv.errors import ParameterTypeError, ValidationError
from bayespriv import noise as xn
from bayespriv.noise import bits as xbits
from bayespriv.noise import grid_plans
from bayespriv.noise import (
    BitSource,
    bernoulli_exp,
    delta_with_discretization,
    discrete_gaussian,
    discretization_grid_bits,
    discretization_reserve,
    discrete_laplace,
    gaussian_tv_bound,
    plan_gaussian,
    plan_laplace,
    sample_bernoulli_exp,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)

ALPHA = 1e-3


# -- helpers (independent of the module under test) ----------------------------------------------


def laplace_pmf(scale: Fraction, zs: np.ndarray) -> np.ndarray:
    """Exact P(Z = z) ∝ exp(−|z|/scale), normalized in closed form: (1 − α)/(1 + α) α^|z|."""
    with mpmath.workdps(40):
        a = mpmath.exp(-1 / mpmath.mpf(scale.numerator) * scale.denominator)
        c = (1 - a) / (1 + a)
        return np.array([float(c * a ** abs(int(z))) for z in zs])


def gaussian_pmf(sigma2: Fraction, zs: np.ndarray) -> np.ndarray:
    """Exact P(Z = z) ∝ exp(−z²/(2σ²)), normalized by direct summation over |z| ≤ 60σ + 10."""
    with mpmath.workdps(40):
        s2 = mpmath.mpf(sigma2.numerator) / sigma2.denominator
        half = int(60 * math.sqrt(float(sigma2))) + 10
        norm = mpmath.fsum(mpmath.exp(-mpmath.mpf(z) ** 2 / (2 * s2)) for z in range(-half, half + 1))
        return np.array([float(mpmath.exp(-mpmath.mpf(int(z)) ** 2 / (2 * s2)) / norm) for z in zs])


def chi_square(draws: np.ndarray, pmf, lo: int, hi: int) -> tuple[float, int]:
    """Statistic and degrees of freedom over bins lo..hi plus the two merged tails; lo = −hi,
    and hi is lowered until each merged tail expects at least 20 draws."""
    draws = np.asarray(draws, dtype=np.int64)
    while hi > 1 and 0.5 * (1.0 - pmf(np.arange(-hi, hi + 1)).sum()) * draws.size < 20:
        hi -= 1
    lo = -hi
    zs = np.arange(lo, hi + 1)
    p = pmf(zs)
    p_tails = np.array([max(0.0, 0.5 * (1.0 - p.sum()))] * 2)  # both laws used here are symmetric
    counts = np.array([(draws < lo).sum()] + [(draws == z).sum() for z in zs] + [(draws > hi).sum()])
    probs = np.concatenate([[p_tails[0]], p, [p_tails[1]]])
    expected = probs * draws.size
    assert expected.min() >= 20, "bins too thin for the chi-square approximation"
    return float(((counts - expected) ** 2 / expected).sum()), probs.size - 1


def chi_square_ok(draws, pmf, lo, hi) -> bool:
    stat, df = chi_square(draws, pmf, lo, hi)
    return stat <= stats.chi2.isf(ALPHA, df)


# -- BitSource -----------------------------------------------------------------------------------


def test_bitsource_seeded_is_reproducible_and_labelled():
    a, b = BitSource.from_rng(7), BitSource.from_rng(7)
    assert a.seeded and b.seeded
    assert [a.randbelow(10**30) for _ in range(50)] == [b.randbelow(10**30) for _ in range(50)]
    c = BitSource.from_rng(np.random.SeedSequence(7))
    assert c.seeded and c.randbelow(2**64) != BitSource.from_rng(8).randbelow(2**64)
    gen = np.random.default_rng(3)
    assert BitSource.from_rng(gen).seeded


def test_bitsource_none_means_os_csprng(monkeypatch):
    calls = []
    real = xbits.os.urandom

    def counting(n):
        calls.append(n)
        return real(n)

    monkeypatch.setattr(xbits.os, "urandom", counting)
    for src in (BitSource.system(), BitSource.from_rng(None)):
        assert not src.seeded
        sample_discrete_gaussian(10**6, 200, src)
    # buffered: a few block reads, not one syscall per draw
    assert 2 <= len(calls) <= 20 and all(n == xbits.BLOCK_BYTES for n in calls)


def test_release_source_is_kept_per_thread_and_buffered(monkeypatch):
    """One source per thread, reused between releases: a release reads OS bytes once per block, not once
    per release; another thread gets another source, whose words are not the first thread's."""
    import threading

    calls = []
    real = xbits.os.urandom
    monkeypatch.setattr(xbits.os, "urandom", lambda n: calls.append(n) or real(n))
    xbits._forget_release_sources()
    src = BitSource.for_release()
    assert src is BitSource.for_release() and not src.seeded
    for _ in range(50):
        sample_discrete_gaussian(2**121, 5, BitSource.for_release())
    assert 1 <= len(calls) <= 25  # 250 draws of ~14 words: about 7 blocks of 512 words, not 50 reads
    other: list = []
    thread = threading.Thread(target=lambda: other.append(BitSource.for_release()))
    thread.start()
    thread.join()
    assert other[0] is not src


def _words_in_child(queue) -> None:
    queue.put([BitSource.for_release().getrandbits(64) for _ in range(8)])


@pytest.mark.skipif(not hasattr(xbits.os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("bypass_fork_hook", [False, True])
@pytest.mark.subprocess
def test_a_forked_child_never_reuses_the_parents_buffered_words(bypass_fork_hook):
    """A forked child inherits the parent's unread buffer; were it used, the child's noise would repeat the
    parent's. The at-fork hook drops it, and the process-id check catches a fork that bypassed the hook
    (simulated by making the hook do nothing; with the pid check also removed this case fails)."""
    import multiprocessing as mp

    parent = BitSource.for_release()
    parent.getrandbits(64)  # a block is buffered now
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    if bypass_fork_hook:
        saved = xbits._RELEASE_SOURCES.__dict__.copy()
        child = ctx.Process(target=_words_in_child, args=(queue,))
        with pytest.MonkeyPatch.context() as mp_patch:
            mp_patch.setattr(xbits, "_forget_release_sources", lambda: None)
            child.start()
        xbits._RELEASE_SOURCES.__dict__.update(saved)
    else:
        child = ctx.Process(target=_words_in_child, args=(queue,))
        child.start()
    child_words = queue.get(timeout=60)
    child.join(timeout=60)
    mine = [parent.getrandbits(64) for _ in range(8)]
    assert child_words != mine


def test_randbelow_uniform_small_and_huge():
    """Chi-square of randbelow(7) (7 bins) and of randbelow(3·2^70 + 1) cut into 16 equal-ish
    bins (bin of r is ⌊16r/n⌋, exact probabilities counted with integers); α = 1e-3 each."""
    bits = BitSource.from_rng(11)
    n_draws = 70_000
    small = np.array([bits.randbelow(7) for _ in range(n_draws)])
    counts = np.bincount(small, minlength=7)
    assert stats.chisquare(counts).pvalue > ALPHA
    n = 3 * 2**70 + 1
    big = [16 * bits.randbelow(n) // n for _ in range(n_draws)]
    sizes = np.array([_bin_size(n, j) for j in range(16)], dtype=float)
    counts = np.bincount(big, minlength=16)
    assert stats.chisquare(counts, sizes / sizes.sum() * n_draws).pvalue > ALPHA
    # twin: a biased generator (top half of the range never drawn) is caught
    bad = np.array([bits.randbelow(7) % 6 for _ in range(n_draws)])
    assert stats.chisquare(np.bincount(bad, minlength=7)).pvalue < ALPHA


def _bin_size(n: int, j: int) -> int:
    """Number of r in [0, n) with ⌊16r/n⌋ = j."""
    lo = -(-j * n // 16)
    hi = -(-(j + 1) * n // 16)
    return hi - lo


def test_bernoulli_exact_frequency():
    """bernoulli(num, den) for p = 1/3 and p = 2^-1 + 2^-70: exact binomial test, α = 1e-3."""
    bits = BitSource.from_rng(5)
    for num, den in [(1, 3), (2**69 + 1, 2**70)]:
        hits = sum(bits.bernoulli(num, den) for _ in range(40_000))
        assert stats.binomtest(hits, 40_000, num / den).pvalue > ALPHA
    assert not any(bits.bernoulli(0, 5) for _ in range(100))
    assert all(bits.bernoulli(5, 5) for _ in range(100))


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "7"])
def test_randbelow_rejects_bad_n(bad):
    with pytest.raises((ValidationError, ParameterTypeError), match="n must be"):
        BitSource.from_rng(1).randbelow(bad)


def test_from_rng_rejects_bad_seed():
    with pytest.raises(ParameterTypeError, match="rng"):
        BitSource.from_rng("seed")


# -- Bernoulli(exp(−γ)) --------------------------------------------------------------------------


@pytest.mark.parametrize("gamma", [Fraction(3, 10), 1, Fraction(5, 2), 0.75, Fraction(22, 7)])
def test_bernoulli_exp_exact_frequency(gamma):
    """Exact binomial test of the frequency against exp(−γ) (mpmath), α = 1e-3 per γ; the twin
    (the same count tested against exp(−1.1γ)) is rejected."""
    n = 30_000
    hits = int(sample_bernoulli_exp(gamma, n, BitSource.from_rng(17)).sum())
    p = float(mpmath.exp(-mpmath.mpf(Fraction(gamma).numerator) / Fraction(gamma).denominator))
    assert stats.binomtest(hits, n, p).pvalue > ALPHA
    assert stats.binomtest(hits, n, math.exp(-1.1 * float(gamma))).pvalue < ALPHA


def test_bernoulli_exp_zero_and_validation():
    bits = BitSource.from_rng(1)
    assert all(bernoulli_exp(0, bits) for _ in range(200))
    with pytest.raises(ValidationError, match="gamma"):
        bernoulli_exp(-0.5, bits)
    with pytest.raises(ValidationError, match="gamma"):
        bernoulli_exp(float("nan"), bits)
    with pytest.raises(ParameterTypeError, match="bits"):
        bernoulli_exp(1, np.random.default_rng(0))


# -- discrete Laplace and discrete Gaussian: chi-square against exact pmfs -----------------------

LAPLACE_CASES = [(Fraction(3), 200_000, 21), (Fraction(7, 3), 200_000, 17)]
GAUSSIAN_CASES = [(Fraction(9), 200_000, 11), (Fraction(5, 2), 200_000, 6), (Fraction(200, 3), 200_000, 28)]


@pytest.mark.parametrize("scale,n,half", LAPLACE_CASES)
def test_discrete_laplace_matches_exact_pmf(scale, n, half):
    """χ² goodness of fit over bins −half..half plus tails, α = 1e-3; twins: the same draws
    against the pmf shifted by one, and against the pmf of scale 1.05·t, are rejected."""
    draws = sample_discrete_laplace(scale, n, BitSource.from_rng(101))
    assert draws.dtype == np.int64
    pmf = lambda zs: laplace_pmf(scale, zs)  # noqa: E731
    assert chi_square_ok(draws, pmf, -half, half)
    assert not chi_square_ok(draws + 1, pmf, -half, half)
    assert not chi_square_ok(draws, lambda zs: laplace_pmf(scale * Fraction(21, 20), zs), -half, half)


@pytest.mark.slow
@pytest.mark.parametrize("sigma2,n,half", GAUSSIAN_CASES)
def test_discrete_gaussian_matches_exact_pmf(sigma2, n, half):
    """χ² goodness of fit over bins −half..half plus tails, α = 1e-3; twins: the same draws
    against the pmf shifted by one, and against the pmf of σ² · 1.05, are rejected."""
    draws = sample_discrete_gaussian(sigma2, n, BitSource.from_rng(202))
    pmf = lambda zs: gaussian_pmf(sigma2, zs)  # noqa: E731
    assert chi_square_ok(draws, pmf, -half, half)
    assert not chi_square_ok(draws + 1, pmf, -half, half)
    assert not chi_square_ok(draws, lambda zs: gaussian_pmf(sigma2 * Fraction(21, 20), zs), -half, half)


def test_discrete_gaussian_at_the_finest_grid_of_the_reserve_rule():
    """σ = 2^136 grid steps (σ² = 2^272; the grid that ε = 50, δ = 1e-15, k = 64 asks for):
    χ² over 20 bins cut at the integers ⌊σ·Φ⁻¹(j/20)⌋, α = 1e-3. A bin's probability under the
    discrete Gaussian differs from the N(0, σ²) mass between its edges by at most the TV
    between the two laws, ≤ τ(2^136) ≈ 2e-42 (gaussian_tv_bound), far below what 10⁵ draws can
    see, so the expected counts are N(0, σ²) masses (50-digit mpmath). Twins: the same draws
    against σ² · 1.05, and shifted by σ/20, are rejected (non-centralities 102 and 246: a true
    law that far off passes with probability 2e-6 and 1e-23)."""
    n, sigma = 100_000, mpmath.mpf(2) ** 136
    draws = sample_discrete_gaussian(2**272, n, BitSource.from_rng(303))
    assert draws.dtype == object

    def statistic(scale: mpmath.mpf, shift: int = 0) -> float:
        with mpmath.workdps(50):
            edges = [int(mpmath.floor(scale * mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.mpf(j) / 20 - 1)))
                     for j in range(1, 20)]
            cdf = [mpmath.mpf(0)] + [mpmath.ncdf((e + mpmath.mpf(1) / 2) / scale) for e in edges] + [mpmath.mpf(1)]
            probs = np.array([float(b - a) for a, b in zip(cdf, cdf[1:])])
        idx = np.searchsorted(np.array(edges, dtype=object), np.array([int(v) + shift for v in draws], dtype=object),
                              side="left")
        counts = np.bincount(idx.astype(np.int64), minlength=20)
        expected = probs * n
        assert expected.min() >= 20
        return float(((counts - expected) ** 2 / expected).sum())

    limit = stats.chi2.isf(ALPHA, 19)
    assert statistic(sigma) <= limit
    assert statistic(sigma * mpmath.sqrt(mpmath.mpf(21) / 20)) > limit
    assert statistic(sigma, shift=2**136 // 20) > limit


def test_scalar_samplers_and_huge_parameters():
    bits = BitSource.from_rng(9)
    assert isinstance(discrete_laplace(0.5, bits), int)
    assert isinstance(discrete_gaussian(Fraction(1, 3), bits), int)
    big = sample_discrete_gaussian(2**140, 50, bits)  # values ~2^70 do not fit int64
    assert big.dtype == object and max(abs(int(v)) for v in big) > 2**63
    with pytest.raises(ValidationError, match="scale"):
        discrete_laplace(0, bits)
    with pytest.raises(ValidationError, match="sigma2"):
        discrete_gaussian(float("inf"), bits)
    with pytest.raises(ValidationError, match="n must be"):
        sample_discrete_laplace(1, -1, bits)


def test_samplers_seeded_reproducible():
    one = sample_discrete_gaussian(Fraction(7, 2), 300, BitSource.from_rng(42))
    two = sample_discrete_gaussian(Fraction(7, 2), 300, BitSource.from_rng(42))
    three = sample_discrete_gaussian(Fraction(7, 2), 300, BitSource.from_rng(43))
    assert np.array_equal(one, two) and not np.array_equal(one, three)


# -- Gaussian plan -------------------------------------------------------------------------------


def _random_cov(k: int, seed: int, rank: int | None = None) -> np.ndarray:
    a = np.random.default_rng(seed).normal(size=(k, rank or k))
    return a @ a.T


def test_plan_gaussian_identity_covariance():
    plan = plan_gaussian(np.eye(3) * 4.0)
    assert np.array_equal(plan.directions, np.eye(3))
    assert len(set(plan.sigma2_units)) == 1
    assert np.array_equal(plan.realized_cov, plan.cov) and np.array_equal(plan.sigma, [2.0, 2.0, 2.0])
    sigma_units = math.sqrt(plan.sigma2_units[0])
    assert sigma_units >= 2.0**plan.grid_bits
    assert plan.tv_bound == pytest.approx(3 * gaussian_tv_bound(sigma_units))
    release = plan.release([20.0, 30.5, -1e6], BitSource.from_rng(1))
    g = plan.grid
    assert not release.flags.writeable
    assert np.array_equal(np.floor(release / g), release / g)  # exactly on the grid g·ℤ


def test_plan_gaussian_release_is_postprocessing_of_integer_coordinates():
    cov = _random_cov(4, 3)
    plan = plan_gaussian(cov)
    answer = np.array([0.1, 1e-7, 123456.789, -3.0])
    n = plan.coordinates(answer, BitSource.from_rng(5))
    assert all(type(v) is int for v in n)
    released = plan.release(answer, BitSource.from_rng(5))
    assert np.array_equal(released, plan.to_answer_space(n))
    # the noiseless part is round(L·answer / g), computed exactly (independent Fraction check)
    lmat = [[Fraction(float(v)) for v in row] for row in plan.directions.T]
    g = Fraction(2) ** plan.grid_exponent
    for row, (num, den) in zip(lmat, plan._map.grid_fractions(answer, plan.grid_exponent)):
        assert Fraction(num, den) == sum(r * Fraction(float(a)) for r, a in zip(row, answer)) / g


def test_plan_gaussian_dominates_cov_exactly():
    """σ²g² − L·cov·Lᵀ is diagonally dominant (Fraction arithmetic), so realized_cov ⪰ cov."""
    for cov in (_random_cov(4, 1), _random_cov(4, 2, rank=2), np.diag([1e-6, 1.0, 1e6])):
        plan = plan_gaussian(cov)
        lmat = [[Fraction(float(v)) for v in row] for row in plan.directions.T]
        c = [[Fraction(float(v)) for v in row] for row in plan.cov]
        k = len(c)
        lc = [[sum(lmat[i][m] * c[m][j] for m in range(k)) for j in range(k)] for i in range(k)]
        mm = [[sum(lc[i][m] * lmat[j][m] for m in range(k)) for j in range(k)] for i in range(k)]
        g2 = Fraction(2) ** (2 * plan.grid_exponent)
        for i in range(k):
            assert plan.sigma2_units[i] * g2 - mm[i][i] >= sum(abs(mm[i][j]) for j in range(k) if j != i)
        assert np.linalg.eigvalsh(plan.realized_cov - plan.cov).min() >= -1e-12 * np.abs(cov).max()
        positive = [s for s in plan.sigma2_units if s]
        assert min(positive) >= 4**plan.grid_bits


def test_plan_gaussian_singular_directions_get_no_noise():
    cov = np.array([[1.0, 1.0], [1.0, 1.0]])
    plan = plan_gaussian(cov)
    assert sorted(s == 0 for s in plan.sigma2_units) == [False, True]
    null = plan.sigma2_units.index(0)
    coords = {plan.coordinates([2.0, 3.0], BitSource.from_rng(s))[null] for s in range(20)}
    assert len(coords) == 1  # the null direction (1, −1)/√2 carries no noise: always the same integer
    assert abs(coords.pop() * plan.grid - (2.0 * plan.directions[0, null] + 3.0 * plan.directions[1, null])) < 1e-12


@pytest.mark.parametrize("grid_bits", [60, 136])
def test_plan_gaussian_noise_law(grid_bits):
    """KS test of the standardized noise L·(release − answer)/σ_c against N(0, 1), α = 1e-3
    (the grid is 2^-60 σ or finer, far below KS resolution); twin: halved σ is rejected.
    136 bits: the grid of ε = 50, δ = 1e-15, k = 64 (discretization_grid_bits)."""
    cov = _random_cov(3, 7)
    plan = plan_gaussian(cov, grid_bits=grid_bits)
    assert plan.grid_bits == grid_bits and min(plan.sigma2_units) >= 4**grid_bits
    bits = BitSource.from_rng(8)
    answer = np.array([5.0, -2.0, 0.25])
    rel = np.array([plan.release(answer, bits) for _ in range(3000)])
    z = ((rel - answer) @ plan.directions) / plan.sigma
    assert stats.kstest(z.ravel(), "norm").pvalue > ALPHA
    assert stats.kstest(2 * z.ravel(), "norm").pvalue < ALPHA


def test_tv_bound_dominates_exact_tv():
    """τ(σ) ≥ the exact TV between z₀ + Z_dG(σ) and round(y + σξ), over fractional offsets
    f = y − z₀ ∈ [−½, ½] (30-digit mpmath; sums over |z| ≤ 14σ + 10, tails < 1e-40); and
    τ is tight to first order (within 30 % of the worst TV for σ ≥ 5)."""
    for sigma in (1.0, 2.0, 5.0, 12.0):
        worst = 0.0
        for f in np.linspace(-0.5, 0.5, 7):
            worst = max(worst, _exact_tv(sigma, float(f)))
        assert gaussian_tv_bound(sigma) >= worst
        if sigma >= 5:
            assert gaussian_tv_bound(sigma) <= 1.3 * worst


def _exact_tv(sigma: float, f: float) -> float:
    with mpmath.workdps(30):
        s, f = mpmath.mpf(sigma), mpmath.mpf(f)
        half = int(14 * sigma) + 10
        zs = range(-half, half + 1)
        w = [mpmath.exp(-mpmath.mpf(z) ** 2 / (2 * s**2)) for z in zs]
        norm = mpmath.fsum(w)
        q = [mpmath.ncdf((z + mpmath.mpf(1) / 2 - f) / s) - mpmath.ncdf((z - mpmath.mpf(1) / 2 - f) / s) for z in zs]
        return float(mpmath.fsum(abs(wi / norm - qi) for wi, qi in zip(w, q)) / 2)


def _tv_theorem(sigma: float, dps: int = 50) -> mpmath.mpf:
    """The un-simplified bound of gaussian_tv_bound's theorem at σ, in mpmath: (i) + ½[(ii) + (iii)]
    with the integer cut A = ⌈xσ⌉, x = max(10, 2√(ln σ)), the exact count 2A + 1 and the exact
    normal tails 2Φ̄((A + ½)/σ) + 2Φ̄(A/σ)."""
    with mpmath.workdps(dps):
        s = mpmath.mpf(sigma)
        x = max(mpmath.mpf(10), 2 * mpmath.sqrt(mpmath.log(s)))
        a = mpmath.ceil(x * s)
        root = mpmath.sqrt(2 * mpmath.pi)
        first = 1 / (2 * root * s)
        core = (2 * a + 1) / (24 * root * s**3)
        tails = 2 * mpmath.ncdf(-(a + mpmath.mpf(1) / 2) / s) + 2 * mpmath.ncdf(-a / s)
        q = mpmath.exp(-2 * mpmath.pi**2 * s**2)
        return first + (core + tails + 2 * q / (1 - q)) / 2


@pytest.mark.parametrize("log2_sigma", [0, 0.5, 1, 3, 8, 20, 36, 37, 60, 100, 136, 200, 400, 700, 1000])
def test_tv_bound_against_mpmath_up_to_the_finest_grid(log2_sigma):
    """The float τ(σ) is at least the theorem's un-simplified bound (50-digit mpmath: exact A,
    exact normal tails) and within 1e-12 (its stated rounding-up) + 5 % of it; at σ ≥ 2^20 it is
    that bound times 1 + 1e-12 up to 1e-15, and σ·τ(σ) ≤ 0.19948 from σ = 2^60 on (the constant
    the reserve rule uses). σ = 2^1000 is the finest grid; e^25 ≈ 2^36.07 is where the tail
    cut changes."""
    sigma = 2.0**log2_sigma
    got, ref = gaussian_tv_bound(sigma), _tv_theorem(sigma)
    with mpmath.workdps(50):
        rel = mpmath.mpf(got) / ref - 1
    assert rel >= 0
    assert rel <= (2e-12 if log2_sigma >= 20 else 0.05)
    if log2_sigma >= 60:
        assert got * sigma <= 0.19948


def test_tv_bound_is_non_increasing():
    """On a fine logarithmic grid from 1 to 2^1000 (through the tail-cut switch at e^25), τ never
    increases: a coordinate with more grid steps never costs more (discretization_reserve)."""
    sigmas = np.concatenate([np.geomspace(1.0, 2.0**1000, 20_001),
                             math.exp(25.0) * (1.0 + np.linspace(-1e-9, 1e-9, 101))])
    sigmas.sort()
    values = np.array([gaussian_tv_bound(float(v)) for v in sigmas])
    assert np.all(np.diff(values) <= 0)
    with pytest.raises(ValidationError, match="sigma"):
        gaussian_tv_bound(0.5)


EXTREME_EPSILONS = (0.01, 0.1, 0.5, 1, 2, 5, 10, 20, 35, 50)
EXTREME_DELTAS = (1e-15, 1e-12, 1e-9, 1e-6, 1e-3, 0.1)


def _grid_bits_reference(epsilon: float, delta: float, k: int) -> int:
    """min(1000, max(60, ⌈log2(200·(1 + e^ε)·k/δ)⌉)) in 50-digit arithmetic."""
    with mpmath.workdps(50):
        need = mpmath.log(200 * (1 + mpmath.exp(epsilon)) * k / mpmath.mpf(delta), 2)
        return min(1000, max(60, int(mpmath.ceil(need))))


@pytest.mark.parametrize("k", [1, 3, 64])
def test_reserve_rule(k):
    """For ε ≤ 50, δ ≥ 1e-15: the grid bits are the documented rule (mpmath), the reserve
    1.001·(1 + e^ε)·k·τ(2^b) is at most δ/1000, and one bit fewer would break that (the rule
    is not wasteful) unless b is the floor 60; b = 60 whenever ε ≤ 5 and δ ≥ 1e-9."""
    for eps in EXTREME_EPSILONS:
        for delta in EXTREME_DELTAS:
            b = discretization_grid_bits(eps, delta, k)
            assert b == _grid_bits_reference(eps, delta, k), (eps, delta, k)
            reserve = discretization_reserve(eps, k, grid_bits=b)
            with mpmath.workdps(50):
                exact = (1 + mpmath.exp(eps)) * k * mpmath.mpf(gaussian_tv_bound(2.0**b)) * mpmath.mpf("1.001")
                assert mpmath.mpf(reserve) >= exact * (1 - mpmath.mpf(2) ** -50)
            assert reserve <= delta / 1000
            if b > 60:
                assert discretization_reserve(eps, k, grid_bits=b - 1) > 0.99 * delta / 1000
            if eps <= 5 and delta >= 1e-9:
                assert b == 60


def test_reserve_rule_edges():
    assert discretization_grid_bits(50.0, 1e-15, 64) == 136
    assert discretization_grid_bits(5.0, 1e-9, 38_000) == 60 < discretization_grid_bits(5.0, 1e-9, 39_000)
    assert discretization_grid_bits(0.0, 0.5, 0) == 60
    assert discretization_grid_bits(700.0, 1e-15, 1) == 1000  # the cap: the reserve is then above δ/1000
    assert discretization_reserve(700.0, 1, grid_bits=1000) > 1.0
    for bad, match in [((1.0, 0.0, 1), "delta"), ((1.0, 1.0, 1), "delta"), ((-1.0, 0.1, 1), "epsilon"),
                       ((1.0, 0.1, -1), "k"), ((1.0, 0.1, 1.5), "k")]:
        with pytest.raises(ValidationError, match=match):
            discretization_grid_bits(*bad)


def test_delta_with_discretization():
    assert delta_with_discretization(1.0, 1e-6, 0.0) == 1e-6
    d = delta_with_discretization(1.0, 1e-6, 1e-18)
    assert d >= 1e-6 + (1 + math.e) * 1e-18 and d < 1e-6 * (1 + 1e-9)
    assert delta_with_discretization(800.0, 1e-6, 1e-18) == 1.0
    with pytest.raises(ValidationError, match="tv_bound"):
        delta_with_discretization(1.0, 1e-6, -1.0)


# -- Laplace plan --------------------------------------------------------------------------------


def test_plan_laplace_ratio_lemma_and_inflation():
    """(e^{1/t_c} − 1)/g ≤ 1/b_c exactly (mpmath, 60 digits): the discrete mechanism keeps the
    continuous ratio bound exp(Σ|Δ_c|/b_c); inflation ≤ 1 + 2^(1 − grid_bits)."""
    for grid_bits in (8, 60):
        plan = plan_laplace([0.3, 2.0, 1e-5], np.eye(3), grid_bits=grid_bits)
        g = mpmath.mpf(2) ** plan.grid_exponent
        with mpmath.workdps(60):
            for t, b in zip(plan.t_units, plan.scale):
                assert mpmath.expm1(1 / mpmath.mpf(t)) / g <= 1 / mpmath.mpf(float(b))
        assert 1.0 <= plan.inflation <= 1 + 2.0 ** (1 - grid_bits) + 1e-15


def test_interpolated_laplace_pmf_is_log_lipschitz():
    """Lemma of LaplaceGridPlan, checked numerically for t = 3: |log h(x) − log h(x′)| ≤
    (e^{1/t} − 1)|x − x′| on a fine grid of x, x′ (h: linear interpolation of the pmf)."""
    t = 3
    p = lambda j: math.exp(-abs(j) / t)  # noqa: E731 - normalization cancels

    def h(x):
        j = math.floor(x)
        s = x - j
        return (1 - s) * p(j) + s * p(j + 1)

    xs = np.linspace(-4, 4, 801)
    logs = np.log([h(x) for x in xs])
    slopes = np.abs(np.diff(logs)) / np.diff(xs)
    assert slopes.max() <= math.expm1(1 / t) * (1 + 1e-9)
    assert slopes.max() > 1 / t  # the constant is needed: plain 1/t would be too small


def test_plan_laplace_exact_inverse_and_complement():
    basis = np.random.default_rng(4).normal(size=(4, 2))
    plan = plan_laplace([1.0, 0.5], basis)
    assert plan.t_units[2:] == (0, 0)
    rows = [[Fraction(v, den) for v in row] for row, den in zip(plan._map.rows, plan._map.dens)]
    full = [[Fraction(float(v)) for v in row] for row in plan.full_basis]
    for i in range(4):
        for j in range(4):
            assert sum(rows[i][m] * full[m][j] for m in range(4)) == (1 if i == j else 0)


def test_plan_laplace_release_law_and_grid():
    """KS of the standardized noise coordinates against Laplace(0, 1), α = 1e-3; twin: doubled
    noise rejected; identity plans release exactly on g·ℤ."""
    plan = plan_laplace([2.0, 0.5], np.eye(2))
    bits = BitSource.from_rng(12)
    answer = np.array([20.0, 30.0 + 2.0**-40])
    rel = np.array([plan.release(answer, bits) for _ in range(3000)])
    z = ((rel - answer) / plan.scale).ravel()
    assert stats.kstest(z, "laplace").pvalue > ALPHA
    assert stats.kstest(2 * z, "laplace").pvalue < ALPHA
    assert np.array_equal(np.floor(rel / plan.grid), rel / plan.grid)


def test_plans_validate_and_are_frozen():
    with pytest.raises(ValidationError, match="cov"):
        plan_gaussian([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(ValidationError, match="basis"):
        plan_laplace([1.0, 1.0], np.eye(3)[:, :1])
    with pytest.raises(ValidationError, match="basis"):
        plan_laplace([1.0, 1.0], np.ones((2, 2)))
    with pytest.raises(ValidationError, match="scale"):
        plan_laplace([-1.0], np.eye(1))
    with pytest.raises(ValidationError, match="grid_bits"):
        plan_gaussian(np.eye(2), grid_bits=2)
    with pytest.raises(ValidationError, match="grid_bits"):
        plan_gaussian(np.eye(2), grid_bits=xn.MAX_GRID_BITS + 1)
    plan = plan_laplace([1.0], np.eye(1))
    with pytest.raises(ValidationError, match="answer"):
        plan.release([1.0, 2.0], BitSource.from_rng(1))
    with pytest.raises(ValidationError, match="answer"):
        plan.release([float("nan")], BitSource.from_rng(1))
    with pytest.raises(ParameterTypeError, match="bits"):
        plan.release([1.0], 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.grid_exponent = 0
    assert not plan.scale.flags.writeable


def test_plan_release_seeded_reproducible():
    plan = plan_gaussian(_random_cov(3, 9))
    a = [1.0, 2.0, 3.0]
    assert np.array_equal(plan.release(a, BitSource.from_rng(4)), plan.release(a, BitSource.from_rng(4)))
    assert not np.array_equal(plan.release(a, BitSource.from_rng(4)), plan.release(a, BitSource.from_rng(5)))


def test_exact_inverse_of_badly_scaled_matrices():
    """The fraction-free inverse is exact (Fraction check) for entries spanning 10 decades."""
    rng = np.random.default_rng(21)
    for k in (1, 3, 6):
        m = rng.normal(size=(k, k)) * 10.0 ** rng.integers(-5, 5, (k, k))
        inv = grid_plans._exact_inverse(m)
        f = [[Fraction(float(v)) for v in row] for row in m]
        for i in range(k):
            for j in range(k):
                got = sum(Fraction(inv.rows[i][t], inv.dens[i]) * f[t][j] for t in range(k))
                assert got == (1 if i == j else 0)
    with pytest.raises(ValidationError, match="basis"):
        grid_plans._exact_inverse(np.array([[1.0, 2.0], [0.5, 1.0]]))


def test_release_beyond_float_range_is_infinite_not_an_error():
    plan = plan_laplace([1e300], np.eye(1))
    out = plan.to_answer_space([2**2000])
    assert out[0] == math.inf
