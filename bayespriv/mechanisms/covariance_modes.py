"""The ``covariance="auto" | "equal" | "unequal"`` modes of the Gaussian-noise mechanisms.

EigM, DauM, OptimalGaussian and APGM take a ``covariance=`` argument (the rule is in the
docstring of :mod:`~bayespriv.mechanisms.expected_value`). This module holds what the modes
need: :func:`choose_covariance_mode` (the ``"auto"`` rule), :func:`unequal_covariance_boxes`
(the calibration's confidence box of every (θ, pair) condition, as
:class:`~bayespriv.privacy.privacy_loss.PairBox`), :func:`unequal_noise` (the smallest
scale of a noise shape meeting (ε, δ) for unequal covariances) and :func:`covariance_notes`
(whether the covariances of each pair agree, recorded without failing).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_choice, described, fail
from ..calibration import Calibration, PairConstraints
from ..calibration.assumptions import check_assumptions
from ..calibration.moments import shrink_factor
from ..errors import ValidationError
from .mechanism import Mechanism
from bayespriv.privacy.privacy_loss import PairBox, gaussian_delta, scale_for_delta


COVARIANCE_MODES = ("auto", "equal", "unequal")


def unequal_covariance_boxes(calibration: Calibration) -> tuple[PairBox, ...]:
    """One :class:`~bayespriv.privacy.privacy_loss.PairBox` per (θ, pair)
    condition, in the order of :meth:`Calibration.pair_constraints`.

    Mean differences ``μ̂_a − μ̂_b ± z(se_a + se_b)``; covariances
    ``Σ̂/(1 + η) ⪯ Σ ⪯ Σ̂/(1 − η)`` with ``1 + η`` the calibration's shrink
    factor (:func:`~bayespriv.calibration.moments.shrink_factor`). Exact and
    plug-in calibrations give boxes of zero width.

    Raises
    ------
    ValidationError
        When some η ≥ 1: the draws bound the covariance from below only.
    """
    boxes = []
    for m in calibration.members:
        eta = shrink_factor(m.cov_se_white, m.z) - 1.0
        if np.any(eta >= 1.0):
            i = int(np.argmax(eta))
            raise fail("calibration", "drawn enough for an upper bound of every covariance (z·rho < 1, needed by "
                       "covariance='unequal'; use more draws)", described(f"z·rho = {eta[i]:.3g} for {m.secrets[i].label!r}"))
        for p in m.pairs:
            ia, ib = m.index(p.a), m.index(p.b)
            boxes.append(PairBox(m.mean_array[ia] - m.mean_array[ib], m.z * (m.mean_se[ia] + m.mean_se[ib]),
                                 m.cov_array[ia], m.cov_array[ib], float(eta[ia]), float(eta[ib])))
    return tuple(boxes)


def mechanism_boxes(mech: Mechanism) -> tuple[PairBox, ...]:
    """:func:`unequal_covariance_boxes` of the mechanism's calibration, computed once per mechanism and kept in
    its ``__dict__`` (the frozen state's cache slot)."""
    cache = mech.__dict__.get("_box_cache")
    if cache is None:
        cache = unequal_covariance_boxes(mech.calibration)
        mech.__dict__["_box_cache"] = cache
    return cache


def choose_covariance_mode(mech: Mechanism, covariance: Any) -> str:
    """``"equal"`` or ``"unequal"`` for a ``covariance=`` argument (the ``"auto"`` rule: docstring of
    :mod:`~bayespriv.mechanisms.expected_value`)."""
    check_choice(covariance, "covariance", COVARIANCE_MODES)
    if covariance != "auto":
        return covariance
    report = check_assumptions(mech.calibration, ("equal_covariance",), alpha=mech.assumption_alpha)
    return "unequal" if report.failed else "equal"


def unequal_noise(mech: Mechanism, shape: np.ndarray, boxes: tuple[PairBox, ...]) -> tuple[np.ndarray, float, tuple[str, ...]]:
    """``(c·N, c, notes)``: the smallest scale c of the noise shape N meeting (ε, δ)
    for unequal covariances over every box (:func:`~bayespriv.privacy.privacy_loss.scale_for_delta`).

    The shape N is kept unless the widened shape ``W = N + (tr N / k or 1)·I``
    needs less total noise (trace): N may leave a direction without noise that
    a covariance difference exposes (then no scale of N meets δ), or nearly so
    (then its scale explodes). Both calibrations are valid; the one of least
    trace is returned and a widening is recorded in the notes (c is then W's
    factor).
    """
    target = float(getattr(mech, "_noise_delta", mech.delta))
    pairs = [(b.diff, b.cov_a, b.cov_b) for b in boxes]
    shape = (np.asarray(shape, dtype=float) + np.asarray(shape, dtype=float).T) / 2.0
    k = shape.shape[0]
    iso = float(np.trace(shape)) / k if np.trace(shape) > 0 else 1.0
    if np.allclose(shape, iso * np.eye(k), rtol=1e-12, atol=0.0):  # isotropic already: nothing to widen
        c = scale_for_delta(mech.epsilon, target, shape, pairs, box=boxes)
        return c * shape, c, ()
    wide = shape + iso * np.eye(k)
    c_wide = scale_for_delta(mech.epsilon, target, wide, pairs, box=boxes)
    best = (c_wide * wide, c_wide, ("covariance: the equal-covariance noise shape was widened by an isotropic part "
                                    "(N + (tr N/k)·I) because the shape alone needs more total noise, or cannot meet "
                                    "delta, for the unequal covariances",))
    if np.any(shape) and not _blind_spot(mech.epsilon, target, shape, boxes):
        try:
            c = scale_for_delta(mech.epsilon, target, shape, pairs, box=boxes,
                                max_scale=c_wide * float(np.trace(wide)) / float(np.trace(shape)))
            if c * float(np.trace(shape)) <= c_wide * float(np.trace(wide)):
                best = (c * shape, c, ())
        except ValidationError:
            pass
    if best[1] == 0.0:
        return np.zeros_like(shape), 0.0, ()
    return best


def _blind_spot(epsilon: float, target: float, shape: np.ndarray, boxes: tuple[PairBox, ...]) -> bool:
    """Whether no scale of ``shape`` can meet δ: the laws restricted to the null space of the
    shape (a post-processing, untouched by the noise) already exceed δ for some candidate."""
    w, v = np.linalg.eigh(shape)
    q = v[:, w <= 1e-12 * max(float(w.max()), 1e-300)]
    if q.shape[1] == 0:
        return False
    return any(gaussian_delta(epsilon, q.T @ d, q.T @ a @ q, q.T @ b @ q) > target
               for bx in boxes for d, a, b in bx.candidates())


def covariance_notes(cons: PairConstraints) -> tuple[str, ...]:
    """Record, without failing, whether the two covariances of each pair agree."""
    a, b = cons.cov_a, cons.cov_b
    scale = np.maximum(np.abs(a).max(axis=(1, 2)), np.abs(b).max(axis=(1, 2)))
    rel = np.abs(a - b).max(axis=(1, 2)) / np.where(scale > 0, scale, 1.0)
    if rel.size and rel.max() > 1e-8:
        i = int(np.argmax(rel))
        return (
            f"equal_covariance: the covariance lower bounds of a pair differ (largest relative entry difference "
            f"{rel[i]:.3g} at {cons.labels[i]!r}); the common Loewner lower bound of both is used, and the "
            "equal-covariance assumption of Theorem 4.4 is tested on the samples, not proven "
            "(covariance='unequal' drops it)",
        )
    return ()
