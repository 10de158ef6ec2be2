"""examples/notebooks/screenshots.py: the check of what a notebook shows, and the drawn page.

Built on a small notebook made here (no kernel): fast, and independent of the example notebooks,
which tests/examples/test_notebooks.py executes.
"""

from __future__ import annotations

import base64
import importlib.util
import io
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "notebooks" / "screenshots.py"


@pytest.fixture(scope="module")
def shots():
    spec = importlib.util.spec_from_file_location("notebook_screenshots", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def _png() -> str:
    fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
    ax.plot([0, 1], [0, 1])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _notebook(table: pd.DataFrame, printed: str) -> nbformat.NotebookNode:
    code = new_code_cell("x = 1", execution_count=1, outputs=[
        new_output("stream", name="stdout", text=printed),
        new_output("execute_result", data={"text/html": f"<p><b>Result</b></p>{table.to_html()}",
                                           "text/plain": "table"}, execution_count=1),
        new_output("display_data", data={"image/png": _png(), "text/plain": "<Figure>"}),
    ])
    return new_notebook(cells=[new_markdown_cell("# Title\n\nSome **bold** text with `code`.\n\n- an item"), code])


def test_raw_values_finds_unexplained_inf_none_and_work_in_progress(shots):
    table = pd.DataFrame({"ε": [1.0, float("inf")], "claimed": [None, "yes"]}, index=["a", "b"])
    found = shots.raw_values(_notebook(table, "TODO: finish; got None"))
    # pandas writes the missing value of the table as NaN
    assert sorted(f.split(" in ")[0].split(": ")[1] for f in found) == sorted(["'TODO'", "'None'", "'inf'", "'NaN'"])


def test_explained_values_pass(shots):
    table = pd.DataFrame({"ε": ["1", "∞ (used without protection)"], "claimed": ["none claimed", "0.5"]})
    assert shots.raw_values(_notebook(table, "information, inference, Nonesuch, nanometre")) == []


def test_page_is_drawn_with_text_tables_and_figures(shots, tmp_path):
    table = pd.DataFrame({"value": [1.5, 2.5]}, index=["<$30k", "$30-40k"])  # '$' is not mathtext here
    nb = _notebook(table, "printed line")
    kinds = [b.kind for b in shots.blocks_of(nb)]
    assert kinds == ["heading", "text", "text", "code", "output", "output", "table", "image"]
    width, height = shots.render(nb, tmp_path / "page.png")
    image = plt.imread(tmp_path / "page.png")
    assert (width, height) == (image.shape[1], image.shape[0]) and width == 1200 and height > 300


def test_a_wide_table_is_split_and_repeats_its_index(shots):
    rows = [["", *[f"column {j:02d}" for j in range(40)]], *[[f"row {i}", *["12345"] * 40] for i in range(3)]]
    parts = shots.table_parts(rows, header=1)
    assert len(parts) > 1
    assert all(max(map(len, p)) <= shots.chars_at(shots.SMALLEST) for p in parts)
    assert all(p[2].startswith("row 0") for p in parts)  # header, rule, then the rows with their index
