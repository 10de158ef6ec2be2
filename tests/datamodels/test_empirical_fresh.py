"""A fresh EmpiricalDataModel: what it checks when, and what a calibration computes once.

* Missing values. A table of at most ``EAGER_TEXT_CELLS`` text cells is checked whole at
  construction (``test_empirical.py``, ``tests/test_validation.py``). In a larger one a text column is
  checked on its first use — by a query, a secret, ``sample``, exact moments or laws, the model's
  signature — before any of its values is read, with the constructor's refusal word for word; a
  column nothing reads is never scanned. Broken twin: a model that trusts a column instead of
  checking it on first use draws its missing values silently, so the refusal tests fail on it.
* Packed sums. Integer-valued components are summed in shared float64 lanes; the sums equal those of
  the records drawn *exactly* (equality, not a tolerance). Broken twin: a lane one bit too narrow for
  a component is caught by the same equality.
* The query fingerprint, which the feature cache and then the calibration read, is encoded once per
  query object while nothing it read has changed; any change of what it read (a module-level name,
  a closure cell, defaults, a frozen field, the source file) still changes it. Broken twin: reusing
  the text without checking what it read misses the change.

No statistical tolerance is involved: every check is an equality.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import linecache
import sys

import numpy as np
import pandas as pd
import pytest

import bayespriv as bp
from bayespriv.datamodels import empirical as emp
from bayespriv.datamodels.signature import model_signature
from bayespriv.queries import query as Q

N_ROWS = 600
PAIR = bp.SecretPair(bp.DatasetSecret.proportion("g", "a", 0.4), bp.DatasetSecret.proportion("g", "a", 0.6))
MESSAGE = ("table must be free of missing values (None, NaN, NaT, pd.NA) in every column; "
           "got {} in column 'note' at row {} (1 missing in that column)")


def _table(note: pd.Series | None = None) -> pd.DataFrame:
    """Text columns g (the secret's), s (a query's) and note, a number x, a boolean flag."""
    rng = np.random.default_rng(0)
    table = pd.DataFrame({
        "g": rng.choice(["a", "b"], N_ROWS), "s": rng.choice(["u", "v"], N_ROWS),
        "note": rng.choice(["x", "y"], N_ROWS), "x": rng.normal(size=N_ROWS), "flag": rng.random(N_ROWS) < 0.5,
    })
    if note is not None:
        table["note"] = note
    return table


def _with_missing(value=None, dtype=None, row: int = 7) -> pd.DataFrame:
    cells = pd.Series(np.where(np.arange(N_ROWS) % 2 == 0, "x", "y"), dtype=object)
    cells[row] = value
    return _table(cells if dtype is None else cells.astype(dtype))


@pytest.fixture
def lazy(monkeypatch):
    """Every text column checked on first use (as in a table of more than EAGER_TEXT_CELLS text cells)."""
    monkeypatch.setattr(emp, "EAGER_TEXT_CELLS", 0)


@pytest.fixture
def scans(monkeypatch):
    """The names of the columns scanned for missing values (a scan reads every cell)."""
    seen: list[str] = []
    real = emp._text_missing
    monkeypatch.setattr(emp, "_text_missing", lambda series: seen.append(series.name) or real(series))
    return seen


QUERY = bp.stack(bp.mean("x"), bp.count(lambda b: b["s"] == "u", "s", name="u"), bp.proportion("flag", True))


# -- what is checked when ---------------------------------------------------------------------------
def test_the_threshold_is_text_cells():
    """At most EAGER_TEXT_CELLS text cells (3 text columns here): checked at construction; one row more: on first use."""
    rows = emp.EAGER_TEXT_CELLS // 3
    for n, raises in ((rows, True), (rows + 1, False)):
        table = pd.DataFrame({"g": ["a", "b"] * (n // 2) + ["a"] * (n % 2), "s": "u", "note": "x", "x": 1.0})
        table.loc[3, "note"] = None
        if raises:
            with pytest.raises(bp.ValidationError, match="missing values"):
                bp.EmpiricalDataModel(table, 5)
        else:
            model = bp.EmpiricalDataModel(table, 5)
            assert model._kinds["note"] == emp._UNSCANNED


def test_an_unused_column_with_missing_values_costs_no_scan(lazy, scans):
    """The calibration reads x, s, flag and the secret's g: note is never scanned, and nothing is refused."""
    model = bp.EmpiricalDataModel(_with_missing(None), 20)
    assert scans == []  # nothing scanned at construction
    cal = bp.calibrate(model, PAIR, QUERY, n_draws=200, rng=0)
    assert cal.samples.shape[-1] == 3
    assert "note" not in scans and model._kinds["note"] == emp._UNSCANNED
    assert scans == ["g"]  # the secret's column (its strata compare the cells); s is checked by the set of its cells
    assert model._kinds["s"] == model._kinds["g"] == emp._PLAIN_TEXT


NOTE_PAIR = bp.SecretPair(bp.DatasetSecret.proportion("note", "x", 0.4), bp.DatasetSecret.proportion("note", "x", 0.6))
USES = {
    "query": lambda m: bp.calibrate(m, PAIR, bp.count(lambda b: b["note"] == "x", "note"), n_draws=10, rng=0),
    "ready-made count": lambda m: bp.calibrate(m, PAIR, bp.count("note", "x"), n_draws=10, rng=0),
    "secret": lambda m: bp.calibrate(m, NOTE_PAIR, QUERY, n_draws=10, rng=0),
    "sample all columns": lambda m: m.sample(None, 3, rng=0),
    "sample the column": lambda m: m.sample(None, 3, rng=0, columns=["note"]),
    "moments": lambda m: m.moments(None, bp.count("note", "x")),
    "exact law": lambda m: m.exact_law(None, bp.count("note", "x")),
    "signature": lambda m: model_signature(m),
}


@pytest.mark.parametrize("use", USES, ids=list(USES))
def test_a_used_column_with_missing_values_is_refused_on_first_use(lazy, use):
    model = bp.EmpiricalDataModel(_with_missing(None), 20)
    with pytest.raises(bp.ValidationError) as info:
        USES[use](model)
    assert str(info.value) == MESSAGE.format("None", 7)


MISSING = [("None-object", None, None, "None"), ("nan-object", np.nan, None, "nan"), ("NA-object", pd.NA, None, "<NA>"),
           ("NaT-object", pd.NaT, None, "NaT"), ("None-string", None, "string", "<NA>"), ("None-str", None, "str", "nan")]


@pytest.mark.parametrize("value, dtype, shown", [m[1:] for m in MISSING], ids=[m[0] for m in MISSING])
def test_the_first_use_refusal_is_the_constructors(monkeypatch, value, dtype, shown):
    """Same message, value and row label as the constructor's refusal of the same table."""
    table = _with_missing(value, dtype).set_axis([f"r{i}" for i in range(N_ROWS)])
    with pytest.raises(bp.ValidationError) as eager:
        bp.EmpiricalDataModel(table, 20)
    monkeypatch.setattr(emp, "EAGER_TEXT_CELLS", 0)
    model = bp.EmpiricalDataModel(table, 20)
    for use in ("query", "secret", "sample the column"):
        with pytest.raises(bp.ValidationError) as lazy_info:
            USES[use](model)
        assert str(lazy_info.value) == str(eager.value) == MESSAGE.format(shown, "'r7'")


def test_numbers_categoricals_and_booleans_are_checked_at_construction_whatever_the_size(lazy):
    """Their dtype or codes tell where values are missing without a scan of text cells."""
    half = N_ROWS // 2
    for column in (pd.Series([1.0, np.nan] * half), pd.Series(pd.Categorical(["a", None] * half)),
                   pd.Series([True, None] * half, dtype="boolean"), pd.Series([1, None] * half, dtype="Int64")):
        with pytest.raises(bp.ValidationError, match=r"missing values.*in column 'note' at row 1 "):
            bp.EmpiricalDataModel(_table(column), 20)


class TrustsItsColumns(bp.EmpiricalDataModel):
    """Broken twin: takes a text column for plain text on its first use instead of checking it."""

    def _scan(self, name):
        if self._kinds[name] == emp._UNSCANNED:
            self._kinds[name] = emp._PLAIN_TEXT


def test_broken_twin_without_the_first_use_check_draws_missing_values():
    """Without the check, the secret's strata and the query's features read the missing cell as a
    value: the calibration goes through, and the refusal tests above would fail."""
    table = _with_missing(None)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(emp, "EAGER_TEXT_CELLS", 0)
        twin = TrustsItsColumns(table, 20)
    bp.calibrate(twin, NOTE_PAIR, bp.count(lambda b: b["note"] == "y", "note"), n_draws=100, rng=0)
    assert 7 in twin._strata("note", "x")[1]  # the missing cell drawn among the others


def test_the_constructor_still_refuses_every_column_of_a_small_table(scans):
    with pytest.raises(bp.ValidationError) as info:
        bp.EmpiricalDataModel(_with_missing(None), 20)
    assert str(info.value) == MESSAGE.format("None", 7) and "note" in scans


# -- packed sums --------------------------------------------------------------------------------------
def _integers_table(rng, n_rows=400):
    return pd.DataFrame({
        "age": rng.integers(17, 91, n_rows), "neg": rng.integers(-50, 5, n_rows), "wide": rng.integers(0, 2**40, n_rows),
        "huge": rng.integers(2**50, 2**51, n_rows).astype(float), "frac": rng.normal(size=n_rows),
        "g": rng.choice(["a", "b"], n_rows), "s": rng.choice(["u", "v", "w"], n_rows),
    })


def test_packed_sums_equal_the_sums_of_the_drawn_records_exactly():
    table = _integers_table(np.random.default_rng(1))
    model = bp.EmpiricalDataModel(table, 20)
    query = bp.stack(bp.mean("age", bounds=(17, 90)), bp.mean("neg"), bp.mean("wide"), bp.mean("huge"),
                     bp.mean("frac"), bp.count("s", "u"), bp.proportion(lambda b: b["s"] != "w", "s"),
                     bp.count(lambda b: b["age"] > 60, "age"))
    feats = model._features(query)
    lanes = [lane for lane, _, bits, _ in feats.parts]
    bits = {c: part[2] for c, part in enumerate(feats.parts)}
    assert bits[3] is None and bits[4] is None  # huge (20·2**51 > 2**53) and fractions: lanes of their own
    assert bits[2] == (20 * (int(table["wide"].max()) - int(table["wide"].min()))).bit_length()
    assert len(set(lanes)) == 4 < query.k  # age, neg and the counts share one lane; wide (45 bits) another
    secret = bp.DatasetSecret.proportion("g", "a", 0.5)
    fast = model.sample_query(secret, 3000, 7, query)
    slow = query.evaluate(model.sample(secret, 3000, 7, columns=query.columns))
    packed = [c for c, bits in bits.items() if bits is not None]
    assert packed == [0, 1, 2, 5, 6, 7]
    np.testing.assert_array_equal(fast[:, packed], slow[:, packed])
    np.testing.assert_allclose(fast[:, [3, 4]], slow[:, [3, 4]], rtol=1e-12)  # summed as they are, in another order


def test_the_census_query_is_one_lane():
    rng = np.random.default_rng(2)
    table = pd.DataFrame({"age": rng.integers(17, 91, 500), "education-num": rng.integers(1, 17, 500),
                          "marital-status": rng.choice(["Never-married", "Married"], 500),
                          "sex": rng.choice(["Female", "Male"], 500), "hours-per-week": rng.integers(1, 100, 500)})
    from bayespriv.models.census import census_query

    feats = bp.EmpiricalDataModel(table, 100)._features(census_query())
    assert feats.G.shape[0] == 1 and sum(bits for _, _, bits, _ in feats.parts) <= 53


def test_broken_twin_a_lane_one_bit_too_narrow_is_caught(monkeypatch):
    """Sums of 8 records of 2 or 17 reach 8·15 = 120 above the low: 7 bits; with 6, the top bit of a sum
    of five or more 17s spills into the next component, and the exact comparison fails."""
    rng = np.random.default_rng(3)
    table = pd.DataFrame({"v": rng.choice([2, 17], 300), "w": rng.integers(0, 3, 300)})
    query = bp.stack(bp.mean("v"), bp.mean("w"))
    model = bp.EmpiricalDataModel(table, 8)
    assert [bits for _, _, bits, _ in model._features(query).parts] == [7, 5]
    real = emp._packed_lanes

    def one_bit_short(H, n_records):
        _, ((_, _, bits, low), (_, _, bits_w, low_w)) = real(H, n_records)
        G = ((H[0] - low) + (H[1] - low_w) * 2.0**(bits - 1))[None, :]
        return G, ((0, 0, bits - 1, low), (0, bits - 1, bits_w, low_w))

    monkeypatch.setattr(emp, "_packed_lanes", one_bit_short)
    twin = bp.EmpiricalDataModel(table, 8)
    fast = twin.sample_query(None, 2000, 4, query)
    slow = query.evaluate(twin.sample(None, 2000, 4, columns=query.columns))
    assert not np.array_equal(fast, slow)


# -- the query fingerprint, encoded once per query object -----------------------------------------------------
LIMIT = 1.5


def _from_scratch(query) -> str:
    text = Q._Canon(Q.FINGERPRINT_SCHEME).encode(query)
    return hashlib.sha256(f"bayespriv-fingerprint/{Q.FINGERPRINT_SCHEME};{text}".encode()).hexdigest()


@dataclasses.dataclass(frozen=True)
class Above:
    limit: float

    def __call__(self, batch):
        return batch["x"] > self.limit


def test_a_query_object_is_encoded_once(monkeypatch):
    """The feature cache and the calibration read the fingerprint of the same query: one encoding."""
    calls = []
    real = Q._Canon.encode
    monkeypatch.setattr(Q._Canon, "encode", lambda self, obj, depth=0: (calls.append(depth) if depth == 0 else None)
                        or real(self, obj, depth))
    query = bp.stack(bp.mean("x"), bp.count(lambda b: b["s"] == "u", "s", name="u"))
    cal = bp.calibrate(bp.EmpiricalDataModel(_table(), 20), PAIR, query, n_draws=50, rng=0)
    assert calls == [0]  # the features' complete fingerprint, then the calibration's: one encoding
    assert cal.query_fingerprint == query.fingerprint == _from_scratch(query)


def _closure_query():
    limit = 0.5

    def above(batch):
        return batch["x"] > limit

    def move(value):
        nonlocal limit
        limit = value

    return bp.count(above, "x"), move


def _mutations():
    """(name, query, change): each change alters what the query computes, or what its fingerprint reads."""
    module = sys.modules[__name__]
    closure, move = _closure_query()
    frozen = Above(1.0)
    listed = [1.0]
    named = bp.count(lambda b: b["x"] > LIMIT, "x")
    defaults = bp.count(lambda b, limit=1.0: b["x"] > limit, "x")
    renamed = bp.count(lambda b: b["x"] > 1, "x")
    return [
        ("module-level name", named, lambda: setattr(module, "LIMIT", 2.5)),
        ("closure cell", closure, lambda: move(0.7)),
        ("defaults", defaults, lambda: setattr(defaults.components[0].h.predicate, "__defaults__", (2.0,))),
        ("frozen field", bp.count(frozen, "x"), lambda: object.__setattr__(frozen, "limit", 3.0)),
        ("query field", renamed, lambda: object.__setattr__(renamed, "name", "other")),
        ("list contents", bp.count(lambda b: b["x"] > listed[0], "x"), lambda: listed.__setitem__(0, 9.0)),
    ]


@pytest.mark.parametrize("index", range(6), ids=[m[0] for m in _mutations()])
def test_a_change_of_what_the_query_reads_changes_its_reused_fingerprint(index, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "LIMIT", LIMIT)
    _, query, change = _mutations()[index]
    before = query.fingerprint
    assert query.fingerprint == before == _from_scratch(query)
    change()
    assert query.fingerprint == _from_scratch(query) != before
    assert Q.complete_fingerprint(query) in (None, hashlib.sha256(Q._Canon().encode(query).encode()).hexdigest())


def test_an_edited_source_file_changes_the_reused_fingerprint(tmp_path, monkeypatch):
    path = tmp_path / "edited_query_module.py"
    path.write_text("import bayespriv as bp\nQUERY = bp.count(lambda b: b['x'] > 1, 'x')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("edited_query_module")
    before = module.QUERY.fingerprint
    assert module.QUERY.fingerprint == before
    path.write_text("import bayespriv as bp\nQUERY = bp.count(lambda b: b['x'] > 12, 'x')\n")
    linecache.checkcache(str(path))  # what the interpreter does when it shows a traceback
    assert module.QUERY.fingerprint == _from_scratch(module.QUERY) != before


def test_broken_twin_reuse_without_checking_misses_the_change(monkeypatch):
    monkeypatch.setattr(Q, "_same", lambda now, then: True)
    monkeypatch.setattr(sys.modules[__name__], "LIMIT", LIMIT)
    _, query, change = _mutations()[0]
    before = query.fingerprint
    change()
    assert query.fingerprint == before != _from_scratch(query)


def test_the_kept_text_is_the_querys_own_and_never_pickled():
    """Kept on the query object: it dies with the query, and a pickled query (sent to a worker
    process) carries none — the other process encodes it against its own bindings."""
    import gc
    import pickle
    import weakref

    query = bp.stack(bp.mean("x", bounds=(0, 1)), bp.count("s", "u"))
    print_ = query.fingerprint
    assert Q._TEXT_KEY in query.__dict__
    clone = pickle.loads(pickle.dumps(query))
    assert Q._TEXT_KEY not in clone.__dict__ and clone.fingerprint == print_
    ref = weakref.ref(query)
    del query
    gc.collect()
    assert ref() is None
