"""Θ as a pgmpy Bayesian network: records are i.i.d. draws from the network.

Two kinds of network are supported:

* :class:`pgmpy.models.DiscreteBayesianNetwork` (tabular CPDs). Sampling is
  done here with NumPy on the CPD arrays (ancestral order, inverse CDF with one
  uniform per record), vectorized over draws × records; pgmpy's own sampler is
  never called.
* :class:`pgmpy.models.LinearGaussianBayesianNetwork`. The records are then
  i.i.d. from the network's joint Gaussian (computed here from the CPDs), and
  sampling and closed-form moments are those of
  :class:`~bayespriv.datamodels.gaussian.GaussianDataModel`.

The user's network is copied at construction and never mutated: distribution
secrets act on modified copies (one per secret, cached).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._validation import fail
from ..errors import ParameterTypeError, UnsupportedSecretError, ValidationError
from ..queries import Batch, Query
from ..secrets import DatasetSecret, DistributionSecret, Secret, share_count
from .base import DataModel
from .compiled_networks import _compile_discrete, _compile_gaussian, _DiscreteNet, _match_state
from .gaussian import GaussianDataModel
from .network_elimination import sample_eliminated

__all__ = ["BayesNetDataModel"]

_DISCRETE_PARAMETER = re.compile(r"^\s*P\(\s*(?P<node>[^=|]+?)\s*=\s*(?P<state>[^|]*?)\s*(?:\|\s*(?P<given>.*?)\s*)?\)\s*$")
_GAUSSIAN_PARAMETER = re.compile(r"^\s*(?P<node>.+?)\.(?:(?P<kind>intercept|std)|coef\[\s*(?P<parent>.+?)\s*\])\s*$")


# -- the data model ----------------------------------------------------------------------
def _numeric_columns(net: _DiscreteNet, columns: Sequence[str], W: np.ndarray) -> tuple[list[int], list[int]]:
    """Columns a linear form uses and their nodes; each must have numeric state names."""
    used = [c for c in range(len(columns)) if np.any(W[:, c] != 0)]
    U = [net.index(columns[c]) for c in used]
    for c, u in zip(used, U):
        if net.values[u].dtype != np.float64:
            raise UnsupportedSecretError(
                f"closed-form moments need numeric state names for column {columns[c]!r}; got {list(net.states[u])!r}"
            )
    return used, U


def _record_moments(net: _DiscreteNet, table: np.ndarray, nodes: list[int], U: list[int], node: int | None,
                    keep: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Per-record mean and covariance of the used nodes' values, given the secret node's allowed states."""
    t = table
    if keep is not None:
        shape = [1] * len(nodes)
        shape[nodes.index(node)] = net.cards[node]
        t = t * keep.reshape(shape)
        if node not in U:
            t = t.sum(axis=-1)
    t = t / t.sum()
    grids = np.meshgrid(*[net.values[u] for u in U], indexing="ij")
    X = np.stack([g.ravel() for g in grids], axis=1) if U else np.zeros((1, 0))
    p = t.ravel()
    e = p @ X
    C = (X - e).T @ ((X - e) * p[:, None])
    return e, C


class BayesNetDataModel(DataModel):
    """Θ = a pgmpy Bayesian network; a dataset is ``n_records`` i.i.d. records from it.

    The columns are the network's nodes. For a discrete network a column holds
    the state names of its node: float arrays when every state name is a number
    (so :func:`bayespriv.mean` works), boolean arrays for boolean states, and
    string arrays otherwise (so predicates such as
    ``lambda b: b["gender"] == "female"`` work on whole batches).

    Parameters
    ----------
    network : pgmpy DiscreteBayesianNetwork or LinearGaussianBayesianNetwork
        With a CPD for every node, passing ``check_model()``; node names must
        be strings. The model keeps its own copy.
    n_records : int
    theta : dict, optional
        Parameters naming this model inside a family.

    Notes
    -----
    Secrets the model can condition on:

    **Dataset secrets, discrete networks** —
    ``DatasetSecret.proportion(node, state, p)``: exactly ``k = p·n`` records
    (an integer, :func:`~bayespriv.secrets.share_count`) have ``node == state``
    and the other ``n − k`` have a state drawn from P(node | node ≠ state);
    their positions are a uniformly random permutation in every draw. Given the
    node's value ``v`` of a record, every other column of that record is drawn
    exactly from P(· | node = v): the node's ancestors jointly from the exact
    table P(ancestors | node = v) (the product of the CPDs over the ancestral
    set, summed over ancestors no requested column needs, at most
    :data:`~bayespriv.datamodels.compiled_networks.MAX_JOINT_ENTRIES` entries),
    then every other needed node forward in topological order
    (P(X | node = v) = P(ancestors | v) · Π_rest P(x_j | pa_j) because the
    ancestral set is closed under taking parents). Records are
    grouped by their assigned state: the work is vectorized over draws ×
    records, with loops only over states and nodes. Given the node's values the
    records are independent, so this is the i.i.d. model conditioned on the
    count event.

    **Dataset secrets, linear Gaussian networks** —
    ``DatasetSecret.mean(node, a)``: the records' joint Gaussian conditioned on
    the node's sample mean being ``a``, exactly (Matheron's rule, see
    :class:`~bayespriv.datamodels.gaussian.GaussianDataModel`).

    **Distribution secrets** — ``DistributionSecret(parameter, value)`` draws
    from a copy of the network with one CPD parameter set to ``value``
    (the copy is cached per secret; :meth:`network_for` returns it). Parameter
    names:

    * discrete, root node: ``"P(node=state)"`` — the probability of ``state``;
      the other states' probabilities are rescaled proportionally so that they
      sum to ``1 − value``;
    * discrete, node with parents: ``"P(node=state | parent1=s1, parent2=s2)"``
      — the entry of the CPD column for that parent configuration (every
      parent must be named, in any order); the column's other entries are
      rescaled proportionally;
    * linear Gaussian: ``"node.intercept"``, ``"node.std"`` (the standard
      deviation, ≥ 0, as pgmpy's ``LinearGaussianCPD``) and
      ``"node.coef[parent]"``.

    States are matched by their text (``str(state)``, or numerically for
    numeric states: ``"P(gender=1)"`` names state ``1``). Node and state names
    used in a discrete parameter must not contain ``=``, ``|`` or ``,``.
    :meth:`parameter_names` lists every valid name.

    Examples
    --------
    >>> import bayespriv as bp
    >>> from pgmpy.models import DiscreteBayesianNetwork
    >>> from pgmpy.factors.discrete import TabularCPD
    >>> net = DiscreteBayesianNetwork([("gender", "height")])
    >>> net.add_cpds(
    ...     TabularCPD("gender", 2, [[0.5], [0.5]], state_names={"gender": ["female", "male"]}),
    ...     TabularCPD("height", 2, [[0.7, 0.3], [0.3, 0.7]], evidence=["gender"], evidence_card=[2],
    ...                state_names={"height": [160.0, 180.0], "gender": ["female", "male"]}))
    >>> from bayespriv.datamodels.bayesnet import BayesNetDataModel
    >>> model = BayesNetDataModel(net, n_records=10)
    >>> batch = model.sample(bp.DatasetSecret.proportion("gender", "female", 0.3), 4, rng=0)
    >>> (batch["gender"] == "female").sum(axis=1).tolist()
    [3, 3, 3, 3]
    >>> model.moments(bp.DistributionSecret("P(gender=female)", 0.2), bp.mean("height"))[0]
    array([172.4])
    """

    def __init__(self, network: Any, *, n_records: int, theta: Mapping[str, Any] | None = None) -> None:
        from pgmpy.models import DiscreteBayesianNetwork, LinearGaussianBayesianNetwork

        if isinstance(network, LinearGaussianBayesianNetwork):
            self.kind = "gaussian"
        elif isinstance(network, DiscreteBayesianNetwork):
            self.kind = "discrete"
        else:
            raise ParameterTypeError(
                "network must be a pgmpy DiscreteBayesianNetwork or LinearGaussianBayesianNetwork; "
                f"got {type(network).__name__}"
            )
        nodes = list(network.nodes())
        if not nodes:
            raise fail("network", "a network with at least one node", nodes)
        bad = [v for v in nodes if not isinstance(v, str)]
        if bad:
            raise fail("network", "a network whose node names are strings (they become column names)", bad)
        network = network.copy()
        try:
            network.check_model()
        except Exception as exc:  # noqa: BLE001 - pgmpy raises ValueError or others
            raise ValidationError(f"network must pass pgmpy's check_model(); got {type(exc).__name__}: {exc}") from exc
        super().__init__(nodes, n_records, theta)
        self.network = network
        self._base = self._compile(network)
        self._variants: dict[DistributionSecret, tuple[Any, Any]] = {}

    # -- compiled forms ----------------------------------------------------------------
    def _compile(self, network: Any) -> _DiscreteNet | GaussianDataModel:
        if self.kind == "discrete":
            return _compile_discrete(network)
        g = _compile_gaussian(network, self.columns)
        return GaussianDataModel(g.mean, g.cov, self.columns, self.n_records)

    def _variant(self, secret: DistributionSecret) -> tuple[Any, Any]:
        """(modified network copy, compiled form) for a distribution secret (cached)."""
        hit = self._variants.get(secret)
        if hit is None:
            net = self.network.copy()
            if self.kind == "discrete":
                self._set_discrete_parameter(net, secret)
            else:
                self._set_gaussian_parameter(net, secret)
            hit = (net, self._compile(net))
            self._variants[secret] = hit
        return hit

    def network_for(self, secret: DistributionSecret | None = None) -> Any:
        """A copy of the pgmpy network the model draws from under ``secret``.

        ``None`` gives (a copy of) the model's own network. The copy is the
        caller's to change.
        """
        if secret is None:
            return self.network.copy()
        if not isinstance(secret, DistributionSecret):
            raise ParameterTypeError(f"secret must be None or a DistributionSecret; got {type(secret).__name__}")
        return self._variant(secret)[0].copy()

    def parameter_names(self) -> list[str]:
        """Every parameter name a :class:`DistributionSecret` may use with this model."""
        names = []
        if self.kind == "gaussian":
            for v in self.columns:
                names += [f"{v}.intercept", f"{v}.std"]
                names += [f"{v}.coef[{p}]" for p in self.network.get_cpds(v).evidence]
            return names
        net: _DiscreteNet = self._base
        for i, v in enumerate(net.nodes):
            pa = net.parents[i]
            configs = np.ndindex(*[net.cards[p] for p in pa]) if pa else [()]
            for conf in configs:
                given = ", ".join(f"{net.nodes[p]}={net.states[p][s]}" for p, s in zip(pa, conf))
                for s in net.states[i]:
                    names.append(f"P({v}={s} | {given})" if pa else f"P({v}={s})")
        return names

    # -- distribution secrets ------------------------------------------------------------
    def _node_of_parameter(self, node: str, secret: DistributionSecret) -> str:
        if node not in self.columns:
            raise ValidationError(
                f"parameter must name a node of the network {list(self.columns)!r}; got {secret.parameter!r} (node {node!r})"
            )
        return node

    def _state_of_parameter(self, net: _DiscreteNet, node: str, text: str, secret: DistributionSecret) -> int:
        states = net.states[net.index(node)]
        hits = _match_state(states, text, text=True)
        if len(hits) != 1:
            rule = "name exactly one state" if hits else "name a state"
            raise ValidationError(
                f"parameter must {rule} of node {node!r}, one of {list(states)!r}; got {secret.parameter!r} (state {text!r})"
            )
        return hits[0]

    def _set_discrete_parameter(self, network: Any, secret: DistributionSecret) -> None:
        match = _DISCRETE_PARAMETER.match(secret.parameter)
        if match is None:
            raise ValidationError(
                "parameter must be 'P(node=state)' for a root node or 'P(node=state | parent=state, ...)' for a "
                f"discrete Bayesian network; got {secret.parameter!r}"
            )
        net: _DiscreteNet = self._base
        node = self._node_of_parameter(match["node"], secret)
        i = net.index(node)
        j = self._state_of_parameter(net, node, match["state"], secret)
        given: dict[str, int] = {}
        if match["given"]:
            for part in match["given"].split(","):
                name, eq, text = part.partition("=")
                name, text = name.strip(), text.strip()
                if not eq or not name:
                    raise ValidationError(f"parameter must write each condition as 'parent=state'; got {secret.parameter!r}")
                self._node_of_parameter(name, secret)
                if name in given:
                    raise ValidationError(f"parameter must name each parent once; got {secret.parameter!r}")
                given[name] = self._state_of_parameter(net, name, text, secret)
        parents = [net.nodes[p] for p in net.parents[i]]
        if set(given) != set(parents):
            raise ValidationError(
                f"parameter must condition on exactly the parents of {node!r}, {parents!r}; got {secret.parameter!r}"
            )
        p = secret.value
        if not 0.0 <= p <= 1.0:
            raise fail("value", f"a probability in [0, 1] for parameter {secret.parameter!r}", p)
        cpd = network.get_cpds(node)
        values = np.array(cpd.values, dtype=float)  # axes (node, *evidence) in cpd.variables order
        where = tuple([slice(None)] + [given[v] for v in cpd.variables[1:]])
        column = values[where]
        column = column / column.sum()
        old = column[j]
        others = np.arange(column.size) != j
        if old >= 1.0 and p < 1.0:
            raise ValidationError(
                f"value must be 1 for parameter {secret.parameter!r}: the network gives the other states probability 0, "
                f"so there is nothing to rescale; got {p:g}"
            )
        column[others] *= (1.0 - p) / (1.0 - old) if old < 1.0 else 0.0
        column[j] = p
        values[where] = column
        cpd.values = values

    def _set_gaussian_parameter(self, network: Any, secret: DistributionSecret) -> None:
        match = _GAUSSIAN_PARAMETER.match(secret.parameter)
        if match is None:
            raise ValidationError(
                "parameter must be 'node.intercept', 'node.std' or 'node.coef[parent]' for a linear Gaussian "
                f"Bayesian network; got {secret.parameter!r}"
            )
        node = self._node_of_parameter(match["node"], secret)
        cpd = network.get_cpds(node)
        beta = np.array(cpd.beta, dtype=float).ravel()
        if match["kind"] == "std":
            if secret.value < 0:
                raise fail("value", f"a standard deviation >= 0 for parameter {secret.parameter!r}", secret.value)
            cpd.std = secret.value
        elif match["kind"] == "intercept":
            beta[0] = secret.value
            cpd.beta = beta
        else:
            parent = match["parent"]
            evidence = list(cpd.evidence)
            if parent not in evidence:
                raise ValidationError(
                    f"parameter must name a parent of {node!r}, one of {evidence!r}; got {secret.parameter!r} (parent {parent!r})"
                )
            beta[1 + evidence.index(parent)] = secret.value
            cpd.beta = beta

    # -- secrets -------------------------------------------------------------------------
    def _secret_state(self, secret: DatasetSecret) -> tuple[int, int, int]:
        """(node index, state index, k) of a proportion secret on a discrete network."""
        net: _DiscreteNet = self._base
        i = net.index(secret.column)
        hits = _match_state(net.states[i], secret.category, text=False)
        if len(hits) != 1:
            raise fail(
                "category",
                f"{'exactly one' if hits else 'a'} state of node {secret.column!r}, one of {list(net.states[i])!r}",
                secret.category,
            )
        return i, hits[0], share_count(secret.value, self.n_records)

    def check_secret(self, secret: Secret | None) -> None:
        """Raise a clear error when the model cannot condition on ``secret``.

        Discrete networks take proportion secrets on a state of a node (with
        P(state) > 0 when ``k > 0`` and P(other states) > 0 when ``k < n``) and
        the distribution secrets named in the class docstring; linear Gaussian
        networks take mean secrets (on a node of positive variance) and their
        distribution secrets.
        """
        if secret is None:
            return
        if isinstance(secret, DistributionSecret):
            self._variant(secret)
            return
        super().check_secret(secret)
        assert isinstance(secret, DatasetSecret)
        if self.kind == "gaussian":
            if secret.statistic != "mean":
                raise UnsupportedSecretError(
                    "a linear Gaussian BayesNetDataModel conditions on node means only (DatasetSecret.mean); "
                    f"got {secret.label!r}"
                )
            self._base.check_secret(secret)
            return
        if secret.statistic != "proportion":
            raise UnsupportedSecretError(
                "a discrete BayesNetDataModel conditions on the share of a state (DatasetSecret.proportion(node, state, p)); "
                f"got {secret.label!r}"
            )
        i, j, k = self._secret_state(secret)
        marginal = self._base.marginal(i)
        if k > 0 and marginal[j] <= 0:
            raise UnsupportedSecretError(
                f"P({secret.column}={secret.category!r}) must be positive under the network for {k} records to have it; got 0"
            )
        if k < self.n_records and marginal[j] >= 1:
            raise UnsupportedSecretError(
                f"P({secret.column} != {secret.category!r}) must be positive under the network for "
                f"{self.n_records - k} records to differ from it; got 0"
            )

    # -- sampling ------------------------------------------------------------------------
    def _sample(self, secret, n_draws, rng, columns) -> Batch:
        if self.kind == "gaussian":
            if isinstance(secret, DistributionSecret):
                return self._variant(secret)[1]._sample(None, n_draws, rng, columns)
            return self._base._sample(secret, n_draws, rng, columns)
        if isinstance(secret, DistributionSecret):
            net = self._variant(secret)[1]
            secret = None
        else:
            net = self._base
        shape = (n_draws, self.n_records)
        wanted = [net.index(c) for c in columns]
        idx: dict[int, np.ndarray] = {}
        if secret is None:
            needed = net.closure(wanted)
        else:
            i, j, k = self._secret_state(secret)
            # The requested columns need their ancestral closure; the secret node's
            # ancestors outside it are summed out of P(ancestors | node) instead of drawn.
            needed = sorted(set(net.closure(wanted)) | {i})
            idx[i] = self._assign_states(net, i, j, k, n_draws, rng)
            B = [b for b in net.ancestors(i) if b in needed]
            if B:
                self._draw_ancestors(net, i, B, idx, rng)
        net.forward(needed, idx, shape, rng)
        return {c: net.values[net.index(c)][idx[net.index(c)]] for c in columns}

    def _assign_states(self, net: _DiscreteNet, i: int, j: int, k: int, n_draws: int, rng: np.random.Generator) -> np.ndarray:
        """States of the secret node: ``k`` records in state ``j``, the rest from P(· | ≠ j), shuffled per draw."""
        n = self.n_records
        out = np.full((n_draws, n), j, dtype=np.intp)
        if k < n:
            others = net.marginal(i).copy()
            others[j] = 0.0
            cdf = np.cumsum(others)
            cdf /= cdf[-1]
            out[:, k:] = np.searchsorted(cdf, rng.random((n_draws, n - k)), side="right")
        return rng.permuted(out, axis=1) if 0 < k < n else out

    def _draw_ancestors(self, net: _DiscreteNet, i: int, B: Sequence[int], idx: dict[int, np.ndarray], rng: np.random.Generator) -> None:
        """Ancestors ``B`` of node ``i`` given its drawn states, jointly and exactly: every ancestor of i is drawn
        from the elimination of the ancestral set (:meth:`_DiscreteNet.ancestor_plan`), backward from i's state;
        those outside ``B`` are dropped (their joint law with B given i is exact, so B's is)."""
        drawn = {i: idx[i]}
        sample_eliminated(net.ancestor_plan(i), drawn, rng)
        for b in B:
            idx[b] = drawn[b]

    # -- exact moments -------------------------------------------------------------------
    def moments(self, secret: Secret | None, query: Query) -> tuple[np.ndarray, np.ndarray]:
        """Exact mean ``(k,)`` and covariance ``(k, k)`` of a linear query.

        The query must be linear in the columns (:func:`~bayespriv.mean` of
        numeric columns without bounds, and stacks of them):
        ``F_c = s_c Σ_r W_c·x_r`` with ``s_c = 1/n`` for means.

        * Linear Gaussian networks: the closed form of
          :meth:`GaussianDataModel.moments` on the network's joint Gaussian
          (under a distribution secret, the modified network's).
        * Discrete networks (numeric state names): records are independent;
          a group of ``m`` records with per-record mean ``e`` and covariance
          ``C`` of ``W x`` contributes ``m e`` and ``m C``. Unconditionally
          (and under a distribution secret) there is one group of ``n``
          records; under a proportion secret, ``k`` records given
          ``node = state`` and ``n − k`` given ``node ≠ state``. The per-record
          moments come from the exact joint table of the columns involved.
        """
        if not isinstance(query, Query):
            raise ParameterTypeError(f"query must be a bayespriv Query; got {type(query).__name__}")
        self.check_secret(secret)
        if self.kind == "gaussian":
            if isinstance(secret, DistributionSecret):
                return self._variant(secret)[1].moments(None, query)
            return self._base.moments(secret, query)
        W, per_mean = self._linear_form(query)
        if isinstance(secret, DistributionSecret):
            net = self._variant(secret)[1]
            secret = None
        else:
            net = self._base
        mean, cov = self._discrete_sums(net, secret, W)
        s = np.where(per_mean, 1.0 / self.n_records, 1.0)
        cov = np.outer(s, s) * cov
        return s * mean, 0.5 * (cov + cov.T)

    def _linear_form(self, query: Query) -> tuple[np.ndarray, np.ndarray]:
        """``(W, per_mean)`` of a query linear in the columns (:meth:`~bayespriv.Query.linear_form`), or an error."""
        form = query.linear_form(self.columns)
        if form is None:
            raise UnsupportedSecretError(
                f"closed-form moments need a linear query over the model's columns (e.g. mean(col) without bounds); "
                f"got {query.name!r}: calibrate by sampling instead"
            )
        return form

    def _discrete_sums(self, net: _DiscreteNet, secret: Secret | None, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and covariance of ``Σ_r W·x_r`` on a discrete network: ``Σ m e`` and ``Σ m C`` over the record groups."""
        used, U = _numeric_columns(net, self.columns, W)
        Wu = W[:, used]
        groups, i = self._record_groups(net, secret)
        nodes = U + ([i] if i is not None and i not in U else [])
        table = net.joint(nodes) if nodes else np.ones(())
        kq = W.shape[0]
        mean, cov = np.zeros(kq), np.zeros((kq, kq))
        for m, keep in groups:
            if m == 0:
                continue
            e, C = _record_moments(net, table, nodes, U, i, keep)
            mean += m * (Wu @ e)
            cov += m * (Wu @ C @ Wu.T)
        return mean, cov

    def _record_groups(self, net: _DiscreteNet, secret: Secret | None) -> tuple[list, int | None]:
        """Groups ``(records, allowed states of the secret node or None)`` and the secret node (None without)."""
        n = self.n_records
        if secret is None:
            return [(n, None)], None
        i, j, k = self._secret_state(secret)
        eq = np.arange(net.cards[i]) == j
        return [(k, eq), (n - k, ~eq)], i

    # -- exact laws --------------------------------------------------------------------------
    def exact_law(self, secret: Secret | None, query: Query) -> tuple[np.ndarray, np.ndarray] | None:
        """The exact law of a count or proportion of a state (binomial, or two binomials convolved).

        For a query that says what it counts (:attr:`~bayespriv.Query.indicator`:
        ``count(node, state)`` or ``proportion(node, state)``) on a discrete
        network. The states it counts are found by evaluating the query itself
        on the node's state values (as the records hold them). Records are
        independent given the secret:

        * no secret, or a :class:`~bayespriv.DistributionSecret` (the modified
          network): each of the ``n`` records is counted with probability
          ``q = P(node ∈ counted states)``: ``Binomial(n, q)``;
        * ``DatasetSecret.proportion(s, j, p)``: ``k = p·n`` records have
          ``s = j`` and are counted with probability ``q₁ = P(counted | s = j)``;
          the other ``n − k`` have ``s`` drawn from ``P(s | s ≠ j)`` and are
          counted with ``q₀ = P(counted, s ≠ j) / P(s ≠ j)``: the count is
          ``Binomial(k, q₁) + Binomial(n − k, q₀)``, independent, so its law
          is the convolution of the two (``np.convolve`` of
          ``scipy.stats.binom`` probabilities).

        The probabilities come from the exact joint table of the two nodes
        (the product of the CPDs over their ancestral set, summed over the
        other ancestors — the inference :meth:`moments` and conditioning use,
        at most :data:`~bayespriv.datamodels.compiled_networks.MAX_JOINT_ENTRIES`
        entries; a fixed summation order, so the same bits in every process). A proportion divides by ``n``.

        Parameters
        ----------
        secret : Secret or None
        query : Query

        Returns
        -------
        (points (m, 1), weights (m,)) or None
            None for linear Gaussian networks and for any other query.

        Examples
        --------
        >>> import bayespriv as bp
        >>> from pgmpy.models import DiscreteBayesianNetwork
        >>> from pgmpy.factors.discrete import TabularCPD
        >>> net = DiscreteBayesianNetwork([("smoker", "xray")])
        >>> net.add_cpds(TabularCPD("smoker", 2, [[0.5], [0.5]], state_names={"smoker": ["no", "yes"]}),
        ...              TabularCPD("xray", 2, [[0.9, 0.5], [0.1, 0.5]], evidence=["smoker"], evidence_card=[2],
        ...                         state_names={"xray": ["neg", "pos"], "smoker": ["no", "yes"]}))
        >>> model = bp.BayesNetDataModel(net, n_records=2)
        >>> points, weights = model.exact_law(bp.DatasetSecret.proportion("smoker", "yes", 0.5), bp.count("xray", "pos"))
        >>> points.ravel().tolist(), weights.round(6).tolist()
        ([0.0, 1.0, 2.0], [0.45, 0.5, 0.05])
        """
        from scipy.stats import binom

        if not isinstance(query, Query):
            raise ParameterTypeError(f"query must be a bayespriv Query; got {type(query).__name__}")
        indicator = query.indicator
        if indicator is None or self.kind != "discrete" or indicator.column not in self.columns:
            return None
        self.check_secret(secret)
        net: _DiscreteNet = self._variant(secret)[1] if isinstance(secret, DistributionSecret) else self._base
        t = net.index(indicator.column)
        comp = query.components[0]
        counted = np.asarray(comp.h({indicator.column: net.values[t][None, :]}), dtype=float).reshape(-1)
        n = self.n_records
        groups = [(n, net.marginal(t) @ counted)] if not isinstance(secret, DatasetSecret) else \
            self._counted_given_secret(net, secret, t, counted)
        pmf = np.ones(1)
        for m, q in groups:
            pmf = np.convolve(pmf, binom.pmf(np.arange(m + 1), m, min(max(float(q), 0.0), 1.0)))
        counts = np.arange(pmf.size, dtype=float)
        if indicator.statistic == "proportion":
            counts = counts / n
        keep = pmf > 0
        return counts[keep].reshape(-1, 1), pmf[keep] / pmf[keep].sum()

    def _counted_given_secret(self, net: _DiscreteNet, secret: DatasetSecret, t: int,
                              counted: np.ndarray) -> list[tuple[int, float]]:
        """``[(k, q₁), (n − k, q₀)]``: records in / out of the secret's state and their chance to be counted."""
        i, j, k = self._secret_state(secret)
        if t == i:
            table = np.diag(net.marginal(i))  # P(s = v, t = w) with t the same node
        else:
            table = net.joint([i, t])
        table = table / table.sum()
        inside = table[j]
        outside = np.delete(table, j, axis=0).sum(axis=0)
        q1 = float(inside @ counted / inside.sum()) if inside.sum() > 0 else 0.0
        q0 = float(outside @ counted / outside.sum()) if outside.sum() > 0 else 0.0
        return [(k, q1), (self.n_records - k, q0)]

    # -- pickling --------------------------------------------------------------------------
    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_variants"] = {}  # rebuilt on demand: keeps process-pool tasks small
        return state

    def _signature_state(self) -> dict[str, Any]:
        """What defines this model's law (:mod:`bayespriv.datamodels.signature`): the network's conditional tables."""
        cpds = {str(c.variable): {k: v for k, v in vars(c).items() if not k.startswith("_")}
                for c in self.network.get_cpds()}
        edges = sorted(map(str, self.network.edges()))
        return {"columns": self.columns, "n_records": self.n_records, "theta": self.theta, "kind": self.kind,
                "edges": edges, "cpds": cpds}

    def __repr__(self) -> str:
        extra = f", theta={self.theta}" if self.theta else ""
        kind = "discrete" if self.kind == "discrete" else "linear Gaussian"
        return f"BayesNetDataModel({kind} network, columns={list(self.columns)}, n_records={self.n_records}{extra})"
