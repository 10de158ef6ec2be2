"""Mechanisms whose noise alone covers the query's whole range compose with anything (``mechanisms/whole_dataset.py``).

Independent computations: the box maximum of a quadratic form / weighted L1 norm by a dense grid over the box
(not only its corners), and the privacy curve at the worst corner by Balle & Wang's closed form in mpmath
(``tests/_gaussian_oracles.py``). Twins: noise that covers only the secret pair's difference (not the whole
range) is not ``dataset_dp``, and a second release of it on the same data without a model at hand is refused.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import bayespriv as bp
from bayespriv.ledger.joint import JointAccountingError
from bayespriv.mechanisms.whole_dataset import gaussian_covers_box, laplace_covers_box

from tests._gaussian_oracles import analytic_delta

EPS, DELTA = 1.0, 1e-3
A, B = bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7)
PAIR = bp.SecretPair(A, B)


def _grid_max(f, widths: np.ndarray, points: int = 41) -> float:
    axes = [np.linspace(-w, w, points) for w in widths]
    return max(f(np.array(d)) for d in itertools.product(*axes))


@pytest.mark.parametrize("seed", range(6))
def test_gaussian_box_maximum_is_at_a_corner(seed):
    rng = np.random.default_rng(seed)
    k = 2 + seed % 2
    a = rng.normal(size=(k, k))
    cov = a @ a.T + 0.1 * np.eye(k)
    widths = rng.uniform(0.5, 2.0, k)
    worst = _grid_max(lambda d: float(d @ np.linalg.solve(cov, d)), widths, 21 if k == 3 else 41)
    rng_ = np.column_stack([np.zeros(k), widths])
    assert gaussian_covers_box(cov, rng_, math.sqrt(worst) * (1 + 1e-9))
    assert not gaussian_covers_box(cov, rng_, math.sqrt(worst) * (1 - 1e-6))


@pytest.mark.parametrize("seed", range(4))
def test_laplace_box_maximum_is_at_a_corner(seed):
    rng = np.random.default_rng(10 + seed)
    basis, scale, widths = rng.normal(size=(2, 2)), rng.uniform(0.5, 2.0, 2), rng.uniform(0.5, 2.0, 2)
    worst = _grid_max(lambda d: float(np.sum(np.abs(np.linalg.solve(basis, d)) / scale)), widths)
    rng_ = np.column_stack([np.zeros(2), widths])
    assert laplace_covers_box(scale, basis, rng_, worst * (1 + 1e-9))
    assert not laplace_covers_box(scale, basis, rng_, worst * (1 - 1e-6))


def test_unbounded_or_rank_deficient_noise_never_covers():
    box = np.array([[0.0, 1.0], [0.0, 1.0]])
    assert not gaussian_covers_box(np.eye(2), np.array([[0.0, 1.0], [-np.inf, np.inf]]), 100.0)
    assert not gaussian_covers_box(np.diag([1.0, 0.0]), box, 100.0)
    assert not laplace_covers_box(np.ones(1), np.ones((2, 1)), box, 100.0)


def _apgm(query: bp.Query, gap: float) -> bp.mechanisms.APGM:
    """APGM on one record whose value lies in [0, 1]: the pair's means ``gap`` apart, no variance of its own."""
    cal = bp.Calibration.from_moments({A: [0.0], B: [gap]}, {A: [[0.0]], B: [[0.0]]}, PAIR, query=query, n_records=1)
    return bp.mechanisms.APGM(cal, epsilon=EPS, delta=DELTA)


def test_noise_covering_the_whole_range_composes_as_dp_and_the_bound_holds_exactly():
    mech = _apgm(bp.mean("x", bounds=(0.0, 1.0)), 1.05)
    assert mech.composition == "dataset_dp"
    # the worst difference two datasets can show is the range's width, 1: exact δ there meets the request
    sd = math.sqrt(float(mech.noise_cov[0, 0]))
    assert analytic_delta(EPS, 1.0 / sd) <= DELTA
    twin = _apgm(bp.mean("x", bounds=(0.0, 1.0)), 0.9)  # covers the pair's 0.9, not the range's 1
    assert twin.composition == "joint"
    assert analytic_delta(EPS, 1.0 / math.sqrt(float(twin.noise_cov[0, 0]))) > DELTA


def test_the_ledger_adds_them_without_a_model_and_refuses_the_twin(tmp_path):
    """Calibrations built by hand (no data model to form a joint law): covering mechanisms are summed with the
    theorem named; the twin's second release on the same data is refused (nothing spent)."""
    led = bp.Ledger(tmp_path / "l.sqlite")
    led.set_budget("p", 10.0, 0.5)
    qx, qy = bp.mean("x", bounds=(0.0, 1.0)), bp.mean("y", bounds=(0.0, 1.0))
    for q in (qx, qy):
        _apgm(q, 1.05).release_value(np.array([0.5]), ledger=led, dataset_name="d", rng=np.random.default_rng(0))
    rows = led.releases()
    assert list(rows["composition"]) == ["dataset_dp", "dataset_dp"]
    assert led.spent("p") == pytest.approx((2 * EPS, 2 * DELTA))
    assert "Bai et al. 2026" in bp.ledger.joint.COMPOSITIONS["dataset_dp"]
    _apgm(qx, 0.9).release_value(np.array([0.5]), ledger=led, dataset_name="e", rng=np.random.default_rng(0))
    before = led.spent("p")
    with pytest.raises(JointAccountingError, match="cannot be formed"):
        _apgm(qy, 0.9).release_value(np.array([0.5]), ledger=led, dataset_name="e", rng=np.random.default_rng(0))
    assert led.spent("p") == before


def test_a_declared_output_range_is_not_trusted():
    q = bp.Query(lambda b: b["x"].mean(axis=1)[:, None], ["x"], "mean_x", output_names=["mean_x"],
                 output_range=[(0.0, 1.0)])
    assert _apgm(q, 1.05).composition == "joint"


def _claims() -> dict[str, bp.Query]:
    """Queries whose range [0, 1] is claimed, not computed (attacks on the whole-dataset condition): the
    true range is wider."""
    wide = lambda b: b["x"].mean(axis=1)[:, None]  # noqa: E731 - any value of x
    claimed = bp.Query(wide, ["x"], "claimed", output_names=["claimed"], output_range=[(0.0, 1.0)])

    class Bounded:  # a per-record function of the user's that only says it is bounded
        bounds = (0.0, 1.0)

        def __call__(self, b):
            return b["x"]

    own = bp.mean("x", bounds=(0.0, 1.0)).components[0]
    return {
        "stack of a claimed range": bp.stack(claimed),
        "components beside another function": bp.Query(wide, ["x"], "hand", output_names=["hand"],
                                                       components=bp.mean("x", bounds=(0.0, 1.0)).components),
        "a user's bounded per-record function": bp.Query(
            bp.queries.components._AdditiveFn((type(own)(**{**own.__dict__, "h": Bounded()}),)), ["x"], "user",
            output_names=["user"], components=(type(own)(**{**own.__dict__, "h": Bounded()}),)),
    }


@pytest.mark.parametrize("name", list(_claims()))
def test_a_claimed_range_never_makes_releases_summable(name):
    """Counted as dataset_dp on a false claim, two releases were summed where their joint ε is far larger (attack
    accuracy 0.998 against 0.881 allowed). A range that does not follow from the library's own computation is not
    used: the mechanism composes jointly. The twin: the library's own stack of bounded means is dataset_dp."""
    assert _apgm(_claims()[name], 1.05).composition == "joint"
    assert _apgm(bp.stack(bp.mean("x", bounds=(0.0, 1.0))), 1.05).composition == "dataset_dp"
