"""Quilt and chain calibrations in a calibration file: the savers and loaders behind :mod:`bayespriv.files.calibration_io`.

:func:`~bayespriv.files.calibration_io.save_calibration` and
:func:`~bayespriv.files.calibration_io.load_calibration` dispatch here on the
calibration's type and on the file's ``kind``; the format, the codec and the
signed write are those of :mod:`bayespriv.files.fileformat`.

A :class:`~bayespriv.networks.ChainCalibration` (for MQM) is saved too
(``kind: "chain"`` in the metadata): its chains, the exact max-influence table
and the Lipschitz constant, bit for bit; loading it needs the query (MQM reads
its columns).

A :class:`~bayespriv.networks.QuiltCalibration` (for APMQM) of a
**discrete** parameter network is saved too (``kind: "quilt"``): each member
network (pgmpy ``DiscreteBayesianNetwork``) as a group ``network_000``,
``network_001``, … holding its node and edge order and, per CPD in the
network's order, the variables (CPD variable first, then its evidence),
cardinalities, state names (exact JSON) and the full value array
``cpd_XXX`` (float64, bit for bit); the root holds every scored quilt —
``role (candidate, node)`` (0 nearby, 1 quilt, 2 remote),
``candidate_sensitive``, ``quilt_sensitivity`` (Δ_{A∩N} F),
``max_influence`` and ``influence_margin`` (float64) — with the other fields
of each max-influence (maximiser, pair, reason, member, exactness,
assumptions) in the metadata. Loading (the query is required, as APMQM reads
its columns and column sensitivities) rebuilds the networks, the
:class:`~bayespriv.networks.influence.ParameterNetwork` and a fresh
influence engine, and takes the scored quilts as stored (nothing is
recomputed): APMQM on it has the same ``noise_cov``, ``scale`` and
``guarantee``; a quilt forced through ``quilts=`` is evaluated on the rebuilt
network, whose CPDs are bit-identical. Quilt calibrations of PyMC models,
parameter densities and linear Gaussian networks are refused (their
networks are code or objects with no faithful file form here: run
:func:`~bayespriv.networks.calibrate_quilts` in the releasing process).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from bayespriv._validation import fail
from bayespriv.datamodels.network_tables import CPDTable, discrete_network
from bayespriv.datamodels.parameters.chain import MarkovChain
from bayespriv.errors import ValidationError
from bayespriv.queries import Query
import bayespriv.files.consistency as consistency
from .fileformat import _decode, _decode_key, _dumps, _Encoder, _stamp, _write
from bayespriv.networks.influence import InfluenceEngine, MaxInfluence, ParameterNetwork
from bayespriv.calibration.provenance import UNVERIFIED, FileProvenance
from bayespriv.networks.quilts.quilt_calibration import QuiltCalibration
from bayespriv.networks.quilts.chains import ChainCalibration
from bayespriv.networks.quilts.enumeration import Quilt, as_digraph
from bayespriv.networks.quilts.scores import QuiltScore

if TYPE_CHECKING:  # imported where used: it costs start-up time
    import xarray as xr

__all__: list[str] = []


def _save_chain(cal: ChainCalibration, p: Path, seed: int | list[int] | None, key: bytes | None) -> Path:
    """A ChainCalibration: chains, the max-influence table and the constants MQM reads."""
    import xarray as xr
    enc = _Encoder()
    states = enc.encode(list(cal.chains[0].states), "chains.states")
    if enc.dropped:
        raise fail("chain states", "plain data (str, number, bool) to be saved", cal.chains[0].states)
    ds = xr.Dataset({
        "transition": (("chain", "state", "state_b"), np.stack([c.transition for c in cal.chains])),
        "initial": (("chain", "state"), np.stack([c.initial for c in cal.chains])),
        "influence": (("position", "before", "after"), np.asarray(cal.influence, dtype=np.float64)),
        "component_name": (("component",), np.array(cal.component_names, dtype=object)),
    })
    if cal.member_influence is not None:  # a family: e_θ per chain (MQM chooses the quilt per chain)
        ds["member_influence"] = (("chain", "position", "before", "after"),
                                  np.asarray(cal.member_influence, dtype=np.float64))
    q = cal.query
    meta = {"kind": "chain", "states": states, "length": cal.length, "column": cal.column, "lipschitz": cal.lipschitz,
            "window": cal.window, "k": cal.k, "confidence": cal.confidence, "assumptions": list(cal.assumptions),
            "query_name": q.name if q is not None else None,
            "query_columns": list(q.columns) if q is not None else None,
            "query_fingerprint": q.fingerprint if q is not None else None, "dropped": []}
    return _write({"/": _stamp(ds, meta, seed)}, p, key)


def _load_chain(ds: xr.Dataset, meta: dict[str, Any], query: Query | None, p: Path,
                provenance: FileProvenance | None = None) -> Any:
    """The ChainCalibration of a file, its arrays set as stored (no re-normalisation, so bit for bit)."""
    if query is None:
        raise ValidationError(f"query must be given to load the chain calibration in {str(p)!r} (MQM reads its "
                              f"columns; the file holds only its fingerprint); got None")
    states = tuple(_decode(meta["states"]))
    chains = []
    for p_arr, q_arr in zip(ds["transition"].values, ds["initial"].values):
        try:
            MarkovChain(p_arr, q_arr, states)  # validates the stored numbers
        except ValidationError as exc:
            raise consistency._refuse(f"the calibration file {str(p)!r}", f"a chain that is not a Markov chain ({exc})") \
                from exc
        chain = object.__new__(MarkovChain)
        for name, value in (("transition", np.array(p_arr, dtype=np.float64)),
                            ("initial", np.array(q_arr, dtype=np.float64))):
            value.setflags(write=False)
            object.__setattr__(chain, name, value)
        object.__setattr__(chain, "states", states)
        chains.append(chain)
    influence = np.array(ds["influence"].values, dtype=np.float64)
    influence.setflags(write=False)
    members = None
    if "member_influence" in ds:
        members = np.array(ds["member_influence"].values, dtype=np.float64)
        members.setflags(write=False)
    names = tuple(str(n) for n in ds["component_name"].values.tolist())
    return ChainCalibration(tuple(chains), int(meta["length"]), str(meta["column"]), query, float(meta["lipschitz"]),
                            int(meta["window"]), influence, int(meta["k"]), names, meta["confidence"],
                            _assumptions(meta["assumptions"], provenance), members, provenance=provenance)


def _assumptions(saved: Any, provenance: FileProvenance | None) -> tuple[str, ...]:
    """The saved assumptions, plus ``unverified_calibration`` for a file that did not verify."""
    out = tuple(str(a) for a in saved)
    if provenance is not None and not provenance.verified and UNVERIFIED not in out:
        out += (UNVERIFIED,)
    return out


# -- quilt calibrations (APMQM) of discrete parameter networks -----------------------------------------------------
#: The only kind of parameter network whose quilt calibration can be saved (see the module docstring).
_SAVABLE_NETWORK = "discrete"


def _check_quilt_savable(cal: QuiltCalibration) -> Any:
    """The ParameterNetwork of a savable quilt calibration: discrete pgmpy networks only."""
    pnet = cal.parameter_network
    kind = getattr(pnet, "kind", None)
    if kind != _SAVABLE_NETWORK:
        shown = "no declared parameter network" if pnet is None else f"a {kind!r} parameter network"
        raise ValidationError(
            "calibration must be a QuiltCalibration of a discrete parameter network (pgmpy DiscreteBayesianNetwork "
            f"wrapped in ParameterNetwork) to be saved; got one with {shown}. PyMC models, parameter densities and "
            "linear Gaussian networks have no faithful file form here: run calibrate_quilts in the process that "
            "releases. Calibration and ChainCalibration (MQM) can be saved too.")
    return pnet


def _node_table(nodes: list, enc: _Encoder) -> list:
    keys = [enc._key(v, f"nodes[{i}]") for i, v in enumerate(nodes)]
    if enc.dropped:
        raise fail("network nodes", "plain data (str, number, bool or tuples of them) to be saved", nodes)
    return keys


def _state_list(states: Any, where: str, enc: _Encoder) -> list:
    out = [enc._key(s, where) for s in states]
    if enc.dropped:
        raise fail(where, "plain data (numbers or tuples of numbers) to be saved", list(states))
    return out


def _network_group(net: Any, index: Mapping[Any, int], enc: _Encoder) -> xr.Dataset:
    """One pgmpy DiscreteBayesianNetwork: node and edge order, and every CPD's full value array (float64, exact)."""
    import xarray as xr
    data: dict[str, Any] = {}
    cpds = []
    for c, cpd in enumerate(net.get_cpds()):
        name = f"cpd_{c:03d}"
        values = np.asarray(cpd.values)
        if values.dtype != np.float64:
            raise fail(f"CPD of {cpd.variable!r}", "float64 values to be saved bit for bit", str(values.dtype))
        data[name] = (tuple(f"{name}_axis{a}" for a in range(values.ndim)), values)
        cpds.append({"array": name, "variables": [index[v] for v in cpd.variables],
                     "cardinality": [int(k) for k in cpd.cardinality],
                     "states": [_state_list(cpd.state_names[v], f"states of {v!r}", enc) for v in cpd.variables]})
    meta = {"nodes": [index[v] for v in net.nodes()], "edges": [[index[u], index[v]] for u, v in net.edges()],
            "cpds": cpds}
    ds = xr.Dataset(data)
    ds.attrs["bayespriv_network"] = _dumps(meta)
    return ds


def _influence_meta(inf: Any, index: Mapping[Any, int], enc: _Encoder, where: str) -> dict[str, Any]:
    """A MaxInfluence's non-array fields (value and margin go to arrays)."""
    assignment = None if inf.assignment is None else [[index[v], enc._key(s, where)] for v, s in inf.assignment.items()]
    pair = None if inf.pair is None else [enc._key(s, where) for s in inf.pair]
    out = {"node": index[inf.node], "quilt": sorted(index[v] for v in inf.quilt), "assignment": assignment,
           "pair": pair, "reason": inf.reason, "member": enc.encode(inf.member, where), "exact": bool(inf.exact),
           "assumptions": list(inf.assumptions)}
    if enc.dropped:
        raise fail(where, "plain data (states, member labels) to be saved", str(inf))
    return out


def _quilt_root(cal: QuiltCalibration, nodes: list, index: Mapping[Any, int], enc: _Encoder) -> tuple[xr.Dataset, list]:
    """The candidates of every sensitive node: roles (0 nearby, 1 quilt, 2 remote), Δ, e and margins."""
    import xarray as xr
    rows = [(s, c) for s, v in enumerate(cal.sensitive) for c in cal.candidates[v]]
    role = np.zeros((len(rows), len(nodes)), dtype=np.int8)
    for r, (_, c) in enumerate(rows):
        role[r, [index[v] for v in c.quilt.quilt]] = 1
        role[r, [index[v] for v in c.quilt.remote]] = 2
    influences = [_influence_meta(c.influence, index, enc, f"candidates[{r}].influence")
                  for r, (_, c) in enumerate(rows)]
    ds = xr.Dataset({
        "role": (("candidate", "node"), role),
        "candidate_sensitive": (("candidate",), np.array([s for s, _ in rows], dtype=np.int64)),
        "quilt_sensitivity": (("candidate",), np.array([c.sensitivity for _, c in rows], dtype=np.float64)),
        "max_influence": (("candidate",), np.array([c.influence.value for _, c in rows], dtype=np.float64)),
        "influence_margin": (("candidate",), np.array([c.influence.margin for _, c in rows], dtype=np.float64)),
        "component_name": (("component",), np.array(cal.component_names, dtype=object)),
    })
    if any(c.influence.per_member is not None for _, c in rows):  # a family: e_θ per member (per-θ quilts)
        ds["member_max_influence"] = (("candidate", "member"), np.array(
            [c.influence.member_values(len(cal.networks)) for _, c in rows], dtype=np.float64).reshape(len(rows), -1))
    return ds, influences


def _save_quilt(cal: QuiltCalibration, p: Path, seed: int | list[int] | None, key: bytes | None) -> Path:
    """A QuiltCalibration of discrete parameter networks: the networks (structure + CPDs) and every scored quilt."""
    pnet = _check_quilt_savable(cal)
    enc = _Encoder()
    nodes = list(cal.graph.nodes())
    index = {v: i for i, v in enumerate(nodes)}
    keys = _node_table(nodes, enc)
    tree = {f"/network_{j:03d}": _network_group(net, index, enc) for j, net in enumerate(cal.networks)}
    root, influences = _quilt_root(cal, nodes, index, enc)
    q = cal.query
    meta = {"kind": "quilt", "nodes": keys, "sensitive": [index[v] for v in cal.sensitive],
            "n_records": cal.n_records, "columns": [list(pnet.columns[v]) for v in nodes],
            "queried": sorted(index[v] for v in cal.queried), "sensitivity": cal.sensitivity,
            "n_quilts": [cal.n_quilts[v] for v in cal.sensitive], "skipped": [cal.skipped[v] for v in cal.sensitive],
            "exhaustive": cal.exhaustive, "search": cal.search, "confidence": cal.confidence, "k": cal.k,
            "assumptions": list(cal.assumptions), "n_networks": len(cal.networks),
            "skip_reasons": [list(cal.skip_reasons.get(v, ())) for v in cal.sensitive],
            "family": isinstance(pnet.network, (list, tuple)), "influences": influences,
            "query_name": q.name if q is not None else None,
            "query_columns": list(q.columns) if q is not None else None,
            "query_fingerprint": q.fingerprint if q is not None else None, "dropped": []}
    tree["/"] = _stamp(root, meta, seed)
    return _write(tree, p, key)


def _rebuild_network(ds: xr.Dataset, nodes: list) -> Any:
    """The DiscreteBayesianNetwork of a ``network_XXX`` group: same node, edge and CPD order, same value bits."""
    meta = json.loads(ds.attrs["bayespriv_network"])
    cpds = []
    for c in meta["cpds"]:
        names = [nodes[i] for i in c["variables"]]
        card = [int(k) for k in c["cardinality"]]
        values = np.array(ds[c["array"]].values, dtype=np.float64).reshape(card[0], -1)
        states = {v: [_decode_key(s) for s in st] for v, st in zip(names, c["states"])}
        cpds.append(CPDTable(tuple(names), tuple(card), values, states))
    return discrete_network([nodes[i] for i in meta["nodes"]], [(nodes[u], nodes[v]) for u, v in meta["edges"]], cpds)


def _rebuild_candidates(ds: xr.Dataset, meta: dict[str, Any], nodes: list, sensitive: tuple) -> dict:
    """Sensitive node -> tuple of QuiltScore, as stored (nothing recomputed)."""
    out: dict[Any, list] = {v: [] for v in sensitive}
    role = ds["role"].values
    which = ds["candidate_sensitive"].values.tolist()
    sens, value, margin = (np.array(ds[n].values, dtype=np.float64) for n in
                           ("quilt_sensitivity", "max_influence", "influence_margin"))
    per_member = np.array(ds["member_max_influence"].values, dtype=np.float64) if "member_max_influence" in ds else None
    for r, m in enumerate(meta["influences"]):
        members = [frozenset(nodes[j] for j in np.flatnonzero(role[r] == code)) for code in (1, 0, 2)]
        assignment = None if m["assignment"] is None else {nodes[i]: _decode_key(s) for i, s in m["assignment"]}
        pair = None if m["pair"] is None else tuple(_decode_key(s) for s in m["pair"])
        inf = MaxInfluence(float(value[r]), nodes[m["node"]], frozenset(nodes[j] for j in m["quilt"]), assignment,
                           pair, m["reason"], _decode(m["member"]), bool(m["exact"]), float(margin[r]),
                           tuple(m["assumptions"]),
                           None if per_member is None else tuple(float(x) for x in per_member[r]))
        out[sensitive[which[r]]].append(QuiltScore(Quilt(*members), float(sens[r]), inf))
    return {v: tuple(c) for v, c in out.items()}


def _load_quilt(tree: dict[str, xr.Dataset], meta: dict[str, Any], query: Query | None, p: Path,
                provenance: FileProvenance | None = None) -> Any:
    """The QuiltCalibration of a file: networks rebuilt from their CPDs, scored quilts as stored."""
    if query is None:
        raise ValidationError(f"query must be given to load the quilt calibration in {str(p)!r} (APMQM reads its "
                              f"columns and its column sensitivities; the file holds only its fingerprint); got None")
    nodes = [_decode_key(k) for k in meta["nodes"]]
    try:
        nets = [_rebuild_network(tree[f"/network_{j:03d}"], nodes) for j in range(int(meta["n_networks"]))]
        root = tree["/"]
        sensitive = tuple(nodes[i] for i in meta["sensitive"])
        candidates = _rebuild_candidates(root, meta, nodes, sensitive)
        names = tuple(str(n) for n in root["component_name"].values.tolist())
    except (KeyError, ValueError, TypeError, IndexError) as exc:
        raise ValidationError(f"path must be a complete quilt calibration file; got {str(p)!r}, missing or "
                              f"mangling {exc}") from exc
    pnet = ParameterNetwork(list(nets) if meta["family"] else nets[0],
                            columns={v: tuple(c) for v, c in zip(nodes, meta["columns"])})
    engine = InfluenceEngine(pnet)
    return QuiltCalibration(
        networks=engine.networks, graph=as_digraph(engine.graph(0), "network"), sensitive=sensitive, query=query,
        n_records=int(meta["n_records"]), columns=pnet.columns, queried=frozenset(nodes[i] for i in meta["queried"]),
        sensitivity=float(meta["sensitivity"]), candidates=MappingProxyType(candidates),
        n_quilts=MappingProxyType(dict(zip(sensitive, meta["n_quilts"]))),
        skipped=MappingProxyType(dict(zip(sensitive, meta["skipped"]))), exhaustive=bool(meta["exhaustive"]),
        search=str(meta.get("search", "")), confidence=meta["confidence"], k=int(meta["k"]), component_names=names,
        assumptions=_assumptions(meta["assumptions"], provenance), engine=engine, parameter_network=pnet,
        skip_reasons=MappingProxyType(dict(zip(sensitive, (tuple(r) for r in meta.get("skip_reasons")
                                                           or [()] * len(sensitive))))), provenance=provenance)
