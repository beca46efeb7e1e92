"""The HTML console: one self-contained static page (inline CSS, no script, no network at view time).

Every GPU is a ``div.gpu`` holding one ``div.slot`` per MIG instance, whole GPU or time-sliced share,
positioned by its memory slices and coloured by the tenant whose pod holds it. Hover details are in
each slot's ``title`` and ``data-*`` attributes (``data-resource``, ``data-tenant``, ``data-pod``,
``data-engine-active``, ``data-memory-used-mib``), so tools can read them from the DOM as well.
"""

from __future__ import annotations

from compiler.escape import html_text
from compiler.formatting import duration, money
from compiler.status.model import (
    Cost,
    FleetStatus,
    GpuView,
    NodeStatus,
    PendingPod,
    PoolStatus,
    Slot,
    TenantStatus,
)
from compiler.status.report import fmt_counts, fmt_triple, node_state, node_used, short

# Okabe–Ito and Tableau colours: distinguishable for colour-blind viewers, dark enough for white text.
PALETTE = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#E69F00",
    "#56B4E9",
    "#8C564B",
    "#7F3C8D",
    "#11A579",
    "#3969AC",
    "#F2B701",
    "#E73F74",
)
FREE = "#e6e6e6"
UNCOVERED = "repeating-linear-gradient(45deg,#f4f4f4 0 4px,#d0d0d0 4px 6px)"
NO_TENANT_COLOUR = "#555555"

CSS = (
    "body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;"
    "margin:24px;"
    "color:#222;"
    "background:#fff}"
    "h1{font-size:20px;margin:0 0 4px}"
    "h2{font-size:16px;margin:24px 0 8px}"
    ".meta{color:#666;margin-bottom:12px}"
    "table{border-collapse:collapse;margin:4px 0 12px}"
    "th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}"
    "th{background:#f3f3f3}"
    "td.num{text-align:right}"
    ".legend span{display:inline-block;margin:0 12px 4px 0}"
    ".legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}"
    ".node{margin:6px 0 18px;clear:both}"
    ".node h3{font-size:13px;margin:0 0 2px}"
    # each GPU's index sits 14px above its box: every row of boxes keeps that room (padding-top for
    # the first, row-gap for wrapped ones), so an index never covers a box or the next node's heading
    ".gpus{display:flex;flex-wrap:wrap;column-gap:6px;row-gap:18px;padding-top:14px}"
    # 37px per memory slice (8 per GPU), 42px of 7: a 1g instance's label fits, on two lines if it must
    ".gpu{position:relative;width:296px;height:28px;border:1px solid #999;background:#fafafa}"
    ".gpu .idx{position:absolute;left:-1px;top:-14px;font-size:10px;line-height:12px;color:#666}"
    ".slot{position:absolute;"
    "top:0;"
    "bottom:0;"
    "box-sizing:border-box;"
    "border-right:1px solid #fff;"
    "color:#fff;"
    "font-size:8px;"
    "line-height:9px;"
    "overflow:hidden;"
    "overflow-wrap:anywhere;"
    "display:flex;"
    "align-items:center;"
    "justify-content:center;"
    "text-align:center}"
    ".slot:hover{outline:2px solid #000;z-index:1}"
    ".slot.free{color:#666}"
    ".unknown{color:#666;font-size:11px;line-height:28px;padding-left:4px}"
    ".warn{color:#b00020;font-weight:600}"
)


def _e(v: object) -> str:
    """Every value interpolated into the page goes through here (compiler.escape.html_text)."""
    return html_text(v)


def tenant_colours(s: FleetStatus) -> dict[str, str]:
    names = [t.name for t in s.tenants]
    for n in s.nodes:
        for g in n.gpus:
            names.extend(sl.tenant for sl in g.slots if sl.tenant and sl.tenant not in names)
    out = {}
    for i, name in enumerate(dict.fromkeys(names)):
        out[name] = NO_TENANT_COLOUR if name == "-" else PALETTE[i % len(PALETTE)]
    return out


def _slot(node: NodeStatus, gpu: GpuView, slot: Slot, colours: dict[str, str]) -> str:
    if not slot.resource:
        background, label, cls = UNCOVERED, "", "slot free"
        title = "memory slice no MIG instance covers"
    elif not slot.pod:
        background, label, cls = FREE, short(slot.resource), "slot free"
        title = f"{short(slot.resource)} free"
    else:
        background, label, cls = colours.get(slot.tenant, NO_TENANT_COLOUR), short(slot.resource), "slot"
        title = f"{short(slot.resource)} — tenant {slot.tenant}, pod {slot.pod}"
    usage = ""
    if slot.engine_active is not None:
        title += f", engine active {slot.engine_active:.0%}"
        usage += f' data-engine-active="{_e(f"{slot.engine_active:.4f}")}"'
    if slot.memory_used_mib is not None:
        title += f", memory used {slot.memory_used_mib:.0f} MiB"
        usage += f' data-memory-used-mib="{_e(f"{slot.memory_used_mib:.0f}")}"'
    title = f"{node.name} GPU {gpu.index}: {title}"
    return (
        f'<div class="{cls}" style="left:{_e(f"{slot.start * 100:.4f}")}%;'
        f'width:{_e(f"{slot.width * 100:.4f}")}%;'
        f'background:{background}" title="{_e(title)}" data-resource="{_e(slot.resource)}" '
        f'data-tenant="{_e(slot.tenant)}" data-pod="{_e(slot.pod)}" data-share="{slot.share:.4f}"{usage}>'
        f"{_e(label)}</div>"
    )


def _gpu(node: NodeStatus, gpu: GpuView, colours: dict[str, str]) -> str:
    inner = (
        "".join(_slot(node, gpu, s, colours) for s in gpu.slots)
        if gpu.known
        else f'<div class="unknown">layout of {_e(node.config or "?")} unknown</div>'
    )
    return (
        f'<div class="gpu" data-node="{_e(node.name)}" data-gpu="{_e(gpu.index)}" '
        f'data-model="{_e(node.gpu_model)}" '
        f'data-mig="{str(gpu.mig_enabled).lower()}" data-known="{str(gpu.known).lower()}">'
        f'<span class="idx">{_e(gpu.index)}</span>{inner}</div>'
    )


def _row(cells: list[str], header: bool = False) -> str:
    tag = "th" if header else "td"
    return "<tr>" + "".join(f"<{tag}>{c}</{tag}>" for c in cells) + "</tr>"


def _page_head(s: FleetStatus, colours: dict[str, str]) -> list[str]:
    """Doctype, the CSP that forbids every fetch and script, title, source line and tenant legend."""
    when = s.taken_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>migc status — {_e(when)}</title><style>{CSS}</style></head><body>",
        "<h1>migc status</h1>",
        f'<div class="meta">{_e(s.source)} at {_e(when)}; expected layouts from {_e(s.expected_from)}'
        f"{'; usage from Prometheus' if s.with_usage else ''}</div>",
        '<div class="legend">'
        + "".join(f'<span><i style="background:{c}"></i>{_e(t)}</span>' for t, c in colours.items())
        + f'<span><i style="background:{FREE}"></i>free</span></div>',
    ]


def _node_card(n: NodeStatus, colours: dict[str, str]) -> str:
    """One node's heading (pool, model, config, rollout and drift warnings) above its GPU boxes."""
    flags = []
    if n.rolling_out:
        flags.append(f'<span class="warn">{_e(n.phase if n.phase != "Idle" else n.mig_state)}</span>')
    if n.drift:
        flags.append(f'<span class="warn">drift: {_e("; ".join(n.drift))}</span>')
    return (
        f'<div class="node" id="node-{_e(n.name)}"><h3>{_e(n.name)} · {_e(n.pool)} · {_e(n.gpu_model)} '
        f"· {_e(n.config or 'no config')} {' '.join(flags)}</h3>"
        f'<div class="gpus">{"".join(_gpu(n, g, colours) for g in n.gpus)}</div></div>'
    )


def _node_row(n: NodeStatus) -> str:
    return _row(
        [
            _e(n.name),
            _e(n.pool),
            _e(fmt_counts(n.capacity)),
            _e(fmt_counts(n.allocated)),
            _e(fmt_counts(n.free)),
            _e(node_used(n)),
            _e(node_state(n)),
            _e("; ".join(n.drift) or "-"),
        ]
    )


def _tenant_row(t: TenantStatus, colours: dict[str, str]) -> str:
    """One tenant, with its legend colour and its notes (above guarantee; starved, in red)."""
    notes = []
    if t.above_guarantee:
        notes.append("above guarantee: " + _e(", ".join(short(r) for r in t.above_guarantee)))
    if t.starved:
        notes.append('<span class="warn">starved: ' + _e(", ".join(short(r) for r in t.starved)) + "</span>")
    return _row(
        [
            f'<i class="swatch" style="background:{colours.get(t.name, FREE)}"></i> ' + _e(t.name),
            _e(fmt_counts(t.allocated)),
            _e(fmt_counts(t.guaranteed)),
            _e(fmt_counts(t.burst)),
            _e(f"{t.allocated_share:.2f}"),
            _e(fmt_triple(t.memory_gb)),
            _e(fmt_triple(t.compute_slices)),
            _e(t.pending),
            _e(money(t.cost_per_hour)),
            "; ".join(notes) or "-",
        ]
    )


def _pool_row(p: PoolStatus) -> str:
    return _row(
        [
            _e(p.name),
            _e(p.gpu_model),
            _e(f"{p.nodes_seen}/{p.nodes}"),
            _e(p.gpus),
            _e(f"{p.allocated_share:.2f}"),
            _e(f"{p.free_share:.2f}"),
            _e(f"{p.fragmented_share:.2f}"),
            _e(money(p.price_per_gpu_hour)),
            _e(money(p.cost_per_hour)),
            _e(money(p.idle_cost_per_hour)),
        ]
    )


def _cost_paragraph(c: Cost) -> str:
    """Closes the pools table; the fleet's cost and its savings against the two baselines."""
    balanced = f"{money(c.savings_vs_balanced_per_hour)}/h vs all-balanced on every MIG GPU"
    return (
        f'</table><p id="cost">Cost {_e(money(c.per_hour))}/h, '
        f"allocated {_e(money(c.allocated_per_hour))}/h, idle {_e(money(c.idle_per_hour))}/h. "
        f"Savings {_e(money(c.savings_vs_whole_gpu_per_hour))}/h vs one whole "
        f"GPU per instance requested; {_e(balanced)}.</p>"
    )


def _pending_row(w: PendingPod) -> str:
    """One pending pod; its wait in red once it is past its max wait."""
    wait = _e(duration(w.pending_seconds))
    if w.over_max_wait:
        wait = f'<span class="warn">{wait}</span>'
    return _row(
        [
            _e(w.pod),
            _e(w.tenant),
            _e(fmt_counts(w.requests)),
            wait,
            _e(duration(w.max_wait_seconds)) if w.max_wait_seconds else "-",
        ]
    )


def _unplaced_nodes(s: FleetStatus) -> list[str]:
    """The policy's nodes the cluster lacks, and the GPU nodes no pool selects."""
    out = []
    if s.missing_nodes:
        out.append(f"<p>Not found in the cluster: {_e(', '.join(s.missing_nodes))}</p>")
    if s.unmanaged_nodes:
        out.append(f"<p>GPU nodes no pool selects: {_e(', '.join(s.unmanaged_nodes))}</p>")
    return out


_NODE_HEADER = ["Node", "Pool", "Capacity", "Allocated", "Free", "Used", "State", "Drift"]
_TENANT_HEADER = [
    "Tenant",
    "Allocated",
    "Guaranteed",
    "Burst",
    "GPU shares",
    "Memory GB held/guar./burst",
    "Compute slices held/guar./burst",
    "Pending",
    "Cost/h",
    "Notes",
]
_POOL_HEADER = [
    "Pool",
    "Model",
    "Nodes",
    "GPUs",
    "Allocated shares",
    "Free shares",
    "Fragmented shares",
    "$/GPU-h",
    "Cost/h",
    "Idle/h",
]
_PENDING_HEADER = ["Pod", "Tenant", "Requests", "Pending for", "Max wait"]


def to_html(s: FleetStatus) -> str:
    colours = tenant_colours(s)
    out = [*_page_head(s, colours), "<h2>GPUs</h2>"]
    out += [_node_card(n, colours) for n in s.nodes]
    out += ['<h2>Nodes</h2><table id="nodes">', _row(_NODE_HEADER, True)]
    out += [_node_row(n) for n in s.nodes]
    out += ['</table><h2>Tenants</h2><table id="tenants">', _row(_TENANT_HEADER, True)]
    out += [_tenant_row(t, colours) for t in s.tenants]
    out += ['</table><h2>Pools, fragmentation and cost</h2><table id="pools">', _row(_POOL_HEADER, True)]
    out += [_pool_row(p) for p in s.pools]
    out.append(_cost_paragraph(s.cost))
    out += [
        f'<h2>Pending GPU pods ({_e(len(s.pending))})</h2><table id="pending">',
        _row(_PENDING_HEADER, True),
    ]
    out += [_pending_row(w) for w in s.pending]
    out.append("</table>")
    out += _unplaced_nodes(s)
    out.append("</body></html>")
    return "\n".join(out) + "\n"
