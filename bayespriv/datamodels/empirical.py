"""Θ = datasets resampled without replacement from a reference table.

This is how the distribution-privacy paper (Chen & Ohrimenko, AISTATS 2023,
§5.1 and appendix C.1) models the census: a dataset of ``n`` records with a
share ``p`` of high earners is ``p·n`` records drawn without replacement from
the high earners of the Adult table and ``(1 − p)·n`` from the others.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
import weakref

import numpy as np
import pandas as pd

from .._validation import check_frame, check_positive_int, described, fail
from ..errors import ParameterTypeError, UnsupportedSecretError, ValidationError
from ..queries import Batch, Query
from ..queries.checks import numeric_output
from ..queries.query import complete_fingerprint
from ..random import RNGLike, as_generator
from ..secrets import DatasetSecret, Secret, share_count
from .base import DataModel
from .subsets import sample_subsets

__all__ = ["EmpiricalDataModel", "sample_subsets"]

#: pandas ≥ 3 is always copy-on-write: a Series taken from the user's table keeps its values when
#: the table is modified afterwards, so text columns are held as such instead of copied.
_COPY_ON_WRITE = int(pd.__version__.split(".")[0]) >= 3


#: What a column holds: booleans, numbers (float64 once converted), text in which every cell is a
#: ``str``, other text (categoricals, objects, mixed types: every cell read as ``str(cell)``), or
#: text not scanned yet (:data:`EAGER_TEXT_CELLS`; one of the two text kinds once scanned).
_BOOL, _NUMBER, _PLAIN_TEXT, _TEXT, _UNSCANNED = "bool", "number", "plain text", "text", "unscanned text"

#: Text cells (rows × text columns other than categoricals) a table may hold for the constructor to
#: scan them all for missing values (~5 ns a cell: at most ~0.3 ms). A larger table's text columns
#: are scanned one by one on their first use, before any of their values is read, with the same
#: refusal: a column no query or secret reads costs no scan.
EAGER_TEXT_CELLS = 1 << 16


def _dtype_class(dtype: Any) -> str:
    """What a column of ``dtype`` is read as: ``"bool"``, ``"maybe bool"`` (pandas' nullable
    booleans: boolean when no value is missing), ``"int"`` (NumPy integers, which cannot hold a
    missing value), ``"number"``, ``"category"`` or ``"text"`` (strings, objects, dates: finding
    their missing values takes a scan of the cells). NumPy and string dtypes are told apart without
    pandas' dtype dispatch (a few µs a call)."""
    if isinstance(dtype, np.dtype):
        kind = dtype.kind
        return "bool" if kind == "b" else "int" if kind in "iu" else "number" if kind in "fc" else "text"
    if isinstance(dtype, pd.StringDtype):
        return "text"
    if isinstance(dtype, pd.CategoricalDtype):
        return "category"
    if pd.api.types.is_bool_dtype(dtype):
        return "maybe bool"
    return "number" if pd.api.types.is_numeric_dtype(dtype) else "text"


def _column_values(series: pd.Series, scan: bool) -> tuple[np.ndarray | pd.Series, int, str]:
    """One column as our own snapshot, its number of missing values and its kind.

    Booleans stay boolean, other numbers become float64 (copied, and checked
    for NaN); columns of NumPy integers, which cannot hold a missing value, are
    kept as the Series itself under copy-on-write (pandas ≥ 3) and converted on
    their first use. Anything else (strings, categoricals, objects) is kept as
    the Series itself under copy-on-write (a deep copy before pandas 3),
    converted on its first use (:func:`_coded_column`), so a wide table only
    pays the conversion of the columns its queries and secrets read; a
    categorical is checked for missing values here (its codes), other text when
    ``scan`` (:func:`_text_missing`), else it is left :data:`_UNSCANNED` (0
    missing values reported; :meth:`EmpiricalDataModel._scan` checks it on its
    first use).
    """
    cls = _dtype_class(series.dtype)
    if cls == "bool" or (cls == "maybe bool" and not series.hasnans):
        return series.to_numpy(dtype=bool, copy=True), 0, _BOOL
    if cls == "int" and _COPY_ON_WRITE:
        return series, 0, _NUMBER
    if cls in ("int", "number", "maybe bool"):
        values = series.to_numpy(dtype=np.float64, na_value=np.nan, copy=True)
        return values, int(np.isnan(values).sum()), _NUMBER
    missing, kind = 0, _UNSCANNED
    if scan or cls == "category":
        missing, plain = _text_missing(series)
        kind = _PLAIN_TEXT if plain else _TEXT
    return (series if _COPY_ON_WRITE else series.copy(deep=True)), missing, kind


def _text_missing(series: pd.Series) -> tuple[int, bool]:
    """Missing values of a non-numeric column, exactly, and whether every cell is a ``str``.

    A categorical's codes −1; otherwise 0 when every cell is a ``str`` (one type
    scan, about 3× faster than ``isna`` on text), else ``isna``.
    """
    if isinstance(series.dtype, pd.CategoricalDtype):
        return int(np.count_nonzero(series.cat.codes.to_numpy() < 0)), False
    if pd.api.types.infer_dtype(series.to_numpy(dtype=object), skipna=False) == "string":
        return 0, True  # None, NaN, NaT and pd.NA are not str
    return int(series.isna().sum()), False


def _missing_error(columns: Mapping[str, pd.Series], bad: dict[str, int]) -> ValidationError:
    """The refusal of a table with missing values: the first column, its first row, and the count.

    ``columns`` maps the names in ``bad`` to the columns (the table's, or the model's snapshots,
    which keep the table's index: the row is named by its label either way).
    """
    name = next(iter(bad))
    column = columns[name]
    pos = int(np.flatnonzero(column.isna().to_numpy())[0])
    value = column.iloc[pos]
    value = value.item() if isinstance(value, np.generic) else value
    more = f"; missing values also in {list(bad)[1:]!r}" if len(bad) > 1 else ""
    return fail("table", "free of missing values (None, NaN, NaT, pd.NA) in every column",
                described(f"{value!r} in column {name!r} at row {column.index[pos]!r} "
                          f"({bad[name]} missing in that column{more})"))


def _coded_column(source: pd.Series, name: str) -> tuple[np.ndarray, np.ndarray]:
    """An object column as ``(codes, distinct)``: ``distinct[codes]`` is its NumPy unicode array.

    ``pd.factorize`` finds the distinct values once (missing ones — None, NaN,
    NaT, pd.NA — get the code −1: refused here too, as the constructor and
    :meth:`EmpiricalDataModel._scan` refuse them); only the few distinct values
    are turned into strings. A column mixing types (``1``
    and ``1.0`` hash alike) is factorized after converting every element, so
    every cell reads ``str(cell)`` either way.
    """
    values = source.to_numpy(dtype=object)
    codes, uniques = pd.factorize(values)
    missing = int(np.count_nonzero(codes < 0))
    if missing:
        raise _missing_error({name: source}, {name: missing})
    uniques = np.asarray(uniques, dtype=object)
    if len({type(u) for u in uniques}) > 1:
        codes, uniques = pd.factorize(values.astype(str))
    return codes.astype(np.intp, copy=False), np.asarray(uniques, dtype=object).astype(str)


def _record_values(comp: Any, batch: Batch, size: int) -> np.ndarray:
    return numeric_output(comp.h(batch), comp.name).reshape(size)


def _object_values(comp: Any, name: str, cells: np.ndarray) -> np.ndarray | None:
    """``h`` on a one-dataset batch holding ``cells`` (an object array of str) in column ``name``;
    None when ``h`` fails on objects (e.g. a NumPy string function), however it fails."""
    try:
        return _record_values(comp, {name: cells[None, :]}, cells.size)
    except Exception:  # noqa: BLE001 - the caller falls back to unicode cells, where h's own errors surface
        return None


#: Feature values one gather of :func:`_add_subset_sums` holds at most (~8 MB of float64).
GATHER_ELEMENTS = 1 << 20


def _add_subset_sums(out: np.ndarray, H: np.ndarray, sub: np.ndarray) -> None:
    """``out[d, c] += Σ_j H[c, sub[d, j]]``: per-component sums of the drawn rows' features.

    One gather of ``(components, draws, records)`` per block of components (at
    most :data:`GATHER_ELEMENTS` values), summed over the records by ``einsum``
    (one thread, no BLAS): ~1.6× faster than a gather and a ``sum`` per component
    on 100-record subsets. Loops over blocks of components, never over draws.
    """
    step = max(1, GATHER_ELEMENTS // max(sub.size, 1))
    for start in range(0, H.shape[0], step):
        out[:, start:start + step] += np.einsum("cdr->dc", np.take(H[start:start + step], sub, axis=1))


#: Bits of a float64 significand: integers of magnitude below ``2**53`` add exactly, in any order.
_EXACT_BITS = 53


def _packed_lanes(H: np.ndarray, n_records: int) -> tuple[np.ndarray, tuple[tuple[int, int, int | None, float], ...]]:
    """The rows of ``H`` ``(k, N)`` packed into as few float64 *lanes* as sum exactly: ``(G, parts)``.

    A component whose values are integers in ``[low, high]``, with ``n·max(|low|, |high|) < 2**53``
    (n = ``n_records``), puts ``h − low`` at bit ``shift`` of a lane: its sum over the n records of
    a dataset, ``T = Σ (h − low) ≤ n·(high − low) < 2**bits``, fills bits ``shift`` to
    ``shift + bits − 1``. A lane takes components while their bits total at most 53, so every value
    of a lane and every partial sum of its values is an integer below ``2**53``: float64 adds them
    exactly in any order, and ``Σ h = T + n·low`` comes back exactly — the same number as summing
    ``h`` itself, which is exact too under that bound (:meth:`_Features.unpack`). Any other
    component (fractions, or too wide) is a lane of its own, summed as it is. Sampling gathers one
    value per lane and record instead of one per component: the census query's five components (a
    mean age, education and hours of whole numbers, two counts) fit one lane of 52 bits at n = 100.

    Returns
    -------
    G : ndarray (lanes, N)
    parts : tuple of ``(lane, shift, bits, low)`` per component; ``bits`` None for a lane of its own.
    """
    used: list[int | None] = []  # bits taken per lane; None: a component summed as it is
    parts = []
    scratch = np.empty(H.shape[1])
    for row in H:
        low, high = float(row.min()), float(row.max())
        bits = None
        if n_records * max(abs(low), abs(high)) < 2.0**_EXACT_BITS and (np.rint(row, out=scratch) == row).all():
            bits = int(n_records * (high - low)).bit_length()
        lane = next((i for i, u in enumerate(used) if None not in (u, bits) and u + bits <= _EXACT_BITS), None)
        if lane is None:
            lane, shift = len(used), 0
            used.append(bits if bits is not None and bits <= _EXACT_BITS else None)
        else:
            shift = used[lane]
            used[lane] = shift + bits
        parts.append((lane, shift, None if used[lane] is None else bits, low))
    G = np.zeros((len(used), H.shape[1]))
    for row, (lane, shift, bits, low) in zip(H, parts):
        if bits is None:
            G[lane] = row
            continue
        np.subtract(row, low, out=scratch)  # integers: h − low is exact, so is scaling it by 2**shift,
        scratch *= 2.0**shift  # and so is the lane's sum
        G[lane] += scratch
    G.setflags(write=False)
    return G, tuple(parts)


class _TableBatch(Mapping):
    """The whole table as a one-dataset batch of ``names``, each column converted when read."""

    def __init__(self, model: "EmpiricalDataModel", names: tuple[str, ...]) -> None:
        self._model, self._names = model, tuple(dict.fromkeys(names))

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._names:
            raise KeyError(name)
        return self._model._column(name)[None, :]

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


#: A stratum's contiguous feature copy is built once this many times its entries were gathered.
_COPY_AFTER = 4

#: Feature matrices kept per model by complete query fingerprint (oldest dropped first).
_MAX_FEATURE_PRINTS = 16


class _Features:
    """An additive query's per-record contributions ``H`` ``(k, N)``, their lanes ``G`` for sampling
    (:func:`_packed_lanes`) and, per stratum, its contiguous lanes ``G[:, rows]`` (keyed by the id
    of the rows array, which the entry holds so the id stays unique while it lives)."""

    __slots__ = ("H", "G", "parts", "_strata", "_seen")

    def __init__(self, H: np.ndarray, lanes: tuple[np.ndarray, tuple]) -> None:
        self.H = H
        self.G, self.parts = lanes
        self._strata: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._seen: dict[int, tuple[np.ndarray, int]] = {}

    def unpack(self, sums: np.ndarray, n_records: int) -> np.ndarray:
        """``(draws, k)`` sums of the components over ``n_records`` records from the ``(draws, lanes)``
        sums of the lanes: bits ``shift`` to ``shift + bits − 1`` of a packed lane (integers below
        ``2**53``, exact in int64), plus ``n_records·low``; a lane of its own as it is."""
        out = np.empty((sums.shape[0], len(self.parts)))
        ints: dict[int, np.ndarray] = {}
        for c, (lane, shift, bits, low) in enumerate(self.parts):
            if bits is None:
                out[:, c] = sums[:, lane]
                continue
            if lane not in ints:
                ints[lane] = sums[:, lane].astype(np.int64)
            out[:, c] = ((ints[lane] >> shift) & ((1 << bits) - 1)) + n_records * low
        return out

    def of(self, rows: np.ndarray, n_gathered: int) -> np.ndarray | None:
        """Lanes of the stratum ``rows``, ``(lanes, N_s)`` contiguous, or None when not worth it yet.

        The copy costs ``lanes·N_s`` writes and saves an index gather per drawn record: it is built
        once the records gathered from the stratum (this call and earlier ones of this query
        object) reach ``COPY_AFTER`` times its entries, then cached; until then the caller
        gathers from the whole matrix at the global rows.
        """
        key = id(rows)
        hit = self._strata.get(key)
        if hit is not None and hit[0] is rows:
            return hit[1]
        seen = self._seen.get(key)
        total = n_gathered + (seen[1] if seen is not None and seen[0] is rows else 0)
        if total < _COPY_AFTER * rows.size * self.G.shape[0]:
            if len(self._seen) > 64:  # strata of unhashable categories are new arrays on every call
                self._seen.clear()
            self._seen[key] = (rows, total)  # holding the rows keeps the id unique while the entry lives
            return None
        Hs = np.ascontiguousarray(self.G[:, rows])
        if len(self._strata) > 64:  # strata of unhashable categories are rebuilt per call: do not grow forever
            self._strata.clear()
        self._strata[key] = (rows, Hs)
        return Hs


class EmpiricalDataModel(DataModel):
    """Θ = datasets of ``n_records`` rows drawn without replacement from ``table``.

    The reference table stands for the population; a dataset is a simple
    random sample of it. This is the census model of the distribution-privacy
    paper (§5.1, appendix C.1), which samples 1000 subsets of 100 Adult records
    with a fixed share of high earners.

    Secrets: :meth:`DatasetSecret.proportion` ``(column, category, p)`` —
    exactly ``k = p·n`` records have ``column == category``: ``k`` rows are
    drawn without replacement from the rows in the category and ``n − k`` from
    the rows outside it. ``secret=None`` draws ``n`` rows uniformly without
    replacement. Mean secrets are not supported (an empirical table cannot
    condition on a continuous mean exactly).

    Records of a drawn dataset are *stratum-blocked*: the in-category records
    come first, then the others. Queries are assumed symmetric in the records
    (invariant under permuting them), as every additive query (means, counts,
    proportions, :func:`~bayespriv.queries.stack` of them) is.

    Parameters
    ----------
    table : pandas.DataFrame
        Reference population: non-empty, string column names, no missing
        values (None, NaN, NaT, pd.NA in any column: refused naming the column
        and the row — at construction, except in the text columns of a table
        of more than :data:`EAGER_TEXT_CELLS` text cells, each checked on its
        first use, before any of its values is read: a column no query or
        secret reads costs no scan). The model keeps its own copy of every
        column, converted once: booleans stay boolean, other numbers become
        float64, anything else (strings, categoricals, objects) a NumPy
        unicode array on the first use of the column (a column no query or
        secret reads is never coded), so predicates such as
        ``lambda b: b["sex"] == "Female"`` work on whole batches. Sampling
        never calls pandas.
    n_records : int
        Records per dataset, at most ``len(table)``.
    theta : dict, optional
        Parameters naming this model inside a family.

    Examples
    --------
    >>> import pandas as pd, bayespriv as bp
    >>> table = pd.DataFrame({"sex": ["Female", "Male"] * 50, "age": range(100)})
    >>> model = bp.EmpiricalDataModel(table, n_records=10)
    >>> batch = model.sample(bp.DatasetSecret.proportion("sex", "Female", 0.3), 5, rng=0)
    >>> (batch["sex"] == "Female").sum(axis=1).tolist()
    [3, 3, 3, 3, 3]
    """

    def __init__(self, table: pd.DataFrame, n_records: int, *, theta: Mapping[str, Any] | None = None) -> None:
        check_frame(table, "table")
        if table.shape[0] == 0 or table.shape[1] == 0:
            raise fail("table", "a non-empty DataFrame (at least one row and one column)", described(f"shape {table.shape}"))
        names = list(table.columns)
        if not all(isinstance(c, str) for c in names):
            raise fail("table", "a DataFrame with string column names", names)
        columns = dict(table.items())  # labels are unique (check_frame)
        scan = sum(_dtype_class(s.dtype) == "text" for s in columns.values()) * table.shape[0] <= EAGER_TEXT_CELLS
        converted = {c: _column_values(s, scan) for c, s in columns.items()}
        bad = {c: n for c, (_, n, _) in converted.items() if n > 0}
        if bad:
            raise _missing_error(columns, bad)
        super().__init__(names, n_records, theta)
        n_rows = int(table.shape[0])
        if self.n_records > n_rows:
            raise fail("n_records", f"at most the number of rows of table ({n_rows})", self.n_records)
        self.n_rows = n_rows
        # Our own copies (the user's table may change afterwards), checked here or, for the text
        # columns of a large table, on first use (_scan). Float and boolean columns are final;
        # integer and text columns are copy-on-write snapshots converted on first use, once per
        # column (a wide table only pays for the columns its queries and secrets read).
        self._arrays: dict[str, np.ndarray | pd.Series] = {c: v for c, (v, _, _) in converted.items()}
        self._kinds: dict[str, str] = {c: kind for c, (_, _, kind) in converted.items()}
        self._coded: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._strata_cache: dict[tuple[str, Any], tuple[np.ndarray, np.ndarray]] = {}
        self._init_feature_caches()

    def _init_feature_caches(self) -> None:
        # per query object (weakly: dies with the query) and per complete fingerprint (a new query
        # object computing the same thing, e.g. ``census_query()`` called again, reuses the features)
        self._feature_cache: weakref.WeakKeyDictionary[Query, _Features] = weakref.WeakKeyDictionary()
        self._features_by_print: dict[str, tuple[np.ndarray, tuple[np.ndarray, tuple]]] = {}

    def _is_text(self, name: str) -> bool:
        """Whether column ``name`` holds strings (or other non-numeric values)."""
        return self._kinds[name] in (_PLAIN_TEXT, _TEXT, _UNSCANNED)

    def _scan(self, name: str) -> None:
        """Check a text column not scanned at construction (:data:`EAGER_TEXT_CELLS`) for missing
        values, with the constructor's refusal, and record its kind; nothing for other columns.

        Every read of a column's values goes through here first (:meth:`_plain_text`,
        :meth:`_codes`, hence :meth:`_column`), so no value of an unchecked column is ever used.
        """
        if self._kinds[name] != _UNSCANNED:
            return
        series = self._arrays[name]
        missing, plain = _text_missing(series)
        if missing:
            raise _missing_error({name: series}, {name: missing})
        self._kinds[name] = _PLAIN_TEXT if plain else _TEXT

    def _plain_text(self, name: str) -> np.ndarray | None:
        """The cells of a text column not yet converted in which every cell is a ``str``, as an object
        array (no copy), else None. On such cells ``str(cell)`` is the cell itself."""
        self._scan(name)
        values = self._arrays[name]
        if self._kinds[name] != _PLAIN_TEXT or not isinstance(values, pd.Series) or name in self._coded:
            return None
        return values.to_numpy(dtype=object)

    def _plain_distinct(self, name: str) -> tuple[np.ndarray, set] | None:
        """:meth:`_plain_text` and the set of its cells, or None.

        For a column not scanned yet, the set is the scan: missing values (None,
        NaN, NaT, pd.NA) are not ``str``, so when every member of the set is one,
        the column is plain text with none missing; otherwise (or with unhashable
        cells) :meth:`_scan` checks it, and refuses it as the constructor would.
        """
        if self._kinds[name] == _UNSCANNED:
            cells = self._arrays[name].to_numpy(dtype=object)
            try:
                distinct = set(cells)
            except TypeError:  # unhashable cells: not plain text
                distinct = None
            if distinct is not None and all(isinstance(u, str) for u in distinct):
                self._kinds[name] = _PLAIN_TEXT
                return cells, distinct
            self._scan(name)
        cells = self._plain_text(name)
        return None if cells is None else (cells, set(cells))

    def _codes(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(codes, distinct strings)`` of a text column (:func:`_coded_column`), built once."""
        hit = self._coded.get(name)
        if hit is None:
            self._scan(name)
            hit = self._coded[name] = _coded_column(self._arrays[name], name)
        return hit

    def _column(self, name: str) -> np.ndarray:
        """Column ``name`` as a NumPy array (float64, bool or unicode), converted once."""
        values = self._arrays[name]
        if isinstance(values, pd.Series):
            if self._is_text(name):
                codes, distinct = self._codes(name)
                values = distinct[codes]
            else:  # integers
                values = values.to_numpy(dtype=np.float64)
            self._arrays[name] = values
        return values

    # -- secrets -----------------------------------------------------------------------
    def _category_mask(self, column: str, category: Any) -> np.ndarray:
        if self._is_text(column):
            cells = self._plain_text(column)
            if cells is not None:  # every cell a str: compare the cells themselves, no coding needed
                return cells == str(category)
            if not isinstance(self._arrays[column], pd.Series):  # already a unicode array
                return self._arrays[column] == str(category)
            codes, distinct = self._codes(column)  # compare the few distinct strings, then their codes
            return np.isin(codes, np.flatnonzero(distinct == str(category)))
        values = self._column(column)
        if values.dtype == bool:
            if not isinstance(category, (bool, np.bool_)):
                raise fail("category", f"a bool for the boolean column {column!r}", category)
            return values == bool(category)
        if isinstance(category, (bool, np.bool_)) or not isinstance(category, (int, float, np.integer, np.floating)):
            raise fail("category", f"a number for the numeric column {column!r}", category)
        return values == float(category)

    def _strata(self, column: str, category: Any) -> tuple[np.ndarray, np.ndarray]:
        """Row indices inside and outside ``column == category`` (cached)."""
        key = (column, category)
        try:
            return self._strata_cache[key]
        except (KeyError, TypeError):
            pass
        mask = self._category_mask(column, category)
        strata = (np.flatnonzero(mask), np.flatnonzero(~mask))
        try:
            self._strata_cache[key] = strata
        except TypeError:  # unhashable category: just do not cache
            pass
        return strata

    def _counts(self, secret: DatasetSecret) -> int:
        """``k = p·n``, checked to be an integer."""
        return share_count(secret.value, self.n_records)

    def check_secret(self, secret: Secret | None) -> None:
        """Raise a clear error when the model cannot condition on ``secret``.

        A proportion secret needs: the category present in the column,
        ``k = p·n`` an integer (within 1e-9), ``k`` at most the rows in the
        category and ``n − k`` at most the rows outside it.
        """
        super().check_secret(secret)
        if secret is None:
            return
        assert isinstance(secret, DatasetSecret)
        if secret.statistic != "proportion":
            raise UnsupportedSecretError(
                f"EmpiricalDataModel conditions on proportions only (DatasetSecret.proportion(column, category, p)); "
                f"got {secret.label!r}. A resampled table cannot fix a column mean exactly: bin the column and use "
                "a proportion secret, or use a GaussianDataModel / FunctionDataModel for mean secrets"
            )
        inside, outside = self._strata(secret.column, secret.category)
        if inside.size == 0:
            values = np.unique(self._column(secret.column))
            shown = values[:10].tolist() + (["..."] if values.size > 10 else [])
            raise ValidationError(
                f"category must be a value of column {secret.column!r}; got {secret.category!r}, values are {shown!r}"
            )
        k = self._counts(secret)
        n = self.n_records
        if k > inside.size:
            raise ValidationError(
                f"p·n_records must be at most the rows of table with {secret.column} == {secret.category!r} "
                f"({inside.size}) to draw without replacement; got p={secret.value:g}, n_records={n}, p·n={k}"
            )
        if n - k > outside.size:
            raise ValidationError(
                f"(1 − p)·n_records must be at most the rows of table with {secret.column} != {secret.category!r} "
                f"({outside.size}) to draw without replacement; got p={secret.value:g}, n_records={n}, (1 − p)·n={n - k}"
            )

    def _stratum_plan(self, secret: Secret | None) -> list[tuple[np.ndarray | None, int]]:
        """``[(rows of the stratum or None for all rows, records drawn from it)]``."""
        if secret is None:
            return [(None, self.n_records)]
        assert isinstance(secret, DatasetSecret)
        inside, outside = self._strata(secret.column, secret.category)
        k = self._counts(secret)
        return [(inside, k), (outside, self.n_records - k)]

    # -- sampling ----------------------------------------------------------------------
    def _draw_subsets(self, n_rows: int, k: int, n_draws: int, rng: np.random.Generator) -> np.ndarray:
        """Uniform k-subsets of ``range(n_rows)``; see :func:`sample_subsets`."""
        return sample_subsets(n_rows, k, n_draws, rng)

    def _stratum_draws(
        self, secret: Secret | None, n_draws: int, rng: np.random.Generator
    ) -> list[tuple[np.ndarray | None, np.ndarray]]:
        """``[(rows of the stratum or None, (n_draws, k) stratum-local subset indices)]``, empty strata skipped."""
        draws = []
        for rows, k in self._stratum_plan(secret):
            if k:
                draws.append((rows, self._draw_subsets(self.n_rows if rows is None else rows.size, k, n_draws, rng)))
        return draws

    def _sample_indices(self, secret: Secret | None, n_draws: int, rng: np.random.Generator) -> np.ndarray:
        """Row indices of the drawn datasets, ``(n_draws, n_records)``, strata side by side."""
        out = np.empty((n_draws, self.n_records), dtype=np.intp)
        start = 0
        for rows, sub in self._stratum_draws(secret, n_draws, rng):
            k = sub.shape[1]
            out[:, start:start + k] = sub if rows is None else np.take(rows, sub)
            start += k
        return out

    def _sample(self, secret, n_draws, rng, columns) -> Batch:
        idx = self._sample_indices(secret, n_draws, rng)
        return {c: np.take(self._column(c), idx) for c in columns}

    def _features(self, query: Query) -> _Features:
        """Per-record contributions ``h_c`` of an additive query on every row (``.H``, ``(k, N)``),
        and their lanes for sampling (``.G``, :func:`_packed_lanes`).

        Computed once per query and cached: weakly per query object, and by the
        query's :func:`~bayespriv.queries.query.complete_fingerprint` when it has one
        (then another query object that runs the same code on the same values
        reuses them; a query whose fingerprint is not complete — it reads a
        module attribute or an object covered by its type only — is recomputed).
        The per-stratum copies (:meth:`_Features.of`) live with the query object:
        copies kept across calls of *other* query objects made later gathers ~30 %
        slower at 10,000-row subsets (measured; allocator placement), while a copy
        costs one pass over the stratum.
        """
        feats = self._feature_cache.get(query)
        if feats is not None:
            return feats
        key = complete_fingerprint(query)
        hit = self._features_by_print.get(key) if key is not None else None
        if hit is None:
            H = self._compute_features(query)
            hit = (H, _packed_lanes(H, self.n_records))
            if key is not None:
                if len(self._features_by_print) >= _MAX_FEATURE_PRINTS:
                    self._features_by_print.pop(next(iter(self._features_by_print)))
                self._features_by_print[key] = hit
        feats = self._feature_cache[query] = _Features(*hit)
        return feats

    def _compute_features(self, query: Query) -> np.ndarray:
        H = np.empty((len(query.components), self.n_rows))
        for row, comp in zip(H, query.components):
            row[:] = self._component_features(query, comp)
        if not np.all(np.isfinite(H)):
            raise ValidationError(f"query {query.name!r} must give finite per-record values on the table; got NaN or infinity")
        H.setflags(write=False)
        return H

    def _component_features(self, query: Query, comp: Any) -> np.ndarray:
        """``h_c`` on every row: one text column by :meth:`_text_features`, anything else on the
        whole table (columns converted only when ``h`` reads them)."""
        if len(comp.columns) == 1 and self._is_text(comp.columns[0]):
            try:
                return self._text_features(comp, comp.columns[0])
            except KeyError:  # h reads more than its declared column: evaluate on the whole table
                pass
        return _record_values(comp, _TableBatch(self, query.columns), self.n_rows)

    def _text_features(self, comp: Any, name: str) -> np.ndarray:
        """``h_c`` on every row for a component that reads the text column ``name``.

        ``h`` is per record (the additive contract this path relies on): its value on a
        row depends only on that row's cell. Hence ``h(distinct)[codes]`` equals ``h``
        on the unicode column (what batches hold). When every cell is a ``str`` there is
        a cheaper way: evaluate ``h`` on the distinct strings twice, held as objects and
        as unicode; if the two agree, ``h`` on the cells held as objects equals ``h`` on
        the unicode column row by row. That costs a set of the cells and ``h`` on them,
        about 40 % less than coding them (:func:`_coded_column`; census columns of
        45,222 rows). Otherwise (``h`` fails on objects or reads them differently), the
        codes.
        """
        plain = self._plain_distinct(name)
        if plain is not None:
            cells, distinct = plain[0], np.array(list(plain[1]), dtype=object)
            as_text = _record_values(comp, {name: distinct.astype(str)[None, :]}, distinct.size)
            if np.array_equal(_object_values(comp, name, distinct), as_text):
                whole = _object_values(comp, name, cells)
                if whole is not None:
                    return whole
        codes, distinct = self._codes(name)
        return _record_values(comp, {name: distinct[None, :]}, distinct.size)[codes]

    def sample_query(self, secret: Secret | None, n_draws: int, rng: RNGLike, query: Query) -> np.ndarray:
        """F on ``n_draws`` resampled datasets, without materialising the records.

        For an additive query, ``F_c = s_c Σ_r h_c(x_r)`` depends on a drawn
        dataset only through which rows were drawn, so we gather and sum rows of
        the precomputed feature lanes (:meth:`_features`, :func:`_packed_lanes`; per
        stratum, :meth:`_Features.of`, gathered straight from the stratum-local
        indices) instead of gathering raw columns and re-running predicates on every
        draw. Same row indices, same sums: the result equals
        ``query.evaluate(sample(...))`` up to floating-point summation order (exactly,
        for the components summed in packed lanes). Other queries use the default path.
        """
        if not query.components:
            return super().sample_query(secret, n_draws, rng, query)
        self.check_secret(secret)
        n_draws = check_positive_int(n_draws, "n_draws")
        feats = self._features(query)
        G = feats.G
        sums = np.zeros((n_draws, G.shape[0]))
        # one gather per stratum: from the stratum's own contiguous lanes when they are cached or
        # worth building (:meth:`_Features.of`), else from all the rows' lanes at the global rows
        # (the same rows as _sample_indices either way)
        for rows, sub in self._stratum_draws(secret, n_draws, as_generator(rng)):
            sub = sub.astype(np.intp, copy=False)  # once, not once per block of lanes
            Gs = G if rows is None else feats.of(rows, sub.size)
            if Gs is None:
                Gs, sub = G, np.take(rows, sub)
            _add_subset_sums(sums, Gs, sub)
        out = feats.unpack(sums, self.n_records)
        out /= np.array([self.n_records if comp.per_mean else 1 for comp in query.components], dtype=float)
        return out

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        # weak references do not pickle, and workers rebuild features cheaply rather than receive them
        state["_feature_cache"] = state["_features_by_print"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._init_feature_caches()

    # -- exact moments -----------------------------------------------------------------
    def moments(self, secret: Secret | None, query: Query) -> tuple[np.ndarray, np.ndarray]:
        """Exact mean ``(k,)`` and covariance ``(k, k)`` of an additive query.

        An additive query has components ``F_c = s_c Σ_r h_c(x_r)`` with
        ``s_c = 1/n`` (means, shares) or 1 (sums, counts). Let ``h(x)`` be the
        vector of per-record contributions, evaluated once on every row of the
        table.

        Within one stratum of ``N`` rows ``h_1, …, h_N`` (population mean
        ``μ``, population covariance ``Σ = (1/N) Σ_r (h_r − μ)(h_r − μ)ᵀ``,
        i.e. ddof = 0), draw ``k`` rows without replacement and let
        ``I_r`` indicate that row ``r`` is drawn. Then ``E I_r = k/N``,
        ``Var I_r = k(N − k)/N²`` and, for ``r ≠ s``,
        ``Cov(I_r, I_s) = k(k − 1)/(N(N − 1)) − k²/N² = −k(N − k)/(N²(N − 1))``.
        The sum ``T = Σ_r I_r h_r`` therefore has ``E T = k μ`` and

        ``Cov T = k(N − k)/N² · [Σ_r h_r h_rᵀ − (1/(N − 1)) Σ_{r≠s} h_r h_sᵀ]
        = k(N − k)/N² · N/(N − 1) · [Σ_r h_r h_rᵀ − N μ μᵀ]
        = k (N − k)/(N − 1) · Σ``

        (using ``Σ_{r≠s} h_r h_sᵀ = N² μμᵀ − Σ_r h_r h_rᵀ``): the finite
        population correction ``(N − k)/(N − 1)`` times the with-replacement
        covariance ``k Σ``. The strata are drawn independently, so their means
        and covariances add; finally component ``c`` is scaled by ``s_c``
        (covariance by ``s_c s_d``).

        Parameters
        ----------
        secret : DatasetSecret (proportion) or None
        query : Query
            Must be additive (built from :func:`~bayespriv.mean`,
            :func:`~bayespriv.count`, :func:`~bayespriv.proportion`,
            :func:`~bayespriv.stack`).

        Returns
        -------
        mean : ndarray (k,)
        cov : ndarray (k, k)

        Raises
        ------
        UnsupportedSecretError
            For a query without additive components (calibrate by sampling).
        """
        if not isinstance(query, Query):
            raise ParameterTypeError(f"query must be a bayespriv Query; got {type(query).__name__}")
        self.check_secret(secret)
        if not query.components:
            raise UnsupportedSecretError(
                f"exact moments need an additive query (mean, count, proportion or a stack of them); "
                f"got {query.name!r}, which has no additive components: calibrate by sampling instead"
            )
        missing = [c for c in query.columns if c not in self.columns]
        if missing:
            raise ValidationError(f"query columns must be columns of the data model {list(self.columns)!r}; got {missing!r}")
        H = self._features(query).H.T
        kq = H.shape[1]
        mean = np.zeros(kq)
        cov = np.zeros((kq, kq))
        for rows, k in self._stratum_plan(secret):
            if k == 0:
                continue
            Hs = H if rows is None else H[rows]
            N = Hs.shape[0]
            mu = Hs.mean(axis=0)
            mean += k * mu
            if N > 1 and k < N:
                centred = Hs - mu
                sigma = centred.T @ centred / N
                cov += k * (N - k) / (N - 1) * sigma
        n = self.n_records
        s = np.array([1.0 / n if comp.per_mean else 1.0 for comp in query.components])
        cov = np.outer(s, s) * cov
        return s * mean, 0.5 * (cov + cov.T)

    # -- exact laws ----------------------------------------------------------------------
    def exact_law(self, secret: Secret | None, query: Query) -> tuple[np.ndarray, np.ndarray] | None:
        """The exact law of a count or proportion of a category (hypergeometric per stratum).

        For a query that says what it counts (:attr:`~bayespriv.Query.indicator`:
        ``count(column, category)`` or ``proportion(column, category)``), let
        ``h(x) ∈ {0, 1}`` mark the rows it counts — evaluated by the query
        itself on every row of the table, as sampling does. A dataset is ``k_s``
        rows drawn without replacement from each stratum ``s`` of ``N_s`` rows
        (one stratum of ``n`` rows without a secret; under
        ``DatasetSecret.proportion(column, category, p)`` the ``k = p·n`` rows
        in the secret's category and the ``n − k`` outside it), so the count
        from stratum ``s`` is hypergeometric — ``K_s`` marked rows among
        ``N_s``, ``k_s`` drawn — and the strata are drawn independently: the
        count's law is the convolution of their laws (``np.convolve`` of
        ``scipy.stats.hypergeom`` probabilities). A proportion divides the
        count by ``n``.

        Parameters
        ----------
        secret : DatasetSecret (proportion) or None
        query : Query

        Returns
        -------
        (points (m, 1), weights (m,)) or None
            None for any other query (calibrate by sampling).

        Examples
        --------
        >>> import pandas as pd, bayespriv as bp
        >>> table = pd.DataFrame({"sex": ["F", "F", "M", "M"], "xray": ["pos", "neg", "pos", "neg"]})
        >>> model = bp.EmpiricalDataModel(table, n_records=2)
        >>> points, weights = model.exact_law(bp.DatasetSecret.proportion("sex", "F", 0.5), bp.count("xray", "pos"))
        >>> points.ravel().tolist(), weights.round(6).tolist()
        ([0.0, 1.0, 2.0], [0.25, 0.5, 0.25])
        """
        from scipy.stats import hypergeom

        if not isinstance(query, Query):
            raise ParameterTypeError(f"query must be a bayespriv Query; got {type(query).__name__}")
        indicator = query.indicator
        if indicator is None or indicator.column not in self.columns:
            return None
        self.check_secret(secret)
        marked = self._features(query).H[0]
        if not np.all((marked == 0) | (marked == 1)):  # pragma: no cover - an indicator's h is boolean
            return None
        pmf = np.ones(1)
        for rows, k in self._stratum_plan(secret):
            hits = marked if rows is None else marked[rows]
            N, K = hits.size, int(np.count_nonzero(hits))
            low = max(0, k - (N - K))  # fewest marked rows a draw of k can hold
            x = np.arange(low, min(k, K) + 1)
            part = np.zeros(min(k, K) + 1)
            part[low:] = hypergeom.pmf(x, N, K, k)
            pmf = np.convolve(pmf, part)
        counts = np.arange(pmf.size, dtype=float)
        if indicator.statistic == "proportion":
            counts = counts / self.n_records
        keep = pmf > 0
        return counts[keep].reshape(-1, 1), pmf[keep] / pmf[keep].sum()

    def _signature_state(self) -> dict[str, Any]:
        """What defines this model's law (:mod:`bayespriv.datamodels.signature`): the reference table's values, each
        column in its converted form (float64, bool or unicode: the same before and after the model is used)."""
        table = {c: self._column(c) for c in self.columns}  # scans every column: kinds are final
        return {"columns": self.columns, "n_records": self.n_records, "theta": self.theta,
                "table": table, "kinds": self._kinds}

    def __repr__(self) -> str:
        extra = f", theta={self.theta}" if self.theta else ""
        return (
            f"EmpiricalDataModel(table={self.n_rows} rows x {len(self.columns)} columns, "
            f"n_records={self.n_records}{extra})"
        )
