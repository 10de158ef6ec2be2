"""What a sampler reported alongside its draws (``calibration/draw_report.py``): the :class:`DrawReport` table, and
``calibration_from_samples`` taking it as ``report=`` (its four keywords of their own deprecated for one release)."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

import bayespriv as bp
from bayespriv.calibration import DrawReport, calibration_from_samples
from bayespriv.calibration.laws import FiniteLaw
from bayespriv.errors import BayesPrivDeprecationWarning, ParameterTypeError, ValidationError

A, B = bp.DistributionSecret("m", 0.0), bp.DistributionSecret("m", 1.0)
PAIRS = (bp.SecretPair(A, B),)
LAWS = {"m=0": FiniteLaw([[0.0], [1.0]], [0.5, 0.5]), "m=1": FiniteLaw([[1.0], [2.0]], [0.25, 0.75])}


def _samples() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(2, 200, 1)) + np.array([0.0, 1.0])[:, None, None]


def _summary(**keywords):
    return calibration_from_samples(_samples(), (A, B), PAIRS, None, confidence=0.95, n_records=20, **keywords)


# -- the option table ---------------------------------------------------------------------------------------------


def test_draw_report_defaults_report_nothing():
    report = DrawReport()
    assert (report.n_events, report.diagnostics, report.posteriors, report.finite_laws) == (None, None, None, None)
    assert report == DrawReport() and hash(report) == hash(DrawReport())
    default, given = _summary(), _summary(report=DrawReport())
    assert default.z == given.z and dict(default.diagnostics) == {} and dict(given.posteriors) == {}
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.n_events = 3
    with pytest.raises(TypeError):
        DrawReport(3)


def test_draw_report_keeps_read_only_copies():
    diagnostics = {"sampler": {"route": "forward"}}
    report = DrawReport(n_events=np.int64(12), diagnostics=diagnostics, finite_laws=LAWS)
    diagnostics["sampler"]["route"] = "changed"
    assert type(report.n_events) is int and report.diagnostics["sampler"]["route"] == "forward"
    with pytest.raises(TypeError):
        report.diagnostics["new"] = 1
    with pytest.raises(TypeError):
        report.finite_laws["m=2"] = LAWS["m=0"]
    clone = pickle.loads(pickle.dumps(report))
    assert clone.n_events == 12 and clone.diagnostics == report.diagnostics
    assert clone.finite_laws["m=1"].mean == pytest.approx(LAWS["m=1"].mean)


@pytest.mark.parametrize("field, value, error, rule", [
    ("n_events", 0, ValidationError, "an integer >= 1"),
    ("n_events", 1.5, ParameterTypeError, "an integer >= 1"),
    ("diagnostics", ["route"], ParameterTypeError, "None or a mapping of str"),
    ("diagnostics", {1: "forward"}, ValidationError, "a mapping with string keys"),
    ("posteriors", ["m=0"], ParameterTypeError, "a mapping of secret labels to arviz.InferenceData"),
    ("posteriors", {"m=0": 1}, ValidationError, "a mapping of secret labels (str) to arviz.InferenceData"),
    ("finite_laws", ["m=0"], ParameterTypeError, "None or a mapping of secret labels to FiniteLaw"),
    ("finite_laws", {"m=0": [0.5, 0.5]}, ParameterTypeError, "map secret labels (str) to FiniteLaw"),
])
def test_draw_report_refuses_an_invalid_value_naming_the_field(field, value, error, rule):
    with pytest.raises(error) as info:
        DrawReport(**{field: value})
    message = str(info.value)
    assert message.startswith(f"{field} must") and rule in message and "got" in message


# -- calibration_from_samples(..., report=...) and its deprecated keywords ------------------------------------------


def test_old_keywords_warn_and_give_the_same_calibration():
    """``n_events=, diagnostics=`` (deprecated) warn and give the calibration of ``report=DrawReport(...)``; the
    Bonferroni count is the report's (a family's total), not this calibration's own."""
    fields = dict(n_events=40, diagnostics={"sampler": "forward"})
    new = _summary(report=DrawReport(**fields))
    with pytest.warns(BayesPrivDeprecationWarning, match=r"calibration_from_samples\(n_events=\.\.\., diagnostics="
                                                         r"\.\.\.\) is deprecated .*report=DrawReport\(n_events="):
        old = _summary(**fields)
    assert old.z == new.z > _summary().z
    assert dict(old.diagnostics) == dict(new.diagnostics) == {"sampler": "forward"}
    np.testing.assert_array_equal(old.cov_array, new.cov_array)


def test_exact_laws_give_exact_moments_both_ways():
    new = _summary(report=DrawReport(finite_laws=LAWS))
    with pytest.warns(BayesPrivDeprecationWarning, match=r"calibration_from_samples\(finite_laws=\.\.\.\)"):
        old = _summary(finite_laws=LAWS)
    for cal in (old, new):
        assert cal.confidence == 1.0 and cal.mean_array[:, 0] == pytest.approx([0.5, 1.75])
        assert set(cal.finite_laws) == {"m=0", "m=1"} and cal.n_draws == 200


def test_a_law_missing_for_a_secret_is_refused():
    with pytest.raises(ValidationError, match=r"report\.finite_laws must be one law per secret.*\['m=1'\]"):
        _summary(report=DrawReport(finite_laws={"m=0": LAWS["m=0"]}))


def test_report_and_its_old_keywords_together_are_refused():
    with pytest.raises(ValidationError, match=r"calibration_from_samples: pass report= only \(n_events=\.\.\. is its "
                                              r"deprecated spelling\); got both"):
        _summary(report=DrawReport(), n_events=40)


def test_an_unknown_keyword_is_still_a_type_error():
    """The broken twin: only the four report keywords are folded into ``report=``; a misspelt one is Python's
    TypeError, without a deprecation warning, and ``report=`` takes a DrawReport only."""
    with pytest.raises(TypeError, match=r"^calibration_from_samples\(\) got an unexpected keyword argument 'n_event'$"):
        _summary(n_event=40)
    with pytest.raises(ParameterTypeError, match=r"report must be None or a bayespriv DrawReport; got \{'n_events'"):
        _summary(report={"n_events": 40})
