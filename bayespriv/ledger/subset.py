"""Count tables that are ε-private on a subset of the variables (Algorithm 1).

Paper: P. L. Tan, *Privacy on a subset of dataset variables* (papers/privacy-subset-of-variables.md),
Definition 2.2 and §5.2, Algorithm 1 / Proposition 5.1.

The mechanism itself (:class:`~bayespriv.mechanisms.subset_count.SubsetCountMechanism`: its
guarantee, its exact noise and its release, a table), the checks of a count request and the
non-negative post-processing are in :mod:`bayespriv.mechanisms.subset_count`; this module holds the
theory below, :func:`subset_count_table` (the table; an accounted table is released through the
mechanism) and the vectorized simulations (:func:`subset_count_array`, :func:`two_sided_geometric`).

A table of counts by a *protected* variable U₁ (e.g. income band) and a *public* variable V₁
(e.g. degree programme) is released so that

1. it is ε-private on U = {U₁} (and on every variable the table does not use),
2. every public margin (the count of each V₁ value) is exact,
3. every cell is an integer, and
4. every cell is unbiased: E g(i, j) = f(i, j).

Construction (Algorithm 1)
--------------------------
Within the row of public value v_i, let n_i be the number of protected categories that row can
take (U_{1,i}). For each of the C(n_i, 2) unordered pairs of categories {j < k} draw an independent
two-sided geometric variable b_{jk} and move it from cell k to cell j:

    g(i, j) = f(i, j) + Σ_{k > j} b_{jk} − Σ_{k < j} b_{kj}        (g = f + b M,  M ∈ M(n_i))

Every pair's noise enters the row once with + and once with −, so the noise of a row sums to zero
(the margin is exact) and is integer; each b has mean 0 (so the cells are unbiased).

Privacy: the tight calibration (default) and the paper's
------------------------------------------------------------
Neighbours. Two neighbours in the sense of Definition 2.2 with U = {U₁} differ in one record's
protected value only, so its public value v_i is the same: one unit moves from cell (i, j) to
(i, k) of one row, with both j and k in the row's domain U_{1,i} (the record's two values are both
possible for v_i), i.e. f(D₂) = f(D₁) + e_k − e_j in row i and every other row is unchanged. For
j < k, e_k − e_j = −m_{jk}, where m_{jk} = e_j − e_k is the row (j, k) of M, and the pair {j, k}
receives noise. Write T(β) = f(D₁) + β M. Then

    g(D₁) = T(b)    and    g(D₂) = f(D₁) − m_{jk} + b M = T(b − e_{jk}),

where e_{jk} is the unit vector of coordinate (j, k) of b: a neighbour shifts exactly one
coordinate of b by one unit.

**Theorem (tight calibration).** With every b_{jk} i.i.d. two-sided geometric of parameter
α = e^{−ε}, P(Z = z) = (1 − α)/(1 + α) · α^{|z|}, the table is ε-private on {U₁}; and this ε is the
smallest that holds for every table with a row of two possible categories.

*Proof.* Let p be the (product) pmf of b. For every β, only the coordinate (j, k) differs between
β and β + e_{jk}, so p(β + e_{jk}) / p(β) = α^{|β_{jk} + 1| − |β_{jk}|} ∈ [α, 1/α] = [e^{−ε}, e^{ε}]
because ||x + 1| − |x|| ≤ 1. For any set S of tables, with B_S = T^{−1}(S) ⊆ ℤ^{C(n_i, 2)} (T need
not be injective: the pushforward of b sums p over the fibres),

    P(g(D₂) ∈ S) = Σ_{β ∈ B_S} p(β + e_{jk}) ≤ e^{ε} Σ_{β ∈ B_S} p(β) = e^{ε} P(g(D₁) ∈ S),

i.e. the pointwise likelihood ratio of the pushforward is bounded by that of b; the same with D₁
and D₂ exchanged. The other rows' noise is independent and identical under D₁ and D₂. So the
release is ε-private on {U₁} (Definition 2.2). Tightness: if n_i = 2, M = (1, −1) is injective
(the row (f_j + b, f_k − b) determines b), so for β ≤ −1 the output x = T(β) has
P(g(D₂) = x) / P(g(D₁) = x) = p(β + 1)/p(β) = α^{−1} = e^{ε} exactly: no ε' < ε holds. ∎

(For n_i ≥ 3, T is not injective — its fibres are infinite — and the pointwise ratio of the
pushforward is below e^{ε}, but it tends to e^{ε} far in the tails: by brute-force enumeration at
n_i = 3, ε = 1, the largest log-ratio over |x| ≤ 12 is 0.999997. So ε is the right figure for
every row with n_i ≥ 2.)

**The paper's calibration** (``geometric_calibration="paper"``) draws b with α = e^{−ε/2},
calibrated to the L1 sensitivity 2 of f (a move touches two cells). By the theorem at ε/2 its loss
is ε/2 (attained with a row of two categories): it is ε-private, as the paper states, with a
factor 2 to spare. Its noise is that of the tight calibration at ε/2 (same α, same variance), so
at equal noise the tight calibration gives half the ε. The guarantee recorded for
``geometric_calibration="paper"`` is the ε the caller asked for (valid,
conservative), so the paper's releases are charged as the paper charges them.

Both calibrations release a table that does not depend on any other variable, so by
Proposition 3.3 it is 0-private on them, and ε-private on {U₁} together with them; it is *not*
private on V₁ (its margins are exact).

The two-sided geometric distribution (and the paper's sign slip)
------------------------------------------------------------------
The paper prints P(Z = z) = (1 − e^{ε/2}) / (1 + e^{ε/2}) · e^{−ε|z|/2}, whose constant is
negative for every ε > 0 (the masses sum to −1). The correct law is

    P(Z = z) = (1 − α) / (1 + α) · α^{|z|},   z ∈ ℤ,

with α = e^{−ε} (tight) or α = e^{−ε/2} (the paper's calibration).
We sample it as the difference of two i.i.d. geometric variables G₁, G₂ on {1, 2, …} with success
probability p = 1 − α (``rng.geometric(1 − α) − rng.geometric(1 − α)``):

    P(G₁ − G₂ = z) = Σ_{g ≥ max(1, 1−z)} p α^{g−1} · p α^{g+z−1} = p² α^{|z|} Σ_{m ≥ 0} α^{2m}
                   = (1 − α)² α^{|z|} / (1 − α²) = (1 − α)/(1 + α) · α^{|z|}.

The noise is an integer drawn independently of the data and added to integer counts; no
floating-point value computed from the data enters the output, so the floating-point attacks on
textbook Laplace samplers (Mironov 2012), whose output's low bits depend on the true value, do not
apply. (NumPy's geometric sampler itself is exact to double precision in its probabilities; the
released tables of :func:`subset_count_table` use the exact integer-arithmetic sampler of
:mod:`bayespriv.noise`.)

Variance (derivation)
---------------------
Var G = α / (1 − α)², so Var Z = 2α / (1 − α)². Cell j of row i receives ±b for each of the
n_i − 1 pairs containing j, all independent, hence

    Var g(i, j) = (n_i − 1) · 2α / (1 − α)²,     Cov(g(i, j), g(i, k)) = −2α / (1 − α)²  (j ≠ k),

i.e. the row's noise covariance is 2α/(1 − α)² · (n_i I − 1 1ᵀ) (the Laplacian of the complete
graph on the n_i categories), which is singular along 1 — the margin carries no noise. Rows are
independent. See :func:`cell_variance`. As ε → 0, 2α/(1 − α)² ≈ 2/ε² (tight) against 8/ε² (paper):
the tight calibration has about 1/4 of the variance at the same ε (at ε = 1: 1.84 against 7.84).

A second slip: the paper's loop adds noise only ``if n_i > 2``; a row with exactly two categories
would then be released exactly, which is not ε-private on U₁ (a move between its two cells is seen).
``M(N)`` is defined for N ≥ 2 and we add noise whenever n_i ≥ 2. A row with n_i = 1 needs no noise:
its only cell equals its public margin.

Non-negative post-processing
----------------------------
``nonnegative=True`` maps each noisy row g (with exact total s ≥ 0) to the non-negative integer row
h with the same total that is nearest to g in L1 distance, breaking ties by the L2 distance. With
N = Σ max(−g_j, 0): every feasible h must raise the negative cells by at least N in total and, the
total being fixed, lower the others by as much, so ‖h − g‖₁ ≥ 2N; clipping the negative cells to 0
and lowering the positive cells by N in total (never below 0; possible since their sum is s + N)
attains 2N. Among these, the reductions are spread as evenly as possible (water-filling:
d_j = min(g_j, λ), the remainder one unit each to the largest cells), which is the L2-nearest. It
is a function of the noisy table and the public margins only, so by post-processing (transformation
invariance, Remark 4.2.1) it keeps the guarantee. It makes the cells biased (small cells upwards).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from bayespriv._validation import check_epsilon, check_finite_array, check_memory, fail
from bayespriv.errors import BayesPrivDeprecationWarning, warn
from bayespriv.mechanisms.mechanism import LedgerLike
from bayespriv.mechanisms.release_path import check_dataset_name
from bayespriv.mechanisms.table_layout import TableLayout, split_layout_keywords, table_layout
from bayespriv.mechanisms.subset_count import (
    CALIBRATIONS,
    MAX_COUNT,
    MIN_EPSILON,
    THEOREM,
    SubsetCountMechanism,
    cell_variance,
    check_counts,
    check_domain,
    check_geometric_calibration,
    check_noise_epsilon,
    count_domain,
    draw_two_sided_geometric,
    exact_counts,
    geometric_alpha,
    nonnegative_rows,
    pair_matrix,
    pair_noise,
    validate_count_request,
)
from bayespriv.random import RNGLike, release_generator

__all__ = [
    "subset_count_table",
    "subset_count_array",
    "SubsetCountMechanism",
    "TableLayout",
    "two_sided_geometric",
    "two_sided_geometric_pmf",
    "pair_matrix",
    "cell_variance",
    "nonnegative_rows",
    "THEOREM",
    "CALIBRATIONS",
    "MIN_EPSILON",
    "MAX_COUNT",
]


def two_sided_geometric_pmf(z: Any, epsilon: float, *, geometric_calibration: str = "tight") -> np.ndarray:
    """P(Z = z) = (1 − α)/(1 + α) · α^{|z|} (the corrected constant).

    α = e^{−ε} for ``geometric_calibration="tight"`` (a unit shift changes the pmf by a factor e^{±ε}), or
    e^{−ε/2} for ``geometric_calibration="paper"`` (a factor e^{±ε/2}).
    """
    eps = check_epsilon(epsilon)
    a = geometric_alpha(eps, check_geometric_calibration(geometric_calibration))
    z = check_finite_array(z, "z")
    if np.any(z != np.round(z)):
        raise fail("z", "integers (the two-sided geometric law lives on the integers)", z)
    return (1.0 - a) / (1.0 + a) * a ** np.abs(z)


def two_sided_geometric(epsilon: float, size: Any = None, *, rng: RNGLike = None,
                        geometric_calibration: str = "tight") -> np.ndarray:
    """Independent draws of the two-sided geometric law, as int64.

    α = e^{−ε} (``geometric_calibration="tight"``) or e^{−ε/2} (``"paper"``). Drawn as ``G₁ − G₂`` with
    G₁, G₂ i.i.d. ``rng.geometric(1 − α)`` (see the module docstring for why this is exactly the
    two-sided geometric law). ε must be at least :data:`MIN_EPSILON`.
    """
    eps = check_noise_epsilon(epsilon)
    cal = check_geometric_calibration(geometric_calibration)
    shape = _check_size(size)
    gen, _ = release_generator(rng)
    return draw_two_sided_geometric(geometric_alpha(eps, cal), shape, gen)


def _check_size(size: Any, name: str = "size") -> tuple[int, ...] | None:
    """None, a non-negative integer or a tuple of them; the int64 draws must fit in memory."""
    if size is None:
        return None
    dims = (size,) if not isinstance(size, (tuple, list)) else tuple(size)
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0:
            raise fail(name, "None, an integer >= 0 or a tuple of them", size)
    check_memory(16.0 * math.prod(int(d) for d in dims), name, size, "the int64 draws")
    return tuple(int(d) for d in dims)


def subset_count_array(counts: Any, epsilon: float, *, domain: Any = None, size: int | None = None,
                       rng: RNGLike = None, geometric_calibration: str = "tight") -> np.ndarray:
    """Algorithm 1 on an array of counts, vectorized over ``size`` independent runs.

    Parameters
    ----------
    counts : array (m, K) of non-negative integers
        f(i, j): row i is the public value v_i, column j a protected category.
    epsilon : float >= MIN_EPSILON (1e-9)
    domain : bool array (m, K), optional
        ``domain[i, j]`` says whether category j is possible with v_i (the paper's U_{1,i});
        default: every category in every row. Cells outside the domain must be 0 and stay 0.
    size : int, optional
        Number of independent runs; the result then has shape (size, m, K).
    rng : None | int | SeedSequence | Generator
    geometric_calibration : {"tight", "paper"}
        α = e^{−ε} (default; loss exactly ε) or the paper's α = e^{−ε/2} (loss ε/2); see the module
        docstring.

    Returns
    -------
    ndarray of int64, shape (m, K) or (size, m, K); each row sums to the row of ``counts``.
    """
    f = check_counts(counts)
    eps = check_noise_epsilon(epsilon)
    cal = check_geometric_calibration(geometric_calibration)
    mask = check_domain(domain, f)
    if size is not None and (isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1):
        raise fail("size", "None or an integer >= 1", size)
    if size is not None:
        check_memory(8.0 * size * f.size * max(f.shape[1] - 1, 1), "size", size, "the noise of the independent runs")
    gen, _ = release_generator(rng)
    return f + pair_noise(mask, geometric_alpha(eps, cal), gen, size)


def _charge_ledger(ledger: LedgerLike, mech: SubsetCountMechanism, *, seeded: bool, dataset: str | None,
                   independent: bool) -> Any:
    """Spend the release's budget on the ledger (a bayespriv Ledger also records whether it was seeded, and the
    account it is charged to)."""
    from .ledger import Ledger

    if isinstance(ledger, Ledger):
        return ledger.charge(mech, seeded=seeded, dataset=dataset, independent=independent)
    return ledger.charge(mech)


#: The keywords of an accounted table (deprecated: an accounted table is released through the mechanism).
_ACCOUNTING = ("ledger", "dataset_name", "independent")


def _table_keywords(layout: Any, deprecated: dict[str, Any]) -> tuple[TableLayout, dict[str, Any]]:
    """``(layout, accounting)`` of :func:`subset_count_table`: the layout with its fields, once keywords of their
    own, folded in, and the deprecated accounting keywords (:data:`_ACCOUNTING`), each spelling warning. A keyword
    that was never accepted is a ``TypeError``, as Python's."""
    old_layout, accounting = split_layout_keywords(deprecated)
    unknown = [name for name in accounting if name not in _ACCOUNTING]
    if unknown:
        raise TypeError(f"subset_count_table() got an unexpected keyword argument {unknown[0]!r}")
    layout = table_layout("subset_count_table", layout, old_layout)
    if accounting:
        spelled = ", ".join(f"{name}=..." for name in accounting)
        warn(f"subset_count_table({spelled}) is deprecated and will be removed in the next release: use "
             "SubsetCountMechanism(protected=..., public=..., epsilon=...).release(table, ledger=..., "
             "dataset_name=..., options=ReleaseOptions(independent=True)), whose .value is the table",
             BayesPrivDeprecationWarning)
    return layout, accounting


def subset_count_table(
    table: pd.DataFrame,
    *,
    protected: str,
    public: str,
    epsilon: float,
    rng: RNGLike = None,
    layout: TableLayout | None = None,
    nonnegative: bool = False,
    geometric_calibration: str = "tight",
    **deprecated: Any,
) -> pd.DataFrame:
    """Counts by ``public`` × ``protected``, ε-private on {protected}, with exact public margins.

    Algorithm 1 of Tan, *Privacy on a subset of dataset variables* (§5.2), with the corrected
    two-sided geometric law (see the module docstring for the construction, the privacy proof and
    the variance (n_i − 1)·2α/(1 − α)², α = e^{−ε} by default). The table is not accounted: to charge
    it to a ledger, release it through its mechanism,
    ``SubsetCountMechanism(protected=..., public=..., epsilon=...).release(table, ledger=..., layout=...)``
    (:meth:`SubsetCountMechanism.release <bayespriv.mechanisms.SubsetCountMechanism.release>`), like every
    other accounted release.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per record (or per group of identical records, with ``layout.count``).
    protected, public : str
        Columns of ``table``: U₁ (whose values are protected) and V₁ (whose margins are public and
        released exactly).
    epsilon : float >= MIN_EPSILON (1e-9)
    rng : None | int | SeedSequence | Generator
        Release noise; ``None`` (the default) draws fresh OS entropy. A seeded release is for tests.
    layout : TableLayout, optional
        How the counts are read and laid out (the possible protected values, the rows, the multiplicity
        column): :class:`~bayespriv.ledger.TableLayout`. Without ``protected_values`` (and a column that is
        not Categorical) the categories are read off the data, with a
        :class:`~bayespriv.PrivacyAssumptionWarning` and the assumption ``"domain_from_data"``.
        ``protected_values=``, ``public_values=`` and ``count=`` are its deprecated spelling, kept for one
        release.
    nonnegative : bool
        Post-process each row to the L1-nearest non-negative integer row with the same total
        (keeps the guarantee; biases small cells upwards).
    geometric_calibration : {"tight", "paper"}
        ``"tight"`` (default): α = e^{−ε}, whose privacy loss is exactly ε (proof in the module
        docstring). ``"paper"``: the paper's α = e^{−ε/2} (calibrated to L1 sensitivity 2), whose
        true loss is ε/2 — about 4 times the variance at small ε; the guarantee recorded is still
        ε. To reproduce the paper's numbers at ε, pass ``geometric_calibration="paper"``, or
        equivalently the tight calibration at ε/2 (the same noise, recorded as ε/2).

    Returns
    -------
    pandas.DataFrame of int64
        Indexed by the public values, one column per protected value. ``attrs["guarantee"]`` is the
        :class:`~bayespriv.Guarantee`, ``attrs["variables"]`` the columns it depends on,
        ``attrs["protected"]`` / ``attrs["public"]`` the protected and exactly-released variables,
        ``attrs["mechanism"]`` the :class:`SubsetCountMechanism` and ``attrs["seeded"]``.

    Privacy
    -------
    ε-privacy on {protected} (Definition 2.2; Proposition 5.1, exact — the noise law is known in
    closed form; tight for ``geometric_calibration="tight"``: attained by a row of two categories);
    0-private on every other variable except ``public``, whose margins are exact.

    Notes
    -----
    ``ledger=``, ``dataset_name=`` and ``independent=`` are the deprecated spelling of an accounted table,
    kept for one release: an accounted table is released through its mechanism,
    ``SubsetCountMechanism(protected=..., public=..., epsilon=...).release(table, ledger=...,
    dataset_name=..., options=ReleaseOptions(independent=True))``.

    Examples
    --------
    >>> import pandas as pd
    >>> import bayespriv as bp
    >>> people = pd.DataFrame({"age": ["young"] * 6 + ["old"] * 4,
    ...                        "sex": ["F", "M", "F", "F", "M", "M", "F", "M", "M", "F"]})
    >>> table = bp.subset_count_table(people, protected="sex", public="age", epsilon=1.0,
    ...                               layout=bp.ledger.TableLayout(protected_values=["F", "M"]))
    >>> table.sum(axis=1).to_dict()          # the public margins are exact
    {'old': 4, 'young': 6}
    >>> table.attrs["guarantee"].epsilon, table.attrs["guarantee"].delta
    (1.0, 0.0)
    """
    layout, accounting = _table_keywords(layout, deprecated)
    ledger, dataset_name = accounting.get("ledger"), accounting.get("dataset_name")
    check_dataset_name(dataset_name)
    inputs = validate_count_request(table, protected=protected, public=public, epsilon=epsilon,
                                    nonnegative=nonnegative, count=layout.count, ledger=ledger,
                                    geometric_calibration=geometric_calibration)
    domain = count_domain(inputs, layout)
    f = exact_counts(inputs, domain)
    mech = SubsetCountMechanism(protected=inputs.protected, public=inputs.public, epsilon=inputs.epsilon,
                                assumptions=domain.assumptions, geometric_calibration=inputs.calibration)
    charge = None if ledger is None else (lambda: _charge_ledger(ledger, mech, seeded=rng is not None,
                                                                 dataset=dataset_name,
                                                                 independent=accounting.get("independent", False)))
    release = mech._release_counts(f, domain.mask, domain.rows, domain.cols, rng=rng, nonnegative=nonnegative,
                                   ledger=ledger, charge=charge)
    out = release.value
    out.attrs.update(guarantee=mech.guarantee, variables=mech.variables, protected=mech.protected,
                     public=mech.public, mechanism=mech, seeded=release.seeded, name=mech.query_name)
    return out
