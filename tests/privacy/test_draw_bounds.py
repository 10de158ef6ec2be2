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
