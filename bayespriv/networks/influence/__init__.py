"""Max-influence of a sensitive attribute's parameter on a set of parameters.

Definition 7 of Zhang, Ohrimenko, Yang & Cummings, *Attribute Privacy*
(FAccT 2022, §5.1)::

    e_Θ(X_Q | X_i) = sup_{θ ∈ Θ} max_{φ_i^a, φ_i^b ∈ Φ_i} max_{φ_Q ∈ Φ_Q}
                     log P(φ_Q | φ_i^a, θ) / P(φ_Q | φ_i^b, θ)

computed over the *parameters* φ of the attributes (a Bayesian network whose
nodes are the φ's), not over the attributes' values.

Four cases are supported:

* a pgmpy :class:`~pgmpy.models.DiscreteBayesianNetwork` whose parameters
  take finitely many values — **exact**: one variable-elimination query gives
  the joint table P(φ_Q, φ_i) and the maximum runs over the whole table at
  once (no query per assignment);
* a pgmpy :class:`~pgmpy.models.LinearGaussianBayesianNetwork` — **exact**:
  given φ_i = a, φ_Q is Gaussian with a mean linear in a and a covariance that
  does not depend on a, so the log-ratio is linear in φ_Q. It is unbounded
  (``math.inf``, with the reason) unless φ_Q does not depend on φ_i at all
  (then 0);
* continuous parameters with a joint density — a PyMC model (turned into a
  :class:`~bayespriv.datamodels.parameters.ParameterDensity` by
  :func:`~bayespriv.datamodels.parameters.parameter_density`) or any object with
  ``names``, ``graph``, ``supports`` and ``log_density`` (see
  :func:`max_influence`) — a **numerical estimate** on quadrature grids, with
  a refinement margin, and ``math.inf`` with the reason when a limit analysis
  shows the ratio unbounded. Its result has ``exact=False`` and the assumption
  ``"numerical_influence"``;
* a family Θ: a sequence of networks / densities / PyMC models, or
  ``builder`` + ``grid`` (all combinations), giving the supremum and naming
  the worst member.

:class:`ParameterNetwork` wraps any of these with the record column(s) each
parameter governs: it is what :func:`~bayespriv.networks.quilts.calibrate_quilts`
takes, and it refuses a discrete network whose states are record values (a
record-level network such as "asia", where every record draws every node).
:func:`max_influence` and :class:`InfluenceEngine` accept it as well as the
bare network: e is a property of the network alone.

The result is a frozen :class:`MaxInfluence` (value, argmax assignment of φ_Q,
the pair of values of φ_i, the reason); ``float(result)`` is its value.

The networks are read through :mod:`bayespriv.datamodels.parameters.network`
(kinds, nodes, graphs, CPD tables, the Gaussian covariance): no module of
this package reads a CPD or a PyMC model itself.

Modules: :mod:`.influence_result` (:class:`MaxInfluence`), :mod:`.max_influence`
(:class:`InfluenceEngine`, :func:`max_influence`), :mod:`.discrete` and
:mod:`.linear_gaussian` (the exact kernels), :mod:`.grid` (quadrature grids) and
:mod:`.continuous` (the numerical estimate's stages).
"""

from bayespriv.datamodels.parameters.network import ParameterDensityLike, ParameterNetwork
from .discrete import MAX_JOINT_STATES
from .max_influence import InfluenceEngine, max_influence, network_structure, network_tables
from .grid import MAX_GRID_POINTS
from .influence_result import MaxInfluence

__all__ = [
    "MaxInfluence",
    "max_influence",
    "InfluenceEngine",
    "ParameterDensityLike",
    "ParameterNetwork",
    "MAX_GRID_POINTS",
    "MAX_JOINT_STATES",
    "network_structure",
    "network_tables",
]
