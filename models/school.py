"""The school of Example 1 / Figure 1 of Zhang, Ohrimenko, Yang & Cummings,
*Attribute Privacy* (FAccT 2022, §5.1), with its exact answers.

A school releases counts about its students while protecting the
*distribution* of family income (distributional attribute privacy,
Definition 5). Each student has five attributes: ``sat`` (SAT score),
``height`` (inches), ``weight`` (pounds), ``gender`` and ``income`` (family
income, "high" / "low"). Following Definition 5, each attribute i has a
parameter φ_i, the φ's form a Bayesian network (Figure 1), and given the φ's
the attributes of every student are drawn independently (the paper's "naive"
conditional independence).

A network over *parameters*, not over one student's attributes
--------------------------------------------------------------
A node of the network is a parameter φ_j of the population the school's
students come from (a share, a mean), drawn **once per school**; given the
φ's, each of the n students draws each attribute from a law indexed by its own
parameter. That is what APMQM's theorem covers, and what
:func:`parameter_network` declares by wrapping the pgmpy network in
:class:`~bayespriv.networks.influence.ParameterNetwork` with the column
each parameter governs (:data:`PARAMETER_COLUMNS`). A network over one
student's attributes (every student draws every node, like the classic
"asia") is a different Θ: there a count of n students reveals a share far
more than one draw of a node does, and :func:`calibrate_quilts` refuses it.

The network over the parameters (our CPDs; the paper gives none)
----------------------------------------------------------------
The figure's arrows cannot be recovered from the text; we take the
orientation that makes Example 1's quilt Q = {gender}, N = {income, sat},
R = {height, weight} a Markov quilt of income::

    income ──> sat
      │
      v
    gender ──> height
      │          │
      └──> weight <┘

Every parameter takes three values (so the max-influence is exact):

* φ_income, share of high-income families ∈ {0.2, 0.5, 0.8}, prior (0.3, 0.4, 0.3);
* φ_gender, share of female students ∈ {0.4, 0.5, 0.6}, given φ_income =
  0.2 / 0.5 / 0.8: (0.4, 0.4, 0.2) / (0.3, 0.4, 0.3) / (0.2, 0.4, 0.4)
  (wealthier districts send more girls to this school);
* φ_sat, mean SAT ∈ {1100, 1200, 1300}, given φ_income:
  (0.6, 0.3, 0.1) / (0.3, 0.4, 0.3) / (0.1, 0.3, 0.6);
* φ_height, mean height ∈ {64, 66, 68} in, given φ_gender = 0.4 / 0.5 / 0.6:
  (0.2, 0.3, 0.5) / (0.3, 0.4, 0.3) / (0.5, 0.3, 0.2);
* φ_weight, mean weight ∈ {130, 150, 170} lb, given (φ_gender, φ_height):
  proportional to base(φ_height) × tilt(φ_gender), base = (0.6, 0.3, 0.1) /
  (0.2, 0.6, 0.2) / (0.1, 0.3, 0.6) for heights 64 / 66 / 68 and tilt =
  (1, 1, 1.5) / (1, 1, 1) / (1.5, 1, 1) for φ_gender = 0.4 / 0.5 / 0.6.

Records given φ: gender "female" with probability φ_gender, income "high"
with probability φ_income, sat = round(N(φ_sat, 150)) clipped to
[400, 1600], height ~ N(φ_height, 3), weight ~ N(φ_weight, 20).

Exact max-influences (Definition 7), by hand
--------------------------------------------
Children of income: P(φ_Q | φ_income) is the CPD itself, and the largest
column ratio is attained between φ_income = 0.2 and 0.8:

* e(gender | income) = ln(0.4 / 0.2) = ln 2 ≈ 0.6931;
* e(sat | income) = ln(0.6 / 0.1) = ln 6 ≈ 1.7918;
* gender ⊥ sat | income, so e({gender, sat} | income) = ln 2 + ln 6 = ln 12;
* P(φ_height | φ_income) = Σ_g P(h | g) P(g | income): (0.30, 0.34, 0.36) for
  income 0.2, (0.33, 0.34, 0.33) for 0.5 and (0.36, 0.34, 0.30) for 0.8, so
  e(height | income) = ln(0.36 / 0.30) = ln 1.2 ≈ 0.1823;
* height ⊥ sat | income, so e({height, sat} | income) = ln 1.2 + ln 6 = ln 7.2 ≈ 1.9741.

APMQM (Algorithm 2) for n students at privacy parameter ε
---------------------------------------------------------
* "taller than 66 in" (A = {height}): any quilt keeping height out of N
  scores 0. The cheapest are Q = {height} (e = ln 1.2) and Example 1's
  Q = {gender} (e = ln 2, N = {income, sat}, R = {height, weight}). For
  ε > ln 1.2 the count is released **without noise**, as Example 1 says
  (the mechanism reports Q = {height}, the zero-score quilt of least e; pass
  ``quilts={"income": {"gender"}}`` for the paper's); for ε ≤ ln 1.2 the
  trivial quilt gives Lap(n / ε).
* "taller than 66 in with SAT > 1300" (A = {height, sat}): a count has
  Δ_{sat} F = Δ_{height, sat} F = n, so every quilt with A ∩ N ≠ ∅ scores
  n / (ε − e) ≥ n / ε, the trivial quilt's score. Zero-score quilts need sat
  in Q; the cheapest is Q = {height, sat} (e = ln 7.2). Hence the noise scale
  is 0 for ε > ln 7.2 and n / ε otherwise. **Paper erratum:** Example 1 says
  this count gets Lap(Δ_{s}F / (ε − e(X_gndr | X_i))) from Q = {gender}; that
  quilt is valid (the release is private) but never Algorithm 2's choice, and
  its scale n / (ε − ln 2) is larger than n / ε. ``quilts={"income":
  {"gender"}}`` reproduces the paper's release.

:func:`noise_scale` gives these closed forms.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import norm

import bayespriv as bp
from bayespriv._validation import check_epsilon, check_positive_int, fail
from bayespriv.networks.quilts import ParameterNetwork, Quilt, QuiltCalibration, calibrate_quilts
from bayespriv.errors import ParameterTypeError
from bayespriv.random import RNGLike, as_generator

__all__ = [
    "N_RECORDS",
    "COLUMNS",
    "NODES",
    "VALUES",
    "EDGES",
    "PARAMETER_COLUMNS",
    "CPDS",
    "QUERIES",
    "EXAMPLE1_QUILT",
    "INFLUENCE",
    "network",
    "parameter_network",
    "calibration",
    "sample_parameters",
    "sample_batch",
    "sample_school",
    "noise_scale",
    "expected_count",
]

#: Students in the school.
N_RECORDS = 100
COLUMNS = ("sat", "height", "weight", "gender", "income")
#: Nodes of the parameter network (named after the attribute each governs).
NODES = ("income", "gender", "sat", "height", "weight")
EDGES = (("income", "sat"), ("income", "gender"), ("gender", "height"), ("gender", "weight"), ("height", "weight"))
#: The record column each parameter governs (φ_income: the share of "high" in column ``income``, ...).
PARAMETER_COLUMNS: Mapping[str, str] = MappingProxyType({v: v for v in NODES})

#: Values each parameter φ takes.
VALUES: Mapping[str, tuple[float, ...]] = MappingProxyType({
    "income": (0.2, 0.5, 0.8),      # share of high-income families
    "gender": (0.4, 0.5, 0.6),      # share of female students
    "sat": (1100.0, 1200.0, 1300.0),  # mean SAT score
    "height": (64.0, 66.0, 68.0),   # mean height, inches
    "weight": (130.0, 150.0, 170.0),  # mean weight, pounds
})

_WEIGHT_BASE = np.array([[0.6, 0.3, 0.1], [0.2, 0.6, 0.2], [0.1, 0.3, 0.6]])  # rows: height value
_WEIGHT_TILT = np.array([[1.0, 1.0, 1.5], [1.0, 1.0, 1.0], [1.5, 1.0, 1.0]])  # rows: gender value


def _weight_table() -> np.ndarray:
    """P(φ_weight | φ_gender, φ_height) as an array [gender, height, weight]."""
    t = _WEIGHT_BASE[None, :, :] * _WEIGHT_TILT[:, None, :]
    return t / t.sum(axis=2, keepdims=True)


#: Conditional tables: node -> (parents, array [parent values..., node value]).
CPDS: Mapping[str, tuple[tuple[str, ...], np.ndarray]] = MappingProxyType({
    "income": ((), np.array([0.3, 0.4, 0.3])),
    "gender": (("income",), np.array([[0.4, 0.4, 0.2], [0.3, 0.4, 0.3], [0.2, 0.4, 0.4]])),
    "sat": (("income",), np.array([[0.6, 0.3, 0.1], [0.3, 0.4, 0.3], [0.1, 0.3, 0.6]])),
    "height": (("gender",), np.array([[0.2, 0.3, 0.5], [0.3, 0.4, 0.3], [0.5, 0.3, 0.2]])),
    "weight": (("gender", "height"), _weight_table()),
})

SAT_SD, SAT_RANGE = 150.0, (400, 1600)
HEIGHT_SD = 3.0
WEIGHT_SD = 20.0


def _tall(batch: Mapping[str, np.ndarray]) -> np.ndarray:
    return np.asarray(batch["height"], dtype=float) > 66.0


def _tall_high_sat(batch: Mapping[str, np.ndarray]) -> np.ndarray:
    return (np.asarray(batch["height"], dtype=float) > 66.0) & (np.asarray(batch["sat"], dtype=float) > 1300.0)


#: Example 1's two counts.
QUERIES: dict[str, bp.Query] = {
    "tall": bp.count(_tall, "height", name="taller than 66 in"),
    "tall_high_sat": bp.count(_tall_high_sat, ["height", "sat"], name="taller than 66 in with SAT > 1300"),
}

#: Example 1's quilt for income: Q = {gender}, N = {income, sat}, R = {height, weight}.
EXAMPLE1_QUILT = Quilt(frozenset({"gender"}), frozenset({"income", "sat"}), frozenset({"height", "weight"}))

#: Exact max-influences e(Q | income) derived in the module docstring.
INFLUENCE: Mapping[frozenset, float] = MappingProxyType({
    frozenset(): 0.0,
    frozenset({"gender"}): math.log(2.0),
    frozenset({"sat"}): math.log(6.0),
    frozenset({"gender", "sat"}): math.log(12.0),
    frozenset({"height"}): math.log(1.2),
    frozenset({"height", "sat"}): math.log(7.2),
})


def network():
    """The pgmpy ``DiscreteBayesianNetwork`` over the parameters (state names = parameter values).

    A bare pgmpy network does not say that its nodes are parameters; :func:`parameter_network` does.
    """
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    bn = DiscreteBayesianNetwork(list(EDGES))
    bn.add_nodes_from(NODES)
    for node in NODES:
        parents, table = CPDS[node]
        k = len(VALUES[node])
        values = table.reshape(-1, k).T  # pgmpy: rows = node states, columns = parent configurations
        bn.add_cpds(TabularCPD(
            node, k, values,
            evidence=list(parents) or None,
            evidence_card=[len(VALUES[p]) for p in parents] or None,
            state_names={v: list(VALUES[v]) for v in (node, *parents)},
        ))
    bn.check_model()
    return bn


def parameter_network() -> ParameterNetwork:
    """:func:`network` declared as a network over parameters: node φ_j governs record column j."""
    return ParameterNetwork(network(), columns=PARAMETER_COLUMNS)


def calibration(query: str | bp.Query = "tall", *, n_records: int = N_RECORDS) -> QuiltCalibration:
    """:func:`~bayespriv.networks.quilts.calibrate_quilts` for φ_income (exhaustive search)."""
    q = QUERIES[query] if isinstance(query, str) else query
    return calibrate_quilts(parameter_network(), "income", q, n_records=n_records)


def _check_query_key(query: Any) -> str:
    if query not in QUERIES:
        raise fail("query", f"one of {list(QUERIES)!r}", query)
    return query


def noise_scale(query: str, epsilon: float, *, n_records: int = N_RECORDS, paper_quilt: bool = False) -> float:
    """Closed-form Laplace scale of APMQM for one of :data:`QUERIES` (see the module docstring).

    ``paper_quilt=True`` gives Example 1's quilt Q = {gender} (defined for ε > ln 2).
    """
    key = _check_query_key(query)
    eps = check_epsilon(epsilon)
    n = check_positive_int(n_records, "n_records")
    if paper_quilt:
        e = INFLUENCE[frozenset({"gender"})]
        if not eps > e:
            raise fail("epsilon", f"> ln 2 = {e:.6g} for Example 1's quilt", epsilon)
        return 0.0 if key == "tall" else n / (eps - e)
    threshold = INFLUENCE[frozenset({"height"})] if key == "tall" else INFLUENCE[frozenset({"height", "sat"})]
    return 0.0 if eps > threshold else n / eps


def sample_parameters(rng: RNGLike, size: int, *, income: float | None = None) -> dict[str, np.ndarray]:
    """Ancestral draws of the parameters φ from the network (vectorised).

    Parameters
    ----------
    rng : None, int, SeedSequence or Generator
    size : int
        Number of draws.
    income : float, optional
        Fix φ_income (a root) to one of ``VALUES["income"]``: draws from
        P(φ | φ_income = income), the conditional a secret pair compares.

    Returns
    -------
    dict
        Node -> array ``(size,)`` of parameter values.
    """
    gen = as_generator(rng)
    size = check_positive_int(size, "size")
    idx: dict[str, np.ndarray] = {}
    for node in NODES:  # NODES is a topological order
        parents, table = CPDS[node]
        if node == "income" and income is not None:
            if income not in VALUES["income"]:
                raise fail("income", f"one of {VALUES['income']}", income)
            idx[node] = np.full(size, VALUES["income"].index(income))
            continue
        probs = table[tuple(idx[p] for p in parents)] if parents else np.broadcast_to(table, (size, len(table)))
        u = gen.random(size)[:, None]
        idx[node] = np.minimum((u > np.cumsum(probs, axis=1)).sum(axis=1), len(VALUES[node]) - 1)
    return {node: np.asarray(VALUES[node])[idx[node]] for node in NODES}


def sample_batch(rng: RNGLike, parameters: Mapping[str, Any], n_records: int = N_RECORDS) -> dict[str, np.ndarray]:
    """Datasets given parameters: column -> array ``(draws, n_records)``, one dataset per draw.

    ``parameters`` maps each node to a scalar or an array ``(draws,)``.
    """
    gen = as_generator(rng)
    n = check_positive_int(n_records, "n_records")
    if not isinstance(parameters, Mapping):
        raise ParameterTypeError(f"parameters must be a mapping node -> value(s); got {type(parameters).__name__}")
    missing = [v for v in NODES if v not in parameters]
    if missing:
        raise fail("parameters", f"a value for every node {list(NODES)!r}", f"missing {missing!r}")
    phi = {v: np.atleast_1d(np.asarray(parameters[v], dtype=float)) for v in NODES}
    draws = max(len(a) for a in phi.values())
    phi = {v: np.broadcast_to(a, (draws,))[:, None] for v, a in phi.items()}
    shape = (draws, n)
    sat = np.clip(np.rint(gen.normal(phi["sat"], SAT_SD, size=shape)), *SAT_RANGE)
    return {
        "sat": sat,
        "height": gen.normal(phi["height"], HEIGHT_SD, size=shape),
        "weight": gen.normal(phi["weight"], WEIGHT_SD, size=shape),
        "gender": np.where(gen.random(shape) < phi["gender"], "female", "male"),
        "income": np.where(gen.random(shape) < phi["income"], "high", "low"),
    }


def sample_school(rng: RNGLike = None, n_records: int = N_RECORDS,
                  parameters: Mapping[str, float] | None = None) -> pd.DataFrame:
    """One school: a DataFrame of ``n_records`` students (parameters drawn from the network if not given)."""
    gen = as_generator(rng)
    params = sample_parameters(gen, 1) if parameters is None else parameters
    batch = sample_batch(gen, params, n_records)
    return pd.DataFrame({c: batch[c][0] for c in COLUMNS})


def expected_count(query: str, parameters: Mapping[str, float], *, n_records: int = N_RECORDS) -> float:
    """E[F(X) | φ] for one of :data:`QUERIES`: n·P(height > 66) (× P(sat > 1300))."""
    key = _check_query_key(query)
    n = check_positive_int(n_records, "n_records")
    p_tall = float(norm.sf((66.0 - float(parameters["height"])) / HEIGHT_SD))
    if key == "tall":
        return n * p_tall
    p_sat = float(norm.sf((1300.5 - float(parameters["sat"])) / SAT_SD))  # sat is rounded: > 1300 ⇔ draw ≥ 1300.5
    return n * p_tall * p_sat
