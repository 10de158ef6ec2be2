"""How :func:`~bayespriv.networks.quilts.calibrate_quilts` searches and scores quilts: :class:`QuiltSearch`.

The settings are checked once, here, and hold their defaults' single source (``EXHAUSTIVE_MAX_NODES``;
the elimination bound ``MAX_FACTOR`` comes from :mod:`~bayespriv.networks.elimination`). Leaving quilts
out (``max_states``, ``max_factor``) or searching fewer (the candidate search) only removes options from
Algorithm 2's minimum: the guarantee is unchanged, as the trivial quilt is always scored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bayespriv._deprecation import option_value
from bayespriv._validation import check_positive_int, fail
from bayespriv.errors import ParameterTypeError
from ..elimination import MAX_FACTOR

__all__ = ["QuiltSearch", "EXHAUSTIVE_MAX_NODES", "MAX_STATES"]

#: Default largest network (all nodes) for the exhaustive search: 2^15 = 32768 subsets.
EXHAUSTIVE_MAX_NODES = 16
#: Hard ceiling of ``max_nodes`` (2^19 = 524 288 subsets: several seconds and as many Quilt objects).
_EXHAUSTIVE_CEILING = 20
#: Default largest joint table P(φ_Q, φ_i) (states) of a scored quilt of a discrete network.
MAX_STATES = 2**16


def _check_max_nodes(max_nodes: Any) -> int:
    """``max_nodes``: an integer in [1, 20] (also the check of :func:`markov_quilts`)."""
    m = check_positive_int(max_nodes, "max_nodes", minimum=1)
    if m > _EXHAUSTIVE_CEILING:
        raise fail("max_nodes", f"at most {_EXHAUSTIVE_CEILING} (2^{_EXHAUSTIVE_CEILING - 1} subsets)", max_nodes)
    return m


def _check_exhaustive(exhaustive: Any) -> bool | None:
    """``exhaustive``: True, False or None (also the check of :func:`markov_quilts`)."""
    if exhaustive is not None and not isinstance(exhaustive, bool):
        raise ParameterTypeError(f"exhaustive must be True, False or None (automatic); got {exhaustive!r}")
    return exhaustive


@dataclass(frozen=True, kw_only=True)
class QuiltSearch:
    """How :func:`~bayespriv.networks.quilts.calibrate_quilts` searches and scores quilts
    (``calibrate_quilts(..., search=...)``), checked once.

    Keyword-only and frozen; the default, ``QuiltSearch()``, searches every subset of a network of at most
    16 nodes and the candidate search beyond, without refinement. A wrong type is a
    :class:`~bayespriv.errors.ParameterTypeError` and a value out of range a
    :class:`~bayespriv.errors.ValidationError`, each naming the field. Leaving quilts out only removes
    options from Algorithm 2's minimum: the guarantee is unchanged (the trivial quilt is always scored).

    Attributes
    ----------
    exhaustive : bool or None, default None
        None: the exhaustive search for networks of at most ``max_nodes`` nodes, the candidate search
        beyond (enumerating 2^(m−1) subsets per node is infeasible there); the calibration's ``search``
        says which ran and why. True / False force one (True refuses a network above ``max_nodes``); see
        :func:`~bayespriv.networks.quilts.markov_quilts`.
    max_nodes : int, default 16
        Largest network (counting every node) for the exhaustive search, in [1, 20].
    k : int, optional
        Number of components of F (at least 1), when the query cannot tell without data.
    max_states : int, default 2^16
        Quilts of a discrete network whose joint table P(φ_Q, φ_i) has more states are not scored
        (counted in ``skipped``), at least 2. For continuous parameters, quilts whose grid does not fit
        (``influence_options`` of :func:`~bayespriv.networks.quilts.calibrate_quilts`) are skipped likewise.
    max_factor : int, default 2^22
        Discrete networks: quilts whose variable-elimination plan (fixed min-weight order, ties by node
        position, the same for any hash seed) builds a factor of more entries are not scored; the reason
        is kept in ``skip_reasons``. At least 2.
    refine : int, default 0
        Candidate search only: at most this many extra quilts scored per sensitive node (at least 0) by a
        greedy local improvement of the (Δ_{A∩N} F, e_θ) Pareto front — one-node moves (remove, add a moral
        neighbour, move a node to a moral neighbour) from every front quilt, repeated while a move joins
        the front. The front holds Algorithm 2's choice at every ε and θ, so this is independent of ε and
        deterministic. Refining only adds scored quilts: the noise never grows and each quilt is scored as
        without it, but it costs up to ``refine`` exact max-influences per sensitive node. Measured
        (benchmarks/RESULTS_quilts.md): ``refine=256`` reaches the exhaustive minimum on 90 of 90 small
        random cases where ``refine=0`` is up to 1.70× above it (18 cases above); on a random sparse
        100-node network with every node sensitive it lowers the APMQM scale by 16 % at ε = 0.3, 25 % at
        ε = 1 and 31 % at ε = 3 (unchanged at ε = 0.1 and 10), for 23× the calibration time. Pass
        ``QuiltSearch(refine=256)`` when the noise matters more than the calibration time.

    Examples
    --------
    >>> from bayespriv.networks import QuiltSearch
    >>> QuiltSearch(exhaustive=False, refine=256)
    QuiltSearch(exhaustive=False, max_nodes=16, k=None, max_states=65536, max_factor=4194304, refine=256)
    >>> QuiltSearch(max_nodes=40)
    Traceback (most recent call last):
        ...
    bayespriv.errors.ValidationError: max_nodes must be at most 20 (2^19 subsets); got 40
    """

    exhaustive: bool | None = None
    max_nodes: int = EXHAUSTIVE_MAX_NODES
    k: int | None = None
    max_states: int = MAX_STATES
    max_factor: int = MAX_FACTOR
    refine: int = 0

    def __post_init__(self) -> None:
        checked = {
            "exhaustive": _check_exhaustive(self.exhaustive),
            "max_nodes": _check_max_nodes(self.max_nodes),
            "k": None if self.k is None else check_positive_int(self.k, "k"),
            "max_states": check_positive_int(self.max_states, "max_states", minimum=2),
            "max_factor": check_positive_int(self.max_factor, "max_factor", minimum=2),
            "refine": check_positive_int(self.refine, "refine", minimum=0),
        }
        for name, value in checked.items():  # plain int, as the checks return them
            object.__setattr__(self, name, value)


#: How :func:`~bayespriv.networks.quilts.calibrate_quilts` searches when a call passes no ``search=``.
_DEFAULT_SEARCH = QuiltSearch()


def _search_options(owner: str, search: Any, old: Mapping[str, Any]) -> QuiltSearch:
    """The ``search=`` of a call of ``owner``: checked (None: the defaults), with the deprecated keywords of
    ``old`` (the settings' fields, once keywords of their own) folded in, warning. An old keyword given with
    ``search=`` is a :class:`~bayespriv.errors.ValidationError`; a keyword that was never accepted, a
    ``TypeError`` (as Python's)."""
    return option_value(owner, "search", QuiltSearch, search, old, _DEFAULT_SEARCH)
