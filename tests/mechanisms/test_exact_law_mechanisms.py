"""Mechanisms on a calibration that holds the exact laws of a count (``Calibration.finite_laws``).

A count of a category over datasets drawn without replacement from a table has a hypergeometric law per
stratum; :func:`bayespriv.calibrate` attaches these laws (``exact_laws="auto"``), and the accountant of the
released law then computes δ(ε) exactly (``finite_exact``) instead of bounding it from the draws.

Independent computations, written here without the library:

* the laws: hypergeometric probabilities in exact integer arithmetic (``math.comb``), convolved by hand;
* δ(ε) of the released laws ``P_s = μ_s ∗ N(0, σ²)`` (and ``∗ Lap(b)``): the sign changes of
  D(y) = p_a(y) − e^ε p_b(y) on a dense float grid (log space), each root refined by mpmath at 40 digits,
  and the masses of the intervals where D > 0 summed in closed form (normal / Laplace CDFs in mpmath).
  Agreement to 1e-9 relative;
* for the Wasserstein mechanism (pure ε, Δ_W the exact W∞ of the laws): the largest privacy loss
  |log p_a(y) − log p_b(y)| of the released laws, on a dense grid and at ±∞ (closed form), is at most ε.

Nothing here is random beyond the calibration's draws, which the exact route does not read: every
comparison is deterministic. Twins: half the noise variance (standard deviations × 1/√2) gives an
independent δ above the target; half the Wasserstein mechanism's Laplace scale a privacy loss above ε.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp

import bayespriv as bp
from bayespriv.calibration.laws import conditions_of
from bayespriv.mechanisms import APGM, ExpM

N_RECORDS = 60
EPSILON, DELTA = 1.0, 1e-5


def _table(n_rows: int = 3000, seed: int = 4) -> pd.DataFrame:
    """The counted category (a positive x-ray) is three times as frequent among men as among women."""
    g = np.random.default_rng(seed)
    sex = g.choice(["F", "M"], n_rows)
    xray = np.where(g.random(n_rows) < np.where(sex == "F", 0.15, 0.45), "pos", "neg")
    return pd.DataFrame({"sex": sex, "xray": xray})


TABLE = _table()
SECRETS = (bp.DatasetSecret.proportion("sex", "F", 0.4), bp.DatasetSecret.proportion("sex", "F", 0.6))


@pytest.fixture(scope="module")
def calibration() -> bp.Calibration:
    model = bp.EmpiricalDataModel(TABLE, N_RECORDS)
    return bp.calibrate(model, bp.SecretPair(*SECRETS), bp.count("xray", "pos"), n_draws=2000, rng=3)


def _exact_law(p: float) -> tuple[np.ndarray, np.ndarray]:
    """The count of positives with p·n women: two hypergeometrics, exact integers, convolved."""
    k = round(p * N_RECORDS)
    parts = []
    for rows, draw in ((TABLE[TABLE.sex == "F"], k), (TABLE[TABLE.sex != "F"], N_RECORDS - k)):
        N, K = len(rows), int((rows.xray == "pos").sum())
        parts.append({x: Fraction(math.comb(K, x) * math.comb(N - K, draw - x), math.comb(N, draw))
                      for x in range(max(0, draw - (N - K)), min(draw, K) + 1)})
    law: dict[int, Fraction] = {}
    for x, a in parts[0].items():
        for y, b in parts[1].items():
            law[x + y] = law.get(x + y, Fraction(0)) + a * b
    xs = sorted(law)
    return np.array(xs, dtype=float), np.array([float(law[x]) for x in xs])


LAWS = [_exact_law(s.value) for s in SECRETS]


def _kernel_cdf(kind: str, scale):
    if kind == "gaussian":
        return lambda t: mpmath.ncdf(t / scale)
    return lambda t: (mpmath.e ** (t / scale) / 2 if t < 0 else 1 - mpmath.e ** (-t / scale) / 2)


def _log_density(y: np.ndarray, x: np.ndarray, w: np.ndarray, kind: str, scale: float) -> np.ndarray:
    u = -0.5 * ((y[:, None] - x) / scale) ** 2 if kind == "gaussian" else -np.abs(y[:, None] - x) / scale
    return logsumexp(u + np.log(w), axis=1)


def _hockey(xa, wa, xb, wb, eps: float, kind: str, scale: float) -> float:
    """H_ε(P_a‖P_b) of the two finite laws convolved with the noise (module docstring)."""
    lo, hi = min(xa.min(), xb.min()) - 40 * scale, max(xa.max(), xb.max()) + 40 * scale
    y = np.linspace(lo, hi, 400_001)
    sign = np.sign(_log_density(y, xa, wa, kind, scale) - _log_density(y, xb, wb, kind, scale) - eps)
    change = np.flatnonzero(sign[1:] != sign[:-1])
    with mpmath.workdps(40):
        s, ee = mpmath.mpf(scale), mpmath.e ** mpmath.mpf(eps)
        if kind == "gaussian":
            dens = lambda t: mpmath.npdf(t, 0, s)  # noqa: E731
        else:
            dens = lambda t: mpmath.e ** (-abs(t) / s) / (2 * s)  # noqa: E731
        a = [(mpmath.mpf(float(x)), mpmath.mpf(float(w))) for x, w in zip(xa, wa)]
        b = [(mpmath.mpf(float(x)), ee * mpmath.mpf(float(w))) for x, w in zip(xb, wb)]

        def d(t):
            return sum(w * dens(t - x) for x, w in a) - sum(w * dens(t - x) for x, w in b)

        roots = [mpmath.findroot(d, (mpmath.mpf(float(y[i])), mpmath.mpf(float(y[i + 1]))), solver="anderson")
                 for i in change]
        edges = [-mpmath.inf] + roots + [mpmath.inf]
        cdf = _kernel_cdf(kind, s)
        total = mpmath.mpf(0)
        positive = sign[0] > 0
        for left, right in zip(edges[:-1], edges[1:]):
            if positive:
                for pts, sgn in ((a, 1), (b, -1)):
                    for x, w in pts:
                        upper = 1 if right == mpmath.inf else cdf(right - x)
                        lower = 0 if left == -mpmath.inf else cdf(left - x)
                        total += sgn * w * (upper - lower)
            positive = not positive
        return float(total)


def _delta(kind: str, scale: float) -> float:
    (xa, wa), (xb, wb) = LAWS
    return max(_hockey(xa, wa, xb, wb, EPSILON, kind, scale), _hockey(xb, wb, xa, wa, EPSILON, kind, scale))


def test_the_calibration_holds_the_independent_laws(calibration):
    for s, (x, w) in zip(SECRETS, LAWS):
        law = calibration.finite_laws[s.label]
        assert law.points[:, 0].tolist() == x[w > 0].tolist()
        np.testing.assert_allclose(law.weights, w[w > 0], rtol=0, atol=1e-12)
    assert calibration.confidence == 1.0 and calibration.exact
    assert {c.kind for c in conditions_of(calibration)} == {"finite"}


MECHANISMS = [
    ("APGM", lambda cal: APGM(cal, epsilon=EPSILON, delta=DELTA), "gaussian"),
    ("ExpM(G)", lambda cal: ExpM(cal, epsilon=EPSILON, delta=DELTA, noise="gaussian"), "gaussian"),
    ("ExpM(L)", lambda cal: ExpM(cal, epsilon=EPSILON, delta=DELTA, noise="laplace"), "laplace"),
]


@pytest.mark.parametrize("name, build, kind", MECHANISMS, ids=[m[0] for m in MECHANISMS])
@pytest.mark.slow
def test_mechanism_accounts_the_exact_laws_with_no_assumption(calibration, name, build, kind):
    mech = build(calibration)
    g = mech.guarantee
    assert (g.epsilon, g.delta, g.confidence) == (EPSILON, DELTA, 1.0)
    assert "sampled_law" not in g.assumptions and "monte_carlo_clt" not in g.assumptions
    assert set(g.assumptions) == {"exchangeable_records"}  # the proportion secret's own premise, nothing else
    acc = mech.accounting.account
    assert acc.confidence == 1.0 and acc.delta <= DELTA
    assert {r.method for r in acc.rows} == {"finite_exact"}
    scale = math.sqrt(mech.noise_cov[0, 0]) if kind == "gaussian" else float(mech.noise_scale[0])
    reference = _delta(kind, scale)
    assert reference <= DELTA * (1 + 1e-9)
    assert abs(acc.estimate - reference) <= 1e-9 * reference
    # the twin: half the noise variance breaks the request
    assert _delta(kind, scale / math.sqrt(2)) > DELTA


def test_exact_laws_need_no_more_noise_than_the_sampled_route(calibration):
    """The sampled accountant bounds δ from the draws (the draws' margins on top of an upward-biased
    estimate); the exact one does not, so its noise is at most the sampled one's (both meet the request,
    here δ = 1e-3, which 20 000 draws can certify)."""
    sampled = bp.calibrate(bp.EmpiricalDataModel(TABLE, N_RECORDS), bp.SecretPair(*SECRETS), bp.count("xray", "pos"),
                           n_draws=20_000, rng=3, exact_laws=False)
    exact, other = APGM(calibration, epsilon=EPSILON, delta=1e-3), APGM(sampled, epsilon=EPSILON, delta=1e-3)
    assert "sampled_law" in other.guarantee.assumptions and other.guarantee.confidence == 0.95
    assert exact.noise_cov[0, 0] <= other.noise_cov[0, 0]


def _largest_privacy_loss(scale: float) -> float:
    """sup_y |log p_a(y) − log p_b(y)| of the two laws convolved with Lap(scale): on a grid of spacing
    scale/100 over the support and 40 scales beyond, and the limits at ±∞ (closed form)."""
    (xa, wa), (xb, wb) = LAWS
    y = np.linspace(min(xa.min(), xb.min()) - 40 * scale, max(xa.max(), xb.max()) + 40 * scale, 200_001)
    loss = np.abs(_log_density(y, xa, wa, "laplace", scale) - _log_density(y, xb, wb, "laplace", scale))
    tails = [abs(logsumexp(s * xa / scale, b=wa) - logsumexp(s * xb / scale, b=wb)) for s in (1, -1)]
    return float(max(loss.max(), *tails))


@pytest.mark.slow
def test_wasserstein_mechanism_on_exact_laws_keeps_its_pure_epsilon(calibration):
    """Δ_W is the exact W∞ of the laws (confidence 1): the released laws' largest privacy loss is at most ε
    (Theorem 3.1); the twin with half the Laplace scale exceeds it."""
    w = bp.mechanisms.Wasserstein(calibration, epsilon=EPSILON)
    assert (w.guarantee.epsilon, w.guarantee.delta, w.guarantee.confidence) == (EPSILON, 0.0, 1.0)
    assert w.guarantee.assumptions == ()
    scale = float(w.noise_scale[0])
    assert scale == w.sensitivity / EPSILON
    assert _largest_privacy_loss(scale) <= EPSILON * (1 + 1e-9)
    assert _largest_privacy_loss(scale / 2) > EPSILON


def _independent_count_calibration(sampled: bool, n_draws: int = 2000) -> bp.Calibration:
    """A category independent of the secret's column: the count's law barely moves with the share."""
    g = np.random.default_rng(8)
    table = pd.DataFrame({"sex": g.choice(["F", "M"], 3000), "xray": g.choice(["pos", "neg"], 3000)})
    model = bp.EmpiricalDataModel(table, N_RECORDS)
    return bp.calibrate(model, bp.SecretPair(*SECRETS), bp.count("xray", "pos"), n_draws=n_draws, rng=5,
                        exact_laws=not sampled)


def test_an_exact_law_that_meets_delta_alone_gets_no_noise_and_a_sampled_one_always_does():
    """Independent check: releasing the count itself has δ(ε) = max over directions of
    Σ_x max(0, p_a(x) − e^ε p_b(x)) (here by hand on the exact laws); the smallest ε with δ(ε) ≤ δ is
    found by bisection. Above it APGM adds no noise; below it (the twin) it must add some."""
    exact = _independent_count_calibration(sampled=False)
    (cond,) = conditions_of(exact)
    pa, pb = cond.law_a.weights, cond.law_b.weights  # the same support, counts 0..n

    def bare_delta(eps: float) -> float:
        return max(float(np.maximum(0.0, pa - math.exp(eps) * pb).sum()),
                   float(np.maximum(0.0, pb - math.exp(eps) * pa).sum()))

    lo, hi = 0.0, 20.0
    for _ in range(60):
        lo, hi = (lo, (lo + hi) / 2) if bare_delta((lo + hi) / 2) <= DELTA else ((lo + hi) / 2, hi)
    assert 0.01 < hi < 5  # the laws differ a little: a real threshold
    quiet = APGM(exact, epsilon=hi * 1.02, delta=DELTA)
    assert quiet.noise_cov.tolist() == [[0.0]] and quiet.accounting.factor == 0.0
    assert "no noise" in quiet.guarantee.theorem
    # Twin: below the threshold the exact law alone does not meet δ, so noise is added.
    assert APGM(exact, epsilon=hi * 0.9, delta=DELTA).noise_cov[0, 0] > 0
    # The sampled route never releases without noise: its draws say nothing of the law between atoms (and
    # 2 000 draws cannot certify δ = 1e-5 at all: it refuses, naming the draws it needs).
    with pytest.raises(bp.DrawsNeededError):
        APGM(_independent_count_calibration(sampled=True), epsilon=hi * 1.02, delta=DELTA)
    sampled = _independent_count_calibration(sampled=True, n_draws=20_000)
    assert APGM(sampled, epsilon=hi * 1.02, delta=1e-3).noise_cov[0, 0] > 0
