"""The fixed-order variable elimination: large buckets multiplied factor by factor give einsum's bits.

Exact checks (no tolerance): every comparison is of the bytes of two arrays.
"""

from __future__ import annotations

import string

import numpy as np
import pytest

from bayespriv.networks import elimination
from bayespriv.networks.elimination import DiscreteTables, _descending, _product_sum

from benchmarks.bench_quilts import random_network


def _einsum(factors, out):
    """The bucket by one plain einsum call (an independent statement of the arithmetic)."""
    labels = dict(zip(sorted(set(out).union(*[s for s, _ in factors])), string.ascii_letters))
    spec = ",".join("".join(labels[v] for v in s) for s, _ in factors) + "->" + "".join(labels[v] for v in out)
    return np.einsum(spec, *[v for _, v in factors])


def _random_bucket(rng, n_vars, n_factors, summed):
    """A bucket of the elimination: factors in descending layout over ``n_vars`` binary variables (every
    variable in some factor, the first factor holding most of them) and, when ``summed``, a variable at a random
    position held by every factor and left out of ``out``."""
    variables = list(range(n_vars))
    x = int(rng.integers(n_vars))
    scopes = [set(rng.choice(variables, size=n_vars - 2, replace=False).tolist())]
    scopes += [set(rng.choice(variables, size=int(rng.integers(1, 4)), replace=False).tolist())
               for _ in range(n_factors - 1)]
    scopes[-1] |= set(variables) - set().union(*scopes)
    if summed:
        scopes = [s | {x} for s in scopes]
    factors = [(tuple(sorted(s, reverse=True)), rng.random((2,) * len(s))) for s in scopes]
    out = tuple(v for v in sorted(variables, reverse=True) if not (summed and v == x))
    return factors, out


@pytest.mark.parametrize("seed", range(6))
def test_large_buckets_give_einsum_bits(seed):
    """Buckets of 2^15–2^17 entries, 2–5 factors, one binary variable summed out or none: the factor-by-factor
    product equals one einsum call byte for byte (and does take the factor-by-factor route)."""
    rng = np.random.default_rng(seed)
    for trial in range(4):
        factors, out = _random_bucket(rng, 15 + trial % 3, 2 + (seed + trial) % 4, summed=trial % 2 == 0)
        fast = _product_sum(factors, out)
        assert fast is not None
        assert fast.shape == _einsum(factors, out).shape
        assert fast.tobytes() == _einsum(factors, out).tobytes()
        if len(factors) > 2:  # twin: the same product in another order is not einsum's arithmetic
            assert np.ascontiguousarray(_product_sum(factors[::-1], out)).tobytes() != _einsum(factors, out).tobytes()


def test_final_products_come_in_the_order_asked():
    """Without a summed variable the product comes in the order of ``out`` (any order), C-contiguous."""
    rng = np.random.default_rng(7)
    factors, out = _random_bucket(rng, 16, 3, summed=False)
    shuffled = tuple(rng.permutation(out).tolist())
    got = _product_sum(factors, shuffled)
    assert got.flags.c_contiguous and got.tobytes() == _einsum(factors, shuffled).tobytes()


def test_einsum_is_kept_where_the_route_does_not_apply():
    """Small buckets, a summed variable with three states or missing from a factor, or a factor not in
    descending layout: None (einsum)."""
    rng = np.random.default_rng(3)
    small, out = _random_bucket(rng, 10, 3, summed=True)
    assert _product_sum(small, out) is None
    factors, out = _random_bucket(rng, 16, 3, summed=False)
    assert _product_sum([(s[::-1], np.transpose(v)) for s, v in factors], out) is None
    three = [((16, *s), rng.random((3,) + v.shape)) for s, v in factors]  # variable 16 (three states) summed
    assert _product_sum(three, out) is None
    assert _product_sum([(s, v[:2]) for s, v in three], out) is not None  # with two states it is taken
    lacking = [((16, *s), v[:2]) for s, v in three[:-1]] + [factors[-1]]  # the last factor lacks variable 16
    assert _product_sum(lacking, out) is None


def test_descending_layout_keeps_every_entry():
    """A CPD laid out with its variables in descending positions holds the same entry at every assignment."""
    table = np.random.default_rng(0).random((2, 3, 4))
    scope, values = _descending((5, 9, 1), table)
    assert scope == (9, 5, 1) and values.flags.c_contiguous and not values.flags.writeable
    assert all(values[b, a, c] == table[a, b, c] for a in range(2) for b in range(3) for c in range(4))


def test_joint_tables_equal_with_and_without_the_factor_by_factor_route(monkeypatch):
    """Joint tables of a 300-node random network (targets of 8–14 nodes) are the same bytes whether large
    buckets go factor by factor or through einsum, and some of them did go factor by factor."""
    bn = random_network(300, 1)
    rng = np.random.default_rng(11)
    queries = [sorted(rng.choice(300, size=int(rng.integers(8, 15)), replace=False).tolist()) for _ in range(25)]
    routed = []
    original = elimination._product_sum

    def watched(factors, out):
        got = original(factors, out)
        routed.append(got is not None)
        return got

    monkeypatch.setattr(elimination, "_product_sum", watched)
    fast = DiscreteTables(bn)
    queries = [q for q in queries if fast.plan(q).largest <= elimination.MAX_FACTOR]
    assert len(queries) > 15
    fast_tables = [fast.joint(fast.plan(q)) for q in queries]
    assert any(routed)
    monkeypatch.setattr(elimination, "_PRODUCT_SUM_ENTRIES", 2**62)
    slow = DiscreteTables(bn)
    for q, table in zip(queries, fast_tables):
        assert slow.joint(slow.plan(q)).tobytes() == table.tobytes()
