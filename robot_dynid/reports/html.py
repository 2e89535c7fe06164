"""A self-contained HTML page (figures as PNG files beside it, no scripts, no network) and the
JSON summary written beside it."""
from __future__ import annotations

import html
import math
import pathlib
import re

from robot_dynid.reports.json_text import dumps

__all__ = ["STYLE", "number", "table", "heading", "paragraph", "verdict", "image", "write_page", "referenced_files",
           "write_json"]

STYLE = """body{font-family:sans-serif;margin:1.5em;max-width:1400px}
table{border-collapse:collapse;margin:0.6em 0;font-size:0.85em}
th,td{border:1px solid #bbb;padding:2px 6px;text-align:right}
th{background:#eee}td.text{text-align:left;font-family:monospace}
tr.poor td{background:#fdd}td.sig{background:#fdd;font-weight:bold}
img{max-width:100%;border:1px solid #ddd;margin:0.5em 0}
p.note{color:#a40}
p.verdict{font-size:1.15em;padding:.5em .8em;border-left:.4em solid #888;background:#f4f4f4}
p.verdict.good{border-color:#2a2}p.verdict.bad{border-color:#c22}"""


def number(value, digits: int = 4) -> str:
    """A number as text with ``digits`` significant digits; '-' for None or nan."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{float(value):.{digits}g}"


def table(header, rows, row_classes=None, cell_classes=None) -> str:
    """An HTML table; cells are text (escaped), text cells that are not numbers left-aligned.

    ``row_classes`` (one per row) and ``cell_classes`` ({(row, column): class}) style them.
    """
    lines = ["<table>", "<tr>" + "".join(f"<th>{html.escape(str(cell))}</th>" for cell in header) + "</tr>"]
    for r, row in enumerate(rows):
        css = f' class="{row_classes[r]}"' if row_classes and row_classes[r] else ""
        cells = []
        for c, cell in enumerate(row):
            text = str(cell)
            classes = [] if _numeric(text) else ["text"]
            if cell_classes and (r, c) in cell_classes:
                classes.append(cell_classes[(r, c)])
            attribute = f' class="{" ".join(classes)}"' if classes else ""
            cells.append(f"<td{attribute}>{html.escape(text)}</td>")
        lines.append(f"<tr{css}>" + "".join(cells) + "</tr>")
    lines.append("</table>")
    return "\n".join(lines)


def _numeric(text: str) -> bool:
    try:
        float(text.rstrip("%"))
    except ValueError:
        return text == "-"
    return True


def heading(text: str, level: int = 2) -> str:
    return f"<h{level}>{html.escape(text)}</h{level}>"


def paragraph(text: str, note: bool = False) -> str:
    return f'<p{" class=note" if note else ""}>{html.escape(text)}</p>'


def verdict(text: str, good: bool | None) -> str:
    """The page's verdict line (``id="verdict"``): first on the page, green, red or grey by ``good``."""
    kind = {True: "good", False: "bad", None: "unknown"}[good]
    return f'<p id="verdict" class="verdict {kind}"><strong>Verdict:</strong> {html.escape(text)}</p>'


def image(path, caption: str) -> str:
    """An ``<img>`` of a file beside the page (its name only, so the directory can move)."""
    name = pathlib.Path(path).name
    return f'<figure><img src="{html.escape(name)}" alt="{html.escape(caption)}"><figcaption>' \
           f"{html.escape(caption)}</figcaption></figure>"


def write_page(path, title: str, parts) -> pathlib.Path:
    """Write ``parts`` (HTML fragments) as a page titled ``title``."""
    path = pathlib.Path(path)
    body = "\n".join(parts)
    path.write_text(f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}'
                    f"</title>\n<style>{STYLE}</style></head>\n<body>\n<h1>{html.escape(title)}</h1>\n{body}\n"
                    "</body></html>\n")
    return path


def referenced_files(text: str) -> list[str]:
    """The ``src`` and ``href`` targets of a page."""
    return re.findall(r'(?:src|href)="([^"]+)"', text)


def write_json(path, data) -> pathlib.Path:
    path = pathlib.Path(path)
    path.write_text(dumps(data) + "\n")
    return path
