"""No public object can be edited into under-charging the ledger or drawing less noise.

Every public object — each class in ``bp.mechanisms.__all__`` (built by ``_every_mechanism``),
``JointGaussian``, ``Calibration``, ``Guarantee``, ``Release``, ``VariableRelease``, the subset count
table and its mechanism, and the exact noise plans — is attacked through its public names:
``setattr``, ``object.__setattr__``, ``setflags(write=True)`` on its arrays, in-place edits of
arrays (``*= 100``, ``[...] = 0``) and of mappings and tables. Each attack either raises or has no
effect, and that is judged where it matters: the noise actually drawn (a seeded release compared with
a pristine twin's) and the ledger's charge (a real ``Ledger`` in ``tmp_path``, ``spent()`` compared
with the twin's).

Out of scope, because Python cannot prevent it: ``object.__setattr__`` on private attributes (leading
underscore) and writes to memory through ``ctypes``.
"""

from __future__ import annotations

import dataclasses
import numbers
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import bayespriv as bp
from bayespriv.ledger.composition import JointGaussian
from bayespriv.noise import BitSource, plan_gaussian, plan_laplace

from tests._every_mechanism import BUILDERS, mechanism_classes  # noqa: E402
from bayespriv.models import hospital as H  # noqa: E402

SEED = 20240611
REFUSED = (AttributeError, TypeError, ValueError, dataclasses.FrozenInstanceError)


# -- the attacks -------------------------------------------------------------------------------------------------


def _tampered(value: Any) -> Any:
    """A value that would lower a charge or the noise if it were read (or at least differ)."""
    if isinstance(value, (bool, np.bool_)):
        return not value
    if isinstance(value, numbers.Real):
        return float(value) * 1e-3 if value else 1e-3
    if isinstance(value, np.ndarray) and value.dtype.kind in "fiu":
        return np.zeros_like(value, dtype=float)
    if isinstance(value, bp.Guarantee):
        return dataclasses.replace(value, epsilon=value.epsilon * 1e-3, delta=0.0, failed_assumptions=())
    if isinstance(value, str):
        return "tampered"
    if isinstance(value, tuple) and value and all(isinstance(v, str) for v in value):
        return ("tampered",)
    return None


def _public_names(obj: Any) -> list[str]:
    out = []
    for name in dir(obj):
        if name.startswith("_"):
            continue
        try:
            value = getattr(obj, name)
        except Exception:  # e.g. a quilt mechanism's relaxed_guarantee: refused, still a name to attack
            out.append(name)
            continue
        if callable(value) and not isinstance(value, (np.ndarray, pd.DataFrame, Mapping, type)):
            continue  # methods
        out.append(name)
    return out


def _try(log: list[str], what: str, fn: Any) -> None:
    """Run one attack; log it when it was accepted (it must then have no effect)."""
    try:
        fn()
    except REFUSED:
        return
    log.append(what)


def _edit_array(log: list[str], where: str, arr: np.ndarray) -> None:
    def flip() -> None:
        arr.setflags(write=True)

    def scale() -> None:
        arr[...] = arr * 100

    def zero() -> None:
        arr[...] = 0

    _try(log, f"{where}.setflags(write=True)", flip)
    _try(log, f"{where} *= 100", scale)
    _try(log, f"{where}[...] = 0", zero)


def _edit_in_place(log: list[str], where: str, value: Any) -> None:
    """In-place edits of an array, a mapping (and its array values) or a table."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "fiub":
        _edit_array(log, where, value)
    elif isinstance(value, Mapping):
        for key, item in list(value.items())[:3]:
            if isinstance(item, np.ndarray) and item.dtype.kind in "fiub":
                _edit_array(log, f"{where}[{key!r}]", item)
        key = next(iter(value), None)
        _try(log, f"{where}[...] = None", lambda: value.__setitem__(key, None))  # type: ignore[attr-defined]
        _try(log, f"{where}.clear()", lambda: value.clear())  # type: ignore[attr-defined]
    elif isinstance(value, pd.DataFrame) and value.size:
        _try(log, f"{where}.iloc[0, 0] = 0", lambda: value.iloc.__setitem__((0, 0), 0))


def attack(obj: Any, *, skip: tuple[str, ...] = ()) -> list[str]:
    """Every attack on ``obj``'s public names, one after the other; the accepted ones, by name."""
    log: list[str] = []
    names = [n for n in _public_names(obj) if n not in skip]
    for name in names:  # in-place edits first, while the values are still the object's own
        try:
            value = getattr(obj, name)
        except Exception:
            continue
        _edit_in_place(log, name, value)
        if dataclasses.is_dataclass(value) and not isinstance(value, (type, bp.Calibration)):
            for f in dataclasses.fields(value):  # arrays one level down (constraints, bounds, reports)
                inner = getattr(value, f.name, None)
                if isinstance(inner, np.ndarray):
                    _edit_array(log, f"{name}.{f.name}", inner)
    for name in names:
        try:
            bad = _tampered(getattr(obj, name))
        except Exception:
            bad = None
        _try(log, f"setattr {name}", lambda: setattr(obj, name, bad))
        _try(log, f"object.__setattr__ {name}", lambda: object.__setattr__(obj, name, bad))
        _try(log, f"delattr {name}", lambda: delattr(obj, name))
    return log


def assert_arrays_sealed(obj: Any, names: Any = None) -> None:
    """Every public array attribute is either unwritable for good or a fresh copy at each access."""
    for name in _public_names(obj) if names is None else names:
        try:
            arr = getattr(obj, name)
        except Exception:
            continue
        if not isinstance(arr, np.ndarray) or arr.dtype.hasobject:
            continue
        try:
            arr.setflags(write=True)
        except ValueError:
            continue
        again = getattr(obj, name)
        assert again is not arr and not np.shares_memory(again, arr), f"{type(obj).__name__}.{name} can be made writable"


# -- outcome: the noise drawn and the ledger's charge ----------------------------------------------------------------


def _ledger(path: Path, budgets: tuple[str, ...]) -> bp.Ledger:
    ledger = bp.Ledger(path)
    for name in budgets:
        ledger.set_budget(name, epsilon=1000.0, delta=0.99)
    return ledger


def outcome(mech: Any, answer: np.ndarray, path: Path, budgets: tuple[str, ...]) -> tuple:
    """(value released, guarantee stated, spent per budget, ledger rows) of one seeded release charged to a
    new ledger; a guarantee that is not established is refused without the opt-in (nothing spent)."""
    ledger = _ledger(path, budgets)
    try:
        r = mech.release_value(answer, rng=np.random.default_rng(SEED), ledger=ledger)
        refused = False
    except bp.AssumptionFailedError:
        refused = True
        r = mech.release_value(answer, rng=np.random.default_rng(SEED), ledger=ledger, options=bp.ReleaseOptions(accept_failed_assumptions=True))
    rows = ledger.releases()
    return (refused, np.asarray(r.value).tolist(), r.guarantee, {b: ledger.spent(b) for b in budgets},
            rows[["mechanism", "epsilon", "delta", "assumptions", "failed_assumptions", "protected", "variables",
                  "query"]].to_dict("records"))


def _quiet(fn: Any, *args: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


# -- every mechanism ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", mechanism_classes())
def test_every_mechanism_resists_every_public_edit(name, tmp_path):
    mech, answer = _quiet(BUILDERS[name], 1.0)
    twin, _ = _quiet(BUILDERS[name], 1.0)
    budgets = twin.protected
    expected = _quiet(outcome, twin, answer, tmp_path / "twin.db", budgets)

    assert_arrays_sealed(mech)
    accepted = attack(mech)
    assert not [a for a in accepted if a.startswith(("setattr", "delattr"))], accepted
    for fixed in ("calibration", "epsilon", "delta", "guarantee", "protected", "variables", "k", "noise_cov"):
        assert f"object.__setattr__ {fixed}" not in accepted
    for handed_out in (mech.guarantee, mech.accounting_record):
        for field, bad in (("epsilon", 1e-6), ("delta", 0.0), ("failed_assumptions", ())):
            with pytest.raises(AttributeError):
                object.__setattr__(handed_out, field, bad)
    mech.guarantee.__dict__.update(epsilon=1e-6, failed_assumptions=())  # below the descriptors: a copy, fed back nowhere
    cal_accepted = attack(mech.calibration)  # the calibration it was built from, attacked after construction
    assert not [a for a in cal_accepted if a.startswith(("setattr", "object.__setattr__", "delattr"))], cal_accepted

    got = _quiet(outcome, mech, answer, tmp_path / "attacked.db", budgets)
    assert got == expected, f"accepted edits changed the release or the charge: {accepted}"
    assert mech.guarantee == twin.guarantee and tuple(mech.accounting_record) == tuple(twin.accounting_record)


def test_the_copied_tables_and_sealed_reports_of_a_mechanism():
    """pair_table is a copy per access; arrays inside the frozen reports and constraints are sealed."""
    mech, _ = BUILDERS["EigM"](1.0)
    table = mech.pair_table
    table.iloc[0, 0] = -1.0
    assert mech.pair_table.iloc[0, 0] != -1.0
    assert "pair_table" in dir(mech)
    for arr in (mech.eigenvalues, mech.constraints.diff, mech.constraints.cov_a, mech.noise_cov):
        with pytest.raises(ValueError):
            arr.setflags(write=True)
    opt, _ = BUILDERS["OptimalGaussian"](1.0)
    with pytest.raises(TypeError):
        opt.candidates["x"] = 0.0  # a read-only mapping


# -- the three measured attacks ---------------------------------------------------------------------------------


def _hospital():
    pairs = H.secret_pairs()

    def cal(names: list[str]) -> bp.Calibration:
        secrets = list(dict.fromkeys(s for p in pairs for s in (p.a, p.b)))
        mom = {s: [H.exact_moments(n, s.value) for n in names] for s in secrets}
        query = bp.stack(*[H.QUERIES[n] for n in names]) if len(names) > 1 else H.QUERIES[names[0]]
        return bp.Calibration.from_moments({s: np.array([m for m, _ in mom[s]]) for s in secrets},
                                           {s: np.diag([v for _, v in mom[s]]) for s in secrets}, pairs, query=query)

    weight, blood = "average weight", "average blood pressure"
    mech_w = bp.mechanisms.APGM(cal([weight]), epsilon=1.0, delta=1e-3)
    mech_b = bp.mechanisms.APGM(cal([blood]), epsilon=1.0, delta=1e-3)
    return mech_w, mech_b, cal([weight, blood])


def test_noise_cov_cannot_be_made_writable_so_the_joint_charge_stands(tmp_path):
    """Measured before: ``mech.noise_cov.setflags(write=True); mech.noise_cov *= 100`` was accepted and
    JointGaussian's charge fell from 1.384 to 0.078 while the noise drawn was unchanged."""
    mech_w, mech_b, stacked = _hospital()
    twin_w, twin_b, twin_stacked = _hospital()
    for mech in (mech_w, mech_b):
        with pytest.raises(ValueError, match="WRITEABLE"):
            mech.noise_cov.setflags(write=True)
        with pytest.raises(ValueError):
            cov = mech.noise_cov
            cov *= 100
    joint, twin = JointGaussian([mech_w, mech_b], stacked), JointGaussian([twin_w, twin_b], twin_stacked)
    assert joint.epsilon == twin.epsilon == pytest.approx(1.3845, abs=1e-3)

    budgets = twin.protected
    led, twin_led = _ledger(tmp_path / "a.db", budgets), _ledger(tmp_path / "b.db", budgets)
    answers = [np.array([150.0]), np.array([120.0])]
    got = joint.release_values(answers, rng=SEED, ledger=led)
    want = twin.release_values(answers, rng=SEED, ledger=twin_led)
    assert [r.value.tolist() for r in got] == [r.value.tolist() for r in want]
    assert {b: led.spent(b) for b in budgets} == {b: twin_led.spent(b) for b in budgets}
    assert led.spent(budgets[0])[0] == pytest.approx(1.3845, abs=1e-3)


def test_joint_gaussian_is_frozen_and_charges_what_it_computed_at_construction(tmp_path):
    """Measured before: ``j.guarantee = …`` was accepted (charge 1e-9)."""
    mech_w, mech_b, stacked = _hospital()
    joint = JointGaussian([mech_w, mech_b], stacked)
    twin = JointGaussian(list(_hospital()[:2]), _hospital()[2])
    with pytest.raises(bp.errors.ImmutableError):
        joint.guarantee = bp.Guarantee(1e-9, 0.0, 1.0)
    with pytest.raises(bp.errors.ImmutableError):
        del joint.laws
    assert_arrays_sealed(joint)
    assert_arrays_sealed(joint.laws)
    accepted = attack(joint)
    assert not [a for a in accepted if a.startswith(("setattr", "delattr", "object.__setattr__"))], accepted
    with pytest.raises(bp.errors.ImmutableError):
        object.__setattr__(joint.laws, "radius", 0.0)
    joint.laws.__dict__["radius"] = 0.0  # below the descriptors: a copy, the joint ε is not recomputed from it
    for handed_out in (joint.guarantee, joint.accounting_record):
        with pytest.raises(AttributeError):
            object.__setattr__(handed_out, "epsilon", 1e-9)
    joint.guarantee.__dict__["epsilon"] = 1e-9

    assert joint.guarantee == twin.guarantee and joint.laws.radius == twin.laws.radius
    assert joint.delta_at(joint.epsilon) == twin.delta_at(twin.epsilon)
    budgets = twin.protected
    led, twin_led = _ledger(tmp_path / "a.db", budgets), _ledger(tmp_path / "b.db", budgets)
    led.charge(joint)
    twin_led.charge(twin)
    assert {b: led.spent(b) for b in budgets} == {b: twin_led.spent(b) for b in budgets}
    assert led.spent(budgets[0])[0] == pytest.approx(1.3845, abs=1e-3)


def test_an_edited_guarantee_does_not_lower_the_ledger_charge(tmp_path):
    """Measured before: ``object.__setattr__(guarantee, "epsilon", 0.005)`` on the mechanism's Guarantee
    under-charged the ledger (5000 releases at ε = 1 cost 0.005). Now the assignment raises, and even an
    edit below it (the instance's ``__dict__``) changes a copy only: each release (on its own dataset)
    costs ε = 1, so a budget of 5 stops the sixth."""
    mech, _, _ = _hospital()
    guarantee = mech.guarantee
    with pytest.raises(bp.errors.ImmutableError, match="'epsilon'"):
        object.__setattr__(guarantee, "epsilon", 0.005)
    guarantee.__dict__["epsilon"] = 0.005 / 5000
    mech.guarantee.__dict__["epsilon"] = 0.005 / 5000
    assert mech.guarantee.epsilon == 1.0
    ledger = bp.Ledger(tmp_path / "l.db")
    (budget,) = mech.protected
    ledger.set_budget(budget, epsilon=5.0, delta=0.5)
    releases = []
    with pytest.raises(bp.BudgetExceededError):
        for i in range(5000):  # each on its own dataset: charged its own ε (no joint accounting between them)
            releases.append(mech.release_value(np.array([150.0]), ledger=ledger, dataset_name=f"hospital-{i}"))
    assert len(releases) == 5 and ledger.spent(budget)[0] == 5.0
    assert all(r.guarantee.epsilon == 1.0 for r in releases)
    assert ledger.releases()["epsilon"].tolist() == [1.0] * 5


def test_a_not_established_guarantee_cannot_be_edited_past_the_premise_gate():
    """Clearing ``failed_assumptions`` on a handed-out Guarantee does not open the gate."""
    rng = np.random.default_rng(3)
    a, b = bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7)
    skewed = np.stack([rng.exponential(1.0, (4000, 1)), rng.exponential(1.5, (4000, 1))])
    cal = bp.Calibration(secrets=(a, b), pairs=(bp.SecretPair(a, b),), mean_array=skewed.mean(axis=1),
                         cov_array=np.stack([np.cov(s.T).reshape(1, 1) for s in skewed]), mean_se=np.zeros((2, 1)),
                         cov_se=np.zeros((2, 1, 1)), confidence=None, z=0.0, n_draws=4000, sample_array=skewed)
    mech = _quiet(lambda: bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3, accountant="gaussian"))
    assert not mech.guarantee.established  # the exponential draws fail the normality check (p < 1e-10)
    with pytest.raises(bp.errors.ImmutableError):
        object.__setattr__(mech.guarantee, "failed_assumptions", ())
    mech.guarantee.__dict__["failed_assumptions"] = ()  # a copy
    with pytest.raises(bp.AssumptionFailedError):
        mech.release_value(np.array([1.0]), rng=np.random.default_rng(0))


# -- calibrations, guarantees, releases --------------------------------------------------------------------------


def test_calibration_arrays_are_sealed_and_its_mappings_are_copies():
    mech, _ = BUILDERS["APGMnG"](1.0)
    cal = mech.calibration
    assert_arrays_sealed(cal, ["mean_array", "cov_array", "mean_se", "cov_se", "cov_se_white", "sample_array"])
    for mapping in (cal.means, cal.covs):
        for arr in mapping.values():
            with pytest.raises(ValueError):
                arr.setflags(write=True)
    first = next(iter(cal.means))
    cal.means[first] = np.zeros(1)  # a new dict at each access
    assert cal.means[first] is not None and np.all(cal.means[first] == cal.mean_array[0])
    with pytest.raises(ValueError):
        cal.samples.values[0, 0, 0] = 0.0
    with pytest.raises(ValueError):
        cal.mean_array.base.setflags(write=True)
    import pickle

    clone = pickle.loads(pickle.dumps(cal))
    with pytest.raises(ValueError):
        clone.mean_array.setflags(write=True)


def test_guarantee_and_release_edits_feed_back_nowhere(tmp_path):
    mech, answer = BUILDERS["ExpM"](1.0)
    ledger = _ledger(tmp_path / "l.db", mech.protected)
    release = mech.release_value(answer, rng=np.random.default_rng(SEED), ledger=ledger)
    with pytest.raises(ValueError):
        release.value.setflags(write=True)
    with pytest.raises(ValueError):
        release.value[0] = 0.0
    accepted = attack(release)
    assert not [a for a in attack(release.guarantee) if "setattr" in a]
    assert "object.__setattr__ guarantee" in accepted  # a frozen dataclass: the caller's own Release changes
    assert mech.guarantee.epsilon == 1.0
    row = ledger.releases().iloc[0]
    assert (row["epsilon"], row["delta"], row["mechanism"]) == (1.0, 0.0, "ExpM")
    again = mech.release_value(answer, rng=np.random.default_rng(SEED + 1), ledger=ledger, dataset_name="another")
    assert again.guarantee == mech.guarantee and again.guarantee.epsilon == 1.0
    assert ledger.spent(mech.protected[0]) == (2.0, 0.0)


def test_accounting_record_cannot_be_edited():
    mech, _ = BUILDERS["DirM"](1.0)
    record = mech.accounting_record
    with pytest.raises(AttributeError):
        record.epsilon = 0.0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        object.__setattr__(record, "epsilon", 0.0)
    with pytest.raises(bp.errors.ImmutableError):
        object.__setattr__(mech, "epsilon", 0.0)
    assert mech.accounting_record is record and record.guarantee() == mech.guarantee


# -- subset tables and per-variable records ---------------------------------------------------------------------


def test_subset_table_results_and_their_mechanism(tmp_path):
    people = pd.DataFrame({"age": ["young"] * 6 + ["old"] * 4, "sex": list("FMFFMMFMMF")})
    layout = bp.ledger.TableLayout(protected_values=["F", "M"])

    def table(ledger: bp.Ledger) -> tuple[bp.SubsetCountMechanism, bp.Release]:
        mech = bp.SubsetCountMechanism(protected="sex", public="age", epsilon=1.0)
        return mech, mech.release(people, rng=SEED, ledger=ledger, layout=layout)

    led, twin_led = _ledger(tmp_path / "a.db", ("sex",)), _ledger(tmp_path / "b.db", ("sex",))
    (mech, got), (twin, _) = table(led), table(twin_led)
    plain = bp.subset_count_table(people, protected="sex", public="age", epsilon=1.0, rng=SEED, layout=layout)
    accepted = [*attack(mech), *attack(got.guarantee), *attack(plain.attrs["mechanism"]),
                *attack(plain.attrs["guarantee"])]
    assert not [a for a in accepted if "setattr" in a], accepted
    mech.guarantee.__dict__["epsilon"] = 1e-6  # a copy
    mech.__dict__["epsilon"] = 1e-6  # below the descriptors: fed back nowhere (the charge was fixed)
    got.value.iloc[0, 0] = -5  # the caller's own table
    led.charge(mech)  # charged again by hand, after the edits
    twin_led.charge(twin)
    assert led.spent("sex") == twin_led.spent("sex") == (2.0, 0.0)
    assert mech.protected == ("sex",) and mech.guarantee == twin.guarantee
    cols = ["mechanism", "epsilon", "protected", "variables", "query", "calibration_hash"]
    assert led.releases()[cols].to_dict("records") == twin_led.releases()[cols].to_dict("records")


def test_variable_releases_are_fresh_records(tmp_path):
    mech, answer = BUILDERS["ExpM"](1.0)
    ledger = _ledger(tmp_path / "l.db", mech.protected)
    mech.release_value(answer, rng=np.random.default_rng(SEED), ledger=ledger)
    before = ledger.epsilon_table()
    for vr in ledger.variable_releases():
        assert not [a for a in attack(vr) if "setattr" in a]
        vr.__dict__["epsilon"] = 0.0
    pd.testing.assert_frame_equal(ledger.epsilon_table(), before)
    assert ledger.spent(mech.protected[0]) == (1.0, 0.0)


# -- the exact noise plans --------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_noise_plans_release_the_same_noise_after_every_edit(kind):
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    basis = np.array([[1.0, 0.5], [0.0, 1.0]])

    def build() -> Any:
        return plan_gaussian(cov) if kind == "gaussian" else plan_laplace([1.5, 0.5], basis)

    plan, twin = build(), build()
    assert_arrays_sealed(plan)
    accepted = attack(plan)
    answer = np.array([0.25, -3.0])
    got = [plan.release(answer, BitSource.from_rng(np.random.default_rng(s))).tolist() for s in range(5)]
    want = [twin.release(answer, BitSource.from_rng(np.random.default_rng(s))).tolist() for s in range(5)]
    assert got == want, accepted


@pytest.mark.parametrize("name", ["EigM", "OptimalGaussian", "DirM", "WithExtraLaplace", "Wasserstein"])
def test_a_pickled_mechanism_releases_the_same_noise_and_stays_sealed(name):
    import copy
    import pickle

    mech, answer = _quiet(BUILDERS[name], 1.0)
    for clone in (pickle.loads(pickle.dumps(mech)), copy.deepcopy(mech)):
        assert clone.guarantee == mech.guarantee and clone.accounting_record == mech.accounting_record
        got = clone.release_value(answer, rng=np.random.default_rng(SEED)).value
        assert np.array_equal(got, mech.release_value(answer, rng=np.random.default_rng(SEED)).value)
        assert_arrays_sealed(clone)
        with pytest.raises(bp.errors.ImmutableError):
            object.__setattr__(clone, "epsilon", 1e-6)
