"""The accountant of the released law on the library's scenarios, with default arguments.

What a user gets from ``accountant="auto"`` on the census (UCI Adult), the synthetic hospital,
and a record-level pgmpy network (the eight schools, PyMC, are in ``tests/models/test_schools.py``,
which calibrates them once for the module):

* the guarantee is established at (ε, δ) = (1, 1e-3) without any opt-in;
* more draws never cost more noise once a small draw count is established: the accountant's
  upper bound shrinks with the draws. The scale it picks still carries Monte-Carlo noise (each
  evaluation of δ(t) is an estimate with its own confidence margin; the search stops at the first
  passing t), so the larger draw count is allowed ``MC_SLACK`` more noise variance;
* twins: half the noise variance (standard deviations × 1/√2) is caught — the accounted δ
  exceeds the target, and on the hospital, whose laws are exactly Gaussian, the exact δ of the
  released law exceeds it too.

Every calibration has a fixed seed, so each test is deterministic; the tolerances below say how
much a different seed may move the figures (measured over 8 seeds, see each test).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import norm

import bayespriv as bp
from bayespriv.calibration.laws import conditions_of
from bayespriv.privacy.accountant import GaussianNoise, account

M = bp.mechanisms
EPS, DELTA = 1.0, 1e-3
#: Relative noise variance the larger draw count may add. The noise picked at the smaller draw count is
#: itself a Monte-Carlo figure (the draws and the accountant's points).
MC_SLACK = 0.10


def _trace(mech: M.Mechanism) -> float:
    return float(np.trace(mech.noise_cov))


def _half_noise_delta(mech: M.Mechanism) -> float:
    """The accountant's δ(ε) of the same calibration with half the mechanism's noise variance."""
    cal = mech.calibration
    return account(conditions_of(cal), GaussianNoise(mech.noise_cov / 2.0), EPS, confidence=cal.confidence).delta


# ------------------------------------------------------------------------------------------ census
@pytest.fixture(scope="module")
def census(adult_dir):
    from bayespriv.models.census import census_model, census_query, income_pairs, load_adult

    return census_model(load_adult(adult_dir)), income_pairs(0.1), census_query()


@pytest.mark.adult
def test_census_more_draws_never_cost_more_noise(census):
    """APGM on the five census statistics (income share 0.45 vs 0.55): refused at 1 000 draws per secret (they
    cannot certify δ = 1e-3) with the draws it needs, established at 12 000, and at 40 000 with at most
    MC_SLACK more noise variance."""
    model, pair, query = census
    with pytest.raises(bp.DrawsNeededError) as info:
        M.APGM(bp.calibrate(model, pair, query, n_draws=1000, rng=3), epsilon=EPS, delta=DELTA)
    assert info.value.draws_needed > 5000
    mechs = {n: M.APGM(bp.calibrate(model, pair, query, n_draws=n, rng=3), epsilon=EPS, delta=DELTA)
             for n in (12_000, 40_000)}
    for n, mech in mechs.items():
        assert mech.guarantee.established, (n, mech.guarantee)
        assert mech.accounting.account.delta <= DELTA
        assert mech.requested == (EPS, DELTA)
    assert _trace(mechs[40_000]) <= (1 + MC_SLACK) * _trace(mechs[12_000]), {n: _trace(m) for n, m in mechs.items()}
    # twin: half the noise variance is caught by the accountant
    assert _half_noise_delta(mechs[12_000]) > DELTA


# ---------------------------------------------------------------------------------------- hospital
def _gaussian_delta(diff: float, sd: float, eps: float) -> float:
    """Exact δ(ε) of N(0, sd²) vs N(diff, sd²) (Balle & Wang 2018, Theorem 8)."""
    r = abs(diff) / sd
    return float(norm.cdf(r / 2 - eps / r) - math.exp(eps) * norm.cdf(-r / 2 - eps / r))


@pytest.mark.slow
def test_hospital_more_draws_never_cost_more_noise_and_half_noise_is_caught_exactly():
    """Average blood pressure of 50 patients, share of women 0.26 vs 0.74 and 0.48 vs 0.52 (the widest and the
    narrowest of the paper's pairs). Given the share the average is exactly Gaussian with variance 9/50, so the
    δ of the released law is known in closed form: the accountant's noise (from draws) meets δ on it, half its
    variance does not."""
    import bayespriv.models.hospital as H

    share = lambda p: bp.DatasetSecret.proportion("gender", "female", p)  # noqa: E731
    shares = ((0.26, 0.74), (0.48, 0.52))
    pairs = [bp.SecretPair(share(a), share(b)) for a, b in shares]
    name = "average blood pressure"
    mechs = {n: M.APGM(bp.calibrate(H.hospital_model(), pairs, H.QUERIES[name], n_draws=n, rng=5),
                       epsilon=EPS, delta=DELTA) for n in (20_000, 60_000)}
    for n, mech in mechs.items():
        assert mech.guarantee.established, (n, mech.guarantee)
    assert _trace(mechs[60_000]) <= (1 + MC_SLACK) * _trace(mechs[20_000]), {n: _trace(m) for n, m in mechs.items()}

    def exact_delta(noise_var: float) -> float:
        out = []
        for a, b in shares:
            (mu_a, var), (mu_b, _) = H.exact_moments(name, a), H.exact_moments(name, b)
            out.append(_gaussian_delta(mu_a - mu_b, math.sqrt(var + noise_var), EPS))
        return max(out)

    for mech in mechs.values():
        s = float(mech.noise_cov[0, 0])
        assert exact_delta(s) <= DELTA < exact_delta(s / 2), (s, exact_delta(s), exact_delta(s / 2))
        assert _half_noise_delta(mech) > DELTA


# ------------------------------------------------------------------------------ pgmpy record level
def _record_net():
    """A → S, A → D: the count of D = yes depends on the share of S = mid through A only."""
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    net = DiscreteBayesianNetwork([("A", "S"), ("A", "D")])
    states = {"A": ["a0", "a1", "a2"], "S": ["lo", "mid", "hi"], "D": ["no", "yes"]}
    net.add_cpds(
        TabularCPD("A", 3, [[0.5], [0.3], [0.2]], state_names={"A": states["A"]}),
        TabularCPD("S", 3, [[0.8, 0.2, 0.1], [0.15, 0.6, 0.2], [0.05, 0.2, 0.7]], evidence=["A"], evidence_card=[3],
                   state_names={"S": states["S"], "A": states["A"]}),
        TabularCPD("D", 2, [[0.8, 0.5, 0.2], [0.2, 0.5, 0.8]], evidence=["A"], evidence_card=[3],
                   state_names={"D": states["D"], "A": states["A"]}),
    )
    return net


@pytest.mark.parametrize("exact_laws", ["auto", False])
@pytest.mark.slow
def test_record_level_network_apgm_is_established(exact_laws):
    """Share of S = mid 0.2 vs 0.5 over 200 records, count of D = yes: established with default arguments,
    from the exact finite law (the default) and from 20 000 draws; half the noise is caught."""
    model = bp.BayesNetDataModel(_record_net(), n_records=200)
    pair = bp.SecretPair(bp.DatasetSecret.proportion("S", "mid", 0.2), bp.DatasetSecret.proportion("S", "mid", 0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        cal = bp.calibrate(model, pair, bp.count("D", "yes"), n_draws=20_000, rng=5, exact_laws=exact_laws)
        mech = M.APGM(cal, epsilon=EPS, delta=DELTA)
    assert mech.guarantee.established and mech.accounting.account.delta <= DELTA
    assert float(mech.noise_cov[0, 0]) > 0  # the laws differ by more than δ: noise is needed
    assert _half_noise_delta(mech) > DELTA
