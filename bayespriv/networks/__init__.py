"""Parameter networks: max-influence, variable elimination, Markov quilts and chains (APMQM, MQM).

The second pipeline of the data flow: a network over the distribution parameters φ (declared with
:class:`ParameterNetwork`, or a :class:`MarkovChain`) → max-influence of each quilt → the
calibration an APMQM or MQM mechanism takes.

* :func:`max_influence`, :class:`MaxInfluence`, :class:`ParameterNetwork` (:mod:`.influence`).
* :func:`markov_quilts`, :func:`calibrate_quilts` (its search settings: :class:`QuiltSearch`),
  :class:`QuiltCalibration`, :class:`Quilt`, :class:`QuiltScore` (:mod:`.quilts`, the candidate
  search in :mod:`.quilt_search`, exact elimination in :mod:`.elimination`).
* :func:`calibrate_chain`, :class:`ChainCalibration`, :class:`MarkovChain` (:mod:`.quilts.chains`).
"""

from .influence import MaxInfluence, ParameterNetwork, max_influence
from .quilts import (
    ChainCalibration,
    MarkovChain,
    Quilt,
    QuiltCalibration,
    QuiltScore,
    QuiltSearch,
    calibrate_chain,
    calibrate_quilts,
    markov_quilts,
)

__all__ = [
    "MaxInfluence",
    "ParameterNetwork",
    "max_influence",
    "ChainCalibration",
    "MarkovChain",
    "Quilt",
    "QuiltCalibration",
    "QuiltScore",
    "QuiltSearch",
    "calibrate_chain",
    "calibrate_quilts",
    "markov_quilts",
]
