"""Exact joint tables of a discrete Bayesian network by variable elimination with a fixed order.

pgmpy's ``VariableElimination`` chooses its elimination order from set
iteration, which depends on ``PYTHONHASHSEED``: the same query took 2 s or
70 s, and floating-point results may differ in their last bits. Here:

* the query P(X_T) keeps only the ancestral set of T (every other node is
  barren: it sums to 1);
* the order is the greedy *min-weight* order (eliminate next the variable
  whose bucket — the product of the factors that mention it — has the fewest
  entries), ties broken by the variables' **positions** in the network (never
  by hashes), computed symbolically *before* any number is multiplied;
* that plan gives the largest intermediate factor exactly, so a query whose
  plan exceeds ``max_factor`` entries is refused with the reason, before it
  runs;
* each bucket is one :func:`numpy.einsum` call over the CPD arrays, or, from
  2^15 entries on, the same arithmetic by broadcast products factor after
  factor (:func:`_product_sum`: the same bits, faster on large buckets); every
  factor is kept with its variables in descending positions for that.

The result is bit-for-bit the same for any hash seed (same order, same
arithmetic). Its memory layout is not part of it: einsum lays out its output
after its inputs, so a caller whose arithmetic depends on the layout (a
reduction) should first ask for C order.
"""

from __future__ import annotations

import heapq
import math
import string
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from bayespriv.datamodels.cpd_tables import CPDTables, read_cpd_tables
from bayespriv.errors import ValidationError

__all__ = ["BucketMemo", "DiscreteTables", "EliminationPlan", "MAX_FACTOR"]

#: Default bound on the largest intermediate factor (entries) of one query.
MAX_FACTOR = 2**22
_LETTERS = string.ascii_letters  # einsum labels: at most 52 distinct variables in one bucket
#: Buckets with at least this many entries are multiplied factor after factor (:func:`_product_sum`).
_PRODUCT_SUM_ENTRIES = 2**15
#: Default bound on the bytes of summed buckets a network's memo keeps (:class:`BucketMemo`). Measured on a
#: whole-network calibration of a random sparse 1 000-node network: as fast as a bound of 1 GiB, which the
#: memo fills there (benchmarks/RESULTS_quilts.md).
MEMO_BYTES = 2**27


@dataclass(frozen=True)
class EliminationPlan:
    """A symbolic elimination for the joint table of ``targets``.

    Attributes
    ----------
    targets : tuple of int
        Positions of the query variables, in the order of the result's axes.
    factors : tuple of int
        Positions of the nodes whose CPDs enter (the ancestral set of the targets).
    order : tuple of int
        Positions eliminated, in order.
    largest : int
        Entries of the largest factor built (a bucket's product, or the final product over the targets).
    """

    targets: tuple[int, ...]
    factors: tuple[int, ...]
    order: tuple[int, ...]
    largest: int


class DiscreteTables:
    """The CPDs of a pgmpy ``DiscreteBayesianNetwork`` as NumPy arrays indexed by node positions.

    Parameters
    ----------
    network : pgmpy.models.DiscreteBayesianNetwork or CPDTables
        The network (its CPDs are read once, by
        :func:`~bayespriv.datamodels.cpd_tables.read_cpd_tables`), or tables
        already read.
    nodes : sequence, optional
        The node order (positions); default ``network.nodes()``.

    Notes
    -----
    The states of a node are those of its own CPD; a child's CPD listing a
    parent's states in another order is permuted to the parent's order.
    Ancestral sets are found per query by a walk up the parent lists (no
    n × n ancestor table): a query costs time in the size of its ancestral
    set, not in the size of the network. ``card_list`` holds the cards as
    Python ints (read once; weights and table sizes multiply them).
    """

    def __init__(self, network: Any, nodes: Sequence[Hashable] | None = None) -> None:
        cpds = network if isinstance(network, CPDTables) else read_cpd_tables(network, nodes)
        if nodes is not None and tuple(nodes) != cpds.nodes:
            raise ValidationError("nodes must be the order the CPD tables were read in; got another order")
        self.nodes = cpds.nodes
        self.index = {v: k for k, v in enumerate(self.nodes)}
        self.states = cpds.states
        self.cards = cpds.cards
        self.card_list = [int(c) for c in np.asarray(cpds.cards).reshape(-1)]
        self.scopes = cpds.scopes
        self.tables = cpds.tables
        self.parents = tuple(scope[1:] for scope in self.scopes)
        self.buckets = BucketMemo(len(self.nodes))
        self._leaves = tuple(_Factor(*_descending(scope, table), k)
                             for k, (scope, table) in enumerate(zip(self.scopes, self.tables)))

    def ancestral(self, targets: Sequence[int]) -> tuple[int, ...]:
        """Positions of the targets and all their ancestors, sorted."""
        seen = set(int(x) for x in targets)
        stack = list(seen)
        parents = self.parents
        while stack:
            for u in parents[stack.pop()]:
                if u not in seen:
                    seen.add(u)
                    stack.append(u)
        return tuple(sorted(seen))

    def plan(self, targets: Sequence[int]) -> EliminationPlan:
        """The greedy min-weight plan for P(X_targets), ties broken by position, and its largest factor."""
        t = tuple(int(x) for x in targets)
        factors = self.ancestral(t)
        order, largest = _min_weight_order(factors, self.scopes, self.card_list, set(t))
        largest = max(largest, _size(self.card_list, set(t)))
        return EliminationPlan(t, factors, order, int(largest))

    def joint(self, plan: EliminationPlan, max_factor: int = MAX_FACTOR) -> np.ndarray:
        """P(X_targets) with axes in ``plan.targets`` order (refused beyond ``max_factor`` entries).

        The factors are kept in the order they entered the pool (the CPDs by position, then each bucket's
        product appended), and each bucket multiplies its factors in that order: the arithmetic, hence every
        bit of the result, depends on the plan alone. A bucket already summed for an earlier plan (the same
        variable over the same factors, in the same order) is taken from :attr:`buckets`: the same inputs
        give the same bits, so reusing it changes nothing but the time.
        """
        if plan.largest > max_factor:
            raise ValidationError(self.refusal(plan, max_factor))
        leaves = self._leaves
        pool: list[_Factor | None] = [leaves[k] for k in plan.factors]
        # variable -> positions in the pool of the factors that mentioned it (ascending; the ones already
        # multiplied into a bucket are skipped when the variable's turn comes)
        holding: dict[int, list[int]] = {}
        for fid, f in enumerate(pool):
            for v in f.scope:  # type: ignore[union-attr]
                holding.setdefault(v, []).append(fid)
        memo = self.buckets
        known = memo._known
        for x in plan.order:
            bucket = []
            for i in holding.pop(x):
                f = pool[i]
                if f is not None:
                    bucket.append(f)
                    pool[i] = None
            name = (x, *[f.key for f in bucket])
            summed = known.pop(name, None)  # a hit is kept as the most recently used, as in BucketMemo.summed
            if summed is None:
                summed = memo._add(name, x, bucket)
            else:
                known[name] = summed
            for v in summed.scope:
                holding[v].append(len(pool))
            pool.append(summed)
        return _contract([(f.scope, f.values) for f in pool if f is not None], plan.targets)

    def refusal(self, plan: EliminationPlan, max_factor: int) -> str:
        """The reason a plan is refused: its largest factor against the bound."""
        shown = [str(self.nodes[v]) for v in plan.targets]
        return (f"max_factor must bound the largest intermediate factor of the variable elimination for "
                f"P({', '.join(shown)}); got max_factor={max_factor} and a plan (min-weight order over "
                f"{len(plan.factors)} ancestral nodes) whose largest factor has {plan.largest} entries")


class _Factor(NamedTuple):
    """A factor of the elimination: its variables (positions, descending: see :func:`_descending`), values,
    and an id naming how it was computed (a CPD's position, or a number given by :class:`BucketMemo` to a
    summed bucket)."""

    scope: tuple[int, ...]
    values: np.ndarray
    key: int


class BucketMemo:
    """Summed buckets of the variable elimination, kept per network and shared by every query on it.

    A bucket is named by the variable summed out and the ids of its factors in order; the same name means
    the same inputs in the same order, hence the same einsum and the same bits. At most ``limit`` buckets
    and ``max_bytes`` bytes of tables are kept; beyond, the least recently used buckets are dropped (a
    dropped bucket is summed again when needed, with the same bits: results do not depend on the memo).

    Parameters
    ----------
    first_id : int
        The first id given to a summed bucket (ids below are the CPDs' positions).
    limit : int
        Largest number of buckets kept.
    max_bytes : int
        Largest total size of the kept tables (default :data:`MEMO_BYTES`, 128 MiB); a larger table is not
        kept.
    """

    def __init__(self, first_id: int, limit: int = 400_000, max_bytes: int = MEMO_BYTES) -> None:
        self.first_id = int(first_id)
        self.limit = int(limit)
        self.max_bytes = int(max_bytes)
        self.nbytes = 0
        self._known: dict[tuple[int, ...], _Factor] = {}
        self._next = self.first_id

    def __len__(self) -> int:
        return len(self._known)

    def summed(self, x: int, bucket: list[_Factor]) -> _Factor:
        """The product of ``bucket`` (in order) with ``x`` summed out."""
        name = (x, *[f.key for f in bucket])
        known = self._known
        hit = known.pop(name, None)
        if hit is not None:
            known[name] = hit  # now the most recently used
            return hit
        return self._add(name, x, bucket)

    def _add(self, name: tuple[int, ...], x: int, bucket: list[_Factor]) -> _Factor:
        """Sum the bucket ``name`` (not kept) and keep it, dropping the least recently used beyond the bounds."""
        known = self._known
        union = sorted(set().union(*(f.scope for f in bucket)), reverse=True)
        out = tuple(v for v in union if v != x)
        values = _contract([(f.scope, f.values) for f in bucket], out)
        values.setflags(write=False)
        factor = _Factor(out, values, self._next)
        self._next += 1
        if values.nbytes <= self.max_bytes:
            while known and (len(known) >= self.limit or self.nbytes + values.nbytes > self.max_bytes):
                self.nbytes -= known.pop(next(iter(known))).values.nbytes
            known[name] = factor
            self.nbytes += values.nbytes
        return factor


def _min_weight_order(factors: tuple[int, ...], scopes: Sequence[tuple[int, ...]], cards: Sequence[int],
                      targets: set[int]) -> tuple[tuple[int, ...], int]:
    """The greedy min-weight elimination order of the non-target ``factors`` and its largest bucket.

    At each step the variable with the least (weight, position) is eliminated, weight being the entries of
    its bucket (the product of the cards of the variable and its current neighbours). A heap with stale
    entries skipped gives the same choice as a scan of all remaining variables. ``cards`` is best a list of
    Python ints (each weight is then one ``math.prod`` over a C-level map).
    """
    uniform = {int(cards[v]) for v in factors}
    if len(uniform) == 1:
        return _uniform_min_weight_order(factors, scopes, uniform.pop(), targets)
    return _set_min_weight_order(factors, scopes, cards, targets)


def _set_min_weight_order(factors: tuple[int, ...], scopes: Sequence[tuple[int, ...]], cards: Sequence[int],
                          targets: set[int]) -> tuple[tuple[int, ...], int]:
    """:func:`_min_weight_order` for any cards, neighbour sets as Python sets."""
    neighbours: dict[int, set[int]] = {v: set() for v in factors}
    for k in factors:
        scope = scopes[k]
        for v in scope:
            neighbours[v].update(scope)
    card = cards.__getitem__
    weight = {}
    for v in factors:
        neighbours[v].discard(v)
        if v not in targets:
            weight[v] = math.prod(map(card, neighbours[v])) * int(card(v))
    heap = [(w, v) for v, w in weight.items()]
    heapq.heapify(heap)
    order, largest = [], 0
    while heap:
        w, x = heapq.heappop(heap)
        if weight.get(x) != w:
            continue  # eliminated already, or an outdated weight
        order.append(x)
        largest = max(largest, w)
        del weight[x]
        nb = neighbours.pop(x)
        for y in nb:
            around = neighbours[y]
            around |= nb
            around.discard(y)
            around.discard(x)
            if y in weight:
                weight[y] = w_y = math.prod(map(card, around)) * int(card(y))
                heapq.heappush(heap, (w_y, y))
    return tuple(order), largest


def _uniform_min_weight_order(factors: tuple[int, ...], scopes: Sequence[tuple[int, ...]], card: int,
                              targets: set[int]) -> tuple[tuple[int, ...], int]:
    """:func:`_min_weight_order` when every variable has ``card`` states: neighbour sets as bits of Python
    ints over the variables' ranks in ``factors`` (ascending positions, so ranks break ties as positions do).
    A bucket's weight is ``card ** (neighbours + 1)``, increasing in the number of neighbours when
    ``card > 1``: the least (weight, position) is the first variable, in rank order, of fewest neighbours.
    The remaining variables are kept as bits per number of neighbours, so that variable is the lowest bit
    of the first non-empty degree. Same order, same largest bucket."""
    rank = {v: i for i, v in enumerate(factors)}
    k = len(factors)
    neighbours = [0] * k
    for f in factors:
        bits = 0
        for v in scopes[f]:
            bits |= 1 << rank[v]
        for v in scopes[f]:
            neighbours[rank[v]] |= bits
    for i in range(k):
        neighbours[i] &= ~(1 << i)
    degree = [nb.bit_count() for nb in neighbours] if card > 1 else [0] * k
    by_degree = [0] * (k + 1)  # remaining ranks of each degree, as bits
    alive = 0
    for i, v in enumerate(factors):
        if v not in targets:
            by_degree[degree[i]] |= 1 << i
            alive |= 1 << i
    order, most, low_degree = [], -1, 0  # no remaining variable has fewer than low_degree neighbours
    while alive:
        d = low_degree
        while not by_degree[d]:
            d += 1
        low_degree = d
        pick = by_degree[d]
        bit = pick & -pick
        by_degree[d] = pick ^ bit
        alive ^= bit
        i = bit.bit_length() - 1
        order.append(factors[i])
        nb = neighbours[i]
        if nb.bit_count() > most:
            most = nb.bit_count()
        rest = nb
        while rest:
            low = rest & -rest
            rest ^= low
            j = low.bit_length() - 1
            neighbours[j] = around = (neighbours[j] | nb) & ~(low | bit)
            if card > 1:
                dj, before = around.bit_count(), degree[j]
                if dj != before:
                    degree[j] = dj
                    if alive & low:
                        by_degree[before] ^= low
                        by_degree[dj] |= low
                        if dj < low_degree:
                            low_degree = dj
    return tuple(order), (card ** (most + 1) if order else 0)


def _size(cards: Sequence[int], scope: Any) -> int:
    return math.prod(int(cards[v]) for v in scope)


def _float_product(counts: Sequence[int]) -> float:
    """``float(np.prod(counts, dtype=float))`` bit for bit, for ints ≥ 1: the exact product when its odd part is
    below 2**53 and it is below 2**1024 (every partial product divides it, so each one NumPy forms is exact in
    floating point too), else NumPy's."""
    exact = math.prod(counts)
    if 0 < exact < 2**1024 and exact >> ((exact & -exact).bit_length() - 1) < 2**53:
        return float(exact)
    return float(np.prod(np.asarray(counts, dtype=float)))


def _descending(scope: tuple[int, ...], table: np.ndarray) -> tuple[tuple[int, ...], np.ndarray]:
    """A factor laid out with its variables in descending positions (a read-only contiguous copy if needed).

    Every factor of the elimination is kept in this one layout, so that a large bucket's factors are
    sub-grids of the bucket's own axes (:func:`_product_sum`). The layout changes no number: a product
    entry is the same product of the same entries, whatever the memory order.
    """
    perm = sorted(range(len(scope)), key=lambda k: -scope[k])
    if perm == list(range(len(scope))):
        return tuple(scope), table
    values = np.ascontiguousarray(np.transpose(table, perm))
    values.setflags(write=False)
    return tuple(scope[k] for k in perm), values


def _contract(factors: list[tuple[tuple[int, ...], np.ndarray]], out: tuple[int, ...]) -> np.ndarray:
    """Product of ``factors`` summed onto the variables ``out``: one einsum with local labels, or, for a large
    bucket, :func:`_product_sum` (the same bits, faster there)."""
    fast = _product_sum(factors, out)
    if fast is not None:
        return fast
    variables = sorted(set(out).union(*[f[0] for f in factors]))
    if len(variables) > len(_LETTERS):
        raise ValidationError(f"a bucket of the variable elimination must involve at most {len(_LETTERS)} variables; "
                              f"got {len(variables)}")
    label = dict(zip(variables, _LETTERS)).__getitem__
    spec = ",".join(["".join(map(label, scope)) for scope, _ in factors])
    spec += "->" + "".join(map(label, out))
    return np.einsum(spec, *[values for _, values in factors])


def _product_sum(factors: list[tuple[tuple[int, ...], np.ndarray]], out: tuple[int, ...]) -> np.ndarray | None:
    """:func:`_contract` of a large bucket by broadcast products, factor after factor, then the sum of the two
    halves of the variable summed out; None where einsum is kept (below :data:`_PRODUCT_SUM_ENTRIES` entries,
    a summed variable with other than two states or missing from a factor, or a factor not in descending
    layout).

    The arithmetic is einsum's, entry by entry: NumPy's einsum multiplies the operands of an entry from left
    to right (``((f₁·f₂)·f₃)·…``) and adds the products into a zeroed output; here each entry is the same
    left-to-right product, and the two terms of a binary sum are added once (0 + t₀ + t₁ = t₀ + t₁ for
    probabilities, and two terms add the same in either order). einsum walks every entry of the bucket in one
    loop over all its axes; the broadcast products build each partial product only over the variables
    multiplied so far, with longer inner loops. Measured, not only argued: byte-equal to einsum on random
    buckets of 2–5 factors, every factor holding the summed variable, in any position (the tests). When a
    factor lacks the summed variable, einsum's loop for two operands may fuse a product with the sum (one
    rounding instead of two; seen on this machine's NumPy), so such products are left to einsum; they do not
    occur in the elimination. Another NumPy build could fuse elsewhere too: the two routes would then differ in
    last bits, but each stays the same for any hash seed, since which buckets take which route is fixed by the
    plan.
    """
    if math.prod(values.size for _, values in factors) < _PRODUCT_SUM_ENTRIES:
        return None  # the bucket has fewer entries than its factors together
    cards: dict[int, int] = {}
    for scope, values in factors:
        if any(a < b for a, b in zip(scope, scope[1:])):
            return None
        cards.update(zip(scope, values.shape))
    union = sorted(cards, reverse=True)
    summed = [v for v in union if v not in out]
    if len(summed) > 1 or (summed and cards[summed[0]] != 2) or set(out) - cards.keys():
        return None
    if summed and any(summed[0] not in scope for scope, _ in factors):
        return None  # not a bucket of the elimination (there every factor holds the variable summed out)
    if math.prod(cards.values()) < _PRODUCT_SUM_ENTRIES:
        return None
    axis = {v: i for i, v in enumerate(union)}
    product = None
    for scope, values in factors:
        shape = [1] * len(union)
        for v in scope:
            shape[axis[v]] = cards[v]
        term = values.reshape(shape)
        product = term if product is None else product * term
    if summed:
        at = (slice(None),) * axis[summed[0]]
        return product[(*at, 0)] + product[(*at, 1)]  # axes: the union without the summed one, descending
    full = np.broadcast_to(product, [cards[v] for v in union])  # no variable summed: every one is kept
    return np.ascontiguousarray(full.transpose([union.index(v) for v in out]))
