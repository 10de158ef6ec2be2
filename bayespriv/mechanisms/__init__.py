"""Mechanisms, by the papers' shorthands.

Each takes a :class:`~bayespriv.Calibration` and (ε, δ), and exposes its
``guarantee`` and noise before any data is seen.
"""

from .apgm import APGM, APGMnG
from .base import Guarantee, Mechanism, Release
from .relaxation import SampledMomentMechanism, WithExtraLaplace
from .expected_value import DauM, DirM, EigM, ExpM, Noiseless, NoiselessReport, noiseless_ok
from .optimal import OptimalGaussian
from .groupdp import GroupDP
from .quilt import APMQM, MQM
from .wasserstein import ApproxWasserstein, Wasserstein
from .utility import utility_curves
from .choice import MechanismChoice, choose
from .on_demand import OnDemand, build_on_demand, draws_for_delta
from . import privacy_loss
from .privacy_loss import gaussian_delta, gaussian_privacy_curve
from .noise import analytic_gaussian_log_delta, classic_constant, gaussian_radius, gaussian_sigma
from .exact_noise import (
    BitSource,
    GaussianGridPlan,
    LaplaceGridPlan,
    delta_with_discretization,
    discrete_gaussian,
    discrete_laplace,
    gaussian_tv_bound,
    plan_gaussian,
    plan_laplace,
)

__all__ = [
    "APGM",
    "APGMnG",
    "WithExtraLaplace",
    "ExpM",
    "DirM",
    "EigM",
    "DauM",
    "OptimalGaussian",
    "Noiseless",
    "NoiselessReport",
    "noiseless_ok",
    "utility_curves",
    "choose",
    "MechanismChoice",
    "build_on_demand",
    "draws_for_delta",
    "OnDemand",
    "GroupDP",
    "APMQM",
    "MQM",
    "Wasserstein",
    "ApproxWasserstein",
    "Mechanism",
    "SampledMomentMechanism",
    "Guarantee",
    "Release",
    "gaussian_radius",
    "gaussian_sigma",
    "classic_constant",
    "analytic_gaussian_log_delta",
    "privacy_loss",
    "gaussian_delta",
    "gaussian_privacy_curve",
    "BitSource",
    "GaussianGridPlan",
    "LaplaceGridPlan",
    "plan_gaussian",
    "plan_laplace",
    "discrete_gaussian",
    "discrete_laplace",
    "gaussian_tv_bound",
    "delta_with_discretization",
]
