"""How ``calibrate_quilts`` searches and scores quilts (``networks/quilts/search_options.py``): the
:class:`QuiltSearch` table, and ``calibrate_quilts`` taking it as ``search=`` (its keywords of their own deprecated
for one release)."""

from __future__ import annotations

import dataclasses
import pickle

import networkx as nx
import numpy as np
import pytest

import bayespriv as bp
from bayespriv.errors import BayesPrivDeprecationWarning, ParameterTypeError, ValidationError
from bayespriv.networks import QuiltSearch
from bayespriv.networks.elimination import MAX_FACTOR
from bayespriv.networks.quilts import EXHAUSTIVE_MAX_NODES, ParameterNetwork, calibrate_quilts, markov_quilts
from bayespriv.networks.quilts.search_options import MAX_STATES
from tests._bn_oracles import random_network

# -- the option table ---------------------------------------------------------------------------------------------


def test_quilt_search_defaults_are_calibrate_quilts_defaults():
    search = QuiltSearch()
    assert dataclasses.asdict(search) == {"exhaustive": None, "max_nodes": EXHAUSTIVE_MAX_NODES, "k": None,
                                          "max_states": MAX_STATES, "max_factor": MAX_FACTOR, "refine": 0}
    assert (EXHAUSTIVE_MAX_NODES, MAX_STATES, MAX_FACTOR) == (16, 2**16, 2**22)
    assert search == QuiltSearch() and hash(search) == hash(QuiltSearch())
    checked = QuiltSearch(max_nodes=np.int64(5), k=np.int32(2), refine=np.int64(3))
    assert all(type(getattr(checked, name)) is int for name in ("max_nodes", "k", "refine"))
    assert (checked.max_nodes, checked.k, checked.refine) == (5, 2, 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        search.refine = 8
    with pytest.raises(TypeError):
        QuiltSearch(None)
    assert pickle.loads(pickle.dumps(checked)) == checked


@pytest.mark.parametrize("field, value, error, rule, shown", [
    ("exhaustive", "auto", ParameterTypeError, "True, False or None (automatic)", "got 'auto'"),
    ("exhaustive", 1, ParameterTypeError, "True, False or None (automatic)", "got 1"),
    ("max_nodes", 16.0, ParameterTypeError, "an integer >= 1", "got 16.0"),
    ("max_nodes", 0, ValidationError, "an integer >= 1", "got 0"),
    ("max_nodes", 21, ValidationError, "at most 20 (2^19 subsets)", "got 21"),
    ("k", "2", ParameterTypeError, "an integer >= 1", "got '2'"),
    ("k", 0, ValidationError, "an integer >= 1", "got 0"),
    ("max_states", True, ParameterTypeError, "an integer >= 2", "got True"),
    ("max_states", 1, ValidationError, "an integer >= 2", "got 1"),
    ("max_factor", 2.0**22, ParameterTypeError, "an integer >= 2", "got 4194304.0"),
    ("max_factor", 1, ValidationError, "an integer >= 2", "got 1"),
    ("refine", None, ParameterTypeError, "an integer >= 0", "got None"),
    ("refine", -1, ValidationError, "an integer >= 0", "got -1"),
])
def test_quilt_search_refuses_an_invalid_value_naming_the_field(field, value, error, rule, shown):
    with pytest.raises(error) as info:
        QuiltSearch(**{field: value})
    message = str(info.value)
    assert message.startswith(f"{field} must be") and rule in message and shown in message


def test_markov_quilts_checks_its_settings_with_the_same_words():
    """``markov_quilts`` keeps ``exhaustive=`` and ``max_nodes=`` (five parameters); its checks are QuiltSearch's."""
    graph = nx.DiGraph([("a", "b"), ("b", "c")])
    for keywords in ({"exhaustive": "auto"}, {"max_nodes": 21}):
        with pytest.raises((ParameterTypeError, ValidationError)) as by_search:
            QuiltSearch(**keywords)
        with pytest.raises(type(by_search.value)) as by_markov:
            markov_quilts(graph, "a", **keywords)
        assert str(by_markov.value) == str(by_search.value)


# -- calibrate_quilts(..., search=...) and its deprecated keywords ------------------------------------------------


def _network():
    """A 9-node discrete parameter network with every node governing a column of its name, and a stack of bounded
    means over four nodes."""
    bn, names, _ = random_network(52, 9, edge_prob=0.35, concentration=3.0)
    query = bp.stack(*[bp.mean(v, bounds=(0.0, 1.0 + k)) for k, v in enumerate(names[5:])])
    return ParameterNetwork(bn, columns={v: v for v in names}), names, query


def _rows(cal) -> dict:
    """Every scored quilt with its remote set and the bits of Δ and of each member's e, per sensitive node."""
    return {v: [(c.quilt.quilt, c.quilt.remote, c.sensitivity.hex(),
                 tuple(float(e).hex() for e in c.influence.member_values(cal.n_members)))
                for c in cal.candidates[v]] for v in cal.sensitive}


@pytest.mark.parametrize("fields", [
    {"exhaustive": False, "refine": 16, "max_states": 2**5, "max_factor": 64},
    {"exhaustive": True, "max_nodes": 9, "k": 4},
])
def test_old_keywords_warn_and_give_the_same_calibration(fields):
    """The six keywords (deprecated) warn and give, bit for bit, the calibration of ``search=QuiltSearch(...)``:
    the same sensitivity, quilts, Δ, e, counts, skip reasons and search note."""
    net, names, query = _network()
    new = calibrate_quilts(net, names[:3], query, n_records=10, search=QuiltSearch(**fields))
    spelled = ", ".join(rf"{name}=\.\.\." for name in fields)
    with pytest.warns(BayesPrivDeprecationWarning, match=rf"calibrate_quilts\({spelled}\) is deprecated .*use "
                                                         rf"calibrate_quilts\(search=QuiltSearch\({spelled}\)\)"):
        old = calibrate_quilts(net, names[:3], query, n_records=10, **fields)
    assert old.sensitivity.hex() == new.sensitivity.hex() and _rows(old) == _rows(new)
    assert (old.n_quilts, old.skipped, old.exhaustive, old.k, old.search) == (
        new.n_quilts, new.skipped, new.exhaustive, new.k, new.search)
    assert {v: tuple(old.skip_reasons[v]) for v in old.sensitive} == {v: tuple(new.skip_reasons[v])
                                                                      for v in new.sensitive}
    for eps in (0.3, 1.0, 3.0):
        assert bp.mechanisms.APMQM(old, epsilon=eps).scale == bp.mechanisms.APMQM(new, epsilon=eps).scale
    if fields.get("max_factor"):
        assert sum(old.skipped.values()) > 0  # the settings did act


def test_default_search_is_quilt_search_default():
    net, names, query = _network()
    default = calibrate_quilts(net, names[1], query, n_records=10)
    explicit = calibrate_quilts(net, names[1], query, n_records=10, search=QuiltSearch())
    assert _rows(default) == _rows(explicit) and default.search == explicit.search and default.exhaustive


def test_search_and_its_old_keywords_together_are_refused():
    net, names, query = _network()
    with pytest.raises(ValidationError, match=r"calibrate_quilts: pass search= only \(refine=\.\.\. is its deprecated "
                                              r"spelling\); got both"):
        calibrate_quilts(net, names[1], query, n_records=10, search=QuiltSearch(), refine=8)


def test_an_unknown_keyword_is_still_a_type_error():
    """The broken twin: only the six search keywords are folded into ``search=``; a misspelt one (or the
    ``influence_options`` keys) is Python's TypeError, without a deprecation warning, and ``search=`` takes a
    QuiltSearch only."""
    net, names, query = _network()
    with pytest.raises(TypeError, match=r"^calibrate_quilts\(\) got an unexpected keyword argument 'max_node'$"):
        calibrate_quilts(net, names[1], query, n_records=10, max_node=8)
    with pytest.raises(TypeError, match=r"^calibrate_quilts\(\) got an unexpected keyword argument 'max_points'$"):
        calibrate_quilts(net, names[1], query, n_records=10, max_points=300)
    with pytest.raises(ParameterTypeError, match=r"search must be None or a bayespriv QuiltSearch; got "
                                                 r"\{'refine': 8\}"):
        calibrate_quilts(net, names[1], query, n_records=10, search={"refine": 8})
