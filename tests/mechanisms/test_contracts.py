"""The contracts of a mechanism's construction and release.

* Freezing is automatic: the class call freezes a mechanism once its outermost constructor returned,
  so a subclass that never calls ``_freeze`` is frozen all the same (broken twin: an instance built
  without the class call is not frozen, and cannot release).
* A calibration must provide :class:`~bayespriv.calibration.CalibrationLike` (checked at construction,
  naming ``calibration``); the three calibration kinds do.
* ``Release`` takes its four first fields by position and every other one by keyword only.
* :class:`~bayespriv.ReleaseOptions` checks itself once; the flag keywords it replaced, ``dataset=`` of
  ``release_value``, ``SubsetCountMechanism``'s positional form and the table layout's fields as keywords of
  their own still work for one release, warn, and release exactly what the new spelling releases; both
  spellings at once are an error.
"""

from __future__ import annotations

import dataclasses
import pickle
import types

import numpy as np
import pandas as pd
import pytest

import bayespriv as bp
from bayespriv.calibration import CalibrationLike
from bayespriv.calibration.contract import CALIBRATION_ATTRIBUTES
from bayespriv.errors import BayesPrivDeprecationWarning, ImmutableError
from bayespriv.mechanisms import Mechanism
from bayespriv.privacy import Guarantee, Release, ReleaseOptions
from tests._every_mechanism import exact_calibration

SEED = 20260509


class Plain(Mechanism):
    """A mechanism that never calls ``_freeze``: Laplace noise of scale ``scale`` per component."""

    theorem = "test mechanism"

    def __init__(self, calibration, *, epsilon, scale=1.0):
        super().__init__(calibration, epsilon=epsilon)
        self._set_laplace(np.full(self.k, scale), np.eye(self.k))

    def _compute_guarantee(self):
        return Guarantee(self.epsilon, 0.0, 1.0, (), self.theorem)

    def _plan_noise(self):
        return self._plan_additive_noise()


class Child(Plain):
    """Calls a concrete parent's ``__init__``, then goes on setting state: freezing waits for it."""

    freezes = 0

    def __init__(self, calibration, *, epsilon):
        super().__init__(calibration, epsilon=epsilon, scale=2.0)
        self.label = "set after the parent's constructor returned"

    def _freeze(self):
        type(self).freezes += 1
        super()._freeze()


class StillFreezes(Plain):
    """The old habit: a constructor that freezes itself. The class call then does not freeze again."""

    def __init__(self, calibration, *, epsilon):
        super().__init__(calibration, epsilon=epsilon)
        self._freeze()


class RecordingLedger:
    """Records what each charge was asked for; never refuses."""

    def __init__(self):
        self.charges = []

    def charge(self, mechanism, *, seeded=None, dataset=None, independent=False):
        self.charges.append((type(mechanism).__name__, seeded, dataset, independent))
        return types.SimpleNamespace(release_id=len(self.charges))

    def void(self, release_id, reason):  # pragma: no cover - no release fails here
        raise AssertionError(reason)


def _apgm():
    """APGM on the quickstart's exact moments, with a query and 3 records (so ``release`` takes a frame)."""
    a, b = bp.DatasetSecret.mean("height", 65.0), bp.DatasetSecret.mean("height", 67.0)
    cal = bp.Calibration.from_moments({a: [146.67], b: [153.33]}, {a: [[6.0]], b: [[6.0]]}, bp.SecretPair(a, b),
                                      bp.mean("weight", bounds=(0.0, 300.0)), n_records=3)
    return bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3), pd.DataFrame({"weight": [150.0, 160.0, 170.0]})


def _rng() -> np.random.Generator:
    """A fresh generator of one seed: the same noise at each call (an integer seed reused on a mechanism warns)."""
    return np.random.default_rng(SEED)


def _same(first: Release, second: Release) -> bool:
    return (np.array_equal(first.value, second.value) and first.guarantee == second.guarantee
            and first.postprocessed == second.postprocessed and first.ledger_id == second.ledger_id)


# -- freezing -----------------------------------------------------------------------------------------------
def test_a_subclass_that_never_calls_freeze_is_frozen_after_construction():
    mech = Plain(exact_calibration(), epsilon=1.0)
    assert mech.__dict__["_frozen"] is True and mech.accounting_record.epsilon == 1.0
    with pytest.raises(ImmutableError):
        mech.epsilon = 2.0
    with pytest.raises(ImmutableError):
        mech.anything = 1
    assert mech.release_value(np.array([0.1, 0.2]), rng=_rng()).value.shape == (2,)


def test_a_parent_constructor_does_not_freeze_early_and_freezing_happens_once():
    Child.freezes = 0
    mech = Child(exact_calibration(), epsilon=1.0)
    assert Child.freezes == 1 and mech.__dict__["_frozen"] and mech.label.startswith("set after")
    assert np.allclose(mech.noise_scale, 2.0)  # the subclass's arguments reached the noise that was fixed
    with pytest.raises(ImmutableError):
        mech.label = "edited"
    mech = StillFreezes(exact_calibration(), epsilon=1.0)  # a constructor freezing itself is not frozen twice
    assert mech.__dict__["_frozen"]


def test_broken_twin_an_instance_built_without_the_class_call_is_not_frozen_and_cannot_release():
    """The freezing comes from the class call: bypass it (``object.__new__`` then ``__init__``) and the instance
    has no noise plan and no fixed charge; the release path refuses it before any spend."""
    twin = object.__new__(Plain)
    twin.__init__(exact_calibration(), epsilon=1.0)
    assert not twin.__dict__.get("_frozen", False) and "_noise_plan" not in twin.__dict__
    twin.scale_note = "assignable: nothing froze it"
    ledger = RecordingLedger()
    with pytest.raises(bp.ValidationError, match="cannot release: it was not constructed by calling its class"):
        twin.release_value(np.array([0.1, 0.2]), rng=_rng(), ledger=ledger)
    assert ledger.charges == []
    built = Plain(exact_calibration(), epsilon=1.0)  # the same arguments through the class: frozen, releases
    assert built.release_value(np.array([0.1, 0.2]), rng=_rng(), ledger=ledger).ledger_id == 1


def test_an_unpickled_mechanism_stays_frozen_and_releases_the_same_noise():
    mech = Plain(exact_calibration(), epsilon=1.0)
    again = pickle.loads(pickle.dumps(mech))
    assert again.__dict__["_frozen"]
    with pytest.raises(ImmutableError):
        again.epsilon = 3.0
    answer = np.array([0.1, 0.2])
    assert _same(mech.release_value(answer, rng=_rng()), again.release_value(answer, rng=_rng()))


# -- the calibration contract ---------------------------------------------------------------------------------
def test_the_contract_names_what_mechanisms_read_and_every_calibration_kind_provides_it():
    from bayespriv.models import school
    from bayespriv.networks.quilts import MarkovChain, calibrate_chain

    assert set(CALIBRATION_ATTRIBUTES) == {"query", "n_records", "k", "query_fingerprint", "component_names",
                                           "confidence", "assumptions", "provenance"}
    chain = calibrate_chain(MarkovChain([[0.9, 0.1], [0.2, 0.8]], [0.5, 0.5]),
                            bp.count(lambda b: b["s"] == 1, "s", name="ones"), length=6)
    for cal in (exact_calibration(), school.calibration("tall"), chain):
        assert isinstance(cal, CalibrationLike), type(cal).__name__
    assert chain.n_records == chain.length == 6 and chain.query_fingerprint is None
    assert bp.mechanisms.MQM(chain, epsilon=2.0).n_records == 6


def test_an_object_missing_an_attribute_of_the_contract_is_refused_naming_calibration():
    cal = exact_calibration()
    fields = {name: getattr(cal, name) for name in CALIBRATION_ATTRIBUTES}
    assert Plain(types.SimpleNamespace(**fields, pairs=cal.pairs), epsilon=1.0).k == cal.k  # duck-typed: accepted
    del fields["provenance"]
    lacking = types.SimpleNamespace(**fields, pairs=cal.pairs)
    assert not isinstance(lacking, CalibrationLike)
    with pytest.raises(bp.ParameterTypeError, match=r"^calibration must be a calibration .*got namespace\(.*of type "
                                                     r"SimpleNamespace, which has no provenance$"):
        Plain(lacking, epsilon=1.0)
    with pytest.raises(bp.ParameterTypeError, match="calibration must be .*got 'not a calibration' of type str"):
        Plain("not a calibration", epsilon=1.0)


# -- Release: keyword-only after four fields -------------------------------------------------------------------
def test_release_refuses_positional_arguments_beyond_the_four_first():
    g = Guarantee(1.0, 0.0, 1.0)
    with pytest.raises(TypeError, match="positional"):
        Release(np.array([1.0]), g, "M", False, "q")
    by_position = Release(np.array([1.0]), g, "M", False, query="q", component_names=("a",))
    by_keyword = Release(value=np.array([1.0]), guarantee=g, mechanism="M", seeded=False, query="q",
                         component_names=("a",))
    assert by_position.query == by_keyword.query == "q" and by_position.component_names == ("a",)
    assert [f.name for f in dataclasses.fields(Release) if not f.kw_only] == ["value", "guarantee", "mechanism",
                                                                               "seeded"]


# -- ReleaseOptions --------------------------------------------------------------------------------------------
def test_release_options_check_themselves_once_and_are_frozen():
    assert ReleaseOptions() == ReleaseOptions(accept_failed_assumptions=False, accept_unverified=False,
                                              independent=False, clip=False)
    assert bp.ReleaseOptions is ReleaseOptions is bp.privacy.ReleaseOptions
    for name in ("accept_failed_assumptions", "accept_unverified", "independent", "clip"):
        for bad in ("yes", 1, None, np.bool_(True)):
            with pytest.raises(bp.ParameterTypeError, match=f"^{name} must be True or False; got "):
                ReleaseOptions(**{name: bad})
    with pytest.raises(TypeError):
        ReleaseOptions(True)  # keyword-only: a bare True says nothing about what it accepts
    with pytest.raises(dataclasses.FrozenInstanceError):
        ReleaseOptions().clip = True
    mech, _ = _apgm()
    with pytest.raises(bp.ParameterTypeError, match="^options must be None or a bayespriv ReleaseOptions; got "
                                                    "{'clip': True} of type dict"):
        mech.release_value(np.array([150.0]), options={"clip": True})


def test_a_release_does_not_check_its_options_again(monkeypatch):
    """The fast path: the default options are one module constant, and given options were checked when built."""
    mech, data = _apgm()
    given = ReleaseOptions(clip=True)
    monkeypatch.setattr(ReleaseOptions, "__post_init__", lambda self: pytest.fail("options checked per release"))
    assert mech.release_value(np.array([150.0]), rng=_rng()).postprocessed == ()
    assert mech.release(data, rng=_rng(), options=given).postprocessed == ("clip",)


def test_options_change_the_release_as_the_flags_did():
    mech, data = _apgm()
    ledger = RecordingLedger()
    clipped = mech.release_value(np.array([299.9]), rng=_rng(), options=ReleaseOptions(clip=True))
    assert clipped.postprocessed == ("clip",) and clipped.value[0] <= 300.0
    mech.release(data, rng=_rng(), ledger=ledger, dataset_name="other", options=ReleaseOptions(independent=True))
    assert ledger.charges == [("APGM", True, "other", True)]


# -- the deprecated spellings ----------------------------------------------------------------------------------
FLAGS = [
    ({"clip": True}, ReleaseOptions(clip=True)),
    ({"independent": True}, ReleaseOptions(independent=True)),
    ({"accept_failed_assumptions": True}, ReleaseOptions(accept_failed_assumptions=True)),
    ({"accept_unverified": True, "clip": False}, ReleaseOptions(accept_unverified=True)),
]


@pytest.mark.parametrize("old, new", FLAGS, ids=[",".join(old) for old, _ in FLAGS])
@pytest.mark.parametrize("method", ["release", "release_value"])
def test_old_flag_keywords_warn_and_release_exactly_what_the_options_release(old, new, method):
    mech, data = _apgm()
    arg = data if method == "release" else np.array([155.0])
    old_ledger, new_ledger = RecordingLedger(), RecordingLedger()
    with pytest.warns(BayesPrivDeprecationWarning, match=rf"APGM\.{method}\(.*\) is deprecated.*options=ReleaseOptions"):
        before = getattr(mech, method)(arg, rng=_rng(), ledger=old_ledger, **old)
    after = getattr(mech, method)(arg, rng=_rng(), ledger=new_ledger, options=new)
    assert _same(before, after) and old_ledger.charges == new_ledger.charges


def test_release_value_dataset_is_the_deprecated_spelling_of_dataset_name():
    mech, _ = _apgm()
    old_ledger, new_ledger = RecordingLedger(), RecordingLedger()
    with pytest.warns(BayesPrivDeprecationWarning, match=r"release_value\(dataset=\.\.\.\).*dataset_name="):
        before = mech.release_value(np.array([150.0]), rng=_rng(), ledger=old_ledger,
                                    dataset="survey")
    after = mech.release_value(np.array([150.0]), rng=_rng(), ledger=new_ledger,
                               dataset_name="survey")
    assert _same(before, after) and old_ledger.charges == new_ledger.charges == [("APGM", True, "survey", False)]


def test_both_spellings_at_once_are_an_error_and_an_unknown_keyword_a_type_error():
    mech, data = _apgm()
    ledger = RecordingLedger()
    with pytest.raises(bp.ValidationError, match=r"pass options= only \(clip=\.\.\. is its deprecated spelling\); "
                                                 "got both"):
        mech.release(data, ledger=ledger, clip=True, options=ReleaseOptions())
    with pytest.raises(bp.ValidationError, match="pass dataset_name= only"):
        mech.release_value(np.array([150.0]), ledger=ledger, dataset="a", dataset_name="b")
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'clipped'"):
        mech.release(data, ledger=ledger, clipped=True)
    assert ledger.charges == []


def test_subset_count_mechanism_takes_keywords_and_its_old_spellings_warn_and_agree():
    new = bp.SubsetCountMechanism(protected="sex", public="age", epsilon=0.5, geometric_calibration="paper")
    assert (new.protected_variable, new.public_variable, new.protected, new.public) == ("sex", "age", ("sex",),
                                                                                        ("age",))
    assert repr(new).startswith("SubsetCountMechanism(protected='sex', public='age', epsilon=0.5")
    with pytest.warns(BayesPrivDeprecationWarning, match=r"by position is deprecated.*protected=\.\.\., public="):
        positional = bp.SubsetCountMechanism("sex", "age", 0.5, (), "paper")
    with pytest.warns(BayesPrivDeprecationWarning) as caught:
        renamed = bp.SubsetCountMechanism(protected_variable="sex", public_variable="age", epsilon=0.5,
                                          geometric_calibration="paper")
    assert [str(w.message).split(" is ")[0] for w in caught] == ["SubsetCountMechanism(protected_variable=...)",
                                                                 "SubsetCountMechanism(public_variable=...)"]
    counts = np.array([[3, 4, 1], [5, 6, 2]])
    for old in (positional, renamed):
        assert old.fingerprint() == new.fingerprint() and old.accounting_record == new.accounting_record
        assert old.release_value(counts, rng=_rng()).value.equals(new.release_value(counts, rng=_rng()).value)
    with pytest.raises(bp.ValidationError, match="pass protected= only"):
        bp.SubsetCountMechanism("sex", protected="sex", public="age", epsilon=0.5)
    with pytest.raises(bp.ValidationError, match="pass public= only"):
        bp.SubsetCountMechanism(protected="sex", public="age", public_variable="age", epsilon=0.5)
    with pytest.raises(bp.ParameterTypeError, match="^protected must be a column name"):
        bp.SubsetCountMechanism(public="age", epsilon=0.5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'protect'"):
        bp.SubsetCountMechanism(protect="sex", public="age", epsilon=0.5)


def test_a_count_table_takes_options_and_its_old_keywords_warn():
    mech = bp.SubsetCountMechanism(protected="sex", public="age", epsilon=0.5)
    counts = np.array([[3, 4], [5, 6]])
    old_ledger, new_ledger = RecordingLedger(), RecordingLedger()
    with pytest.warns(BayesPrivDeprecationWarning) as caught:
        before = mech.release_value(counts, rng=_rng(), ledger=old_ledger, dataset="t", independent=True)
    assert len(caught) == 2
    after = mech.release_value(counts, rng=_rng(), ledger=new_ledger, dataset_name="t",
                               options=ReleaseOptions(independent=True))
    assert before.value.equals(after.value) and old_ledger.charges == new_ledger.charges
    assert new_ledger.charges == [("SubsetCountMechanism", True, "t", True)]
    with pytest.raises(bp.ValidationError, match=r"options\.clip must be False for a table of counts"):
        mech.release_value(counts, options=ReleaseOptions(clip=True))
    with pytest.raises(TypeError, match="unexpected keyword argument 'clip'"):
        mech.release_value(counts, clip=True)  # never a keyword of a table's release


def test_a_count_table_from_a_frame_takes_a_layout_and_its_old_keywords_warn():
    """``release(frame, ...)``: ``independent=`` and the layout's fields as keywords of their own warn (one warning
    each) and release and charge exactly what ``options=`` and ``layout=`` do."""
    mech = bp.SubsetCountMechanism(protected="sex", public="age", epsilon=0.5)
    frame = pd.DataFrame({"age": ["young", "old", "young"], "sex": ["F", "M", "M"], "n": [3, 4, 5]})
    old_ledger, new_ledger = RecordingLedger(), RecordingLedger()
    with pytest.warns(BayesPrivDeprecationWarning) as caught:
        before = mech.release(frame, rng=_rng(), ledger=old_ledger, independent=True, protected_values=["F", "M"],
                              count="n")
    assert [str(w.message).split(" is ")[0] for w in caught] == ["SubsetCountMechanism.release(independent=...)",
                                                                 "SubsetCountMechanism.release(protected_values=..., "
                                                                 "count=...)"]
    after = mech.release(frame, rng=_rng(), ledger=new_ledger, options=ReleaseOptions(independent=True),
                         layout=bp.ledger.TableLayout(protected_values=["F", "M"], count="n"))
    assert before.value.equals(after.value) and old_ledger.charges == new_ledger.charges
    assert new_ledger.charges == [("SubsetCountMechanism", True, None, True)]
    unknown = r"^SubsetCountMechanism\.release\(\) got an unexpected keyword argument 'domain'"
    with pytest.raises(TypeError, match=unknown):
        mech.release(frame, domain=None)  # a keyword of release_value only
