"""The verified source behind a query's fingerprint (bayespriv/queries/source_code.py).

A fingerprint must follow what the code computes and nothing else: the same definition gives the same text
wherever it sits in a file, and on every Python version (the committed files of
``tests/files/data/saved/python-*`` check that across interpreters); a source that is not what the
interpreter compiled is never used.
"""

from __future__ import annotations

import importlib.util
import linecache
import sys

import numpy as np
import pytest

import bayespriv as bp
from bayespriv.queries.query import legacy_fingerprint
from bayespriv.queries.source_code import canonical_source


def _module(tmp_path, name: str, text: str):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def test_a_definition_gives_the_same_text_wherever_it_sits(tmp_path):
    first, _ = _module(tmp_path, "first", "f = lambda t: t['x'].mean(1)[:, None] * 2  # a comment\n")
    second, _ = _module(tmp_path, "second", "\n\n\nimport math\n\n\nf = lambda t: (t['x'].mean(1)[:, None]\n"
                                            "                * 2)\n")
    assert canonical_source(first.f.__code__) is not None
    assert canonical_source(first.f.__code__) == canonical_source(second.f.__code__)
    q1, q2 = (bp.Query(m.f, ["x"], "q") for m in (first, second))
    assert q1.fingerprint == q2.fingerprint


def test_lambdas_on_one_line_are_told_apart(tmp_path):
    module, _ = _module(tmp_path, "oneline", "g = lambda t: t['x'].mean(1); h = lambda t: t['y'].mean(1)\n"
                                             "nest = lambda t: (lambda u: u + 1)(t)\n")
    texts = {canonical_source(module.g.__code__), canonical_source(module.h.__code__)}
    assert len(texts) == 2 and None not in texts
    inner = next(c for c in module.nest.__code__.co_consts if hasattr(c, "co_code"))
    assert canonical_source(inner) != canonical_source(module.nest.__code__)
    assert "Lambda" in canonical_source(inner)


@pytest.mark.parametrize("edit", ["* 2", "* 3", ".sum(1)", "['y']"])
def test_the_twin_every_edit_of_what_is_computed_changes_the_fingerprint(tmp_path, edit):
    """A canonicaliser that dropped constants, attribute names or subscripts would give one of these the same text."""
    base, _ = _module(tmp_path, "base", "f = lambda t: t['x'].mean(1) * 2\n")
    text = {"* 2": "f = lambda t: t['x'].mean(1) * 2\n", "* 3": "f = lambda t: t['x'].mean(1) * 3\n",
            ".sum(1)": "f = lambda t: t['x'].sum(1) * 2\n", "['y']": "f = lambda t: t['y'].mean(1) * 2\n"}[edit]
    other, _ = _module(tmp_path, "other", text)
    same = canonical_source(base.f.__code__) == canonical_source(other.f.__code__)
    assert same == (edit == "* 2")


def test_a_file_edited_after_import_is_not_read_and_the_bytecode_is_used(tmp_path):
    module, path = _module(tmp_path, "edited", "f = lambda t: t['x'].mean(1) * 2\n")
    query = bp.Query(module.f, ["x"], "q")
    before = query.fingerprint
    path.write_text("f = lambda t: t['x'].mean(1) * 3\n")  # the running code still multiplies by 2
    linecache.checkcache(str(path))
    assert canonical_source(module.f.__code__) is None
    assert query.fingerprint != before  # bytecode of this Python, never the edited text
    from bayespriv.queries.query import _Canon

    assert f"bytecode-{sys.version_info[0]}.{sys.version_info[1]}:" in _Canon().encode(query)


def test_code_without_a_source_file_falls_back_to_its_bytecode():
    scope: dict = {}
    exec("f = lambda t: t['x'].mean(1)", scope)  # noqa: S102 - code with no file behind it
    assert canonical_source(scope["f"].__code__) is None
    query = bp.Query(scope["f"], ["x"], "q")
    assert len(query.fingerprint) == 64 and query.fingerprint != legacy_fingerprint(query)


def test_the_current_and_the_legacy_scheme_differ_and_both_are_accepted(tmp_path):
    from bayespriv.queries.query import fingerprint_matches

    module, _ = _module(tmp_path, "schemes", "f = lambda t: t['x'].mean(1)[:, None]\n")
    query = bp.Query(module.f, ["x"], "q")
    assert query.fingerprint != legacy_fingerprint(query)
    assert fingerprint_matches(query, query.fingerprint) and fingerprint_matches(query, legacy_fingerprint(query))
    assert not fingerprint_matches(query, "0" * 64)


STATE = '''
import numpy as np
WEIGHTS = {"x": 1.0, "y": 0.0}
LONG = [0.0] * 1000

class Scale:
    def __init__(self, factor):
        self.factor = factor

SCALE = Scale(1.0)

def f(t):
    return (WEIGHTS["x"] * t["x"].mean(1) + WEIGHTS["y"] * t["y"].mean(1) + LONG[-1] + SCALE.factor)[:, None]
'''


@pytest.mark.parametrize("change", ["dict", "long list", "object"])
def test_module_level_state_read_by_a_query_is_covered_by_its_value(tmp_path, change):
    """Weights loaded at import and edited after calibration change the fingerprint, so the release is refused
    (scheme 1 covered such names by their type only: such an edit could release with a true ε of 15.8 against 1)."""
    from bayespriv.errors import ReleaseMismatchError

    module, _ = _module(tmp_path, f"state_{change.replace(' ', '_')}", STATE)
    query = bp.Query(module.f, ["x", "y"], "weighted")
    sa, sb = bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 1.0)
    cal = bp.Calibration.from_moments({sa: [0.0], sb: [1.0]}, {sa: [[1.0]], sb: [[1.0]]}, bp.SecretPair(sa, sb),
                                      query, n_records=5)
    mech = bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3)
    import pandas as pd

    data = pd.DataFrame({"x": [0.0] * 5, "y": [1.0] * 5})
    assert np.isfinite(mech.release(data).value).all()
    before, old_scheme = query.fingerprint, legacy_fingerprint(query)
    if change == "dict":
        module.WEIGHTS["y"] = 50.0
    elif change == "long list":
        module.LONG[-1] = 1.0  # past what a node-by-node encoding of 1 000 items would have kept
    else:
        module.SCALE.factor = 2.0
    assert query.fingerprint != before
    if change != "long list":
        assert legacy_fingerprint(query) == old_scheme  # the twin: the old scheme saw nothing
    with pytest.raises(ReleaseMismatchError, match="its code, columns, name or bounds differ"):
        mech.release(data)
