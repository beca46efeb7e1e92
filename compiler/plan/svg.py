"""SVG slice pictures: one per changed node, before and after side by side."""

from __future__ import annotations

from html import escape

from compiler.catalog import Catalog, GpuModel
from compiler.catalog.layouts import place
from compiler.model import GpuLayout
from compiler.plan.data import NodeChange, Plan
from compiler.plan.formatting import size_key

_PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
)  # fmt: skip
_CELL = 34
_ROW = 26
_LABEL = 52


def _colour(model: GpuModel | None, profile: str) -> str:
    names = [p.name for p in model.profiles] if model is not None else []
    index = names.index(profile) if profile in names else sum(map(ord, profile))
    return _PALETTE[index % len(_PALETTE)]


def _bar(model: GpuModel | None, gpu: GpuLayout | None, x: int, y: int, slots: int) -> list[str]:
    width = slots * _CELL
    parts = [f'<rect x="{x}" y="{y}" width="{width}" height="{_ROW - 6}" fill="#f4f4f4" stroke="#999"/>']
    if gpu is None or not gpu.mig_enabled or not gpu.profiles:
        text = "not deployed" if gpu is None else ("whole GPU" if not gpu.mig_enabled else "MIG on, empty")
        fill = "#d0d0d0" if gpu is not None and not gpu.mig_enabled else "#f4f4f4"
        parts.append(
            f'<rect x="{x}" y="{y}" width="{width}" height="{_ROW - 6}" fill="{fill}" stroke="#999"/>'
        )
        parts.append(f'<text x="{x + width // 2}" y="{y + 14}" text-anchor="middle">{escape(text)}</text>')
        return parts
    witness = place(model, gpu.counts()) if model is not None else None
    placed: list[tuple[str, int, int]] = list(witness) if witness is not None else []
    if (
        witness is None
    ):  # not provable on this model: draw side by side so the picture still says what it holds
        start = 0
        for name, count in gpu.profiles:
            prof = model.profile(name) if model is not None else None
            size = prof.memory_slices if prof is not None else 1
            for _ in range(count):
                placed.append((name, start, size))
                start += size
    for name, start, size in placed:
        px = x + start * _CELL
        parts.append(
            f'<rect x="{px + 1}" y="{y + 1}" width="{size * _CELL - 2}" height="{_ROW - 8}" '
            f'fill="{_colour(model, name)}" rx="3"><title>{escape(name)} at slice {start}</title></rect>'
        )
        parts.extend(_label(name, px + size * _CELL // 2, y, size * _CELL - 4))
    return parts


def _label(name: str, cx: int, y: int, room: int) -> list[str]:
    """An instance's name inside its box: one line where it fits (at about 0.6 em per character),
    else split after the compute part (``1g`` / ``.10gb+me``) on two lines, squeezed to the box's
    width with ``textLength`` where even that is too long, so it is never cut."""
    size = 11 if 0.6 * 11 * len(name) <= room else 9
    if 0.6 * size * len(name) <= room:
        return [
            f'<text x="{cx}" y="{y + 14}" text-anchor="middle" fill="#fff" font-size="{size}">'
            f"{escape(name)}</text>"
        ]
    head, dot, tail = name.partition(".")
    lines = [head, dot + tail] if dot else [name]
    out = []
    for i, line in enumerate(lines):
        fit = f' textLength="{room}" lengthAdjust="spacingAndGlyphs"' if 0.6 * 8 * len(line) > room else ""
        out.append(
            f'<text x="{cx}" y="{y + 9 + i * 8}" text-anchor="middle" fill="#fff" font-size="8"{fit}>'
            f"{escape(line)}</text>"
        )
    return out


def to_svg(change: NodeChange, model: GpuModel | None) -> str:
    """One node: a row per GPU, before and after side by side, a column per memory slice."""
    slots = model.memory_slices if model is not None and model.memory_slices else 8
    panel = slots * _CELL
    width = _LABEL + 2 * panel + 40
    rows = len(change.after)
    used = sorted(
        {n for layout in (change.before or (), change.after) for gpu in layout for n, _ in gpu.profiles},
        key=lambda n: size_key((n, 0)),
    )
    legend_y = 48 + rows * _ROW + 14
    height = legend_y + (22 if used else 0)
    left, right = _LABEL, _LABEL + panel + 30
    body = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f"<title>{escape(change.cluster)}/{escape(change.node)}: MIG layout before and after</title>",
        f'<text x="4" y="16" font-size="13" font-weight="bold">{escape(change.node)} '
        f"({escape(change.pool)}, {escape(change.gpu_model)})</text>",
        f'<text x="{left}" y="40" font-weight="bold">before</text>',
        f'<text x="{right}" y="40" font-weight="bold">after</text>',
    ]
    for i, after in enumerate(change.after):
        y = 48 + i * _ROW
        before = change.before[i] if change.before is not None and i < len(change.before) else None
        marker = " *" if i in change.changed_gpus else ""
        body.append(f'<text x="4" y="{y + 14}">GPU {i}{marker}</text>')
        body.extend(_bar(model, before, left, y, slots))
        body.extend(_bar(model, after, right, y, slots))
    note = "* changed GPU; one column per memory slice"
    body.append(f'<text x="4" y="{legend_y - 2}" fill="#555">{note}</text>')
    x = 4
    for name in used:
        colour = _colour(model, name)
        body.append(f'<rect x="{x}" y="{legend_y + 4}" width="12" height="12" fill="{colour}"/>')
        body.append(f'<text x="{x + 16}" y="{legend_y + 14}">{escape(name)}</text>')
        x += 22 + 7 * len(name)
    body.append("</svg>")
    return "\n".join(body) + "\n"


def svg_name(change: NodeChange) -> str:
    return f"{change.cluster}-{change.node}.svg"


def svg_files(plan: Plan, catalog: Catalog) -> dict[str, str]:
    """``file name → SVG text`` for every changed node (the caller writes them)."""
    return {svg_name(c): to_svg(c, catalog.get(c.gpu_model)) for c in plan.changes}
