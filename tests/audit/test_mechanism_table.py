"""The user's table of the Gaussian-family mechanisms (``bayespriv.audit.mechanism_table``): which rows it writes
(:class:`TableRows`), what each row's attack runs on (:class:`AttackTrials`, shared with the likelihood-ratio
attack), and the deprecated keywords those options replaced.

Cheap by design: one small calibration, APGM only, 50 trials per secret; the statistical checks of the attack
itself are in ``test_likelihood_ratio.py``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import bayespriv as bp
from bayespriv.audit import AttackTrials, TableRows, calibration_rows
from bayespriv.audit.mechanism_table import FAMILY, HalfNoise, user_row
from bayespriv.calibration import ExecutionOptions
from bayespriv.errors import BayesPrivDeprecationWarning
from bayespriv.mechanisms import APGM

MODEL = bp.GaussianDataModel([0.0, 0.0], [[1.0, 0.8], [0.8, 1.0]], ["x", "y"], n_records=50)
PAIR = bp.SecretPair(bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 0.2))


@pytest.fixture(scope="module")
def cal():
    return bp.calibrate(MODEL, [PAIR], bp.mean("y"), n_draws=20_000, rng=0,
                        execution=ExecutionOptions(progress=False))


@pytest.fixture(scope="module")
def held_out():
    return bp.calibrate(MODEL, [PAIR], bp.mean("y"), n_draws=500, rng=1, execution=ExecutionOptions(progress=False))


# -- TableRows -------------------------------------------------------------------------------------------------

ROWS_FIELD_CASES = [
    ("names", "APGM", bp.ParameterTypeError, r"names must be a sequence of mechanism names; got 'APGM'"),
    ("names", ["APGM", "Laplace"], bp.ValidationError, r"names must be names of FAMILY \('APGM', .*\); got 'Laplace'"),
    ("twin", 1, bp.ParameterTypeError, r"twin must be True or False; got 1"),
]


def test_table_rows_defaults_are_every_mechanism_with_its_twin():
    rows = TableRows()
    assert rows.names is None and rows.twin is True
    assert TableRows(names=["DauM", "APGM"]).names == ("DauM", "APGM")  # stored as a tuple
    with pytest.raises(dataclasses.FrozenInstanceError):
        rows.twin = False
    with pytest.raises(TypeError):
        TableRows(("APGM",))  # keyword-only


@pytest.mark.parametrize("field, value, error, message", ROWS_FIELD_CASES,
                         ids=[f"{c[0]}={c[1]!r}" for c in ROWS_FIELD_CASES])
def test_table_rows_checks_each_field(field, value, error, message):
    with pytest.raises(error, match=message):
        TableRows(**{field: value})


def test_every_family_name_is_accepted():
    assert TableRows(names=[name for name, _ in FAMILY]).names == tuple(name for name, _ in FAMILY)


# -- calibration_rows and user_row --------------------------------------------------------------------------------


def test_rows_follow_the_options(cal):
    table = calibration_rows(cal, MODEL, PAIR, 1.0, rows=TableRows(names=("APGM",)), rng=3,
                             trials=AttackTrials(n_trials=50))
    assert [row["mechanism"] for row in table] == ["APGM", "APGM (half noise)"]
    assert table[0]["established"] and not table[1]["established"]
    alone = calibration_rows(cal, MODEL, PAIR, 1.0, rows=TableRows(names=("APGM",), twin=False), rng=3,
                             trials=AttackTrials(n_trials=50))
    assert [row["mechanism"] for row in alone] == ["APGM"]


class _CountedPreparation(bp.GaussianDataModel):
    """The Gaussian model, recording each ``prepare`` (on which object) and returning a copy of its own."""

    def prepare(self, secrets, rng):
        self.calls.append(self)
        prepared = _CountedPreparation(self.mean, self.cov, self.columns, self.n_records)
        prepared.calls = self.calls
        return prepared


def test_the_model_is_prepared_once_and_the_rows_see_the_streams_of_a_row_by_row_loop(cal):
    """calibration_rows prepares the model once (a PyMC model's MCMC runs once, not per row) and hands that to every
    row's attack; its seed does not move the rows' stream: the rows equal user_row called in order on the same
    generator. The twin: a loop that prepares first from that generator moves the stream and gives other rows."""
    model = _CountedPreparation(MODEL.mean, MODEL.cov, MODEL.columns, MODEL.n_records)
    model.calls = []
    trials = AttackTrials(n_trials=50)
    table = calibration_rows(cal, model, PAIR, 1.0, rows=TableRows(names=("APGM",)), rng=3, trials=trials)
    first, *attacks = model.calls
    assert first is model and len(attacks) == 2 and all(m is not model and m is attacks[0] for m in attacks)
    mech = APGM(cal, epsilon=1.0, delta=1e-3)
    rng = np.random.default_rng(3)
    loop = [user_row("APGM", m, MODEL, PAIR, rng, trials=trials) for m in (mech, HalfNoise(mech))]
    pd.testing.assert_frame_equal(pd.DataFrame(table), pd.DataFrame(loop))
    moved = np.random.default_rng(3)
    bp.random.as_seed_sequence(moved)  # what preparing from the rows' own generator would take from it
    shifted = [user_row("APGM", m, MODEL, PAIR, moved, trials=trials) for m in (mech, HalfNoise(mech))]
    assert pd.DataFrame(shifted)["attack accuracy"].tolist() != pd.DataFrame(loop)["attack accuracy"].tolist()


def test_a_family_is_refused_by_the_attack_with_its_reason(cal):
    """Preparing the model once happens for a DataModel only: a family reaches the attack's own refusal."""
    family = bp.DataModelFamily(lambda rho: bp.GaussianDataModel([0.0, 0.0], [[1.0, rho], [rho, 1.0]], ["x", "y"],
                                                                 n_records=50), {"rho": [0.5, 0.8]})
    with pytest.raises(bp.ParameterTypeError, match=r"model must be a bayespriv DataModel \(attack one member of a "
                                                    r"family: family.members\[i\]\); got DataModelFamily"):
        calibration_rows(cal, family, PAIR, 1.0, rows=TableRows(names=("APGM",)), rng=3,
                         trials=AttackTrials(n_trials=50))


def test_old_table_keywords_warn_and_give_the_same_rows(cal, held_out):
    trials = AttackTrials(n_trials=50, reference_draws=held_out)
    new = calibration_rows(cal, MODEL, PAIR, 1.0, rows=TableRows(names=("APGM",), twin=False), rng=3, trials=trials)
    with pytest.warns(BayesPrivDeprecationWarning) as caught:
        old = calibration_rows(cal, MODEL, PAIR, 1.0, names=("APGM",), twin=False, rng=3, n_trials=50,
                               reference=held_out)
    messages = [str(w.message) for w in caught]
    assert any("use calibration_rows(rows=TableRows(names=..., twin=...))" in m for m in messages), messages
    assert any("use calibration_rows(trials=AttackTrials(n_trials=..., reference_draws=...))" in m
               for m in messages), messages
    pd.testing.assert_frame_equal(pd.DataFrame(old), pd.DataFrame(new))


def test_old_user_row_keywords_warn_and_give_the_same_row(cal, held_out):
    mech = HalfNoise(APGM(cal, epsilon=1.0, delta=1e-3))
    new = user_row("APGM", mech, MODEL, PAIR, np.random.default_rng(4),
                   trials=AttackTrials(n_trials=50, reference_draws=held_out))
    with pytest.warns(BayesPrivDeprecationWarning, match=r"use user_row\(trials=AttackTrials\("):
        old = user_row("APGM", mech, MODEL, PAIR, np.random.default_rng(4), n_trials=50, reference=held_out)
    pd.testing.assert_frame_equal(pd.DataFrame([old]), pd.DataFrame([new]))


def test_old_keyword_with_its_option_or_unknown_keyword_is_refused(cal):
    with pytest.raises(bp.ValidationError, match=r"pass rows= only \(twin=\.\.\. is its deprecated spelling\)"):
        calibration_rows(cal, MODEL, PAIR, 1.0, rows=TableRows(), twin=False)
    with pytest.raises(bp.ValidationError, match=r"pass trials= only \(n_trials=\.\.\. is its deprecated spelling\)"):
        calibration_rows(cal, MODEL, PAIR, 1.0, trials=AttackTrials(), n_trials=10)
    with pytest.raises(TypeError, match=r"^calibration_rows\(\) got an unexpected keyword argument 'mechanisms'$"):
        calibration_rows(cal, MODEL, PAIR, 1.0, mechanisms=("APGM",), twin=False)
    with pytest.raises(TypeError, match=r"^user_row\(\) got an unexpected keyword argument 'twin'$"):
        user_row("APGM", APGM(cal, epsilon=1.0, delta=1e-3), MODEL, PAIR, None, twin=False)
    with pytest.raises(bp.ParameterTypeError, match=r"rows must be None or a bayespriv TableRows; got \('APGM',\)"):
        calibration_rows(cal, MODEL, PAIR, 1.0, rows=("APGM",))
