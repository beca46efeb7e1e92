"""The forms of a :class:`~compiler.status.model.FleetStatus` on stdout: one home per result.

``FORMATS`` maps each ``migc status -o`` choice to the function that writes it (conftest's
``output.Get(format)``, check-jsonschema's ``reporter.py``): ``text`` for a terminal (control
sequences removed), ``json`` for scripts (:meth:`FleetStatus.to_dict`), ``markdown`` for a pull
request or an issue (every cell escaped). The HTML console is a file, not a stdout format: it is in
:mod:`compiler.status.html`, written by ``--html FILE``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from compiler.escape import markdown_cell, terminal
from compiler.formatting import duration, money
from compiler.observe.model import Counts, profile_of
from compiler.status.model import FleetStatus, NodeStatus, PendingPod, PoolStatus, TenantStatus


def short(resource: str) -> str:
    """``nvidia.com/mig-1g.10gb`` → ``1g.10gb``; ``nvidia.com/gpu`` → ``gpu``."""
    return profile_of(resource) or resource.removeprefix("nvidia.com/")


def fmt_counts(counts: Counts) -> str:
    return ", ".join(f"{short(r)}×{n}" for r, n in counts) or "-"


def fmt_triple(t: tuple[float, float, float]) -> str:
    """held/guaranteed/burst; a quota the tenant does not set shows as -."""
    held, guaranteed, burst = t
    return "/".join(f"{v:g}" if v or i == 0 else "-" for i, v in enumerate((held, guaranteed, burst)))


def _cell(value: str) -> str:
    """One table cell or name for a terminal: control sequences removed, newlines shown."""
    return terminal(value, keep_newlines=False)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    rows = [[_cell(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return out


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A GitHub-flavoured markdown table; every cell through ``escape.markdown_cell`` (pipes,
    backticks, links, mentions, HTML and bidi controls neutralised)."""

    def cell(c: str) -> str:
        return markdown_cell(c) or " "

    out = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return out


def to_markdown(s: FleetStatus) -> str:
    """The same report as :func:`to_text`, as markdown (headings, tables) for a PR comment or an issue."""
    return to_text(s, markdown=True)


@dataclass(frozen=True)
class _Medium:
    """How one report medium writes a table, a cluster value, a list item and a section heading:
    a terminal (aligned columns, control sequences removed) or markdown (GitHub tables, headings)."""

    markdown: bool

    def table(self, header: list[str], rows: list[list[str]]) -> list[str]:
        return _md_table(header, rows) if self.markdown else _table(header, rows)

    def cell(self, value: str) -> str:
        """Every value from the cluster, escaped for the medium."""
        return markdown_cell(value) if self.markdown else _cell(value)

    @property
    def item(self) -> str:
        return "- " if self.markdown else "  "

    def head(self, title: str) -> list[str]:
        return ["", f"### {title}", ""] if self.markdown else ["", title]


def node_used(n: NodeStatus) -> str:
    """The node's USED cell (text, markdown and HTML): busy instances and mean engine activity."""
    if n.mean_engine_active is None:
        return "-"
    return f"{n.used_instances} busy, {n.mean_engine_active:.0%} active"


def node_state(n: NodeStatus) -> str:
    """The node's STATE cell: its rollout phase while one runs, else the MIG manager's state."""
    return n.phase if n.phase not in ("", "Idle") else (n.mig_state or "-")


def _node_row(n: NodeStatus) -> list[str]:
    """One node: what it has, holds and leaves free, how busy its instances are, where its rollout is."""
    return [
        n.name,
        n.pool,
        fmt_counts(n.capacity),
        fmt_counts(n.allocated),
        fmt_counts(n.free),
        node_used(n),
        node_state(n),
        "; ".join(n.drift) or "-",
    ]


def _pool_row(p: PoolStatus) -> list[str]:
    return [
        p.name,
        p.gpu_model,
        f"{p.nodes_seen}/{p.nodes}",
        str(p.gpus),
        f"{p.allocated_share:.2f}",
        f"{p.free_share:.2f}",
        f"{p.fragmented_share:.2f}",
        money(p.cost_per_hour),
        money(p.idle_cost_per_hour),
    ]


def _shared_pool_notes(s: FleetStatus, m: _Medium) -> list[str]:
    """A time-sliced or MPS pool advertises more nvidia.com/gpu than it has GPUs: say what gpu×N counts."""
    lines = []
    for p in s.pools:
        advertised = dict(p.capacity).get("nvidia.com/gpu", 0)
        if p.gpus and advertised > p.gpus:
            lines.append(
                f"{m.item}{p.name}: {p.gpus} GPUs advertised as {advertised} nvidia.com/gpu (shared, "
                f"{advertised // p.gpus} per GPU): its gpu×N above and below counts those shares, as its "
                "ResourceQuota does"
            )
    return lines


def _tenant_row(t: TenantStatus) -> list[str]:
    """One tenant: holdings against its quotas, and whether it is above its guarantee or starved."""
    flags = []
    if t.above_guarantee:
        flags.append("above guarantee: " + ", ".join(short(r) for r in t.above_guarantee))
    if t.starved:
        flags.append("STARVED: " + ", ".join(short(r) for r in t.starved))
    return [
        t.name,
        fmt_counts(t.allocated),
        fmt_counts(t.guaranteed),
        fmt_counts(t.burst),
        f"{t.allocated_share:.2f}",
        fmt_triple(t.memory_gb),
        fmt_triple(t.compute_slices),
        str(t.pending),
        money(t.cost_per_hour),
        "; ".join(flags) or "-",
    ]


def _pending_row(p: PendingPod) -> list[str]:
    return [
        p.pod,
        p.tenant,
        fmt_counts(p.requests),
        duration(p.pending_seconds),
        duration(p.max_wait_seconds) if p.max_wait_seconds else "-",
        "yes" if p.over_max_wait else "-",
    ]


def _rollout_lines(s: FleetStatus, m: _Medium) -> list[str]:
    """The heading and one line per node mid-rollout: its phase, MIG state, since when, last error."""
    rolling = [n for n in s.nodes if n.rolling_out]
    lines = m.head(f"Nodes mid-rollout: {len(rolling)}")
    for n in rolling:
        since = "" if n.phase_since is None else f" since {n.phase_since.strftime('%Y-%m-%dT%H:%M:%SZ')}"
        err = f" — {m.cell(n.last_error)}" if n.last_error else ""
        lines.append(
            f"{m.item}{m.cell(n.name)}: {m.cell(n.phase)} (mig.config.state {m.cell(n.mig_state or '-')})"
            f"{since}{err}"
        )
    return lines


def _drift_lines(s: FleetStatus, m: _Medium) -> list[str]:
    """The drifted nodes, then the policy's nodes the cluster lacks and the GPU nodes no pool selects."""
    drifted = [n for n in s.nodes if n.drift]
    lines = m.head(f"Drift: {len(drifted)} node(s)")
    lines += [f"{m.item}{m.cell(n.name)}: {m.cell('; '.join(n.drift))}" for n in drifted]
    if s.missing_nodes:
        lines += ["", "Not found in the cluster: " + m.cell(", ".join(s.missing_nodes))]
    if s.unmanaged_nodes:
        lines += ["", "GPU nodes no pool selects: " + m.cell(", ".join(s.unmanaged_nodes))]
    return lines


def _cost_lines(s: FleetStatus) -> list[str]:
    c = s.cost
    return [
        "",
        f"Cost: {money(c.per_hour)}/h in total, {money(c.allocated_per_hour)}/h allocated, "
        f"{money(c.idle_per_hour)}/h idle",
        f"Savings: {money(c.savings_vs_whole_gpu_per_hour)}/h vs one whole GPU per instance requested; "
        + f"{money(c.savings_vs_balanced_per_hour)}/h vs all-balanced on every MIG GPU",
    ]


_NODE_HEADER = ["NODE", "POOL", "CAPACITY", "ALLOCATED", "FREE", "USED", "STATE", "DRIFT"]
_POOL_HEADER = ["POOL", "MODEL", "NODES", "GPUS", "ALLOCATED", "FREE", "FRAGMENTED", "COST/H", "IDLE/H"]
_TENANT_HEADER = [
    "TENANT",
    "ALLOCATED",
    "GUARANTEED",
    "BURST",
    "SHARES",
    "MEMORY GB",
    "SLICES",
    "PENDING",
    "COST/H",
    "NOTES",
]
_PENDING_HEADER = ["POD", "TENANT", "REQUESTS", "PENDING", "MAX-WAIT", "OVER-MAX"]


def to_text(s: FleetStatus, *, markdown: bool = False) -> str:
    m = _Medium(markdown)
    title = (
        f"migc status — {s.source} at {s.taken_at.strftime('%Y-%m-%dT%H:%M:%SZ')}; "
        f"expected layouts from {s.expected_from}"
    )
    lines = [f"## {title}" if markdown else title, *m.head("Nodes")]
    lines += m.table(_NODE_HEADER, [_node_row(n) for n in s.nodes])
    lines += m.head("Pools")
    lines += m.table(_POOL_HEADER, [_pool_row(p) for p in s.pools])
    lines += _shared_pool_notes(s, m)
    lines += m.head("Tenants (GPU shares; memory GB and compute slices as held/guaranteed/burst)")
    lines += m.table(_TENANT_HEADER, [_tenant_row(t) for t in s.tenants])
    lines += m.head(f"Pending GPU pods: {len(s.pending)}")
    if s.pending:
        lines += m.table(_PENDING_HEADER, [_pending_row(p) for p in s.pending])
    lines += _rollout_lines(s, m)
    lines += _drift_lines(s, m)
    lines += _cost_lines(s)
    return terminal("\n".join(lines) + "\n")  # the source and anything above, once more


def to_json(s: FleetStatus) -> str:
    return json.dumps(s.to_dict(), indent=2, sort_keys=True) + "\n"


Format = Callable[[FleetStatus], str]
FORMATS: Mapping[str, Format] = {"text": to_text, "json": to_json, "markdown": to_markdown}
"""Each ``migc status -o`` choice and the function that writes it for stdout, ready for its medium.
The HTML console is no ``-o`` choice: ``--html FILE`` writes it beside whichever of these goes to
stdout (:func:`compiler.status.html.to_html`)."""
