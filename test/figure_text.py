"""Where a figure's text lands: every drawn text's window extent against the figure, the other texts and the
other panels.

A text collides when its box leaves the figure, overlaps another text's box, or runs into a panel it does not
belong to (a y label longer than its subplot reaching the plot beside it). Tick labels of ticks outside their
axis' view are not drawn and not counted; a legend's own entries are checked like any other text.
"""
import matplotlib.axes
import matplotlib.text

TOLERANCE = 1.0
"""[px] of overlap or overhang forgiven (anti-aliasing, rounding of the extents)."""


def _hidden_tick_labels(axes) -> set[int]:
    hidden = set()
    for axis in (axes.xaxis, axes.yaxis):
        low, high = sorted(axis.get_view_interval())
        span = high - low
        for tick in axis.get_major_ticks() + axis.get_minor_ticks():
            location = tick.get_loc()
            if location is None or not low - 1e-9 * span <= location <= high + 1e-9 * span:
                hidden.update((id(tick.label1), id(tick.label2)))
    return hidden


def _drawn_texts(artist, owner=None):
    """``(text, its axes or None)`` of every non-empty text under ``artist`` whose every ancestor is visible."""
    for child in artist.get_children():
        if not child.get_visible():
            continue
        if isinstance(child, matplotlib.text.Text):
            if child.get_text().strip():
                yield child, owner
        yield from _drawn_texts(child, child if isinstance(child, matplotlib.axes.Axes) else owner)


def _overlap(a, b) -> float:
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return min(width, height) if width > 0 and height > 0 else 0.0


def text_collisions(figure) -> list[str]:
    """Each collision of ``figure``'s drawn texts, in words (empty: none). Draws the figure."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    panels = [axes for axes in figure.axes if axes.get_visible()]
    hidden = set().union(*(_hidden_tick_labels(axes) for axes in panels)) if panels else set()
    drawn = [(text, owner) for text, owner in _drawn_texts(figure) if id(text) not in hidden]
    texts, owners = [text for text, _ in drawn], [owner for _, owner in drawn]
    boxes = [text.get_window_extent(renderer) for text in texts]
    width, height = figure.bbox.width, figure.bbox.height
    found = []
    for text, box in zip(texts, boxes):
        if box.x0 < -TOLERANCE or box.y0 < -TOLERANCE or box.x1 > width + TOLERANCE or box.y1 > height + TOLERANCE:
            found.append(f"{text.get_text()!r} leaves the figure ({box.x0:.0f}..{box.x1:.0f} x {box.y0:.0f}.."
                         f"{box.y1:.0f} px of {width:.0f} x {height:.0f})")
    for i, (text, owner, box) in enumerate(zip(texts, owners, boxes)):
        for other, other_box in zip(texts[i + 1:], boxes[i + 1:]):
            if _overlap(box, other_box) > TOLERANCE:
                found.append(f"{text.get_text()!r} overlaps {other.get_text()!r}")
        for axes in panels:
            if owner is not axes and _overlap(box, axes.bbox) > TOLERANCE:
                title = axes.get_title() or axes.get_title(loc="left") or axes.get_ylabel()
                found.append(f"{text.get_text()!r} runs into the panel {title!r}")
    return found
