"""The house rules of the package, measured from its source (nothing imported or run).

``../shared/tools/house_check.py`` knows the stages of the first layout; the stages added since
(privacy curves, exact noise, files, parameter networks, the ledger) are placed in the same one-way
chain here, :data:`STAGES`, and checked with the tool's own parser. ``docs/design.rst`` states each
rule and its reason; this file is where they are enforced:

1. no import (at module level or inside a function) runs against :data:`STAGES`, and no import cycle;
2. no module imports an underscore name of a module outside its own stage package;
3. no class has more than two base classes besides ``object`` and typing's generics (no mixin stacks);
4. no file name appears in two folders of the package (``__init__.py``, ``__main__.py`` aside);
5. code that names a later stage by a string resolves only through :data:`bayespriv._late.LATE`.
"""

from __future__ import annotations

import ast
import importlib.util
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "bayespriv"
TOOL = ROOT.parent / "shared" / "tools" / "house_check.py"

STAGES = [
    ("errors",),
    ("_validation", "random", "_progress", "_deprecation", "_display", "_version", "_late"),
    ("secrets", "queries"),
    ("datamodels",),
    ("calibration", "networks"),
    ("files",),
    ("noise",),
    ("privacy",),
    ("mechanisms",),
    ("ledger", "accounting", "audit"),
    ("diagnostics",),
    ("cli", "__init__"),
]


def _tool():
    if not TOOL.exists():
        pytest.skip(f"the house checker is not at {TOOL} (it ships beside the repository, in ../shared/tools)")
    spec = importlib.util.spec_from_file_location("house_check", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _modules() -> dict[str, Path]:
    mods = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _stage_package(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_stage_of_the_package_is_in_the_layer_order():
    known = {name for names in STAGES for name in names}
    heads = {_stage_package(mod) for mod in _modules()}
    assert heads <= known, f"place these in STAGES (and in docs/design.rst): {sorted(heads - known)}"


def test_imports_run_one_way_through_the_stages_and_form_no_cycle(monkeypatch, capsys):
    tool = _tool()
    monkeypatch.setattr(tool, "STAGES", STAGES)
    status = tool.main(["--strict", str(PACKAGE)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "0 upward imports, 0 cycles, 0 foreign imports" in out, out


def test_the_rule_tables_catch_a_breach(tmp_path, monkeypatch, capsys):
    """The broken twin: a copy of the package with one import against the flow fails the same check."""
    tool = _tool()
    copy = tmp_path / "bayespriv"
    for path in PACKAGE.rglob("*.py"):
        target = copy / path.relative_to(PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text())
    (copy / "noise" / "bits.py").write_text((copy / "noise" / "bits.py").read_text()
                                           + "\n\ndef _late():\n    from bayespriv.privacy import accountant\n")
    monkeypatch.setattr(tool, "STAGES", STAGES)
    assert tool.main(["--strict", str(copy)]) == 1
    assert "bayespriv/noise/bits.py" in capsys.readouterr().out


def _private_imports() -> list[str]:
    mods, found = _modules(), []
    for mod, path in mods.items():
        tree = ast.parse(path.read_text())
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            pkg = mod.split(".") if is_pkg else mod.split(".")[:-1]
            base = (node.module or "") if node.level == 0 else ".".join(
                pkg[: len(pkg) - (node.level - 1)] + ([node.module] if node.module else []))
            if not base.startswith("bayespriv") or _stage_package(base) == _stage_package(mod):
                continue
            hidden = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            hidden += [part for part in base.split(".")[2:] if part.startswith("_")]  # a private module
            if hidden:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {', '.join(hidden)} from {base}")
    return found


def test_no_module_reaches_into_another_stage_for_an_underscore_name():
    assert _private_imports() == []


def _mixin_stacks() -> list[str]:
    ignored = {"object", "Generic", "Protocol", "NamedTuple", "Enum"}
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [ast.unparse(b).split("[")[0].split(".")[-1] for b in node.bases]
            bases = [b for b in bases if b not in ignored]
            if len(bases) > 2:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}({', '.join(bases)})")
    return found


def test_no_class_is_assembled_from_more_than_two_bases():
    assert _mixin_stacks() == []


def test_no_file_name_is_repeated_across_folders():
    names = Counter(p.name for p in PACKAGE.rglob("*.py") if p.name not in {"__init__.py", "__main__.py"})
    repeated = {name: sorted(str(p.relative_to(ROOT)) for p in PACKAGE.rglob(name)) for name, n in names.items() if n > 1}
    assert repeated == {}


def _rank(module: str) -> int:
    head = _stage_package(module)
    return next(i for i, names in enumerate(STAGES) if head in names)


def _late_calls() -> list[tuple[str, str]]:
    """(calling module, name) of every ``late("name")`` in the package."""
    calls = []
    for mod, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "late"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                calls.append((mod, node.args[0].value))
    return calls


def test_calls_against_the_flow_are_declared_in_one_table_and_only_there():
    from bayespriv._late import LATE, late

    calls = _late_calls()
    assert calls, "no late() call found: the scan is broken"
    assert {name for _, name in calls} == set(LATE), "every entry used, every use listed"
    for caller, name in calls:
        target = LATE[name].split(":")[0]
        assert callable(late(name))
        assert _rank(target) >= _rank(caller), f"{caller} calls {name} of an earlier stage: import it instead"
    by_name = []  # code resolved by name, anywhere
    for mod, path in _modules().items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "import_module" or (
                    isinstance(node, ast.Name) and node.id == "__import__"):
                by_name.append(f"{mod}:{node.lineno}")
    assert [where.split(":")[0] for where in by_name] == ["bayespriv._late"], by_name
