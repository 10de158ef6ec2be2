"""One protected dataset, one account (``accounting/session.py``, the ledger's accounts and declared compositions).

Each attack on joint accounting is reproduced and must be refused, or charged at least its true joint ε. The
true joint ε of the two-release scenario (A = mean(x) + mean(y), then B = mean(y) on the Gaussian model) is
exact: (A, B) is Gaussian, mean(x) is fixed by the secret and mean(y) ~ N(0, 8) is common to both, so the joint
ε at the charged δ is the analytic Gaussian one at the Mahalanobis distance of the released means (Balle & Wang
2018, Theorem 8, solved with mpmath in ``_gaussian_oracles``). The likelihood-ratio attacks of
:func:`bayespriv.audit.sequence_attack` check the charged total from fresh datasets; each has a twin that
declares the second release on other data (what a ledger keyed by a frame's bytes did) and is caught.
"""

from __future__ import annotations

import functools
import math
import sqlite3

import numpy as np
import pandas as pd
import pytest

import bayespriv as bp
from bayespriv.ledger.joint import JointAccountingError, JointLeakError, composes_with
from bayespriv.audit import accuracy_bound, sequence_attack
from bayespriv.errors import ImmutableError, ValidationError

from tests._gaussian_oracles import analytic_epsilon as mp_epsilon

PAIR = bp.SecretPair(bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 1.0))
MODEL = bp.GaussianDataModel([0, 0], [[1, 0], [0, 400]], ["x", "y"], n_records=50)
QA = bp.Query(lambda b: (b["x"].mean(axis=1) + b["y"].mean(axis=1))[:, None], ["x", "y"], "x_plus_y",
              output_names=["x_plus_y"])


def _variants(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Every second frame of the attack: each reads the protected data as the first release did."""
    bumped = df.copy()
    bumped.loc[0, "y"] += 1e-12
    return {
        "same frame": df,
        "column subset": df[["y"]],
        "extra column": df.assign(z=1.0),
        "shuffled rows": df.sample(frac=1.0, random_state=0).reset_index(drop=True),
        "reordered columns": df[["y", "x"]],
        "one value +1e-12": bumped,
        "other dtype": df.astype("float32"),
    }


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return pd.DataFrame({c: v[0] for c, v in MODEL.sample(None, 1, rng=7).items()})


#: The ``ledger`` fixture (tests/ledger/conftest.py) starts with this budget.
LEDGER_BUDGETS = {"x": (20.0, 0.5)}


@functools.cache  # mechanisms are frozen: tests may share them
def _mechanisms(**kw):
    ma = bp.mechanisms.APGM(bp.calibrate(MODEL, PAIR, QA, n_draws=20_000, rng=1), epsilon=1.0, delta=1e-3, **kw)
    mb = bp.mechanisms.APGM(bp.calibrate(MODEL, PAIR, bp.mean("y"), n_draws=20_000, rng=2), epsilon=1.0, delta=1e-3,
                            **kw)
    return ma, mb


def _true_joint_epsilon(ma, mb, delta: float) -> float:
    sa, sb = float(ma.noise_cov[0, 0]), float(mb.noise_cov[0, 0])
    cov = np.array([[8.0 + sa, 8.0], [8.0, 8.0 + sb]])
    return mp_epsilon(math.sqrt(np.array([1.0, 0.0]) @ np.linalg.solve(cov, [1.0, 0.0])), delta)


# -- the zero-noise pair: refused for every second frame -----------------------------------------------------
@pytest.mark.parametrize("variant", list(_variants(pd.DataFrame({"x": [0.0], "y": [0.0]}))))
def test_the_zero_noise_pair_is_refused_whatever_frame_the_second_release_reads(variant, ledger, data):
    """A and B each established with no noise reveal the secret together (A − B = mean(x)). Whatever copy of the
    data B is given, it is accounted with A on the ledger's default account and refused; nothing is spent."""
    ma, mb = _mechanisms(accountant="gaussian")
    assert not np.any(ma.noise_cov) and not np.any(mb.noise_cov)
    ma.release(data, ledger=ledger)
    with pytest.raises(JointLeakError, match="together reveal the secret"):
        mb.release(_variants(data)[variant], ledger=ledger)
    assert ledger.spent("x") == pytest.approx((1.0, 1e-3))
    assert len(ledger.releases()) == 1


@pytest.mark.parametrize("variant", ["column subset", "one value +1e-12"])
def test_hand_built_calibrations_are_refused_on_any_copy(variant, ledger, data):
    """The reproduction of the attack with calibrations built from moments (no data model to form the joint law):
    refused on the copy, where the ledger keyed by the frame's bytes granted it."""
    a, b = PAIR.a, PAIR.b
    cal = lambda q, m: bp.Calibration.from_moments({a: [0.0], b: [m]}, {a: [[100.0]], b: [[100.0]]}, PAIR, q,  # noqa: E731
                                                   n_records=50)
    first = bp.mechanisms.APGM(cal(QA, 1.0), epsilon=1, delta=1e-3)
    second = bp.mechanisms.APGM(cal(bp.mean("y"), 0.0), epsilon=1, delta=1e-3)
    first.release(data, ledger=ledger)
    with pytest.raises(JointAccountingError, match="cannot be formed"):
        second.release(_variants(data)[variant], ledger=ledger)
    assert ledger.spent("x") == pytest.approx((1.0, 1e-3))


@pytest.mark.slow
def test_b_on_a_copy_is_charged_at_least_the_true_joint_epsilon_and_the_attack_agrees(ledger, data):
    """With noise, B on a column subset is accounted with A: charged at least the exact joint ε of the two, and the
    likelihood-ratio attack on fresh datasets stays within the total charged."""
    ma, mb = _mechanisms()
    ma.release(data, ledger=ledger)
    mb.release(data[["y"]], ledger=ledger)
    spent_eps, spent_delta = ledger.spent("x")
    assert spent_delta == pytest.approx(2e-3)
    assert spent_eps >= _true_joint_epsilon(ma, mb, spent_delta)
    assert ledger.releases()["joint"].iloc[1]["x"]["releases"] == [1]
    res = sequence_attack([ma, mb], MODEL, PAIR, claimed=(spent_eps, spent_delta), n_trials=2000, n_draws=2000, rng=5)
    assert not res.contradicts_claim


def test_a_declared_other_dataset_is_recorded_and_the_false_declaration_is_caught(ledger, data):
    """The twin: B declared on other data (dataset_name) is not accounted with A — the row records the declaration
    — and on the zero-noise pair the attack names the secret far more often than the ε = 2 charged allows."""
    ma, mb = _mechanisms(accountant="gaussian")
    ma.release(data, ledger=ledger)
    mb.release(data[["y"]], ledger=ledger, dataset_name="payroll copy")
    rows = ledger.releases()
    assert "declared_separate_data" in rows["assumptions"].iloc[-1]
    assert "declared_separate_data" not in rows["assumptions"].iloc[0]
    assert ledger.spent("x") == pytest.approx((2.0, 2e-3))
    res = sequence_attack([ma, mb], MODEL, PAIR, claimed=ledger.spent("x"), n_trials=400, n_draws=400, rng=4)
    assert res.accuracy > accuracy_bound(2.0, 2e-3) + 0.05
    assert res.contradicts_claim


@pytest.mark.slow
def test_a_joint_gaussian_release_is_accounted_with_later_releases(ledger, data):
    """JointGaussian([A]).release(df), then B.release(df): the joint release is a "joint" row and B is accounted
    with it, charged at least the true joint ε of the two; the attack stays within the total."""
    ma, mb = _mechanisms()
    bp.JointGaussian([ma], ma.calibration).release(data, ledger=ledger)
    mb.release(data, ledger=ledger)
    rows = ledger.releases()
    assert rows["composition"].tolist() == ["joint", "joint"] and rows["joint"].iloc[1]["x"]["releases"] == [1]
    spent_eps, spent_delta = ledger.spent("x")
    assert spent_eps >= _true_joint_epsilon(ma, mb, spent_delta)
    res = sequence_attack([ma, mb], MODEL, PAIR, claimed=(spent_eps, spent_delta), n_trials=2000, n_draws=2000, rng=6)
    assert not res.contradicts_claim


# -- compositions without a theorem between them ---------------------------------------------------------------
@pytest.mark.parametrize("new, prior, adds", [
    ("joint", "joint", True), ("joint", "dp", True), ("dp", "joint", True), ("joint", "dataset_dp", True),
    ("subset", "dataset_dp", True), ("joint", "independent", True), ("joint", None, True), (None, "subset", True),
    ("independent", "subset", True), ("subset", "subset", True), ("chain", "chain", True), ("quilt", "quilt", True),
    ("joint", "subset", False), ("subset", "joint", False), ("quilt", "joint", False), ("joint", "chain", False),
    ("quilt", "chain", False), ("subset", "quilt", False),
])
def test_composes_with_table(new, prior, adds):
    assert composes_with(new, prior) is adds


def test_a_pufferfish_release_after_a_subset_count_table_is_refused_unless_declared(tmp_path):
    """No theorem adds a count table private on a subset of variables (Tan) and a Pufferfish release on the same
    data: the second is refused, naming the first and both compositions; declared independent it is recorded."""
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"x": rng.integers(0, 2, 50).astype(float), "y": rng.normal(0, 20, 50)})
    led = bp.Ledger(tmp_path / "l.sqlite")
    led.set_budget("x", 20.0, 0.5)
    bp.SubsetCountMechanism(protected="x", public="y_band", epsilon=0.5).release(
        df.assign(y_band=(df["y"] > 0).astype(int)), ledger=led,
        layout=bp.ledger.TableLayout(protected_values=[0.0, 1.0], public_values=[0, 1]))
    ma, _ = _mechanisms()
    with pytest.raises(JointAccountingError, match=r"release 1 \(SubsetCountMechanism\).*'subset'.*unbounded"):
        ma.release(df, ledger=led)
    assert led.spent("x") == pytest.approx((0.5, 0.0))
    ma.release(df, ledger=led, options=bp.ReleaseOptions(independent=True))
    assert led.releases()["composition"].tolist() == ["subset", "independent"]


def test_a_count_table_after_a_pufferfish_release_is_refused_unless_declared(tmp_path, data):
    """The other order, a count table after: refused on the default account (nothing spent), granted when
    declared independent or on other data, each declaration recorded on its row."""
    led = bp.Ledger(tmp_path / "l.sqlite")
    led.set_budget("x", 20.0, 0.5)
    ma, _ = _mechanisms()
    ma.release(data, ledger=led)
    table = data.assign(x=(data["x"] > 0).astype(int), band=(data["y"] > 0).astype(int))
    mech = bp.SubsetCountMechanism(protected="x", public="band", epsilon=0.5)
    kw = {"layout": bp.ledger.TableLayout(protected_values=[0, 1]), "ledger": led}
    with pytest.raises(JointAccountingError, match=r"release 1 \(APGM\)"):
        mech.release(table, **kw)
    assert led.spent("x") == pytest.approx((1.0, 1e-3))
    mech.release(table, **kw, options=bp.ReleaseOptions(independent=True))
    mech.release(table, **kw, dataset_name="another table")
    rows = led.releases()
    assert "declared_independent" in rows["assumptions"].iloc[1]
    assert "declared_separate_data" in rows["assumptions"].iloc[2]
    with pytest.raises(ValidationError, match="dataset_name"):
        mech.release(table, **kw, dataset_name="")


def test_group_dp_adds_to_a_pufferfish_release(tmp_path, data):
    """GroupDP over a group covering the secret (all records) is DP for every change of the dataset: it adds to any
    release, before or after."""
    cal = bp.calibrate(MODEL, PAIR, bp.mean("y", bounds=(-100.0, 100.0)), n_draws=300, rng=1)
    led = bp.Ledger(tmp_path / "l.sqlite")
    led.set_budget("x", 20.0, 0.5)
    ma, _ = _mechanisms()
    bp.mechanisms.GroupDP(cal, epsilon=0.5, noise="laplace").release(data, ledger=led)
    ma.release(data, ledger=led)
    assert led.spent("x") == pytest.approx((1.5, 1e-3))


# -- older ledgers --------------------------------------------------------------------------------------------
def test_rows_keyed_by_a_table_fingerprint_belong_to_the_default_account(ledger, data):
    """A row an older version recorded under "table:<sha256>" is on the default account: B is accounted with it."""
    ma, mb = _mechanisms(accountant="gaussian")
    ma.release(data, ledger=ledger)
    path = ledger.path
    ledger.close()
    with sqlite3.connect(path) as con:
        con.execute("UPDATE releases SET dataset = 'table:0123456789abcdef' WHERE id = 1")
    reopened = bp.Ledger(path)  # a new ledger object holds no live model of release 1: the joint law cannot be formed
    with pytest.raises(JointAccountingError, match=r"release\(s\) \[1\]"):
        mb.release(data, ledger=reopened)
    assert reopened.joint_guarantees().index.tolist() == [("unnamed", "x")]


@pytest.mark.parametrize("name", ["", "   ", "table:abc"])
def test_a_bad_dataset_name_is_refused_naming_dataset_name(name, ledger, data):
    ma, _ = _mechanisms()
    with pytest.raises(ValidationError, match="dataset_name"):
        ma.release(data, ledger=ledger, dataset_name=name)
    assert len(ledger.releases()) == 0


# -- the session -------------------------------------------------------------------------------------------------
def test_a_session_releases_on_its_own_copy_and_accounts_every_release(tmp_path, data):
    ma, mb = _mechanisms(accountant="gaussian")
    led = bp.Ledger(tmp_path / "l.sqlite")
    frame = data.copy()
    session = bp.Session(frame, ledger=led, budget={"x": (20.0, 0.5)})
    frame.loc[:, "y"] = 0.0  # the caller's frame changes; the session's does not
    release = session.release(ma, rng=1)
    assert release.ledger_id == 1 and session.spent("x") == pytest.approx((1.0, 1e-3))
    assert release.value[0] == pytest.approx(float(QA(data)[0]))  # zero noise: the session's copy was read
    with pytest.raises(JointLeakError):
        session.release(mb)
    with pytest.raises(JointLeakError):  # another session on the default account: the same account
        bp.Session(data[["y"]], ledger=led).release(mb)
    assert len(session.releases()) == 1 and session.name == "unnamed"


def test_a_named_session_is_a_recorded_declaration(tmp_path, data):
    ma, _ = _mechanisms()
    led = bp.Ledger(tmp_path / "l.sqlite")
    session = bp.Session(data, ledger=led, budget={"x": 5.0}, name="survey 2026")
    assert led.budget("x") == (5.0, 0.0)
    with pytest.raises(ValidationError, match="must keep its value"):
        bp.Session(data, ledger=led, budget={"x": 6.0})
    with pytest.raises(bp.BudgetExceededError, match="budget"):  # the δ the release needs is not in a pure-ε budget
        session.release(ma)
    led.set_budget("x", 5.0, 0.1)
    session.release(ma)
    rows = session.releases()
    assert rows["dataset"].tolist() == ["survey 2026"] and "declared_separate_data" in rows["assumptions"].iloc[0]
    assert "survey 2026" in repr(session)


@pytest.mark.parametrize("kwargs, match", [
    ({"data": [[1.0]]}, "data"),
    ({"ledger": "l.sqlite"}, "ledger"),
    ({"name": ""}, "name"),
    ({"name": "table:1"}, "table:"),
    ({"budget": 3.0}, "budget"),
    ({"budget": {"x": "lots"}}, r"budget\['x'\]"),
])
def test_session_arguments_are_checked(kwargs, match, tmp_path, data):
    args = {"data": data, "ledger": bp.Ledger(tmp_path / "l.sqlite")} | kwargs
    with pytest.raises((ValidationError, TypeError), match=match):
        bp.Session(args.pop("data"), **args)


def test_a_session_keeps_its_ledger_and_account(tmp_path, data):
    ma, _ = _mechanisms()
    session = bp.Session(data, ledger=bp.Ledger(tmp_path / "l.sqlite"))
    with pytest.raises(ValidationError, match="dataset_name"):
        session.release(ma, dataset_name="elsewhere")
    with pytest.raises(ValidationError, match="ledger"):
        session.release(ma, ledger=None)
    with pytest.raises(ImmutableError):
        session._name = "elsewhere"  # type: ignore[misc]
    copy = session.data
    copy.loc[:, "x"] = 99.0
    assert not (session.data["x"] == 99.0).any()
