"""The calibration stage of APMQM: :class:`QuiltCalibration` and :func:`calibrate_quilts`.

:func:`calibrate_quilts` prepares APMQM (Algorithm 2 of Zhang, Ohrimenko,
Yang & Cummings, *Attribute Privacy*, FAccT 2022): it reads the network over
parameters (a :class:`~bayespriv.networks.influence.ParameterNetwork`, a
PyMC model or a parameter density; a bare record-level pgmpy network is
refused), runs the scored search of :mod:`~bayespriv.networks.quilts.search`
and returns a :class:`QuiltCalibration`: for each sensitive node, its quilts
with the column sensitivity Δ_{A∩N} F of the query and the max-influence
e_Θ(X_Q | X_i). It does not depend on ε; the mechanism picks the quilt for
its ε (:meth:`QuiltCalibration.best`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from bayespriv._validation import check_positive_int, fail, seal_fields
from bayespriv.errors import ParameterTypeError, ValidationError
from bayespriv.queries import Query
from ..quilt_search import NodeLayout
from bayespriv.calibration.provenance import FileProvenance
from bayespriv.datamodels.parameters.network import is_bare_pgmpy, parameter_model_with_default_columns
from ..influence import InfluenceEngine, ParameterNetwork, network_structure
from .enumeration import Quilt, _Structure
from .scores import QuiltScore, _best_per_member, _scores
from .search import _score_quilts, _search_inputs
from .search_options import QuiltSearch, _search_options

if TYPE_CHECKING:  # imported where used: it costs start-up time
    import networkx as nx

__all__ = ["QuiltCalibration", "calibrate_quilts"]


@seal_fields
@dataclass(frozen=True, eq=False)
class QuiltCalibration:
    """What APMQM needs, before ε and before any data (built by :func:`calibrate_quilts`).

    Attributes
    ----------
    networks : tuple
        The network(s) over the attributes' parameters (several: a family Θ).
    graph : networkx.DiGraph
        The DAG over the parameters.
    sensitive : tuple
        Sensitive nodes C.
    query : Query
    n_records : int
    columns : mapping
        Parameter node -> tuple of the record columns it governs (``()``:
        a latent parameter).
    queried : frozenset
        Nodes A whose columns the query reads.
    sensitivity : float
        Δ_A F (the trivial quilt's score numerator).
    candidates : mapping
        Sensitive node -> tuple of :class:`QuiltScore` (every quilt searched
        except those dominated by a sub-quilt with no larger Δ, which can never
        score lower since e only grows with Q).
    n_quilts : mapping
        Sensitive node -> number of quilts searched.
    skipped : mapping
        Sensitive node -> number of quilts not scored (joint table above
        ``max_states``, elimination plan above ``max_factor``, grid too large).
    exhaustive : bool
        Whether every subset of the other nodes was searched (see ``search``).
    confidence : float or None
        1.0: every max-influence is exact; None when some are numerical
        estimates (continuous parameters; assumption ``"numerical_influence"``).
    k : int
        Number of components of F.
    component_names : tuple of str
    assumptions : tuple of str
        ``"parameters_bayes_net"`` (the data arise from a network over
        parameters in Θ, see :class:`ParameterNetwork`) and those of the
        max-influences (``"numerical_influence"``, ``"truncated_prior"``).
    engine : InfluenceEngine
    parameter_network : ParameterNetwork
        The declared network over parameters, with its columns.
    skip_reasons : mapping
        Sensitive node -> the reason each skipped quilt was not scored (a
        read-only sequence of str; a reason naming every node of a large
        refused quilt is written when read).
    provenance : FileProvenance or None
        The file it was loaded from and whether it verified (None when
        computed in this process); see :attr:`Calibration.provenance
        <bayespriv.Calibration.provenance>`.
    search : str
        How the quilts were searched, in words: exhaustive, or the candidate
        search with its refinement, and whether it was chosen automatically
        because the network has more than ``max_nodes`` nodes.

    Notes
    -----
    For a family Θ each :class:`QuiltScore` keeps e_θ of every member
    (``influence.per_member``): APMQM chooses the best quilt per θ
    (:meth:`best` with ``member``; :meth:`member_scores`).
    """

    networks: tuple[Any, ...]
    graph: nx.DiGraph = field(repr=False)
    sensitive: tuple[Hashable, ...]
    query: Query
    n_records: int
    columns: Mapping[Hashable, tuple[str, ...]]
    queried: frozenset
    sensitivity: float
    candidates: Mapping[Hashable, tuple[QuiltScore, ...]] = field(repr=False)
    n_quilts: Mapping[Hashable, int]
    skipped: Mapping[Hashable, int]
    exhaustive: bool
    confidence: float | None
    k: int
    component_names: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    engine: InfluenceEngine | None = field(default=None, repr=False)
    parameter_network: ParameterNetwork | None = field(default=None, repr=False)
    skip_reasons: Mapping[Hashable, Sequence[str]] = field(default_factory=lambda: MappingProxyType({}), repr=False)
    provenance: FileProvenance | None = field(default=None, repr=False)
    search: str = ""

    @property
    def content_hash(self) -> str | None:
        """The verified SHA-256 content digest of the file this calibration was loaded from (see
        :attr:`Calibration.content_hash <bayespriv.Calibration.content_hash>`); None otherwise."""
        p = self.provenance
        return p.content_hash if p is not None and p.verified else None

    @property
    def query_fingerprint(self) -> None:
        """None: a quilt calibration records no fingerprint of its query (the contract every calibration
        provides, :class:`~bayespriv.calibration.CalibrationLike`)."""
        return None

    def roles(self, node: Hashable) -> np.ndarray:
        """The candidates of a sensitive ``node`` as an int8 array (candidates × network nodes, in the
        graph's node order): 0 nearby, 1 quilt, 2 remote. Read from the search's masks, without building
        the nearby and remote sets."""
        if node not in self.candidates:
            raise fail("node", f"a sensitive node {list(self.sensitive)!r}", node)
        layout = self._layout()
        rows = [c.quilt.roles(layout) for c in self.candidates[node]]
        return np.array(rows, dtype=np.int8).reshape(len(rows), len(layout.nodes))

    def _layout(self) -> NodeLayout:
        pnet = self.parameter_network
        if pnet is not None and tuple(network_structure(pnet).nodes) == tuple(self.graph.nodes()):
            return network_structure(pnet).layout
        return NodeLayout(tuple(self.graph.nodes()))

    @property
    def n_members(self) -> int:
        """Number of members θ of Θ (1 for a single network)."""
        return len(self.networks)

    @property
    def member_labels(self) -> tuple[Any, ...]:
        """A label per member θ (the engine's member labels, else indices)."""
        labels = getattr(self.engine, "members", None)
        return tuple(labels) if labels is not None and len(labels) == self.n_members else tuple(range(self.n_members))

    def member_scores(self, node: Hashable, epsilon: float) -> np.ndarray:
        """σ(Q, θ) = Δ_{A∩N} F / (ε − e_θ(X_Q | X_i)) for every member θ and candidate (array members × candidates;
        ``inf`` where e_θ ≥ ε, 0 where Δ = 0 and e_θ < ε)."""
        if node not in self.candidates:
            raise fail("node", f"a sensitive node {list(self.sensitive)!r}", node)
        return _scores(self.candidates[node], self.n_members, epsilon)[0]

    def evaluate(self, node: Hashable, quilt: Quilt | Iterable[Hashable]) -> QuiltScore:
        """The :class:`QuiltScore` of any set Q (or :class:`Quilt`) for a sensitive ``node``.

        The remote set is recomputed (every node d-separated from ``node`` given
        Q, checked with :func:`networkx.is_d_separator`), so a Quilt passed in
        with a different split is refused rather than trusted.
        """
        import networkx as nx
        if node not in self.candidates:
            raise fail("node", f"a sensitive node {list(self.sensitive)!r}", node)
        members = getattr(quilt, "quilt", quilt)
        if isinstance(members, (str, bytes)) or not isinstance(members, Iterable):
            raise ParameterTypeError(f"quilt must be a collection of nodes or a Quilt; got {type(quilt).__name__}")
        q = frozenset(members)
        structure = self._structure()
        unknown = [v for v in q if v not in structure.index]
        if unknown or node in q:
            raise fail("quilt", f"nodes of the network other than {node!r}", sorted(map(str, q)))
        z = np.zeros((1, len(structure.nodes)), dtype=bool)
        z[0, [structure.index[v] for v in q]] = True
        conn = structure.d_connected(structure.index[node], z)[0]
        remote = frozenset(v for j, v in enumerate(structure.nodes) if not conn[j] and not z[0, j])
        if remote and not nx.is_d_separator(self.graph, {node}, set(remote), set(q)):  # pragma: no cover - safety net
            raise ValidationError(f"internal check failed: {sorted(map(str, remote))} not d-separated from {node!r}")
        full = Quilt(q, frozenset(structure.nodes) - q - remote, remote)
        if isinstance(quilt, Quilt) and quilt != full:
            raise fail("quilt", f"the Markov quilt of {node!r} with the largest remote set, {full}", str(quilt))
        near_queried = full.nearby & self.queried
        cols = [c for v in near_queried for c in self.columns[v]]
        sens = self.query.column_sensitivity(cols, self.n_records, ord=1) if cols else 0.0
        engine = self.engine if self.engine is not None else InfluenceEngine(list(self.networks))
        return QuiltScore(full, float(sens), engine(node, q))

    def _structure(self) -> _Structure:
        """The graph index: the declared network's (built once per network), else one of ``graph``."""
        pnet = self.parameter_network
        if pnet is not None and tuple(network_structure(pnet).nodes) == tuple(self.graph.nodes()):
            return network_structure(pnet)
        return _Structure(self.graph)

    def to_netcdf(self, path: Any, *, seed: int | None = None, key: bytes | None = None) -> Any:
        """Save to a netCDF file, signed with ``key`` (default: the owner's key;
        :func:`~bayespriv.files.calibration_io.save_calibration`).

        Only calibrations of discrete parameter networks (pgmpy
        ``DiscreteBayesianNetwork``) can be saved: the file holds each
        network's structure and CPD tables (float64, exact) and every scored
        quilt; :func:`~bayespriv.files.calibration_io.load_calibration` (with the
        query) rebuilds an equal calibration, on which APMQM has the same noise
        and guarantee bit for bit.
        """
        from bayespriv._late import late

        return late("save_calibration")(self, path, seed=seed, key=key)

    def best(self, node: Hashable, epsilon: float, member: int | None = None) -> QuiltScore | None:
        """Algorithm 2's choice for ``node`` at ε: the least score among quilts with e < ε.

        ``member=None`` uses e_Θ = sup over θ (one quilt for all of Θ); an
        index θ uses e_θ of that member (the per-θ choice of APMQM). Ties go to
        the smaller max-influence (equal scores give equal noise, and a
        smaller e is the stronger statement: with no noise, i.e. A ∩ N = ∅,
        the privacy loss is at most e), then the smaller quilt. None when no
        quilt has e < ε (cannot happen with the trivial quilt, e = 0).
        """
        if node not in self.candidates:
            raise fail("node", f"a sensitive node {list(self.sensitive)!r}", node)
        cands = self.candidates[node]
        if member is None:
            usable = [(c.score(epsilon), c.max_influence, len(c.quilt.quilt), k, c)
                      for k, c in enumerate(cands) if c.max_influence < epsilon]
            return min(usable, key=lambda t: t[:4])[4] if usable else None
        if isinstance(member, bool) or not isinstance(member, (int, np.integer)) or not 0 <= member < self.n_members:
            raise fail("member", f"None or an integer in [0, {self.n_members - 1}]", member)
        pick = _best_per_member(cands, self.n_members, epsilon)[int(member)]
        return None if pick < 0 else cands[pick]

    def __repr__(self) -> str:
        from bayespriv._late import late

        return late("quilt_calibration_repr")(self)

    def _repr_html_(self) -> str:
        from bayespriv._late import late

        return late("quilt_calibration_html")(self)


def _bare_network_error(network: Any) -> ParameterTypeError:
    """The error for a bare pgmpy network passed where a network over parameters is meant."""
    members = network if isinstance(network, (list, tuple)) else [network]
    kind = ", ".join(dict.fromkeys(type(m).__name__ for m in members))
    return ParameterTypeError(
        "network must be a ParameterNetwork — a Bayesian network whose nodes are the distribution parameters φ "
        "behind the attributes (e.g. the share of smokers), drawn once per dataset, with columns= naming the record "
        "column(s) each parameter governs — or a PyMC model / parameter density over parameters; got a bare "
        f"{kind}. A pgmpy network usually describes one record (every record draws every node, like the classic "
        "'asia'): its nodes are attributes, not parameters, and APMQM's Theorem 3 does not cover it (it can then "
        "release an exact count as private). If the nodes really are parameters, wrap the network: "
        "calibrate_quilts(ParameterNetwork(network, columns={node: column, ...}), ...). For a record-level network "
        "use BayesNetDataModel(network, n_records=...) with calibrate(...) and a Gaussian or Wasserstein mechanism"
    )


def _parameter_network(network: Any, columns: Any) -> ParameterNetwork:
    """Stage 1 of :func:`calibrate_quilts`: the network over parameters, with the columns each governs."""
    if isinstance(network, ParameterNetwork):
        if columns is not None:
            raise fail("columns", "None when network is a ParameterNetwork (it carries its columns)", columns)
        return network
    if is_bare_pgmpy(network):
        raise _bare_network_error(network)
    return parameter_model_with_default_columns(network, columns)


def calibrate_quilts(
    network: ParameterNetwork | Any,
    sensitive: Hashable | Sequence[Hashable],
    query: Query,
    *,
    n_records: int,
    columns: Mapping[Hashable, str | Sequence[str]] | None = None,
    influence_options: Mapping[str, Any] | None = None,
    search: QuiltSearch | None = None,
    **deprecated: Any,
) -> QuiltCalibration:
    """Quilts, column sensitivities and max-influences for APMQM (independent of ε).

    Parameters
    ----------
    network : ParameterNetwork, PyMC model, parameter density, or sequence of the latter
        The Bayesian network over the attributes' **distribution parameters**
        φ (Definition 5 of the attribute-privacy paper: φ_j governs attribute
        j, the φ's are drawn once per dataset, and given them every record's
        attributes are drawn independently). A pgmpy network must be wrapped
        in :class:`~bayespriv.networks.influence.ParameterNetwork`, which
        names the record column(s) each parameter governs; a bare pgmpy
        network is refused (it usually describes one record, like "asia",
        and APMQM's theorem does not cover that). A ``DiscreteBayesianNetwork``
        gives exact max-influences; a PyMC model (its scalar continuous free
        random variables, graph read from the model) or a parameter density
        gives numerical estimates (see
        :func:`~bayespriv.networks.influence.max_influence`), and the
        calibration then carries the assumption ``"numerical_influence"`` and
        confidence None; a sequence (same graph) is a family Θ and the
        supremum is taken.
    sensitive : node or sequence of nodes
        The parameters of the sensitive attributes C.
    query : Query
        F; it must read only columns governed by parameters of the network
        and give :meth:`~bayespriv.Query.column_sensitivity` (ready-made
        counts, shares and bounded means do; a user query declares
        ``column_sensitivities``).
    n_records : int
        Rows of the dataset the mechanism will release on.
    columns : mapping, optional
        Only with a PyMC model or parameter density: node -> dataset
        column(s) of its attribute; default: the node's name. A
        ParameterNetwork carries its own (passing both is refused).
    influence_options : mapping, optional
        Continuous parameters: ``resolution``, ``bounds`` and ``max_points``
        of :func:`~bayespriv.networks.influence.max_influence` (quilts whose
        grid does not fit are skipped, as those above ``search.max_states`` are).
    search : QuiltSearch, optional
        How the quilts are searched and which are scored — exhaustive or
        candidate search, ``max_nodes``, ``k``, ``max_states``,
        ``max_factor``, ``refine``: :class:`~bayespriv.networks.QuiltSearch`
        (default: exhaustive up to 16 nodes, no refinement). ``exhaustive=``,
        ``max_nodes=``, ``k=``, ``max_states=``, ``max_factor=`` and
        ``refine=`` are its deprecated spelling, kept for one release.

    Returns
    -------
    QuiltCalibration

    Raises
    ------
    ParameterTypeError
        A bare pgmpy network (wrap it in ``ParameterNetwork`` if its nodes
        are parameters; use ``BayesNetDataModel`` and
        :func:`~bayespriv.calibrate` if it describes records).
    ValidationError
        What ``ParameterNetwork`` refuses (e.g. states that are record
        values), ``columns`` together with a ParameterNetwork, unknown
        sensitive node, a query reading columns that no parameter governs, a
        query without column sensitivity, a network above ``max_nodes``
        with ``QuiltSearch(exhaustive=True)``.

    Privacy
    -------
    The calibration holds what Theorem 3 of Zhang, Ohrimenko, Yang & Cummings
    (FAccT 2022, Appendix D) needs for Algorithm 2: ε-distributional
    attribute privacy (Definition 5) of the sensitive parameters, with Θ the
    network(s) over parameters. Assumption ``"parameters_bayes_net"``: the
    φ's are drawn once per dataset from a network in Θ and, given them, the
    attributes are independent with attribute j depending on φ_j alone. It
    is the user's declaration (wrapping in ``ParameterNetwork``) and cannot
    be tested on the network's tables, except that a discrete node whose
    states are record values (strings, booleans) is refused. Bound: exact
    for discrete networks (confidence 1), numerical estimates otherwise.
    On a record-level network the same numbers would mean nothing: asia's
    quilt {dysp} of smoke has e = 0.548 < 1 and Δ_{A∩N} F = 0, yet the exact
    count of dysp among 500 records has δ ≈ 0.49 at ε = 1 between shares of
    smokers 0.4 and 0.6 (``tests/calibration/test_parameter_network.py``).

    Examples
    --------
    Two parameters — the share of high incomes and the mean SAT score — with the score depending on the
    share; the secret is the share, the query reads both columns:

    >>> import bayespriv as bp
    >>> from pgmpy.models import DiscreteBayesianNetwork
    >>> from pgmpy.factors.discrete import TabularCPD
    >>> bn = DiscreteBayesianNetwork([("p_high_income", "mean_sat")])
    >>> bn.add_cpds(TabularCPD("p_high_income", 2, [[0.5], [0.5]], state_names={"p_high_income": [0.2, 0.8]}),
    ...             TabularCPD("mean_sat", 2, [[0.7, 0.3], [0.3, 0.7]], evidence=["p_high_income"],
    ...                        evidence_card=[2], state_names={"mean_sat": [1100.0, 1300.0],
    ...                                                        "p_high_income": [0.2, 0.8]}))
    >>> net = bp.ParameterNetwork(bn, columns={"p_high_income": "income", "mean_sat": "sat"})
    >>> query = bp.stack(bp.mean("income", bounds=(0, 1)), bp.mean("sat", bounds=(400, 1600)))
    >>> cal = bp.calibrate_quilts(net, "p_high_income", query, n_records=100)
    >>> mech = bp.mechanisms.APMQM(cal, epsilon=1.0)

    Without a quilt the Laplace scale would be the query's whole sensitivity over both columns,
    1 + 1200 = 1201. The quilt {mean_sat} leaves only the income mean (sensitivity 1) to cover, at
    ε minus the max-influence of mean_sat on the share (0.847): the scale is 1 / (1 − 0.847).

    >>> [round(float(scale), 2) for scale in mech.noise_scale]
    [6.55, 6.55]
    """
    options = _search_options("calibrate_quilts", search, deprecated)
    if not isinstance(query, Query):
        raise ParameterTypeError(f"query must be a bayespriv Query; got {type(query).__name__}")
    n = check_positive_int(n_records, "n_records")
    if influence_options is not None and not isinstance(influence_options, Mapping):
        raise ParameterTypeError(f"influence_options must be a mapping; got {type(influence_options).__name__}")
    pnet = _parameter_network(network, columns)
    inputs = _search_inputs(pnet, sensitive, query, n, options, influence_options)
    scored = _score_quilts(inputs, query)
    candidates = scored.candidates
    numerical = any(not c.influence.exact for scores in candidates.values() for c in scores)
    extra = tuple(dict.fromkeys(a for scores in candidates.values() for c in scores for a in c.influence.assumptions))
    return QuiltCalibration(
        networks=inputs.engine.networks,
        graph=inputs.graph,
        sensitive=inputs.sensitive,
        query=query,
        n_records=n,
        columns=pnet.columns,
        queried=inputs.queried,
        sensitivity=scored.sensitivity,
        candidates=MappingProxyType(candidates),
        n_quilts=MappingProxyType(scored.n_quilts),
        skipped=MappingProxyType(scored.skipped),
        skip_reasons=MappingProxyType(scored.skip_reasons),
        exhaustive=inputs.exhaustive,
        confidence=None if numerical else 1.0,
        k=inputs.k,
        component_names=query.component_names(inputs.k),
        assumptions=("parameters_bayes_net",) + extra,
        engine=inputs.engine,
        parameter_network=pnet,
        search=inputs.note,
    )
