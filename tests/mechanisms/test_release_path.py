"""The release path: refused releases spend nothing and draw no noise.

Stages under test (``bayespriv/mechanisms/release_path.py``): argument checks, binding
to the calibration (rows, columns, answer length), the premise gate (failed
assumption checks), seed reuse, the ledger charge, and the void of a spend whose
release could not complete.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

import bayespriv as bp
from bayespriv import mechanisms as M

from tests._every_mechanism import BUILDERS, N_RECORDS, mechanism_classes, sampled_calibration


class RecordingLedger:
    """Records charges and voids; never refuses."""

    def __init__(self) -> None:
        self.charges: list = []
        self.voids: list = []

    def charge(self, mechanism, *, seeded=None, dataset=None, independent=False):
        g = mechanism.guarantee
        self.charges.append((type(mechanism).__name__, g.epsilon, g.delta, g.failed_assumptions, g.established))
        return type("Charge", (), {"release_id": len(self.charges)})()

    def void(self, release_id, reason):
        self.voids.append((release_id, reason))


def unequal_covariance_calibration() -> bp.Calibration:
    """Variances 1 vs 25 and a mean shift of 1: the equal_covariance check fails, and noise
    calibrated as if the covariances were equal gives δ ≈ 0.24 at ε = 1, not 1e-3."""
    s1, s2 = bp.DistributionSecret("p", 0.2), bp.DistributionSecret("p", 0.8)
    return bp.Calibration.from_moments({s1: np.array([0.0]), s2: np.array([1.0])},
                                       {s1: np.array([[1.0]]), s2: np.array([[25.0]])}, [bp.SecretPair(s1, s2)])


def equal_covariance_apgm() -> M.APGM:
    """APGM asked to assume equal covariances on a calibration where they differ."""
    cal = unequal_covariance_calibration()
    try:
        return M.APGM(cal, epsilon=1.0, delta=1e-3, covariance="equal")
    except TypeError:  # before the unequal-covariance calibration exists, "equal" is the only mode
        return M.APGM(cal, epsilon=1.0, delta=1e-3)


def test_failed_premise_refuses_and_spends_nothing():
    mech = equal_covariance_apgm()
    assert mech.guarantee.failed_assumptions == ("equal_covariance",) and not mech.guarantee.established
    ledger, gen = RecordingLedger(), np.random.default_rng(3)
    state = copy.deepcopy(gen.bit_generator.state)
    with pytest.raises(bp.AssumptionFailedError, match="equal_covariance") as err:
        mech.release_value(np.array([0.3]), rng=gen, ledger=ledger)
    msg = str(err.value)
    assert "statistic" in msg and "accept_failed_assumptions=True" in msg and "relaxed" in msg
    assert "Nothing was spent" in msg
    assert ledger.charges == [] and gen.bit_generator.state == state


def test_opt_in_release_is_recorded_as_not_established():
    mech = equal_covariance_apgm()
    ledger = RecordingLedger()
    rel = mech.release_value(np.array([0.3]), ledger=ledger, options=bp.ReleaseOptions(accept_failed_assumptions=True))
    assert not rel.established and "NOT ESTABLISHED" in repr(rel) and "NOT ESTABLISHED" in rel._repr_html_()
    assert ledger.charges == [("APGM", 1.0, 1e-3, ("equal_covariance",), False)]
    with pytest.raises(bp.ParameterTypeError, match="accept_failed_assumptions"):
        mech.release_value(np.array([0.3]), options=bp.ReleaseOptions(accept_failed_assumptions="yes"))


def test_dataset_of_another_size_is_refused():
    """ExpM calibrated at 50 records: a 5000-row dataset (or n_records=5000), a missing or duplicated
    column and a mis-shaped answer are refused with nothing charged; a 50-row dataset is released."""
    cal = sampled_calibration()
    mech = M.ExpM(cal, epsilon=1.0, noise="laplace")
    ledger, gen = RecordingLedger(), np.random.default_rng(4)
    state = copy.deepcopy(gen.bit_generator.state)
    big = pd.DataFrame({"x": np.zeros(5000), "y": np.zeros(5000)})
    with pytest.raises(bp.ReleaseMismatchError, match=f"{N_RECORDS} rows"):
        mech.release(big, rng=gen, ledger=ledger)
    with pytest.raises(bp.ReleaseMismatchError, match="n_records"):
        mech.release_value(np.array([0.0]), n_records=5000, ledger=ledger)
    with pytest.raises(bp.ReleaseMismatchError, match="missing"):
        mech.release(pd.DataFrame({"x": np.zeros(N_RECORDS)}), ledger=ledger)
    dup = pd.DataFrame(np.zeros((N_RECORDS, 2)), columns=["y", "y"])
    with pytest.raises(bp.ReleaseMismatchError, match="unique column names"):
        mech.release(dup, ledger=ledger)
    with pytest.raises(bp.ReleaseMismatchError, match="shape"):
        mech.release_value(np.array([0.0, 1.0]), ledger=ledger)
    assert ledger.charges == [] and gen.bit_generator.state == state
    ok = mech.release(pd.DataFrame({"x": np.zeros(N_RECORDS), "y": np.ones(N_RECORDS)}), ledger=ledger)
    assert ok.value.shape == (1,) and len(ledger.charges) == 1


def test_release_of_a_dataset_needs_a_known_size():
    s1, s2 = bp.DistributionSecret("p", 0.2), bp.DistributionSecret("p", 0.8)
    cal = bp.Calibration.from_moments({s1: [0.0], s2: [1.0]}, {s1: 1.0, s2: 1.0}, [bp.SecretPair(s1, s2)], bp.mean("w"))
    mech = M.APGM(cal, epsilon=1.0, delta=1e-3)
    with pytest.raises(bp.ReleaseMismatchError, match="n_records=None"):
        mech.release(pd.DataFrame({"w": [1.0, 2.0]}))


def test_seed_reuse_warns_and_fresh_entropy_does_not():
    mech, answer = BUILDERS["ExpM"](1.0)
    mech.release_value(answer, rng=42)
    with pytest.warns(bp.BayesPrivWarning, match="rng=42 was already used"):
        mech.release_value(answer, rng=42)
    mech.release_value(answer, rng=43)
    mech.release_value(answer)
    mech.release_value(answer)


@pytest.mark.parametrize("bad", [object(), "ledger.sqlite", 3])
def test_ledger_must_be_a_ledger(bad):
    mech, answer = BUILDERS["ExpM"](1.0)
    with pytest.raises(bp.ParameterTypeError, match="ledger must be None or a bayespriv Ledger"):
        mech.release_value(answer, ledger=bad)


@pytest.mark.parametrize("bad", [-1, 1.5, "seed"])
def test_rng_checked_before_the_spend(bad):
    mech, answer = BUILDERS["ExpM"](1.0)
    ledger = RecordingLedger()
    with pytest.raises(bp.ParameterTypeError, match="rng"):
        mech.release_value(answer, rng=bad, ledger=ledger)
    assert ledger.charges == []


@pytest.mark.parametrize("epsilon", [1e-17, 1e300, 5e-324])
@pytest.mark.parametrize("name", mechanism_classes())
def test_extreme_epsilon_releases_finite_values_or_refuses_before_any_spend(name, epsilon):
    ledger = RecordingLedger()
    try:
        mech, answer = BUILDERS[name](epsilon)
    except bp.BayesPrivError as exc:
        assert "epsilon" in str(exc) or "eps" in str(exc)
        return
    rel = mech.release_value(answer, ledger=ledger, options=bp.ReleaseOptions(accept_failed_assumptions=True))
    assert np.all(np.isfinite(rel.value)) and len(ledger.charges) == 1


def test_a_failure_after_the_spend_voids_it(monkeypatch):
    mech, answer = BUILDERS["ExpM"](1.0)
    ledger = RecordingLedger()

    def broken(self, value, rng):
        raise RuntimeError("simulated failure in the noise sampler")

    monkeypatch.setattr(type(mech), "_noisy", broken)
    with pytest.raises(RuntimeError, match="simulated"):
        mech.release_value(answer, ledger=ledger)
    assert len(ledger.charges) == 1 and ledger.voids and ledger.voids[0][0] == 1
    assert "simulated failure" in ledger.voids[0][1]


@pytest.mark.parametrize("name", ["APGM", "ExpM", "WithExtraLaplace", "APMQM", "Noiseless"])
def test_a_mechanisms_release_is_the_release_its_fields_would_build(name):
    """A mechanism builds its Release without re-checking the fields it checked at construction; the result
    must equal, field for field, the Release built through the checked constructor, and be as frozen."""
    import dataclasses

    mech, answer = BUILDERS[name](1.0)
    release = mech.release_value(answer, rng=3)
    rebuilt = bp.Release(**{f.name: getattr(release, f.name) for f in dataclasses.fields(bp.Release)})
    for f in dataclasses.fields(bp.Release):
        mine, checked = getattr(release, f.name), getattr(rebuilt, f.name)
        assert type(mine) is type(checked), f.name
        assert np.array_equal(mine, checked) if isinstance(mine, np.ndarray) else mine == checked, f.name
    with pytest.raises(dataclasses.FrozenInstanceError):
        release.value = np.zeros(mech.k)
    with pytest.raises(ValueError):
        release.value.setflags(write=True)
    assert release.guarantee == mech.guarantee and release.seeded and release.mechanism == type(mech).__name__
    assert release.noise is not None and np.allclose(release.noise_cov, mech.noise_cov)
    assert release.valid_range.shape == (mech.k, 2) and release.postprocessed == () and release.ledger_id is None
