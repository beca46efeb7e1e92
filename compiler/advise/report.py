"""The forms of an :class:`~compiler.advise.model.Advice` on stdout: one home per result.

``FORMATS`` maps each ``migc advise -o`` choice to the function that writes it (conftest's
``output.Get(format)``, check-jsonschema's ``reporter.py``): ``text`` for a terminal, ``markdown``
for a budget meeting or a pull request, ``json`` for tools (:meth:`Advice.to_dict`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from compiler.advise.model import Advice, ClusterSizing, PoolAdvice, SizingRow
from compiler.formatting import money


def to_json(advice: Advice) -> str:
    return json.dumps(advice.to_dict(), indent=2, sort_keys=True) + "\n"


def _advised(p: PoolAdvice) -> str:
    if p.recommended is None:
        return "none (no demand to advise on)"
    extra = f", {p.partition_mode} layout" if p.partition_mode else ""
    return f"{p.recommended}{extra}"


_HEADER = (
    "GPU model",
    "GPUs",
    "nodes",
    "$/h",
    "all-balanced",
    "saving/h",
    "GPU per pod",
    "saving/h",
    "served",
)


def _cells(r: SizingRow) -> tuple[str, ...]:
    flag = "" if r.optimal else " (not proven optimal)"
    return (
        r.gpu_model + (" (MIG)" if r.mig else ""),
        f"{r.gpus}{flag}",
        f"{r.nodes} x {r.gpus_per_node}",
        money(r.cost_per_hour),
        "-" if r.balanced_gpus is None else str(r.balanced_gpus),
        money(r.balanced_saving_per_hour),
        str(r.whole_gpus),
        money(r.whole_saving_per_hour),
        f"{r.replicas_served}/{r.replicas_wanted}",
    )


def _table_text(s: ClusterSizing) -> list[str]:
    rows = [_HEADER, *(_cells(r) for r in s.rows)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADER))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def to_text(advice: Advice) -> str:
    lines: list[str] = []
    for p in advice.pools:
        lines.append(
            f"pool {p.cluster}/{p.pool} ({p.gpus} x {p.gpu_model}): "
            f"current {p.current}, advised {_advised(p)}"
        )
        lines.extend(f"  [{f.code}] {f.severity}: {f.message}" for f in p.findings)
    for s in advice.sizing:
        lines.append("")
        lines.append(f"sizing of cluster {s.cluster} (declared demand, per priced GPU model):")
        if s.rows:
            lines.extend(_table_text(s))
        lines.extend(f"  [{f.code}] {f.severity}: {f.message}" for f in s.findings)
    if advice.findings:
        lines.append("")
        lines.extend(f"[{f.code}] {f.severity}: {f.message}" for f in advice.findings)
    lines.append("")
    lines.append("Each [MIGC5xx] cites a rule: `migc explain CODE` explains it.")
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def to_markdown(advice: Advice) -> str:
    lines = ["# migc advise", "", "## Sharing mode per pool", ""]
    lines.append("| pool | GPUs | current | advised | rules |")
    lines.append("|---|---|---|---|---|")
    for p in advice.pools:
        codes = ", ".join(dict.fromkeys(f.code for f in p.findings))
        lines.append(
            f"| {p.cluster}/{p.pool} | {p.gpus} x {p.gpu_model} | {p.current} | {_advised(p)} | {codes} |"
        )
    lines.append("")
    for p in advice.pools:
        lines.append(f"**{p.cluster}/{p.pool}**")
        lines.append("")
        lines.extend(f"- `{f.code}` {f.severity}: {_md(f.message)}" for f in p.findings)
        lines.append("")
    for s in advice.sizing:
        lines.append(f"## Sizing of cluster {s.cluster}")
        lines.append("")
        if s.rows:
            lines.append("| " + " | ".join(_HEADER) + " |")
            lines.append("|" + "---|" * len(_HEADER))
            lines.extend("| " + " | ".join(_md(c) for c in _cells(r)) + " |" for r in s.rows)
            lines.append("")
        lines.extend(f"- `{f.code}` {f.severity}: {_md(f.message)}" for f in s.findings)
        lines.append("")
    if advice.findings:
        lines.append("## Observed demand")
        lines.append("")
        lines.extend(f"- `{f.code}` {f.severity}: {_md(f.message)}" for f in advice.findings)
        lines.append("")
    lines.append("Each code cites a rule: `migc explain CODE` explains it.")
    return "\n".join(lines) + "\n"


Format = Callable[[Advice], str]
FORMATS: Mapping[str, Format] = {"text": to_text, "markdown": to_markdown, "json": to_json}
