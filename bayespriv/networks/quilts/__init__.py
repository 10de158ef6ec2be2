"""Markov quilts of a Bayesian network, and the calibration stage of the quilt mechanisms.

A **Markov quilt** of a node X_i (Definition 6 of Zhang, Ohrimenko, Yang &
Cummings, *Attribute Privacy*, FAccT 2022, after Song, Wang & Chaudhuri,
SIGMOD 2017) is a set of nodes X_Q whose deletion splits the others into a
*nearby* part X_N ∋ X_i and a *remote* part X_R with X_R ⊥ X_i | X_Q. For each
Q we take the largest remote set — every node d-separated from X_i by Q —
which gives the smallest nearby set, and so the least noise.

* :func:`markov_quilts` lists quilts of one node: every subset of the other
  nodes (exhaustive, small networks) or a candidate search (large networks)
  (:mod:`.enumeration`).
* :class:`ParameterNetwork` (from :mod:`bayespriv.networks.influence`)
  declares the network APMQM takes: its nodes are the distribution
  *parameters* φ behind the attributes (drawn once per dataset), with the
  record columns each governs — not one record's attributes (a record-level
  network such as "asia" is refused, see :func:`calibrate_quilts`).
* :func:`calibrate_quilts` prepares APMQM (Algorithm 2 of the attribute-privacy
  paper): for each sensitive node, its quilts with the column sensitivity
  Δ_{A∩N} F of the query and the max-influence e_Θ(X_Q | X_i) — exact for
  discrete parameter networks, a numerical estimate (assumption
  ``"numerical_influence"``) for continuous parameters of PyMC models. It
  does not depend on ε; the mechanism picks the quilt for its ε
  (:mod:`.quilt_calibration`, with the search in :mod:`.search`, its settings
  :class:`QuiltSearch` in :mod:`.search_options` and the scores in
  :mod:`.scores`).
* :func:`calibrate_chain` prepares MQM (Song et al. 2017) for one attribute
  observed along a finite-state :class:`MarkovChain`: the exact
  max-influence of every window quilt {X_{i−a}, X_{i+b}} of every position
  (:mod:`.chains`).
* :mod:`bayespriv.files.quilt_io` writes and reads quilt and chain calibrations for
  :mod:`bayespriv.files.calibration_io`.

d-separation of all nodes from X_i given Q is computed for many Q at once by
a vectorised Bayes-ball (Shachter 1998; Koller & Friedman 2009, Algorithm 3.1):
sparse boolean products over (quilts × nodes) states until a fixed point
(:class:`~bayespriv.networks.quilt_search.GraphIndex`). Exact discrete
max-influences use a fixed-order variable elimination with a bound on its
largest factor (:mod:`~bayespriv.networks.elimination`); nothing depends
on ``PYTHONHASHSEED``. For a family Θ the per-member max-influences are kept,
so APMQM and MQM choose the quilt per θ.
"""

from bayespriv.datamodels.parameters.chain import MarkovChain
from ..influence import ParameterNetwork
from .search_options import EXHAUSTIVE_MAX_NODES, QuiltSearch
from .enumeration import Quilt, as_digraph, markov_quilts
from .scores import QuiltScore
from .quilt_calibration import QuiltCalibration, calibrate_quilts
from .chains import ChainCalibration, calibrate_chain

__all__ = [
    "ParameterNetwork",
    "Quilt",
    "markov_quilts",
    "EXHAUSTIVE_MAX_NODES",
    "QuiltSearch",
    "QuiltScore",
    "QuiltCalibration",
    "calibrate_quilts",
    "MarkovChain",
    "ChainCalibration",
    "calibrate_chain",
    "as_digraph",
]
