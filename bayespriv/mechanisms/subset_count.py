"""Algorithm 1 of Tan (*Privacy on a subset of dataset variables*) as a mechanism: count tables
ε-private on a protected variable, with exact public margins.

:class:`SubsetCountMechanism` implements the :class:`~bayespriv.mechanisms.mechanism.Mechanism`
contract for a table: its guarantee (ε on the protected variable, exact), its noise plan (one
exact two-sided geometric draw per pair of protected categories in a row) and ``release``, which
returns a :class:`TableRelease` whose value is the noisy table (laid out as a
:class:`~bayespriv.mechanisms.table_layout.TableLayout` says). It also holds the checks of a
count request, the noise law's helpers and the non-negative post-processing. The construction,
the privacy proof and the variance are in the docstring of :mod:`bayespriv.ledger.subset`,
whose :func:`~bayespriv.ledger.subset_count_table` releases a table through this mechanism.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

import numpy as np
import pandas as pd

from .._validation import (
    check_choice,
    check_columns_present,
    check_epsilon,
    check_finite_array,
    check_frame,
    check_memory,
    check_positive_int,
    described,
    fail,
)
from ..errors import ParameterTypeError, PrivacyAssumptionWarning, ValidationError, warn
from ..random import RNGLike
from .mechanism import LedgerLike, Mechanism, _Fixed, _void
from bayespriv.noise import BitSource
from .release_path import DEFAULT_OPTIONS, check_dataset_name, release_options
from .table_layout import TableLayout, column_name, split_layout_keywords, table_layout
from bayespriv._deprecation import positional_arguments, renamed_keyword
from bayespriv.privacy.guarantee import Guarantee, Release, ReleaseOptions

__all__ = [
    "SubsetCountMechanism",
    "TableRelease",
    "TableLayout",
    "pair_matrix",
    "cell_variance",
    "nonnegative_rows",
    "check_geometric_calibration",
    "check_noise_epsilon",
    "geometric_alpha",
    "draw_two_sided_geometric",
    "check_counts",
    "check_domain",
    "pair_noise",
    "validate_count_request",
    "count_domain",
    "exact_counts",
]

THEOREM = "Tan, Privacy on a subset of dataset variables: Algorithm 1, Proposition 5.1"

#: Noise calibrations: ``"tight"`` (α = e^{−ε}, loss exactly ε; the default) and ``"paper"``
#: (α = e^{−ε/2} as printed in Algorithm 1; loss ε/2, recorded as ε). See the :mod:`bayespriv.ledger.subset` docstring.
CALIBRATIONS = ("tight", "paper")

_THEOREMS = {
    "tight": THEOREM + "; tight calibration α = e^(−ε) (bayespriv.ledger.subset, Theorem)",
    "paper": THEOREM + "; the paper's calibration α = e^(−ε/2) (true loss ε/2, recorded as ε)",
}

#: Largest count accepted: every integer up to 2**53 is exact in float64 (counts arrive as
#: floats from pandas) and the noisy cells stay far inside int64, which wraps silently.
MAX_COUNT = 2**53
#: Smallest ε a noisy count accepts: below it one pair's noise has a standard deviation above 10⁹ counts
#: (the table carries no information), and near 1e-19 a single draw leaves the 64-bit range (sums of
#: draws, which int64 wraps silently, sooner).
MIN_EPSILON = 1e-9


# -- the noise law ---------------------------------------------------------------------------------


def check_geometric_calibration(calibration: Any) -> str:
    """The noise calibration, checked: one of :data:`CALIBRATIONS`."""
    return check_choice(calibration, "geometric_calibration", CALIBRATIONS)


def check_noise_epsilon(epsilon: Any) -> float:
    """ε for drawing noise: finite, > 0 and at least :data:`MIN_EPSILON`."""
    eps = check_epsilon(epsilon)
    if eps < MIN_EPSILON:
        raise fail("epsilon", f"at least {MIN_EPSILON:g} for noisy counts (below it the noise exceeds 10⁹ counts: the "
                   "table carries no information, and the integer noise leaves the 64-bit range)", epsilon)
    return eps


def geometric_alpha(epsilon: float, calibration: str = "tight") -> float:
    """α = e^{−ε} (tight) or e^{−ε/2} (paper): the noise of the paper at ε is the tight noise at ε/2."""
    return math.exp(-(epsilon if calibration == "tight" else epsilon / 2.0))


def draw_two_sided_geometric(alpha: float, size: Any, gen: np.random.Generator) -> np.ndarray:
    """Two-sided geometric draws of parameter ``alpha`` (``G₁ − G₂``, i.i.d. ``gen.geometric(1 − alpha)``), int64."""
    p = 1.0 - alpha
    return np.asarray(gen.geometric(p, size), dtype=np.int64) - np.asarray(gen.geometric(p, size), dtype=np.int64)


def pair_matrix(n: int) -> np.ndarray:
    """A matrix of M(n): C(n, 2) rows, row (j, k) (j < k, lexicographic) is e_j − e_k."""
    n = check_positive_int(n, "n", minimum=0)
    check_memory(8.0 * n * max(n - 1, 0) / 2 * n, "n", n, f"the {n * max(n - 1, 0) // 2} x {n} int64 pair matrix")
    if n < 2:
        return np.zeros((0, max(n, 0)), dtype=np.int64)
    j, k = np.triu_indices(n, 1)
    m = np.zeros((j.size, n), dtype=np.int64)
    rows = np.arange(j.size)
    m[rows, j] = 1
    m[rows, k] = -1
    return m


def cell_variance(n: Any, epsilon: float, *, geometric_calibration: str = "tight") -> np.ndarray:
    """Variance of a cell in a row with ``n`` protected categories: (n − 1)·2α/(1 − α)².

    α = e^{−ε} (``geometric_calibration="tight"``, the default) or e^{−ε/2} (``"paper"``). Ask the cost before
    releasing: this is the exact noise variance of every cell (0 when n ≤ 1).
    """
    eps = check_epsilon(epsilon)
    a = geometric_alpha(eps, check_geometric_calibration(geometric_calibration))
    n = check_finite_array(n, "n")
    if np.any(n < 0) or np.any(n != np.round(n)):
        raise fail("n", "whole numbers >= 0 (protected categories in a row)", n)
    return np.maximum(n - 1.0, 0.0) * 2.0 * a / (1.0 - a) ** 2


def check_counts(counts: Any, name: str = "counts") -> np.ndarray:
    """A 2-dimensional table of non-negative whole counts (total at most :data:`MAX_COUNT`), as int64."""
    arr = np.asarray(counts)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ParameterTypeError(f"{name} must be an integer array; got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise fail(name, "a 2-dimensional array (public × protected)", described(f"shape {arr.shape}"))
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise fail(name, "whole numbers", arr)
    if np.any(arr < 0):
        raise fail(name, "non-negative counts", arr)
    _check_total(arr, name)
    return arr.astype(np.int64)


def _check_total(counts: np.ndarray, name: str) -> None:
    """Refuse counts whose total exceeds 2**53 (int64 would wrap them silently)."""
    total = float(np.sum(counts, dtype=float))
    if total > MAX_COUNT or float(np.max(counts, initial=0)) > MAX_COUNT:
        raise fail(name, f"counts totalling at most 2**53 = {MAX_COUNT} (larger counts lose exactness in "
                         "float64 and overflow int64 once noised)", described(f"total {total:.4g}"))


def check_domain(domain: Any, f: np.ndarray) -> np.ndarray:
    """The boolean mask of possible cells (all of them for None); counts outside it must be 0."""
    if domain is None:
        return np.ones(f.shape, dtype=bool)
    mask = np.asarray(domain)
    if mask.dtype != bool or mask.shape != f.shape:
        raise fail("domain", f"a boolean array of shape {f.shape}", described(f"{mask.dtype} array of shape {mask.shape}"))
    if np.any(f[~mask] != 0):
        raise ValidationError("counts must be 0 outside the domain (records there are impossible); "
                              f"got non-zero counts at {np.argwhere((f != 0) & ~mask).tolist()!r}")
    return mask


def _exact_pair_draws(epsilon: float, bits: Any, calibration: str = "tight") -> Any:
    """A drawer of exact two-sided geometric noise for the released table.

    The law α^{|z|}(1 − α)/(1 + α) with α = e^{−1/t} is the discrete Laplace law of scale t:
    t = 1/ε for the tight calibration (α = e^{−ε}), t = 2/ε for the paper's (α = e^{−ε/2}). It is
    sampled exactly (Canonne, Kamath & Steinke 2020, integer arithmetic only,
    :func:`~bayespriv.noise.sample_discrete_laplace`) with t the exact rational
    1/ε or 2/ε of the float ε, from the OS CSPRNG unless the caller seeded the release.
    (:func:`two_sided_geometric` and :func:`subset_count_array`, for simulations, draw the same law
    with NumPy's vectorized float-parameter geometric sampler.)
    """
    from fractions import Fraction

    from bayespriv.noise import sample_discrete_laplace

    scale = Fraction(1 if check_geometric_calibration(calibration) == "tight" else 2) / Fraction(epsilon)

    def draw(alpha: float, shape: tuple[int, ...], _gen: Any) -> np.ndarray:
        n = math.prod(shape)
        return np.asarray(sample_discrete_laplace(scale, n, bits), dtype=np.int64).reshape(shape)

    return draw


def pair_noise(mask: np.ndarray, alpha: float, gen: np.random.Generator, size: int | None,
               draw: Any = None) -> np.ndarray:
    """b M per row, vectorized: all C(K, 2) pairs drawn, pairs outside a row's domain set to 0."""
    m_rows, k = mask.shape
    mat = pair_matrix(k)  # (P, K)
    if mat.shape[0] == 0:
        shape = (m_rows, k) if size is None else (size, m_rows, k)
        return np.zeros(shape, dtype=np.int64)
    j, l = np.triu_indices(k, 1)
    pair_ok = mask[:, j] & mask[:, l]  # (m, P): both categories possible in the row
    shape = (m_rows, mat.shape[0]) if size is None else (size, m_rows, mat.shape[0])
    b = (draw or draw_two_sided_geometric)(alpha, shape, gen)
    b *= pair_ok
    return b @ mat  # integer matmul: (…, m, P) @ (P, K)


# -- non-negative post-processing -------------------------------------------------------------------


def nonnegative_rows(table: Any) -> np.ndarray:
    """Nearest non-negative integer rows with the same row sums (L1-minimal, then L2-minimal).

    Works on any array (..., K) of integers whose rows have a non-negative sum; vectorized over the
    leading axes. See the :mod:`bayespriv.ledger.subset` docstring for why the result is L1-nearest.
    """
    g = np.asarray(table)
    if g.ndim < 1:
        raise fail("table", "an array of rows (at least 1-dimensional)", described(f"shape {g.shape}"))
    if not np.issubdtype(g.dtype, np.integer):
        raise ParameterTypeError(f"table must be an integer array; got dtype {g.dtype}")
    g = g.astype(np.int64)
    if np.any(g.sum(axis=-1) < 0):
        raise fail("table", "rows with a non-negative sum", g)
    pos = np.maximum(g, 0)
    need = np.maximum(-g, 0).sum(axis=-1, keepdims=True)  # N per row
    # Largest integer λ with S(λ) = Σ min(pos, λ) ≤ N, by vectorized bisection on [0, max pos].
    lo = np.zeros_like(need)
    hi = pos.max(axis=-1, keepdims=True)
    while np.any(lo < hi):
        mid = (lo + hi + 1) // 2
        ok = np.minimum(pos, mid).sum(axis=-1, keepdims=True) <= need
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid - 1)
    lam = lo
    d = np.minimum(pos, lam)
    rest = need - d.sum(axis=-1, keepdims=True)  # < #{pos > λ}
    # One more unit from each of the `rest` largest cells (stable: earlier column first on ties).
    order = np.argsort(-pos, axis=-1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(g.shape[-1]), g.shape), axis=-1)
    d = d + (rank < rest)
    return pos - d


# -- a count request: its columns, domain and exact counts -----------------------------------------


def _categories(series: pd.Series, given: tuple | None) -> tuple[list, bool]:
    """Domain of a column: given (checked by :class:`TableLayout`), or the categories of a Categorical, or (last
    resort) the data."""
    if given is not None:
        return list(given), False
    if isinstance(series.dtype, pd.CategoricalDtype):
        return list(series.cat.categories), False
    return sorted(series.dropna().unique().tolist(), key=lambda v: (str(type(v)), v)), True


def _check_cells(series: pd.Series, column: str) -> None:
    """The cells of a category column must be hashable (a list or an array in a cell is not a category)."""
    if series.dtype != object:
        return
    try:
        pd.unique(series.to_numpy())
    except TypeError:
        for label, v in series.items():
            try:
                hash(v)
            except TypeError:
                raise fail(f"table[{column!r}]", "a column of hashable categories (strings, numbers, ...)",
                           described(f"{type(v).__name__} {v!r:.40} at row {label!r}")) from None
        raise  # pragma: no cover - every value hashed: the TypeError came from elsewhere


@dataclass(frozen=True)
class _CountInputs:
    """Checked arguments of a count table: the needed columns, their names, ε, calibration, weights."""

    data: pd.DataFrame
    protected: str
    public: str
    epsilon: float
    calibration: str
    weights: np.ndarray


@dataclass(frozen=True)
class _CountDomain:
    """Rows (public values), columns (protected values), allowed cells and the assumptions they imply."""

    rows: list
    cols: list
    mask: np.ndarray
    assumptions: tuple[str, ...]


def validate_count_request(table: Any, *, protected: Any, public: Any, epsilon: Any, nonnegative: Any,
                           count: str | None, ledger: Any, geometric_calibration: Any) -> _CountInputs:
    """Check the table and the scalar arguments, in order, and keep the columns the table needs."""
    check_frame(table, "table")
    protected = column_name(protected, "protected")
    public = column_name(public, "public")
    if protected == public:
        raise fail("protected", f"a different column from public ({public!r})", protected)
    eps = check_noise_epsilon(epsilon)
    cal = check_geometric_calibration(geometric_calibration)
    if not isinstance(nonnegative, bool):
        raise ParameterTypeError(f"nonnegative must be True or False; got {nonnegative!r}")
    if ledger is not None and not callable(getattr(ledger, "charge", None)):
        raise ParameterTypeError(f"ledger must be None or a bayespriv Ledger; got {type(ledger).__name__}")
    needed = [protected, public] + ([count] if count is not None else [])
    check_columns_present(needed, table.columns, "protected, public and count")
    data = table[needed]
    if data[[protected, public]].isna().any().any():
        raise ValidationError(f"table must have no missing values in {protected!r} and {public!r}; "
                              f"got {int(data[[protected, public]].isna().sum().sum())} missing")
    _check_cells(data[protected], protected)
    _check_cells(data[public], public)
    return _CountInputs(data=data, protected=protected, public=public, epsilon=eps, calibration=cal,
                        weights=_record_weights(data, count))


def _record_weights(data: pd.DataFrame, count: str | None) -> np.ndarray:
    """Multiplicity of each row: the ``count`` column (checked non-negative whole numbers), else ones."""
    if count is None:
        return np.ones(len(data), dtype=np.int64)
    w = data[count].to_numpy()
    if not np.issubdtype(w.dtype, np.number) or np.any(~np.isfinite(w.astype(float))) \
            or np.any(w < 0) or np.any(w != np.round(w)):
        raise fail("count", "a column of non-negative whole numbers", data[count].head().tolist())
    _check_total(w, "count")
    return w.astype(np.int64)


def count_domain(inputs: _CountInputs, layout: TableLayout) -> _CountDomain:
    """Rows and columns of the table and which cells may hold records; warns when read off the data."""
    data, protected = inputs.data, inputs.protected
    rows, _ = _categories(data[inputs.public], layout.public_values)
    assumptions: tuple[str, ...] = ()
    if isinstance(layout.protected_values, Mapping):
        per_row = layout.protected_values
        missing = [r for r in rows if r not in per_row]
        if missing:
            raise ValidationError(f"protected_values must give the possible values for every public value; missing {missing!r}")
        cols = list(dict.fromkeys(v for r in rows for v in per_row[r]))
        mask = np.array([[c in set(per_row[r]) for c in cols] for r in rows], dtype=bool)
    else:
        cols, from_data = _categories(data[protected], layout.protected_values)
        mask = np.ones((len(rows), len(cols)), dtype=bool)
        if from_data:
            assumptions = ("domain_from_data",)
            warn(f"protected_values not given and {protected!r} is not Categorical: the protected categories are "
                 "read off the data, which reveals which of them occur. Pass layout=TableLayout(protected_values=...) "
                 "(the possible values, decided without looking at the data) for the stated guarantee.",
                 PrivacyAssumptionWarning)
    return _CountDomain(rows=rows, cols=cols, mask=mask, assumptions=assumptions)


def exact_counts(inputs: _CountInputs, domain: _CountDomain) -> np.ndarray:
    """Weighted counts (rows × cols); every record must fall in an allowed cell of the domain."""
    data, protected, public = inputs.data, inputs.protected, inputs.public
    rows, cols = domain.rows, domain.cols
    ri = pd.Index(rows).get_indexer(data[public])
    ci = pd.Index(cols).get_indexer(data[protected])
    if np.any(ri < 0):
        raise ValidationError(f"public_values must contain every value of {public!r} in the data; "
                              f"got {sorted(set(data[public][ri < 0].tolist()), key=str)!r} outside them")
    if np.any(ci < 0):
        raise ValidationError(f"protected_values must contain every value of {protected!r} in the data; "
                              f"got {sorted(set(data[protected][ci < 0].tolist()), key=str)!r} outside them")
    f = np.zeros((len(rows), len(cols)), dtype=np.int64)
    np.add.at(f, (ri, ci), inputs.weights)
    if np.any(f[~domain.mask] != 0):
        bad = [(rows[i], cols[j]) for i, j in np.argwhere((f != 0) & ~domain.mask)]
        raise ValidationError(f"protected_values must allow every (public, protected) pair in the data; got records at {bad!r}")
    return f


# -- the noise plan, the release and the mechanism ----------------------------------------------------


@dataclass(frozen=True)
class _PairNoisePlan:
    """The exact sampler of Algorithm 1's noise: per row, one two-sided geometric draw per pair of
    categories both possible in the row, moved between the pair's cells (integers only)."""

    epsilon: float
    geometric_calibration: str

    def noise(self, mask: np.ndarray, bits: BitSource) -> np.ndarray:
        """The integer noise (rows × categories) of one table whose allowed cells are ``mask``."""
        eps, cal = self.epsilon, self.geometric_calibration
        return pair_noise(mask, geometric_alpha(eps, cal), None, None, _exact_pair_draws(eps, bits, cal))


@dataclass(frozen=True, repr=False, eq=False)
class TableRelease(Release):
    """A :class:`~bayespriv.privacy.guarantee.Release` whose value is a table: a DataFrame of
    int64 counts (a copy of the table the mechanism drew), indexed by the public values with one
    column per protected value. ``noise`` is None (the noise of a cell is given in closed form by
    :meth:`SubsetCountMechanism.cell_variance`) and so is ``valid_range``."""

    def __post_init__(self) -> None:
        if not isinstance(self.value, pd.DataFrame):
            raise fail("value", "a DataFrame of counts", self.value)
        object.__setattr__(self, "value", self.value.copy())
        if not isinstance(self.guarantee, Guarantee):
            raise fail("guarantee", "a Guarantee", self.guarantee)
        object.__setattr__(self, "postprocessed", tuple(self.postprocessed))

    def to_series(self) -> pd.Series:
        """The cells as a Series indexed by (public value, protected value), named after the table."""
        return self.value.stack().rename(self.query)

    def summary(self) -> tuple[str, ...]:
        """The table, one line per public value."""
        return tuple(self.value.to_string().splitlines())

    def __repr__(self) -> str:
        seeded = ", seeded" if self.seeded else ""
        rows, cols = self.value.shape
        return f"TableRelease({self.mechanism}{seeded}: {self.query}, {rows} x {cols} counts; {self.guarantee})"


class SubsetCountMechanism(Mechanism):
    """Algorithm 1 as a mechanism: it knows its guarantee before any data, and releases a table.

    ``protected`` is the budget it charges (the protected variable), ``variables`` the columns the
    table depends on. Build it by hand to ask the cost first (:meth:`cell_variance`) and release
    with :meth:`release` (a dataset, read and laid out as a :class:`~bayespriv.ledger.TableLayout` says) or
    :meth:`release_value` (an array of counts), with a ledger to account the table; or through
    :func:`~bayespriv.ledger.subset_count_table`, which returns the table itself, not accounted.

    ``geometric_calibration`` is ``"tight"`` (α = e^{−ε}, the default) or ``"paper"``
    (α = e^{−ε/2}); the guarantee is ε for both (exact for the tight calibration, twice the true
    loss for the paper's), so the ledger charges ε either way.

    Privacy
    -------
    Definition: ε-privacy on {protected} (Tan, Definition 2.2). Theorem: the theorem of the
    :mod:`bayespriv.ledger.subset` docstring (tight calibration; for the paper's, the same
    theorem at ε/2) — Proposition 5.1 of the paper with the corrected two-sided geometric constant.
    Assumptions: none beyond the declared domain of the protected variable (``"domain_from_data"``
    is recorded when it was read off the data). Exact: the noise law is known in closed form and
    sampled exactly. Composition ``"subset"``: releases add (Tan, Proposition 3.4).
    """

    #: Privacy on a subset of variables composes (Tan, Proposition 3.4): the ledger adds its charges.
    _composition: ClassVar[str] = "subset"
    protected_variable = _Fixed("the protected variable U₁ (its budget is charged)")
    public_variable = _Fixed("the public variable V₁ (its margins are released exactly)")
    assumptions = _Fixed("assumptions of the guarantee")
    geometric_calibration = _Fixed('"tight" or "paper"')

    def __init__(self, *args: Any, protected: str | None = None, public: str | None = None,
                 epsilon: float | None = None, assumptions: tuple[str, ...] = (),
                 geometric_calibration: str = "tight", **renamed: Any) -> None:
        """``SubsetCountMechanism(protected=..., public=..., epsilon=...)``, the keywords of
        :func:`~bayespriv.ledger.subset_count_table`.

        The former spellings — by position ``(protected_variable, public_variable, epsilon,
        assumptions, geometric_calibration)``, and the keywords ``protected_variable=`` /
        ``public_variable=`` — still work for one release, with a deprecation warning; an argument
        given in both spellings is an error.
        """
        if args or renamed:
            protected, public, epsilon, assumptions, geometric_calibration = _constructor_arguments(
                args, renamed, protected=protected, public=public, epsilon=epsilon, assumptions=assumptions,
                geometric_calibration=geometric_calibration)
        self.protected_variable = column_name(protected, "protected")
        self.public_variable = column_name(public, "public")
        super().__init__(None, epsilon=epsilon)
        self.geometric_calibration = check_geometric_calibration(geometric_calibration)
        guarantee = Guarantee(self.epsilon, 0.0, 1.0, assumptions, _THEOREMS[self.geometric_calibration])
        self.assumptions = guarantee.assumptions
        # What the release path and the ledger read, fixed here as a tuple: a field edited later with
        # object.__setattr__ changes neither the charge, the budgets charged nor the noise.
        self._subset = (self.protected_variable, self.public_variable, self.epsilon, self.geometric_calibration)

    @classmethod
    def _checked_epsilon(cls, epsilon: Any) -> float:
        return check_noise_epsilon(epsilon)

    # -- the contract --------------------------------------------------------------------------------
    def _compute_guarantee(self) -> Guarantee:
        """ε-privacy of the protected variable (δ = 0, exact: no estimated quantity), Algorithm 1 of Tan."""
        _, _, epsilon, calibration = self._subset
        return Guarantee(epsilon, 0.0, 1.0, self.assumptions, _THEOREMS[calibration])

    def _plan_noise(self) -> _PairNoisePlan:
        return _PairNoisePlan(self._subset[2], self._subset[3])

    def _discretized(self, g: Guarantee) -> Guarantee:
        return g  # integer noise drawn exactly: nothing to discretize

    def _release_noise(self) -> None:
        return None  # the cells' noise is given in closed form (cell_variance)

    def _compute_k(self) -> int:
        return 0  # the table's shape is set by the domain at release

    def _compute_protected(self) -> tuple[str, ...]:
        return (self._subset[0],)

    def _compute_variables(self) -> tuple[str, ...]:
        return (self._subset[0], self._subset[1])

    @property
    def theorem(self) -> str:
        """The theorem the guarantee rests on (fixed at construction)."""
        return _THEOREMS[self._subset[3]]

    @property
    def noise(self) -> str:
        """``"two_sided_geometric"``: integer noise moved between the cells of a row."""
        return "two_sided_geometric"

    @property
    def expected_abs_error(self) -> np.ndarray:
        """Refused: a cell's noise depends on how many protected categories its row can take, known at release;
        :meth:`cell_variance` gives it exactly."""
        raise ValidationError("expected_abs_error has no value before the table's shape is known; use "
                              "cell_variance(n), the exact noise variance of a cell in a row of n protected categories")

    @property
    def noiseless(self) -> bool:
        return False

    # -- what the table is -----------------------------------------------------------------------------
    @property
    def alpha(self) -> float:
        """The two-sided geometric parameter of every pair: e^{−ε} (tight) or e^{−ε/2} (paper)."""
        return geometric_alpha(self._subset[2], self._subset[3])

    @property
    def public(self) -> tuple[str, ...]:
        """Variables released exactly (no privacy on them): the public margins."""
        return (self._subset[1],)

    @property
    def query_name(self) -> str:
        """Name of the released table, e.g. ``"count by age × sex"``."""
        return f"count by {self._subset[1]} × {self._subset[0]}"

    def fingerprint(self) -> str:
        """What the ledger records in place of a calibration hash.

        The paper's calibration keeps the text hashed before the tight calibration existed (so its
        fingerprints are unchanged); the tight one appends ``|tight``.
        """
        protected, public, epsilon, calibration = self._subset
        text = f"{THEOREM}|{protected}|{public}|{epsilon!r}"
        if calibration != "paper":
            text += f"|{calibration}"
        return hashlib.sha256(text.encode()).hexdigest()

    def cell_variance(self, n: Any) -> np.ndarray:
        """Exact noise variance of a cell in a row with ``n`` protected categories, at this ε (:func:`cell_variance`)."""
        return cell_variance(n, self._subset[2], geometric_calibration=self._subset[3])

    # -- release -------------------------------------------------------------------------------------
    def release(self, dataset: pd.DataFrame, *, rng: RNGLike = None, ledger: LedgerLike | None = None,
                layout: TableLayout | None = None, nonnegative: bool = False, dataset_name: str | None = None,
                options: ReleaseOptions | None = None, **deprecated: Any) -> TableRelease:
        """The noisy table of counts by the public × protected variable of ``dataset``.

        Parameters
        ----------
        dataset : pandas.DataFrame
            One row per record (or per group of identical records, with ``layout.count``).
        rng : None | int | SeedSequence | Generator
            Release noise; ``None`` (the default) draws fresh OS entropy. A seeded release is for tests.
        ledger : Ledger, optional
            Charged (budget ``protected``) before any noise is drawn, on the ledger's default account unless
            ``dataset_name`` declares other data: a count table and a Pufferfish release on the same account
            have no composition theorem between them and the second is refused
            (:func:`~bayespriv.ledger.joint.composes_with`).
        layout : TableLayout, optional
            How the counts are read and laid out (the possible protected values, the rows, the multiplicity
            column): :class:`~bayespriv.ledger.TableLayout`. A domain read off the data (no
            ``protected_values`` and the column not Categorical) is refused unless the mechanism was built
            with the assumption ``"domain_from_data"``. ``protected_values=``, ``public_values=`` and
            ``count=`` are its deprecated spelling, kept for one release.
        nonnegative : bool
            Post-process each row to the L1-nearest non-negative integer row with the same total (keeps the
            guarantee; biases small cells upwards).
        dataset_name : str, optional
            Declare that the table reads other data than the ledger's other accounts (recorded as
            ``declared_separate_data``; see :meth:`Mechanism.release <bayespriv.mechanisms.Mechanism.release>`).
        options : ReleaseOptions, optional
            ``ReleaseOptions(independent=True)`` declares the table independent of the account's other
            releases (recorded as ``declared_independent``); either declaration, if false, leaves the joint ε
            unbounded. ``options.clip`` must be False (``nonnegative=True`` post-processes a table); the two
            opt-ins change nothing here (the guarantee is exact and rests on no calibration).
            ``independent=`` is its deprecated spelling, kept for one release.

        Returns
        -------
        TableRelease
            Its ``value`` is the table: int64 counts indexed by the public values, one column per protected
            value, whose rows add up to the exact public margins.

        Examples
        --------
        >>> import pandas as pd
        >>> import bayespriv as bp
        >>> people = pd.DataFrame({"age": ["young"] * 6 + ["old"] * 4, "sex": list("FMFFMMFMMF")})
        >>> mechanism = bp.SubsetCountMechanism(protected="sex", public="age", epsilon=1.0)
        >>> release = mechanism.release(people, layout=bp.ledger.TableLayout(protected_values=["F", "M"]))
        >>> release.value.sum(axis=1).to_dict()          # the public margins are exact
        {'old': 4, 'young': 6}
        """
        owner = f"{type(self).__name__}.release"
        old_layout, rest = split_layout_keywords(deprecated)
        dataset_name, options = _table_options(owner, options, rest, dataset_name)
        layout = table_layout(owner, layout, old_layout)
        check_dataset_name(dataset_name)
        protected, public, epsilon, calibration = self._subset
        inputs = validate_count_request(dataset, protected=protected, public=public, epsilon=epsilon,
                                        nonnegative=nonnegative, count=layout.count, ledger=ledger,
                                        geometric_calibration=calibration)
        domain = count_domain(inputs, layout)
        missing = [a for a in domain.assumptions if a not in self.accounting_record.assumptions]
        if missing:
            raise ValidationError(f"protected_values must be given (layout=TableLayout(protected_values=...), or "
                                  f"{protected!r} Categorical) for a mechanism whose guarantee does not assume "
                                  f"{missing}; got a domain read off the data")
        f = exact_counts(inputs, domain)
        charge = None if ledger is None else (lambda: ledger.charge(self, seeded=rng is not None, dataset=dataset_name,
                                                                    independent=options.independent))
        return self._release_counts(f, domain.mask, domain.rows, domain.cols, rng=rng, nonnegative=nonnegative,
                                    ledger=ledger, charge=charge)

    def release_value(self, answer: Any, *, rng: RNGLike = None, ledger: LedgerLike | None = None,
                      domain: Any = None, nonnegative: bool = False, dataset_name: str | None = None,
                      options: ReleaseOptions | None = None, **deprecated: Any) -> TableRelease:
        """The noisy table of an array of counts (public × protected) computed elsewhere.

        ``domain`` as in :func:`~bayespriv.ledger.subset_count_array`; rows and columns are
        numbered. With a ledger, the budget is charged before any noise is drawn; ``dataset_name`` and
        ``options`` as in :meth:`release` (``dataset=`` and ``independent=`` are their deprecated
        spellings, kept for one release).
        """
        dataset_name, options = _table_options(f"{type(self).__name__}.release_value", options, deprecated,
                                               dataset_name, renamed=True)
        check_dataset_name(dataset_name)
        f = check_counts(answer, "answer")
        mask = check_domain(domain, f)
        if not isinstance(nonnegative, bool):
            raise ParameterTypeError(f"nonnegative must be True or False; got {nonnegative!r}")
        if ledger is not None and not callable(getattr(ledger, "charge", None)):
            raise ParameterTypeError(f"ledger must be None or a bayespriv Ledger; got {type(ledger).__name__}")
        charge = None if ledger is None else (lambda: ledger.charge(self, seeded=rng is not None, dataset=dataset_name,
                                                                    independent=options.independent))
        return self._release_counts(f, mask, list(range(f.shape[0])), list(range(f.shape[1])), rng=rng,
                                    nonnegative=nonnegative, ledger=ledger, charge=charge)

    def _release_counts(self, f: np.ndarray, mask: np.ndarray, rows: list, cols: list, *, rng: RNGLike,
                        nonnegative: bool, ledger: Any, charge: Callable[[], Any] | None) -> TableRelease:
        """Charge (``charge()``, before any noise), draw the exact noise, post-process, and build the
        release; a failure after the spend voids the ``ledger`` row."""
        self._release_state()  # refuses an instance that was never frozen, before any spend
        receipt = charge() if charge is not None else None  # raises before any noise is drawn
        try:
            bits = BitSource.from_rng(rng)  # None: the OS CSPRNG
            g = f + self.__dict__["_noise_plan"].noise(mask, bits)
            if nonnegative:
                g = nonnegative_rows(g)
        except BaseException as exc:  # a failure after the spend: void the ledger row, spend nothing
            _void(ledger, receipt, exc)
            raise
        protected, public = self._subset[0], self._subset[1]
        table = pd.DataFrame(g, index=pd.Index(rows, name=public), columns=pd.Index(cols, name=protected))
        return TableRelease(table, self.guarantee, type(self).__name__, bits.seeded, query=self.query_name,
                            variables=self.variables, protected=self.protected,
                            ledger_id=getattr(receipt, "release_id", None))

    def __repr__(self) -> str:
        protected, public, epsilon, calibration = self._subset
        return (f"SubsetCountMechanism(protected={protected!r}, public={public!r}, "
                f"epsilon={epsilon!r}, assumptions={self.assumptions!r}, geometric_calibration={calibration!r})")


#: The constructor's arguments in the order they could be passed by position (a deprecated form).
_POSITIONAL = ("protected", "public", "epsilon", "assumptions", "geometric_calibration")
#: The constructor's former keyword names (deprecated), by their new names.
_RENAMED = {"protected_variable": "protected", "public_variable": "public"}
_DEFAULTS = {"protected": None, "public": None, "epsilon": None, "assumptions": (), "geometric_calibration": "tight"}
_MISSING = object()


def _constructor_arguments(args: tuple[Any, ...], renamed: dict[str, Any], **given: Any) -> tuple[Any, ...]:
    """The constructor's arguments in :data:`_POSITIONAL` order, from the deprecated positional form and old
    keyword names (each warns) and the new keywords ``given``; an argument given in two spellings is an error."""
    owner = "SubsetCountMechanism"
    unknown = [name for name in renamed if name not in _RENAMED]
    if unknown:
        raise TypeError(f"{owner}() got an unexpected keyword argument {unknown[0]!r}")
    passed = {name: value for name, value in given.items() if value is not _DEFAULTS[name]
              and not (isinstance(value, (str, tuple)) and value == _DEFAULTS[name])}
    values = positional_arguments(owner, _POSITIONAL, args, passed, missing=_MISSING)
    for old, new in _RENAMED.items():
        if old in renamed:
            values[new] = renamed_keyword(owner, old, new, renamed[old], values.get(new, _MISSING), missing=_MISSING)
    merged = {**given, **values}
    return tuple(merged[name] for name in _POSITIONAL)


def _table_options(owner: str, options: Any, deprecated: dict[str, Any], dataset_name: Any,
                   renamed: bool = False) -> tuple[Any, ReleaseOptions]:
    """``(dataset_name, options)`` of a table's release: :func:`~.release_path.release_options` with ``independent=``
    (and, for ``release_value``, ``dataset=``) as the only deprecated keywords, and ``options.clip`` refused."""
    if not deprecated and options is None:
        return dataset_name, DEFAULT_OPTIONS
    dataset_name, options = release_options(owner, options, deprecated, flags=("independent",),
                                             dataset_name=dataset_name, renamed=renamed)
    if options.clip:
        raise fail("options.clip", "False for a table of counts (nonnegative=True post-processes its cells)",
                   options.clip)
    return dataset_name, options
