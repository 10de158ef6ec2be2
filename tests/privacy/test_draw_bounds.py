"""Betting confidence bounds on the mean of [0, 1]-valued draws (``mechanisms/draw_bounds.py``).

Coverage is checked by simulation: R independent samples from laws of known mean, counting how often the bound
misses it. Under the theorem a miss has probability at most α; the count is flagged above the quantile a
Binomial(R, α) exceeds with probability FALSE_ALARM = 1e-3 (per law). Twin: the sample mean itself as a "bound"
misses about half the time and is flagged by the same rule.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from bayespriv.errors import ValidationError
from bayespriv.privacy import draw_bounds as db
from bayespriv.privacy.draw_bounds import COMPRESS_ABOVE, draws_for_floor, mean_lower, mean_upper, upper_floor

FALSE_ALARM = 1e-3
ALPHA = 0.05
RUNS = 400


def _limit(runs: int, alpha: float) -> int:
    return int(stats.binom.ppf(1 - FALSE_ALARM, runs, alpha))


LAWS = {
    "rare Bernoulli (p 2e-3, n 2000)": (lambda rng, n: (rng.random(n) < 2e-3).astype(float), 2e-3, 2000),
    "rare far + small bulk": (lambda rng, n: np.where(rng.random(n) < 1e-3, 1.0, rng.random(n) * 1e-3), 1e-3 + 0.999 * 5e-4,
                              5000),
    "uniform [0, 0.01]": (lambda rng, n: rng.random(n) * 0.01, 0.005, 1000),
    "Beta(2, 5)": (lambda rng, n: rng.beta(2, 5, n), 2 / 7, 200),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(LAWS))
def test_upper_and_lower_bounds_cover_the_mean(name):
    draw, mean, n = LAWS[name]
    rng = np.random.default_rng(7)
    miss_up = miss_lo = 0
    for _ in range(RUNS):
        x = draw(rng, n)
        miss_up += mean_upper(x, alpha=ALPHA) < mean
        miss_lo += mean_lower(x, alpha=ALPHA) > mean
    assert miss_up <= _limit(RUNS, ALPHA) and miss_lo <= _limit(RUNS, ALPHA), (miss_up, miss_lo)


def test_twin_the_sample_mean_is_caught():
    draw, mean, n = LAWS["uniform [0, 0.01]"]
    rng = np.random.default_rng(8)
    misses = sum(float(np.mean(draw(rng, n))) < mean for _ in range(RUNS))
    assert misses > _limit(RUNS, ALPHA)


def test_floor_is_the_bound_of_all_zero_draws_and_draws_for_floor_inverts_it():
    """With every draw 0 the bound is about (ln(1/α) + ln(1/π₁))/(c₁ n) (π₁ = 0.55, c₁ = 0.95), the mass a
    region may have while no draw hits it; draws_for_floor is the smallest n whose floor meets a target."""
    for n in (100, 2000, 20_000):
        f = upper_floor(n, 0.05)
        approx = (math.log(20) + math.log(1 / 0.55)) / (0.95 * n)  # the nearly all-in bet alone
        assert 0.9 * approx <= f <= approx  # the other bets of the mixture only add wealth
    n = draws_for_floor(1e-3, 0.0125)
    assert upper_floor(n, 0.0125) <= 1e-3 < upper_floor(int(n * 0.99), 0.0125)


def test_bounds_are_monotone_in_the_values_and_bracket_the_mean():
    rng = np.random.default_rng(3)
    x = rng.random(500) * 0.02
    u, lo = mean_upper(x, alpha=0.05), mean_lower(x, alpha=0.05)
    assert lo <= x.mean() <= u
    assert mean_upper(x * 1.1, alpha=0.05) >= u and mean_lower(x * 1.1, alpha=0.05) >= lo
    assert mean_upper(x, alpha=0.01) >= u and mean_lower(x, alpha=0.01) <= lo  # a smaller α widens both


def test_counts_are_repeated_values():
    values, counts = np.array([0.0, 0.3, 1.0]), np.array([90, 8, 2])
    expanded = np.repeat(values, counts)
    assert mean_upper(values, counts, alpha=0.05) == pytest.approx(mean_upper(expanded, alpha=0.05), rel=1e-6)
    assert mean_lower(values, counts, alpha=0.05) == pytest.approx(mean_lower(expanded, alpha=0.05), rel=1e-6)


def test_many_distinct_values_are_rounded_conservatively():
    """Above COMPRESS_ABOVE distinct values they are rounded up (upper bound) or down (lower): the bounds only
    widen, by about the rounding step (1e-3 relative)."""
    rng = np.random.default_rng(5)
    x = rng.random(COMPRESS_ABOVE * 3) * 1e-2
    small_u = mean_upper(x[:COMPRESS_ABOVE], alpha=0.05)  # exact arithmetic below the threshold
    assert small_u >= x[:COMPRESS_ABOVE].mean()
    u, lo = mean_upper(x, alpha=0.05), mean_lower(x, alpha=0.05)
    assert lo <= x.mean() <= u and u - x.mean() < 0.1 * x.mean()


@pytest.mark.parametrize("kwargs,match", [
    (dict(values=[0.5, 1.2], alpha=0.05), "values must be numbers in \\[0, 1\\]"),
    (dict(values=[0.5], alpha=1.5), "alpha must be a number in \\(0, 1\\)"),
    (dict(values=[0.5, 0.2], counts=[1], alpha=0.05), "counts must be one count per value"),
])
def test_bad_input_names_the_parameter(kwargs, match):
    with pytest.raises(ValidationError, match=match):
        mean_upper(**kwargs)


def _mixed_values(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Values as the accountant makes them: most far below the mean (down to 1e-300), some near or at 1."""
    rng = np.random.default_rng(seed)
    v = np.concatenate([10.0 ** rng.uniform(-300, -1, n // 2), rng.random(n // 4) * 0.2, rng.random(n // 8),
                        np.ones(n - n // 2 - n // 4 - n // 8)])
    return v, rng.integers(1, 4, v.size).astype(float)


@pytest.mark.parametrize("m", [1e-9, 1e-4, 0.05, 0.5, 0.97, 1 - 1e-12])
def test_the_upper_wealth_by_power_series_is_the_direct_sum(m):
    """The series of the values below SERIES_BELOW gives the log wealth that logarithms of every factor give (to
    float64 rounding over the sum: 1e-12 relative)."""
    v, c = _mixed_values(3, 2000)
    direct = db._log_wealth(v, c, m, db.UPPER_BETS, True)
    series = db._UpperWealth(v, c)(m)
    assert series == pytest.approx(direct, rel=1e-12, abs=1e-9)


def test_twin_a_series_cut_short_is_caught(monkeypatch):
    v, c = _mixed_values(4, 2000)
    direct = db._log_wealth(v, c, 0.5, db.UPPER_BETS, True)
    monkeypatch.setattr(db, "SERIES_TERMS", 2)
    assert db._UpperWealth(v, c)(0.5) != pytest.approx(direct, rel=1e-6)


@pytest.mark.parametrize("bound", [mean_upper, mean_lower])
def test_compression_widens_the_bound_by_at_most_its_step_of_the_scale(bound, monkeypatch):
    """Above COMPRESS_ABOVE values the bound is that of the rounded and merged values: never narrower than the exact
    bound, and wider by at most about COMPRESS_STEP × max(mean, 1/n) (twice it: rounding plus merging)."""
    v, c = _mixed_values(5, 4 * COMPRESS_ABOVE)
    v = v * 1e-3  # a mean of the order of a δ
    compressed = bound(v, c, alpha=0.05)
    monkeypatch.setattr(db, "COMPRESS_ABOVE", 10 * v.size)
    exact = bound(v, c, alpha=0.05)
    scale = max(float(c @ v) / c.sum(), 1.0 / c.sum())
    widened = (compressed - exact) if bound is mean_upper else (exact - compressed)
    assert -1e-12 * scale <= widened <= 2 * db.COMPRESS_STEP * scale


@pytest.mark.parametrize("up", [True, False])
def test_compression_moves_every_value_up_for_the_upper_bound_and_down_for_the_lower(up):
    """First-order dominance: at every threshold x, the rounded values put at least (up) or at most (down) the
    original mass at or above x — each value moved only one way — and the total count is kept. Values on the
    grid's own points and at the merging threshold are included."""
    base, counts = _mixed_values(6, 2 * COMPRESS_ABOVE)
    tiny = 1e-4
    for _ in range(4):  # the threshold depends on the mean, which the added values move (by little: weight 1e-6)
        k_min = math.floor(math.log(tiny) / db._LOG_STEP)
        edges = np.exp(np.arange(k_min, k_min + 5) * db._LOG_STEP)
        v = np.concatenate([base, [tiny, tiny * (1 - 1e-15), tiny * (1 + 1e-15)], edges, edges * (1 + 1e-15)])
        c = np.concatenate([counts, np.full(3 + 2 * edges.size, 1e-6)])
        tiny = db.COMPRESS_STEP * max(float(c @ v) / c.sum(), 1.0 / c.sum())
    assert v[counts.size] == tiny  # the threshold itself is among the values
    rv, rc = db._compressed(v, c, up)
    assert rc.sum() == pytest.approx(c.sum(), rel=1e-15) and rv.size < v.size / 2

    def mass_at_or_above(values, counts, x):
        return np.array([counts[values >= t].sum() for t in x])

    thresholds = np.unique(np.concatenate([v, rv]))
    before, after = mass_at_or_above(v, c, thresholds), mass_at_or_above(rv, rc, thresholds)
    assert np.all(after >= before) if up else np.all(after <= before)
    assert np.all((rv >= v.min()) if up else (rv <= v.max()))
