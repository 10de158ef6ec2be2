"""APMQM's network is over distribution parameters: ParameterNetwork, and the refusal of record-level networks.

Why record-level networks are refused: if the classic record-level "asia" network
were taken by ``calibrate_quilts(asia, "smoke", count_dysp, n_records=500)``, it would
pick the quilt Q = {dysp} of smoke (e = ln(P(dysp | smoke) / P(dysp | no smoke)) = 0.548
< 1, A ∩ N = ∅) and release the exact count with "(ε=1, δ=0)". The quilt machinery
reads the node "dysp" as a parameter φ_dysp drawn once for the dataset, so the
500 records' dysp column would carry one draw's worth of information about
smoking. In asia every record draws every node: the count of dysp among 500
records reveals the share of smokers. :func:`test_why_the_exact_count_is_not_private`
computes that leak exactly (mpmath, 40 digits): for P(smoke) = 0.4 vs 0.6 the
exact count has δ(ε = 1) ≈ 0.49, not 0.

Everything here is exact (no sampling), so there is no false-failure
probability to state (α = 0). The "twin" of the state check is the same asia
network with its states renamed to numbers: it passes the check, which shows
that the check looks at what the states are (record values), and documents its
limit (an integer-coded record network is the user's statement that its nodes
are parameters).
"""

from __future__ import annotations

import math

import mpmath
import networkx as nx
import numpy as np
import pytest

import bayespriv as bp
from bayespriv.networks.influence import ParameterNetwork, max_influence
from bayespriv.networks.quilts import calibrate_quilts, markov_quilts
from bayespriv.mechanisms.quilt import APMQM

YN = ["yes", "no"]
#: The published CPDs of asia (Lauritzen & Spiegelhalter 1988), P(node = yes | parents).
ASIA_EDGES = [("asia", "tub"), ("smoke", "lung"), ("smoke", "bronc"), ("tub", "either"), ("lung", "either"),
              ("either", "xray"), ("either", "dysp"), ("bronc", "dysp")]
P_TUB = {"yes": 0.05, "no": 0.01}          # given asia
P_LUNG = {"yes": 0.1, "no": 0.01}          # given smoke
P_BRONC = {"yes": 0.6, "no": 0.3}          # given smoke
P_DYSP = {("yes", "yes"): 0.9, ("yes", "no"): 0.7, ("no", "yes"): 0.8, ("no", "no"): 0.1}  # given (bronc, either)


def asia(states=("yes", "no")):
    """The asia network built by hand (pgmpy's example download needs a network); ``states`` relabels yes/no."""
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    y, n = states

    def cpd(node, p_yes, parents=()):
        cols = np.atleast_2d(np.asarray(p_yes, dtype=float))
        return TabularCPD(node, 2, np.vstack([cols, 1 - cols]), evidence=list(parents) or None,
                          evidence_card=[2] * len(parents) or None,
                          state_names={v: [y, n] for v in (node, *parents)})

    bn = DiscreteBayesianNetwork(ASIA_EDGES)
    bn.add_cpds(
        cpd("asia", [0.01]), cpd("smoke", [0.5]),
        cpd("tub", [P_TUB["yes"], P_TUB["no"]], ["asia"]),
        cpd("lung", [P_LUNG["yes"], P_LUNG["no"]], ["smoke"]),
        cpd("bronc", [P_BRONC["yes"], P_BRONC["no"]], ["smoke"]),
        cpd("either", [1.0, 1.0, 1.0, 0.0], ["lung", "tub"]),  # either = lung or tub
        cpd("xray", [0.98, 0.05], ["either"]),
        cpd("dysp", [P_DYSP["yes", "yes"], P_DYSP["yes", "no"], P_DYSP["no", "yes"], P_DYSP["no", "no"]],
            ["bronc", "either"]),
    )
    bn.check_model()
    return bn


COUNT_DYSP = bp.count(lambda b: b["dysp"] == "yes", "dysp", name="dyspnoea")


def p_dysp_given_smoke(smoke: str) -> float:
    """P(dysp = yes | smoke) by enumeration over bronc and either (independent of the library)."""
    p_tub = 0.01 * P_TUB["yes"] + 0.99 * P_TUB["no"]
    p_either = 1 - (1 - p_tub) * (1 - P_LUNG[smoke])
    total = 0.0
    for b, pb in (("yes", P_BRONC[smoke]), ("no", 1 - P_BRONC[smoke])):
        for e, pe in (("yes", p_either), ("no", 1 - p_either)):
            total += pb * pe * P_DYSP[b, e]
    return total


# -- a record-level network (asia) is refused -----------------------------------------------------------------------
def test_asia_record_network_is_refused():
    """The record-level asia network is refused, bare, in a family or wrapped with record-valued states, so its
    exact count is never released as private."""
    bn = asia()
    with pytest.raises(bp.ParameterTypeError, match=r"network must be a ParameterNetwork .* got a bare "
                       r"DiscreteBayesianNetwork\. .*one record.*'asia'.*ParameterNetwork\(network, columns="
                       r".*BayesNetDataModel"):
        calibrate_quilts(bn, "smoke", COUNT_DYSP, n_records=500)
    with pytest.raises(bp.ParameterTypeError, match="got a bare DiscreteBayesianNetwork"):
        calibrate_quilts([bn, asia()], "smoke", COUNT_DYSP, n_records=500)  # a family of bare networks
    # Wrapping it without thought does not help: its states are record values.
    with pytest.raises(bp.ValidationError, match=r"network must be a network over distribution parameters.*got "
                       r"node 'asia' with states \['yes', 'no'\], which are record values.*record-level network"):
        ParameterNetwork(bn, columns={v: v for v in bn.nodes()})
    with pytest.raises(bp.ValidationError, match=r"family member 1"):
        ParameterNetwork([asia((0, 1)), bn], columns={v: v for v in bn.nodes()})


def test_why_the_exact_count_is_not_private():
    """As parameters: Q = {dysp}, e = ln(P(dysp | smoke) / P(dysp | no smoke)) < 1, Δ_{A∩N} F = 0 — one record's
    likelihood ratio. Under asia, n = 500 records each draw smoke: for shares of smokers 0.4 vs 0.6 the count is
    Binomial(500, p(0.4)) vs Binomial(500, p(0.6)), and its δ at ε = 1 (exact sum, mpmath) is about 0.49."""
    bn = asia()
    p1, p0 = p_dysp_given_smoke("yes"), p_dysp_given_smoke("no")
    e = max_influence(bn, {"dysp"}, "smoke")  # read as a parameter network: a per-record number
    assert e.value == pytest.approx(math.log(p1 / p0), rel=1e-12) and e.value < 1.0
    assert frozenset({"dysp"}) in {q.quilt for q in markov_quilts(bn, "smoke")}
    with mpmath.workdps(40):
        n = 500

        def pmf(k: int, share: float) -> mpmath.mpf:
            p = mpmath.mpf(share) * p1 + (1 - mpmath.mpf(share)) * p0
            return mpmath.binomial(n, k) * p ** k * (1 - p) ** (n - k)

        pa = [pmf(k, 0.4) for k in range(n + 1)]
        pb = [pmf(k, 0.6) for k in range(n + 1)]
        e1 = mpmath.e
        delta = max(sum(max(mpmath.mpf(0), a - e1 * b) for a, b in zip(pa, pb)),
                    sum(max(mpmath.mpf(0), b - e1 * a) for a, b in zip(pa, pb)))
        assert 0.45 < float(delta) < 0.52  # the exact count is nowhere near (ε = 1, δ = 0)


def test_twin_numeric_relabelling_passes_the_state_check():
    """The same asia with states 0 / 1 passes: the check reads what the states are. Wrapping is then the user's
    statement that the nodes are parameters, and the guarantee names the assumption ``parameters_bayes_net``."""
    bn = asia((1, 0))
    net = ParameterNetwork(bn, columns={v: v for v in bn.nodes()})
    cal = calibrate_quilts(net, "smoke", COUNT_DYSP, n_records=500)
    assert cal.parameter_network is net and cal.assumptions == ("parameters_bayes_net",)
    assert "parameters_bayes_net" in APMQM(cal, epsilon=1.0).guarantee.assumptions


# -- ParameterNetwork ------------------------------------------------------------------------------------------------
def parameter_pair(states_i=(0.2, 0.8), states_q=(1100.0, 1300.0)):
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    bn = DiscreteBayesianNetwork([("i", "q")])
    bn.add_nodes_from(["h"])
    names = {"i": list(states_i), "q": list(states_q), "h": [0.1, 0.9]}
    bn.add_cpds(TabularCPD("i", 2, [[0.5], [0.5]], state_names={"i": names["i"]}),
                TabularCPD("h", 2, [[0.5], [0.5]], state_names={"h": names["h"]}),
                TabularCPD("q", 2, [[0.8, 0.4], [0.2, 0.6]], evidence=["i"], evidence_card=[2],
                           state_names={"q": names["q"], "i": names["i"]}))
    return bn


def test_parameter_network_declares_every_node():
    bn = parameter_pair()
    net = ParameterNetwork(bn, columns={"i": "income", "q": ["sat", "sat_verbal"], "h": ()})
    assert dict(net.columns) == {"i": ("income",), "q": ("sat", "sat_verbal"), "h": ()}
    assert net.kind == "discrete" and set(net.nodes) == {"i", "q", "h"} and net.owner("sat_verbal") == "q"
    assert net.owner("nope") is None and set(net.graph().edges()) == {("i", "q")}
    assert "ParameterNetwork(discrete" in repr(net) and "'income'" in repr(net)
    with pytest.raises(TypeError):
        net.columns["i"] = ("x",)  # read-only
    with pytest.raises(AttributeError):
        net.kind = "density"  # frozen
    with pytest.raises(bp.ValidationError, match=r"columns must be a mapping with an entry for every parameter "
                       r"node .*; got no entry for \['h'\]"):
        ParameterNetwork(bn, columns={"i": "income", "q": "sat"})
    with pytest.raises(bp.ValidationError, match=r"columns must be keyed by parameter nodes .*; got \['zz'\]"):
        ParameterNetwork(bn, columns={"i": "income", "q": "sat", "h": (), "zz": "z"})
    with pytest.raises(bp.ValidationError, match=r"'sat' given to 'i' and 'q'"):
        ParameterNetwork(bn, columns={"i": "sat", "q": "sat", "h": ()})
    with pytest.raises(bp.ValidationError, match=r"columns\['i'\] must be a column name, a sequence"):
        ParameterNetwork(bn, columns={"i": 3, "q": "sat", "h": ()})
    with pytest.raises(bp.ValidationError, match="at least one record column"):
        ParameterNetwork(bn, columns={"i": (), "q": (), "h": ()})
    with pytest.raises(bp.ParameterTypeError, match="columns must be a mapping"):
        ParameterNetwork(bn, columns=["i", "q", "h"])
    with pytest.raises(bp.ParameterTypeError, match="not a ParameterNetwork"):
        ParameterNetwork(net, columns=net.columns)
    with pytest.raises(bp.ParameterTypeError, match="network must be a pgmpy"):
        ParameterNetwork(nx.DiGraph([("i", "q")]), columns={"i": "i", "q": "q"})
    with pytest.raises(bp.ValidationError, match="same nodes"):
        ParameterNetwork([bn, asia((0, 1))], columns={"i": "i", "q": "q", "h": ()})


def test_parameter_states_are_numbers_or_tuples_of_numbers():
    ok = ParameterNetwork(parameter_pair(states_q=((0.1, 0.9), (0.5, 0.5))), columns={"i": "i", "q": "q", "h": ()})
    assert ok.kind == "discrete"
    for bad in ((True, False), ("low", "high")):
        with pytest.raises(bp.ValidationError, match=r"got node 'q' with states \[.*\], which are record values"):
            ParameterNetwork(parameter_pair(states_q=bad), columns={"i": "i", "q": "q", "h": ()})


def test_calibrate_quilts_takes_the_declared_columns():
    bn = parameter_pair()
    net = ParameterNetwork(bn, columns={"i": "income", "q": "sat", "h": ()})
    query = bp.count(lambda b: b["sat"] > 1200, "sat", name="high sat")
    cal = calibrate_quilts(net, "i", query, n_records=7)
    assert cal.columns == net.columns and cal.queried == frozenset({"q"}) and cal.sensitivity == 7.0
    got = {c.quilt.quilt: (c.sensitivity, c.max_influence) for c in cal.candidates["i"]}
    assert got[frozenset()] == (7.0, 0.0) and got[frozenset({"q"})][0] == 0.0
    assert got[frozenset({"q"})][1] == pytest.approx(math.log(3.0), rel=1e-12)
    with pytest.raises(bp.ValidationError, match="columns must be None when network is a ParameterNetwork"):
        calibrate_quilts(net, "i", query, n_records=7, columns={"q": "sat"})
    with pytest.raises(bp.ValidationError, match=r"query must read only columns governed by the network's "
                       r"parameters \['income', 'sat'\]; got \['q'\]"):
        calibrate_quilts(net, "i", bp.count(lambda b: b["q"] > 0, "q"), n_records=7)
    # A latent sensitive parameter (no column) is charged under its node's name.
    latent = calibrate_quilts(net, "h", query, n_records=7)
    assert APMQM(latent, epsilon=1.0).protected == ("h",)
    assert APMQM(cal, epsilon=1.0).protected == ("income",)
    # A QuiltCalibration built by hand around the declaration is refused by APMQM.
    bare = cal.__class__(**{**cal.__dict__, "parameter_network": None})
    with pytest.raises(bp.ValidationError, match="calibration must be a QuiltCalibration from calibrate_quilts, whose "
                       "network is declared over distribution parameters .*; got a QuiltCalibration with "
                       "parameter_network=None"):
        APMQM(bare, epsilon=1.0)
