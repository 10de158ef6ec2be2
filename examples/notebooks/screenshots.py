"""Execute the example notebooks and draw docs/screenshots/<name>.png from what they show.

Each notebook runs top to bottom in a fresh ``python3`` kernel (nbclient), as
``tests/examples/test_notebooks.py`` runs it. Its executed cells are then drawn with matplotlib,
one tall page per notebook, 1200 px wide: headings and text of the markdown cells, code in grey
boxes, printed text, tables (the HTML tables a notebook shows, set as aligned text) and figures.
No browser is needed; the page reads like the notebook, not pixel for pixel like Jupyter.

Before drawing, the outputs are checked for what a reader should never see unexplained: a raw
``inf``, ``nan`` or ``None`` and work-in-progress text (:func:`raw_values`). The committed
notebooks keep no outputs (``strip.py``); only the PNG files are written.

Run:  python examples/notebooks/screenshots.py                    # the four notebooks
      python examples/notebooks/screenshots.py school subset_tables
      python examples/notebooks/screenshots.py --check            # execute and check, draw nothing
The census notebook reads the UCI Adult data from ``$BAYESPRIV_ADULT_DIR`` (default
``../shared/data/adult``); without it, its page shows the skip message.
"""

from __future__ import annotations

import argparse
import base64
import io
import re
import sys
import textwrap
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = ROOT / "docs" / "screenshots"
NOTEBOOKS = ("hospital", "census", "school", "subset_tables")
#: Per-cell timeout (s).
CELL_TIMEOUT = 600
#: What a reader must not see in an output: raw non-numbers, and work-in-progress notes.
RAW = re.compile(r"(?<![\w.])(-?inf|nan|NaN|None)(?![\w(])|being added|\bTODO\b|\bWIP\b|\bnot yet\b")
#: Page width (inches) at DPI dots per inch: 1200 px.
WIDTH, DPI = 12.0, 100
MARGIN = 0.35
LINE = 1.45  # line height in font sizes
#: Box width for tables and code (inches) and the smallest table font (points).
BOX = WIDTH - 2 * MARGIN - 0.8
SMALLEST = 6.0


# -- executing and checking -------------------------------------------------------------------------------------
def execute(name: str) -> nbformat.NotebookNode:
    """The notebook ``name`` executed in a fresh kernel from its own folder (raises on a failing cell)."""
    from nbclient import NotebookClient

    nb = nbformat.read(HERE / f"{name}.ipynb", as_version=4)
    NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                   resources={"metadata": {"path": str(HERE)}}).execute()
    return nb


class _Text(HTMLParser):
    """Visible text of an HTML fragment (style and script elements dropped)."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        self._skip += tag in ("style", "script")
        if tag in ("td", "th", "p", "div", "br", "tr", "li", "caption"):
            self.parts.append(" ")

    def handle_endtag(self, tag):
        self._skip -= tag in ("style", "script")

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def output_text(output: nbformat.NotebookNode) -> str:
    """What a reader sees of one output, as text (HTML preferred over plain text)."""
    if output.output_type == "stream":
        return output.text
    if output.output_type == "error":
        return f"{output.ename}: {output.evalue}"
    data = output.get("data", {})
    if "text/html" in data:
        parser = _Text()
        parser.feed(data["text/html"])
        return "".join(parser.parts)
    return "" if "image/png" in data else data.get("text/plain", "")


def raw_values(nb: nbformat.NotebookNode) -> list[str]:
    """Each raw ``inf``/``nan``/``None`` or work-in-progress text an executed notebook shows, with its cell."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for output in cell.outputs:
            text = output_text(output)
            for m in RAW.finditer(text):
                context = " ".join(text[max(0, m.start() - 60):m.end() + 30].split())
                found.append(f"{cell.get('id', '?')}: {m.group(0)!r} in …{context}…")
    return found


# -- what a page is made of -------------------------------------------------------------------------------------
@dataclass
class Block:
    """One thing drawn on the page, top to bottom: text lines, or an image."""

    kind: str  # "heading", "text", "code", "output", "table", "image"
    lines: list[str] = field(default_factory=list)
    size: float = 10.0
    image: object = None
    label: str = ""

    def height(self) -> float:
        """Inches the block takes (text: lines × line height; image: scaled to the page width)."""
        if self.kind == "image":
            h, w = self.image.shape[:2]
            return min(w / DPI, BOX) * h / w + 0.15
        pad = 0.16 if self.kind in ("code", "table") else 0.06
        return len(self.lines) * self.size * LINE / 72 + pad + (0.15 if self.kind == "heading" else 0.0)


def _markdown_blocks(source: str) -> list[Block]:
    out = []
    for para in re.split(r"\n\s*\n", source.strip()):
        text = re.sub(r"^(\s*)[-*] ", r"\1• ", para, flags=re.M)
        text = re.sub(r"\*\*|`|(?<!\w)\*(?!\s)|(?<!\s)\*(?!\w)", "", text)
        if text.startswith("#"):
            level = len(text) - len(text.lstrip("#"))
            out.append(Block("heading", [text.lstrip("# ").strip()], size={1: 17, 2: 14}.get(level, 12)))
        else:
            out.append(Block("text", _rewrap(text.splitlines(), 135), size=10))
    return out


def _rewrap(lines: list[str], width: int) -> list[str]:
    """Markdown paragraph lines joined and wrapped again (list items keep their own lines)."""
    items, current = [], []
    for line in lines:
        if re.match(r"\s*(• |\d+\. )", line) and current:
            items.append(" ".join(current))
            current = []
        current.append(line.strip())
    items.append(" ".join(current))
    return [w for item in items for w in textwrap.wrap(item, width) or [""]]


class _Tables(HTMLParser):
    """Tables and the text between them, in order, from a notebook's HTML output."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[tuple[str, object]] = []  # ("text", str) or ("table", (rows, header rows))
        self._rows: list[list[str]] | None = None
        self._header: list[bool] = []  # per row: only <th> cells (a column header)
        self._cell: list[str] | None = None
        self._caption: list[str] | None = None
        self._text: list[str] = []
        self._skip = 0

    def _flush_text(self) -> None:
        text = " ".join("".join(self._text).split())
        if text:
            self.items.append(("text", text))
        self._text = []

    def handle_starttag(self, tag, attrs):
        self._skip += tag in ("style", "script")
        if tag == "table":
            self._flush_text()
            self._rows, self._header = [], []
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
            self._header.append(True)
        elif tag in ("td", "th") and self._rows is not None:
            self._cell = []
            if tag == "td" and self._header:
                self._header[-1] = False
        elif tag == "caption" and self._rows is not None:
            self._caption = []
        elif tag in ("p", "div", "br", "caption") and self._rows is None:
            self._flush_text()

    def handle_endtag(self, tag):
        self._skip -= tag in ("style", "script")
        if tag in ("td", "th") and self._rows is not None and self._cell is not None:
            self._rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "caption" and self._caption is not None:
            self.items.append(("text", " ".join("".join(self._caption).split())))
            self._caption = None
        elif tag == "table" and self._rows is not None:
            header = 0
            while header < len(self._rows) and self._header[header]:
                header += 1
            self.items.append(("table", ([r for r in self._rows if r], header)))
            self._rows = None

    def handle_data(self, data):
        if self._skip:
            return
        if self._cell is not None:
            self._cell.append(data)
        elif self._caption is not None:
            self._caption.append(data)
        elif self._rows is None:
            self._text.append(data)

    def close(self):
        super().close()
        self._flush_text()


#: Widest table cell, in characters (longer texts are cut with "…").
MAX_CELL = 48


def chars_at(size: float) -> int:
    """Monospace characters (DejaVu Sans Mono: 0.602 em, 0.63 as drawn at 100 dpi) that fit in the box at ``size`` points."""
    return int(BOX * 72 / (0.64 * size))


def table_lines(rows: list[list[str]], header: int) -> list[str]:
    """Rows of a table as aligned text: a rule under the ``header`` first rows; with a header, the
    first column (the index) left-aligned and the others right-aligned, without one (a list of
    name, value rows) all left-aligned."""
    n = max(len(r) for r in rows)
    rows = [r + [""] * (n - len(r)) for r in rows]
    widths = [max(len(r[j]) for r in rows) for j in range(n)]
    lines = ["  ".join(c.ljust(w) if j == 0 or not header else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths)))
             .rstrip() for r in rows]
    if not header:
        return lines
    return lines[:header] + ["─" * max(map(len, lines))] + lines[header:]


def table_parts(rows: list[list[str]], header: int) -> list[list[str]]:
    """The table as one or more text tables that fit the box at :data:`SMALLEST` points: columns
    past the width go to a next part, which repeats the first (index) column."""
    rows = [[c if len(c) <= MAX_CELL else c[:MAX_CELL - 1] + "…" for c in r] for r in rows]
    n = max(len(r) for r in rows)
    rows = [r + [""] * (n - len(r)) for r in rows]
    widths = [max(len(r[j]) for r in rows) + 2 for j in range(n)]
    groups = _column_groups(widths, chars_at(SMALLEST))
    # as many parts as needed at the smallest font, but of even widths (each then drawn larger)
    for limit in range(widths[0] + -(-sum(widths[1:]) // len(groups)), chars_at(SMALLEST) + 1):
        even = _column_groups(widths, limit)
        if len(even) <= len(groups):
            groups = even
            break
    return [table_lines([[r[0]] + r[a:b] for r in rows], header) for a, b in groups]


def _column_groups(widths: list[int], limit: int) -> list[tuple[int, int]]:
    """Column ranges [a, b) after the index column, each fitting ``limit`` characters with it."""
    groups, start, n = [], 1, len(widths)
    while start < n or not groups:
        end, used = start, widths[0]
        while end < n and (end == start or used + widths[end] <= limit):
            used += widths[end]
            end += 1
        groups.append((start, end))
        start = end
    return groups


def _image_block(data: str) -> Block:
    import matplotlib.image as mpimg

    return Block("image", image=mpimg.imread(io.BytesIO(base64.b64decode(data)), format="png"))


def _output_blocks(output: nbformat.NotebookNode) -> list[Block]:
    if output.output_type == "stream":
        return [Block("output", _wrap_code(output.text.rstrip("\n").splitlines(), 150), size=8.5)]
    if output.output_type == "error":
        return [Block("output", [f"{output.ename}: {output.evalue}"], size=8.5, label="error")]
    data = output.get("data", {})
    if "image/png" in data:
        return [_image_block(data["image/png"])]
    if "text/html" not in data:
        return [Block("output", _wrap_code(data.get("text/plain", "").splitlines(), 150), size=8.5)]
    parser = _Tables()
    parser.feed(data["text/html"])
    parser.close()
    blocks = []
    for kind, item in parser.items:
        if kind == "text":
            blocks.append(Block("output", textwrap.wrap(item, 150), size=8.5, label="html"))
        elif item[0]:
            for lines in table_parts(*item):
                size = max(SMALLEST, min(8.5, 8.5 * chars_at(8.5) / max(map(len, lines))))
                blocks.append(Block("table", lines, size=size))
    return blocks


def _wrap_code(lines: list[str], width: int) -> list[str]:
    return [piece for line in lines for piece in (textwrap.wrap(line, width, subsequent_indent="    ",
                                                                drop_whitespace=False) or [""])]


def blocks_of(nb: nbformat.NotebookNode) -> list[Block]:
    """Everything drawn for an executed notebook, top to bottom."""
    blocks = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            blocks += _markdown_blocks(cell.source)
        elif cell.cell_type == "code":
            n = cell.get("execution_count") or " "
            blocks.append(Block("code", _wrap_code(cell.source.splitlines(), 140), size=8.5, label=f"In [{n}]:"))
            for output in cell.outputs:
                blocks += _output_blocks(output)
    return blocks


# -- drawing -------------------------------------------------------------------------------------------------------
_FONTS = {"heading": ("DejaVu Sans", "bold"), "text": ("DejaVu Sans", "normal"),
          "code": ("DejaVu Sans Mono", "normal"), "output": ("DejaVu Sans Mono", "normal"),
          "table": ("DejaVu Sans Mono", "normal")}


def _draw_block(fig, block: Block, top: float, height: float) -> None:
    """Draw one block whose top edge is ``top`` inches below the page top (page ``height`` inches)."""
    from matplotlib.patches import Rectangle

    left = MARGIN + 0.8
    y = lambda inches: 1.0 - inches / height  # noqa: E731 (figure fraction from the top)
    if block.kind == "image":
        h, w = block.image.shape[:2]
        width = min(w / DPI, WIDTH - left - MARGIN)
        ax = fig.add_axes((left / WIDTH, y(top + width * h / w), width / WIDTH, width * h / w / height))
        ax.imshow(block.image)
        ax.set_axis_off()
        return
    box = block.height() - 0.06
    if block.kind in ("code", "table"):
        fig.patches.append(Rectangle((left / WIDTH - 0.004, y(top + box)), (WIDTH - left - MARGIN) / WIDTH, box / height,
                                     transform=fig.transFigure, facecolor="#f5f5f5" if block.kind == "code" else "white",
                                     edgecolor="#dddddd", lw=0.8))
    if block.label.startswith("In"):
        fig.text(MARGIN / WIDTH, y(top + 0.08), block.label, family="DejaVu Sans Mono", size=8, color="#303f9f",
                 va="top", parse_math=False)
    family, weight = _FONTS[block.kind]
    x = (MARGIN if block.kind in ("heading", "text") else left) / WIDTH
    colour = "#b00" if block.label == "error" else "black"
    drop = {"code": 0.08, "table": 0.08, "heading": 0.15}.get(block.kind, 0.0)
    fig.text(x + 0.002, y(top + drop), "\n".join(block.lines),
             family=family, weight=weight, size=block.size, va="top", linespacing=LINE, color=colour,
             parse_math=False)


def render(nb: nbformat.NotebookNode, path: Path) -> tuple[int, int]:
    """Draw the executed notebook ``nb`` as one PNG page at ``path``; returns its size in pixels."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    blocks = blocks_of(nb)
    gaps = 0.12
    height = 2 * MARGIN + sum(b.height() + gaps for b in blocks)
    fig = Figure(figsize=(WIDTH, height), dpi=DPI, facecolor="white")
    top = MARGIN
    for block in blocks:
        _draw_block(fig, block, top, height)
        top += block.height() + gaps
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, format="png", facecolor="white")
    return int(round(WIDTH * DPI)), int(round(height * DPI))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=list(NOTEBOOKS), help=f"notebooks (default: {' '.join(NOTEBOOKS)})")
    ap.add_argument("--check", action="store_true", help="execute and check the outputs; draw nothing")
    ap.add_argument("--out", type=Path, default=OUT, help=f"folder of the PNG files (default {OUT.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    unknown = [n for n in args.names if n not in NOTEBOOKS]
    if unknown:
        ap.error(f"notebooks must be among {', '.join(NOTEBOOKS)}; got {', '.join(unknown)}")
    status = 0
    for name in args.names:
        nb = execute(name)
        raw = raw_values(nb)
        for line in raw:
            print(f"{name}: shows {line}", file=sys.stderr)
        status |= bool(raw)
        if not args.check:
            size = render(nb, args.out / f"{name}.png")
            print(f"{name}: {args.out / (name + '.png')} ({size[0]}×{size[1]} px)")
    return status


if __name__ == "__main__":
    sys.exit(main())
