"""The hospital Θ of §4.2 as a family of PyMC models, against its closed forms.

Given exactly k women every average is exactly Gaussian, so the tolerances are
exact: a difference of two sample means is normal, a sample variance is a
scaled χ². Suprema and infima over (θ, pair) estimates are bounded with a union
bound; α is stated per test.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import bayespriv as bp
from bayespriv.models import hospital
from bayespriv.models.hospital import (
    QUERIES,
    QUERY_GRIDS,
    family_exact,
    hospital_family,
    hospital_generator_pymc,
    hospital_pymc_model,
    pymc_secret_pairs,
    theta_moments,
)

ALPHA = 1e-3


def _share(p):
    return bp.DatasetSecret.proportion("gender", 1, p)


#: The extreme and the central shares of the paper's pair set (n = 50).
PAIRS = bp.pairs_between([_share(0.26), _share(0.48)], [_share(0.52), _share(0.74)])


def test_family_exact_matches_hand_computation():
    """d(U) = 0.74 − 0.26 = 0.48 for n = 50 (the paper prints 0.25, see the module docstring)."""
    w = family_exact("average weight")
    assert w["sensitivity"] == pytest.approx(3.5 * (71 - 64) * 0.48)
    assert w["worst_theta"] == {"k1": 3.5, "mu_female": 64.0, "mu_other": 71.0}
    assert w["worst_pair"] == bp.SecretPair(_share(0.26), _share(0.74))
    assert w["variance_min"] == pytest.approx((15**2 + 3**2 * (0.74 * 3**2 + 0.26 * 8**2)) / 50)
    b = family_exact("average blood pressure")
    assert b["sensitivity"] == pytest.approx(10 * 0.48) and b["variance_min"] == pytest.approx(10**2 / 50)
    t = family_exact("average temperature")
    assert t["sensitivity"] == pytest.approx(0.3 * 0.48) and t["variance_min"] == pytest.approx(2**2 / 50)
    assert len(pymc_secret_pairs()) == 144


def _check_family(cal, query_name, n_draws, pairs, grid):
    """Failures of the calibrated sensitivity, worst θ and smallest variance against
    :func:`family_exact` over ``grid`` (empty when all hold).

    Sensitivity: J (θ, pair) differences d_j, each N(S_j, SE_j²) exactly. With t = z·max SE_j,
    P(max |d_j| > S + t) <= 2J·Φ(−z) and P(max |d_j| < S − t) <= Φ(−z); z = Φ⁻¹(1 − α/(2J + 1)).
    Variance: N = members × secrets estimates, each V_i χ²_{D−1}/(D − 1); the minimum
    leaves [V_min q_lo, V_min q_hi] with probability <= α, q at α/(N + 1) per tail.
    """
    exact = family_exact(query_name, grid=grid, pairs=pairs)
    thetas = [dict(m.theta) for m in cal.members]
    se = [np.sqrt(sum(theta_moments(query_name, s.value, **th)[1] for s in p.secrets) / n_draws)
          for th in thetas for p in pairs]
    J = len(se)
    z = stats.norm.isf(ALPHA / (2 * J + 1))
    failures = []
    if abs(cal.sensitivity(2) - exact["sensitivity"]) > z * max(se):
        failures.append(f"sensitivity {cal.sensitivity(2):.4f} vs {exact['sensitivity']:.4f}")
    if dict(cal.worst_theta) != exact["worst_theta"]:
        failures.append(f"worst theta {cal.worst_theta} vs {exact['worst_theta']}")
    n_est = len(thetas) * len({s for p in pairs for s in p.secrets})
    q_lo, q_hi = stats.chi2.ppf([ALPHA / (n_est + 1), 1 - ALPHA / (n_est + 1)], n_draws - 1) / (n_draws - 1)
    vmin = float(cal.variance()[0])
    if not exact["variance_min"] * q_lo <= vmin <= exact["variance_min"] * q_hi:
        failures.append(f"variance {vmin:.4f} vs {exact['variance_min']:.4f}")
    return failures


@pytest.mark.slow
def test_weight_family_calibration_matches_closed_form():
    """8 corners of (k1, μ_F, μ_O); α = 1e-3 for the sensitivity and 1e-3 for the variance."""
    fam = hospital_family(grid=dict(QUERY_GRIDS["average weight"]))
    assert len(fam) == 8 and fam.covers == "corners"
    cal = bp.calibrate(fam, PAIRS, QUERIES["average weight"], n_draws=1500, rng=42)
    assert _check_family(cal, "average weight", 1500, PAIRS, dict(QUERY_GRIDS["average weight"])) == []
    assert cal.worst_pair == bp.SecretPair(_share(0.26), _share(0.74))
    assert cal.diagnostics["family"]["worst_theta"] == {"k1": 3.5, "mu_female": 64.0, "mu_other": 71.0}
    assert {e["route"] for e in cal.diagnostics["mcmc"].values()} == {"forward"}


def test_twin_calibrating_one_member_instead_of_the_family_is_caught():
    """Θ's default member alone (the midpoints) misses the worst case: sensitivity 3.25·5·0.48 = 7.8."""
    one = bp.DataModelFamily(lambda k1: hospital_pymc_model(k1=k1), {"k1": [3.25]})
    cal = bp.calibrate(one, PAIRS, QUERIES["average weight"], n_draws=1500, rng=42)
    failures = _check_family(cal, "average weight", 1500, PAIRS, dict(QUERY_GRIDS["average weight"]))
    exact = family_exact("average weight", pairs=PAIRS)
    assert cal.sensitivity(2) < exact["sensitivity"] - 3
    assert any(f.startswith("sensitivity") for f in failures)


def test_blood_pressure_and_temperature_families():
    for name in ("average blood pressure", "average temperature"):
        fam = hospital_family(grid=dict(QUERY_GRIDS[name]))
        cal = bp.calibrate(fam, PAIRS, QUERIES[name], n_draws=1500, rng=7)
        assert _check_family(cal, name, 1500, PAIRS, dict(QUERY_GRIDS[name])) == []


def test_pymc_generator_matches_the_numpy_generator_closed_form():
    """The generator written in PyMC gives exact_moments of the NumPy generator: the average
    weight given 30 women of 50 is N(151.2, 6.8328) exactly; α = 1e-3 per check."""
    D = 4000
    model = hospital_generator_pymc(50)
    batch = model.sample(_share(0.6), D, rng=11)
    assert np.all(batch["gender"].sum(axis=1) == 30)
    w = batch["weight"].mean(axis=1)
    mean, var = hospital.exact_moments("average weight", 0.6)
    assert abs(w.mean() - mean) <= stats.norm.isf(ALPHA / 2) * np.sqrt(var / D)
    lo, hi = stats.chi2.ppf([ALPHA / 2, 1 - ALPHA / 2], D - 1) / (D - 1)
    assert var * lo <= w.var(ddof=1) <= var * hi


def test_theta_is_checked():
    with pytest.raises(bp.ValidationError, match="theta must name parameters"):
        hospital_pymc_model(slope=3.0)
    with pytest.raises(bp.ValidationError, match="bp_sd must be a standard deviation > 0"):
        hospital_pymc_model(bp_sd=0.0)
    with pytest.raises(bp.ValidationError, match="p_female must be a probability"):
        hospital_pymc_model(p_female=1.5)
    with pytest.raises(bp.ValidationError, match="k1 must be a finite real number"):
        hospital_pymc_model(k1="3")
    with pytest.raises(bp.ValidationError, match="theta must name parameters"):
        hospital_family(grid={"slope": [1.0]})
    assert hospital_pymc_model(k1=3.0).theta == {"k1": 3.0}
