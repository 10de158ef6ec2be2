"""Strip outputs from the example notebooks before committing them.

Removes every code cell's outputs and execution count and the notebook-level metadata that an
editor adds while running (widgets, execution timings); keeps cell tags (the tests read them).

Run:  python examples/notebooks/strip.py            # rewrite every notebook in this folder
      python examples/notebooks/strip.py --check    # exit 1 and list the notebooks with outputs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
#: Notebook-level metadata kept in git; anything else is editor state.
KEEP_METADATA = ("kernelspec", "language_info")
#: Cell-level metadata kept in git.
KEEP_CELL_METADATA = ("tags",)


def notebooks(folder: Path = HERE) -> list[Path]:
    """The example notebooks, sorted (checkpoints excluded)."""
    return sorted(p for p in folder.glob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def is_stripped(nb: nbformat.NotebookNode) -> bool:
    """True when no code cell has outputs or an execution count and no editor metadata is left."""
    for cell in nb.cells:
        if set(cell.metadata) - set(KEEP_CELL_METADATA):
            return False
        if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None):
            return False
    return not (set(nb.metadata) - set(KEEP_METADATA))


def strip(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` without outputs, execution counts or editor metadata (modified in place and returned)."""
    for cell in nb.cells:
        cell.metadata = {k: v for k, v in cell.metadata.items() if k in KEEP_CELL_METADATA}
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata = {k: v for k, v in nb.metadata.items() if k in KEEP_METADATA}
    return nb


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only report notebooks that are not stripped")
    args = ap.parse_args(argv)
    dirty = []
    for path in notebooks():
        nb = nbformat.read(path, as_version=4)
        if is_stripped(nb):
            continue
        dirty.append(path.name)
        if not args.check:
            nbformat.write(strip(nb), path)
    if args.check and dirty:
        print("notebooks with outputs (run examples/notebooks/strip.py):", ", ".join(dirty))
        return 1
    if not args.check:
        print("stripped:", ", ".join(dirty) if dirty else "nothing to do")
    return 0


if __name__ == "__main__":
    sys.exit(main())
