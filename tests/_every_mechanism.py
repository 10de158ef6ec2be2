"""One small, valid instance of every Mechanism class in ``bp.mechanisms.__all__``.

The one registry of the tests that must cover every mechanism (immutability, the
release path, extreme ε, argument validation, float attacks). ``BUILDERS`` maps
a class name to ``build(epsilon, **options) -> (mechanism, answer)`` where
``answer`` is a valid ``(k,)`` answer for ``release_value`` and ``options`` go to
the constructor (for the classes of :data:`NOISE_PARAMETER`); a test over
``__all__`` fails when a new mechanism class has no builder here.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

import bayespriv as bp
from bayespriv import mechanisms as M

N_RECORDS = 50
A = bp.DistributionSecret("p", 0.3)
B = bp.DistributionSecret("p", 0.7)
PAIR = bp.SecretPair(A, B)


def exact_calibration(k: int = 2, *, query: Any = None) -> bp.Calibration:
    """Equal covariances (all checks of exact moments pass), ``n_records`` known."""
    means = {A: np.zeros(k), B: np.full(k, 0.5)}
    cov = np.eye(k) * 0.2 + 0.05
    return bp.Calibration.from_moments(means, {A: cov, B: cov}, [PAIR], query=query, n_records=N_RECORDS)


def sampled_calibration(seed: int = 0, n: int = 4000) -> bp.Calibration:
    """A sampled 1-D calibration of a mean with per-record bounds (GroupDP, Wasserstein, APGMnG)."""
    model = bp.GaussianDataModel([0.0, 1.0], [[1.0, 0.5], [0.5, 1.0]], ["x", "y"], n_records=N_RECORDS)
    pair = bp.SecretPair(bp.DatasetSecret.mean("x", -0.2), bp.DatasetSecret.mean("x", 0.2))
    return bp.calibrate(model, pair, bp.mean("y", bounds=(-10.0, 10.0)), n_draws=n, rng=seed)


def _quilt(epsilon: float) -> Any:
    from bayespriv.models import school

    cal = school.calibration("tall")
    return M.APMQM(cal, epsilon=epsilon), np.array([10.0])


def _chain(epsilon: float) -> Any:
    from bayespriv.networks.quilts import MarkovChain, calibrate_chain

    chain = MarkovChain([[0.9, 0.1], [0.2, 0.8]], [0.5, 0.5])
    cal = calibrate_chain(chain, bp.count(lambda b: b["s"] == 1, "s", name="ones"), length=6)
    return M.MQM(cal, epsilon=epsilon), np.array([3.0])


def _sampled(cls: type, **kwargs: Any) -> Callable[..., Any]:
    def build(epsilon: float, **options: Any) -> Any:
        return cls(sampled_calibration(), epsilon=epsilon, **{**kwargs, **options}), np.array([0.5])
    return build


def _exact(cls: type, **kwargs: Any) -> Callable[..., Any]:
    def build(epsilon: float, **options: Any) -> Any:
        return cls(exact_calibration(), epsilon=epsilon, **{**kwargs, **options}), np.array([0.1, 0.2])
    return build


def _noiseless(epsilon: float) -> Any:
    close = {A: np.zeros(1), B: np.full(1, 1e-4)}
    cal = bp.Calibration.from_moments(close, {A: np.eye(1), B: np.eye(1)}, [PAIR], n_records=N_RECORDS)
    return M.Noiseless(cal, epsilon=epsilon, delta=1e-3), np.array([0.3])


def _with_extra_laplace(epsilon: float) -> Any:
    # Theorem 4.7 relaxes a guarantee that assumes F Gaussian: the base is calibrated on that premise
    base = M.APGM(sampled_calibration(), epsilon=epsilon, delta=1e-3, accountant="gaussian")
    return base.with_extra_laplace(0.5, w_infinity=0.1), np.array([0.5])


def _apgmng(epsilon: float) -> Any:
    # λ_η given (estimating it at the η a δ of 1e-3 needs takes millions of draws); the mechanism keeps (ε, δ)
    return M.APGMnG(sampled_calibration(), epsilon=epsilon, delta=1e-3, lambda_eta=epsilon / 4), np.array([0.5])


def _subset_count(epsilon: float, **options: Any) -> Any:
    # a count table: no calibration, its answer is the table of counts (public × protected)
    mech = M.SubsetCountMechanism(protected="u", public="v", epsilon=epsilon, **options)
    return mech, np.array([[3, 4], [5, 6]])


BUILDERS: dict[str, Callable[..., Any]] = {
    "APGM": _exact(M.APGM, delta=1e-3),
    "APGMnG": _apgmng,
    "WithExtraLaplace": _with_extra_laplace,
    "ExpM": _exact(M.ExpM, noise="laplace"),
    "DirM": _exact(M.DirM, delta=1e-3),
    "EigM": _exact(M.EigM, delta=1e-3),
    "DauM": _exact(M.DauM, delta=1e-3),
    "OptimalGaussian": _exact(M.OptimalGaussian, delta=1e-3),
    "Noiseless": _noiseless,
    "GroupDP": _sampled(M.GroupDP, noise="laplace"),
    "APMQM": _quilt,
    "MQM": _chain,
    "Wasserstein": _sampled(M.Wasserstein, support=(-10.0, 10.0)),
    "ApproxWasserstein": _sampled(M.ApproxWasserstein, delta=0.2),
    "SubsetCountMechanism": _subset_count,
}


#: Classes whose constructor takes a noise kind, and the parameter's name.
NOISE_PARAMETER: dict[str, str] = {"ExpM": "noise", "DirM": "noise", "GroupDP": "noise"}


def mechanism_classes() -> list[str]:
    """Names in ``bp.mechanisms.__all__`` that are concrete Mechanism subclasses."""
    out = []
    for name in M.__all__:
        obj = getattr(M, name)
        if isinstance(obj, type) and issubclass(obj, M.Mechanism) and not inspect.isabstract(obj):
            out.append(name)
    return out
