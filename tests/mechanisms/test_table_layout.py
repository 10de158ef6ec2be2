"""TableLayout: how a table of counts is read and laid out, checked once at construction."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import numpy as np
import pytest

import bayespriv as bp
from bayespriv.mechanisms.table_layout import TableLayout


def test_the_default_reads_everything_from_the_data():
    layout = TableLayout()
    assert (layout.protected_values, layout.public_values, layout.count) == (None, None, None)
    assert bp.ledger.TableLayout is TableLayout


@pytest.mark.parametrize(
    ("fields", "kept"),
    [
        (dict(protected_values=["F", "M"]), dict(protected_values=("F", "M"))),
        (dict(protected_values=np.array([0, 1])), dict(protected_values=(0, 1))),
        (dict(protected_values={"young": ["F", "M"], "old": ("F",)}),
         dict(protected_values={"young": ("F", "M"), "old": ("F",)})),
        (dict(public_values=("old", "young")), dict(public_values=("old", "young"))),
        (dict(count="n"), dict(count="n")),
    ],
)
def test_valid_fields_are_kept_read_only(fields, kept):
    layout = TableLayout(**fields)
    for name, value in kept.items():
        assert dict(getattr(layout, name)) == value if isinstance(value, dict) else getattr(layout, name) == value
    with pytest.raises(dataclasses.FrozenInstanceError):
        layout.count = "other"  # type: ignore[misc]
    if isinstance(fields.get("protected_values"), dict):
        with pytest.raises(TypeError):
            layout.protected_values["young"] = ("M",)  # a read-only mapping
    assert pickle.loads(pickle.dumps(layout)) == layout == copy.deepcopy(layout)


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        (dict(protected_values=3), bp.ParameterTypeError, "protected_values must be a sequence of values; got 3"),
        (dict(protected_values="FM"), bp.ParameterTypeError, "protected_values must be a sequence of values; got 'FM'"),
        (dict(protected_values=["F", "F"]), bp.ValidationError,
         r"protected_values must be distinct values; got \['F', 'F'\]"),
        (dict(protected_values=[]), bp.ValidationError, r"protected_values must be non-empty; got \[\]"),
        (dict(protected_values=[["F"], ["M"]]), bp.ValidationError,
         r"protected_values must be hashable values.*list \['F'\]"),
        (dict(protected_values={"young": 5}), bp.ParameterTypeError, r"protected_values\['young'\] must be a sequence"),
        (dict(protected_values={"young": [{}]}), bp.ValidationError, r"protected_values\['young'\] must be hashable"),
        (dict(public_values=1.5), bp.ParameterTypeError, "public_values must be a sequence of values; got 1.5"),
        (dict(public_values=["a", "a"]), bp.ValidationError,
         r"public_values must be distinct values; got \['a', 'a'\]"),
        (dict(public_values=()), bp.ValidationError, r"public_values must be non-empty; got \(\)"),
        (dict(count=3), bp.ParameterTypeError, "count must be a column name \\(non-empty string\\); got 3"),
        (dict(count=""), bp.ParameterTypeError, "count must be a column name \\(non-empty string\\); got ''"),
    ],
)
def test_a_bad_field_is_refused_naming_it(fields, error, message):
    with pytest.raises(error, match=f"^{message}"):
        TableLayout(**fields)


def test_fields_are_keywords_only():
    with pytest.raises(TypeError):
        TableLayout(["F", "M"])  # type: ignore[misc]
