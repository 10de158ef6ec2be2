"""Mechanisms, by the papers' shorthands.

Each takes a :class:`~bayespriv.Calibration` and (ε, δ), and exposes its ``guarantee`` and noise before
any data is seen; :func:`choose` builds every candidate on one calibration and compares them, and
:func:`build_on_demand` calibrates with as many draws as a guarantee needs. The privacy curves they
are accounted with live in :mod:`bayespriv.privacy`, their exact noise in :mod:`bayespriv.noise`.
"""

from bayespriv.privacy import Guarantee, Release, ReleaseOptions  # noqa: F401  (ReleaseOptions: in bayespriv.privacy.__all__)

from .apgm import APGM, APGMnG
from .choice import MechanismChoice, choose
from .expected_value import DauM, DirM, EigM, ExpM, Noiseless, NoiselessReport, noiseless_ok
from .groupdp import GroupDP
from .mechanism import Mechanism
from .on_demand import OnDemand, build_on_demand, draws_for_delta
from .optimal import OptimalGaussian
from .quilt import APMQM, MQM
from .sampled_moments import SampledMomentMechanism, WithExtraLaplace
from .subset_count import SubsetCountMechanism
from .utility import utility_curves
from .wasserstein import ApproxWasserstein, Wasserstein

__all__ = [
    "APGM",
    "APGMnG",
    "APMQM",
    "MQM",
    "ExpM",
    "DirM",
    "EigM",
    "DauM",
    "Wasserstein",
    "ApproxWasserstein",
    "GroupDP",
    "OptimalGaussian",
    "WithExtraLaplace",
    "Noiseless",
    "SubsetCountMechanism",
    "Mechanism",
    "Guarantee",
    "Release",
    "choose",
    "build_on_demand",
]


def _old_spellings() -> None:
    """Names this package exported before the privacy curves and the exact noise got stages of their own."""
    import sys

    import bayespriv.noise as noise
    import bayespriv.privacy as privacy
    import bayespriv._deprecation as _deprecation

    moved = {name: (getattr(privacy, name), f"bayespriv.privacy.{name}")
             for name in ("gaussian_radius", "gaussian_sigma", "classic_constant", "analytic_gaussian_log_delta",
                          "privacy_loss", "gaussian_delta", "gaussian_privacy_curve")}
    moved.update({name: (getattr(noise, name), f"bayespriv.noise.{name}")
                  for name in ("BitSource", "GaussianGridPlan", "LaplaceGridPlan", "plan_gaussian", "plan_laplace",
                               "discrete_gaussian", "discrete_laplace", "gaussian_tv_bound",
                               "delta_with_discretization")})
    _deprecation.moved_names(sys.modules[__name__], moved)
    _deprecation.alias_module(f"{__name__}.exact_noise", noise)


_old_spellings()
