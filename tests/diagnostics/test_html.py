"""HTML views and readable reprs (bayespriv.diagnostics.html): each shows a <table> with the key numbers.

The views only read results; the numbers they print are compared with independent computations
(the expected absolute Gaussian error by mpmath quadrature, the noise sd from the covariance).
No statistical tolerance is involved: every check is exact or a formatting check.
"""

from __future__ import annotations

import re

import mpmath
import numpy as np
import pytest

import bayespriv as bp
from bayespriv.ledger import JointGaussian
from bayespriv.diagnostics.html import (
    chain_calibration_html,
    chain_calibration_repr,
    joint_gaussian_html,
    mechanism_html,
    quilt_calibration_html,
    quilt_calibration_repr,
)
from bayespriv.errors import ParameterTypeError
from bayespriv.mechanisms import APGM, APMQM, MQM, ExpM

from tests.diagnostics import _fixtures as F


@pytest.fixture(scope="module")
def cal():
    return F.gaussian_calibration()


@pytest.fixture(scope="module")
def qcal():
    return F.quilt_calibration()


def _cells(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", html, flags=re.S)]


@pytest.mark.slow
def test_gaussian_mechanism_shows_noise_expected_error_guarantee_and_checks(cal):
    mech = APGM(cal, epsilon=1.0, delta=1e-3)
    out = mechanism_html(mech)
    assert out.count("<table") >= 4  # parameters, noise, noise_cov, guarantee (+ checks)
    cells = _cells(out)
    sd = np.sqrt(np.diag(mech.noise_cov))
    for s in sd:
        sigma = mpmath.mpf(float(s))
        e_abs = 2 * mpmath.quad(lambda z: z * mpmath.npdf(z, 0, sigma), [0, mpmath.inf])  # independent E|noise|
        assert f"{s:.4g}" in cells and f"{float(e_abs):.4g}" in cells
    assert f"{float(np.sqrt(np.trace(mech.noise_cov))):.4g}" in out
    assert "covariance mode" in cells and mech.covariance_mode in cells
    assert "<b>Guarantee</b></caption>" in out and "established" in out
    # every checked assumption with its result, read from assumption_checks.summary()
    summary = mech.assumption_checks.summary()
    assert set(summary.index.get_level_values("assumption")) == {"gaussian_query", "equal_covariance"}
    for assumption, subject in summary.index:
        assert subject in cells
    assert out.count(">passed<") == int((summary["state"] == "passed").sum())


def test_failed_assumption_is_shown_in_red_and_not_established():
    mech = APGM(F.skewed_calibration(), epsilon=1.0, delta=1e-3, accountant="gaussian")
    assert not mech.guarantee.established
    out = mechanism_html(mech)
    assert "NOT ESTABLISHED" in out and "color:#b00'><b>FAILED</b>" in out
    assert "NO (a checked assumption failed)" in _cells(out)


def test_laplace_mechanism_and_moments_only_calibration():
    a, b = bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 1.0)
    cal = bp.Calibration.from_moments({a: [0.0], b: [1.0]}, {a: [[1.0]], b: [[1.0]]}, bp.SecretPair(a, b))
    mech = ExpM(cal, epsilon=0.5, noise="laplace")
    out = mechanism_html(mech)
    cells = _cells(out)
    assert "Laplace scale b" in cells and f"{mech.noise_scale[0]:.4g}" in cells
    assert f"{np.sqrt(2) * mech.noise_scale[0]:.4g}" in cells  # sd of Lap(b) = b·√2
    assert "noise_cov" not in cells  # k = 1: no matrix
    assert "<table" in out


def test_quilt_mechanism_and_calibration(qcal):
    mech = APMQM(qcal, epsilon=1.0)
    out = mechanism_html(mech)
    assert "Chosen quilts" in out and "none can be run on samples" in out
    text = quilt_calibration_repr(qcal)
    assert repr(qcal) == text
    assert "frozenset" not in text and "mappingproxy" not in text and "pgmpy" not in text
    assert "quilts kept=3 of 4 searched" in text and "Δ_A F=10" in text
    view = qcal._repr_html_()
    assert view == quilt_calibration_html(qcal) and "<table" in view
    cells = _cells(view)
    # the three kept quilts of a (a -> b -> c): ∅, {b}, {c}, with their exact max-influences
    assert "{b}" in cells and "{c}" in cells and "{a, b, c}" in cells
    # e({b} | a) = max over b, a, a' of log P(b | a) / P(b | a'): log(0.7/0.2) beats log(0.8/0.3)
    ratios = [mpmath.log(mpmath.mpf(p) / mpmath.mpf(q)) for p, q in (("0.7", "0.2"), ("0.8", "0.3"))]
    assert f"{float(max(ratios)):.4g}" in cells


def test_chain_calibration_repr_and_html():
    cc = F.chain_calibration()
    assert repr(cc) == chain_calibration_repr(cc) == "ChainCalibration(query='ones', column='x', T=6, states=2, " \
                                                     "chains=1, L=1, window=5)"
    out = cc._repr_html_()
    assert out == chain_calibration_html(cc)
    cells = _cells(out)
    assert "0.8" in cells and "0.3" in cells and "initial" in cells
    assert "<table" in mechanism_html(MQM(cc, epsilon=1.0))


@pytest.mark.slow
def test_joint_gaussian_html():
    cal_x = F.gaussian_calibration(two_components=False)
    cal_xy = F.gaussian_calibration()
    model_y = bp.calibrate(bp.FunctionDataModel(F._normal_sampler, columns=["x", "y"], n_records=10),
                           cal_xy.pairs, bp.mean("y"), n_draws=20_000, rng=1)
    joint = JointGaussian([APGM(cal_x, epsilon=0.5, delta=1e-3), APGM(model_y, epsilon=0.5, delta=1e-3)], cal_xy)
    out = joint._repr_html_()
    assert out == joint_gaussian_html(joint) and "<table" in out
    cells = _cells(out)
    assert f"{joint.epsilon:.4g}" in cells and f"{joint.epsilon_sum:.4g}" in cells
    assert "joint (stacked Gaussian)" in cells and "<b>Guarantee</b></caption>" in out


def test_every_mechanism_class_renders():
    """Every mechanism of bp.mechanisms (the shared builders; APMQM is covered above, faster)."""
    from tests._every_mechanism import BUILDERS

    for name, build in BUILDERS.items():
        if name == "APMQM":
            continue
        mech, _ = build(1.0)
        out = mechanism_html(mech)
        assert out.count("<table") >= (2 if mech.noise_cov is None else 3) and f"<b>{name}</b>" in out
        assert f"{mech.guarantee.epsilon:.4g}" in _cells(out)
        if mech.noise_cov is None:  # a count table: its noise per cell, by the number of categories of a row
            assert f"{np.sqrt(mech.cell_variance(2)):.4g}" in _cells(out)
            continue
        sd = np.sqrt(np.diag(mech.noise_cov))
        assert all(f"{s:.4g}" in _cells(out) for s in sd)
        if mech.noise_basis is not None and not np.array_equal(mech.noise_basis, np.eye(mech.k)):
            assert "Laplace scale b" in _cells(out) and f"{mech.noise_scale[0]:.4g}" in _cells(out)


def test_refuses_what_is_not_a_mechanism(cal):
    with pytest.raises(ParameterTypeError, match="mech must be a bayespriv mechanism.*Calibration without noise_cov"):
        mechanism_html(cal)
