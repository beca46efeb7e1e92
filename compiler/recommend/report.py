"""The forms of a :class:`~compiler.recommend.engine.Recommendation` on stdout: one home per result.

``FORMATS`` maps each ``migc recommend -o`` choice to the function that writes it, ready for its
medium (conftest's ``output.Get(format)``, check-jsonschema's ``reporter.py``): ``text`` for a
terminal (control characters escaped), ``markdown`` for a pull-request body (every cell escaped, the
body bounded to what the forge accepts), ``json`` for scripts (:meth:`Recommendation.to_dict`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from compiler.escape import bound_markdown, terminal
from compiler.escape import markdown_cell as _md
from compiler.formatting import duration
from compiler.recommend.engine import NodeDisruption, Recommendation

MAX_PLAN_ROWS = 50  # a pull-request body stays readable; `migc plan` lists every node


def to_json(rec: Recommendation) -> str:
    return json.dumps(rec.to_dict(), indent=2, sort_keys=True) + "\n"


def to_text(rec: Recommendation) -> str:
    """One line per fact, for a terminal or a log (not escaped: :data:`FORMATS` does that)."""
    out = ["change proposed" if rec.proposed_change else "no change proposed", f"gain {rec.gain:.1f}%"]
    out += [
        f"demand {w.tenant}/{w.profile}: now {w.running} running + {w.pending} pending; window {w.samples} "
        f"sample(s) min {w.low} mean {w.mean:.1f} max {w.high}; sized for {w.sized_for}"
        for w in rec.window
    ]
    kept = ", ".join(f"{k.tenant}/{k.profile} {k.instances}" for k in rec.keep) or "nothing"
    cover = "" if rec.keep_covered else ", not covered yet: nothing shrinks below what is declared"
    out.append(f"scale-down window {duration(rec.keep_seconds)}{cover}; kept: {kept}")
    out += [f"{'ok ' if x.passed else 'NO '} {x.name}: {x.why}" for x in rec.gates]
    if rec.disruption == "expected":
        cost = "unknown" if rec.cost is None else f"{rec.cost:,.0f}"
        out.append(
            f"disruption: benefit {rec.benefit:,.0f} GPU-s ({rec.served_pending} pending instance(s) "
            f"served), cost {cost} GPU-s"
        )
        out += [
            f"disruption {d.node}: {d.changed_gpus} GPU(s) changed, {d.running} running GPU pod(s), "
            f"{f'{_drained(d)} drained (per-GPU drain), ' if d.scope == 'gpu' else ''}"
            f"cost {'unknown' if d.cost is None else f'{d.cost:,.0f}'} GPU-s"
            for d in rec.node_costs
        ]
    out += [f"rule fired: {r}" for r in rec.rules]
    out += [
        f"rule {e.rule}: tenant {e.tenant}: +{e.replicas} x {e.profile} on Workload {e.workload}"
        if e.workload
        else f"rule {e.rule}: tenant {e.tenant}: nothing added"
        for e in rec.rule_effects
    ]
    out += [f"Workload {r.workload}: replicas {r.old} -> {r.new}" for r in rec.replicas]
    out += [f"node {n.node}: {n.gpus} GPU(s): {n.deployed} -> {n.proposed}" for n in rec.node_plan]
    return "\n".join(out) + "\n"


def _demand_lines(rec: Recommendation) -> list[str]:
    """Title, verdict, and the demand table over the windows (with how long it has been watched)."""
    lines = [
        f"## migc recommend — {rec.now.strftime('%Y-%m-%d %H:%M UTC')}",
        "",
        "**Change proposed.**" if rec.proposed_change else "**No change proposed.**",
        "",
        "### Observed demand (instances)",
        "",
        f"Now, and running + pending over the {duration(rec.window_seconds)} stabilization window "
        "(samples of earlier runs, held until the next; mean weighted by time).",
        "",
        f"*kept* is the most over the {duration(rec.keep_seconds)} scaleDownWindow"
        + ("" if rec.keep_covered else " (not covered yet: nothing shrinks below what is declared)")
        + ": capacity is given back no lower.",
        "",
        "| tenant | profile | running | pending | samples | min | mean | max | kept | sized for |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    kept = {(k.tenant, k.profile): k.instances for k in rec.keep}
    lines += [
        f"| {_md(w.tenant)} | {_md(w.profile)} | {w.running} | {w.pending} | {w.samples} | {w.low} "
        f"| {w.mean:.1f} | {w.high} | {kept.get((w.tenant, w.profile), 0)} | {w.sized_for} |"
        for w in rec.window
    ] or ["| – | – | 0 | 0 | 1 | 0 | 0.0 | 0 | 0 | 0 |"]
    if rec.since is not None:
        since = rec.since.strftime("%Y-%m-%d %H:%M UTC")
        watched = duration((rec.now - rec.since).total_seconds())
        lines += [
            "",
            f"Demand watched without a gap since {since} ({watched}): "
            + (
                "the window is covered, so each is sized for what persisted through all of it "
                "(declared replicas kept between the window's min and max)."
                if rec.covered
                else "the window is not covered yet, so the declared replicas stay "
                "(only pods past their max wait add instances)."
            ),
        ]
    return lines


def _capacity_lines(rec: Recommendation) -> list[str]:
    cur, new = dict(rec.current), dict(rec.proposed)
    lines = ["", "### Capacity (instances)", "", "| profile | current | proposed |", "|---|---:|---:|"]
    lines += [f"| {_md(p)} | {cur.get(p, 0)} | {new.get(p, 0)} |" for p in sorted(set(cur) | set(new))]
    return [
        *lines,
        "",
        f"**Gain:** the proposal serves {rec.gain:.1f}% of the slice-weighted demand the current "
        "layout leaves unserved.",
        "",
    ]


def _outage_seconds(rec: Recommendation) -> str:
    """The seconds a changed node is out: ``R s × GPUs changed``, with ``D`` (``--drain-seconds``)
    in front when it is set."""
    per_gpu = f"{rec.reconfigure_seconds:g} s × GPUs changed"
    return f"({rec.drain_seconds:g} s + {per_gpu})" if rec.drain_seconds else per_gpu


def _drained(d: NodeDisruption) -> int:
    return d.running if d.drained is None else d.drained


def _running_cell(d: NodeDisruption) -> str:
    """The running GPU pods of a changed node, and on a per-GPU drain how many of them go."""
    return f"{d.running} ({_drained(d)} drained per GPU)" if d.scope == "gpu" else str(d.running)


def disruption_markdown(rec: Recommendation) -> list[str]:
    """The disruption rule's evidence: benefit, cost per changed node, verdict (none when it is off)."""
    if rec.disruption != "expected":
        return []
    grace = duration(rec.drain_grace_seconds)
    lines = [
        "### Disruption (is the change worth its drains?)",
        "",
        f"**Benefit:** the proposal serves {rec.served_pending} pending instance(s); the GPU-time they "
        f"have waited, Σ f × W = {rec.benefit:,.0f} GPU-s, is what it avoids.",
        "",
        f"**Cost** per changed node: Σ over the running GPU pods it drains (every one; on a static "
        "DRA node those on GPUs that change or whose GPU is not known) of f × E² / (E + G), "
        f"G = {grace} "
        f"(the controller's drain grace), plus the outage (its GPUs × {_outage_seconds(rec)}), plus the "
        "wait it displaces: Σ f × W₀ over the running pods the node keeps no instance for, W₀ how long "
        "each waited before it started.",
        "",
        "| node | GPUs changed | running GPU pods | expected loss (GPU-s) | outage (GPU-s) "
        "| displaced wait (GPU-s) | cost (GPU-s) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for d in rec.node_costs[:MAX_PLAN_ROWS]:
        loss = "unknown" if d.loss is None else f"{d.loss:,.0f}"
        cost = "unknown" if d.cost is None else f"{d.cost:,.0f}"
        running = _running_cell(d)
        cells = (d.node, d.changed_gpus, running, loss, f"{d.outage:,.0f}", f"{d.displaced:,.0f}", cost)
        lines.append("| " + " | ".join(_md(c) for c in cells) + " |")
    if len(rec.node_costs) > MAX_PLAN_ROWS:
        lines.append(f"| … {len(rec.node_costs) - MAX_PLAN_ROWS} more node(s) | | | | | | |")
    if not rec.node_costs:
        lines.append("| – | 0 | 0 | 0 | 0 | 0 | 0 |")
    gate = next((x for x in rec.gates if x.name == "disruption"), None)
    if gate is not None and not rec.node_costs:
        # no node changes: there is no drain to weigh, so no verdict on one (the gates say why not)
        lines += ["", "**Verdict:** nothing to weigh: the proposal reconfigures no node."]
    elif gate is not None:
        verdict = "worth it" if gate.passed else "**not worth it**"
        lines += ["", f"**Verdict:** {verdict}: {_md(gate.why, 2000)}."]
    return [*lines, ""]


def _gate_lines(rec: Recommendation) -> list[str]:
    lines = ["### Gates", "", "| gate | result | why |", "|---|---|---|"]
    for gate in rec.gates:
        res = "overridden" if gate.overridden else ("passed" if gate.passed else "**blocked**")
        lines.append(f"| {_md(gate.name)} | {res} | {_md(gate.why, 2000)} |")
    return lines


def _rule_lines(rec: Recommendation) -> list[str]:
    lines = ["", "### Rules fired", ""]
    for name in rec.rules:
        lines += [
            f"- {_md(name)}: tenant {_md(e.tenant)}: +{e.replicas} x {_md(e.profile)} on Workload "
            f"{_md(e.workload)}"
            if e.workload
            else f"- {_md(name)}: tenant {_md(e.tenant)}: no Workload asking for {_md(e.profile)} can take "
            "it (in the rule's pools); nothing added (MIGC428)"
            for e in rec.rule_effects
            if e.rule == name
        ] or [f"- {_md(name)}: nothing added (no pending pod it matches waited through the whole window)"]
    if not rec.rules:
        lines.append("- none")
    return lines


def _urgent_lines(rec: Recommendation) -> list[str]:
    if not rec.urgent:
        return []
    lines = ["", "### Pods past their max wait", ""]
    lines += [f"- {_md(k)}" for k in rec.urgent[:MAX_PLAN_ROWS]]
    if len(rec.urgent) > MAX_PLAN_ROWS:
        lines.append(f"- … {len(rec.urgent) - MAX_PLAN_ROWS} more pod(s)")
    return lines


def _change_lines(rec: Recommendation) -> list[str]:
    lines = ["", "### Change", ""]
    lines += [f"- Workload {_md(r.workload)}: replicas {r.old} → {r.new}" for r in rec.replicas] or ["- none"]
    if rec.nodes:
        lines.append(
            f"- nodes reconfigured: {len(rec.nodes)} ({', '.join(_md(n) for n in rec.nodes[:10])}"
            f"{', …' if len(rec.nodes) > 10 else ''})"
        )
    if not rec.node_plan:
        return lines
    lines += [
        "",
        "### Plan of the change (per node, as `migc compile` will render it)",
        "",
        "| node | GPUs reconfigured | deployed | proposed |",
        "|---|---:|---|---|",
    ]
    lines += [
        f"| {_md(n.node)} | {n.gpus} | {_md(n.deployed)} | {_md(n.proposed)} |"
        for n in rec.node_plan[:MAX_PLAN_ROWS]
    ]
    if len(rec.node_plan) > MAX_PLAN_ROWS:
        lines.append(f"| … {len(rec.node_plan) - MAX_PLAN_ROWS} more node(s) | | | |")
    return lines


def evidence_markdown(rec: Recommendation) -> str:
    """The pull-request body: demand, capacity, gain, disruption, gates, rules and the change (every
    value escaped as a Markdown table cell; not yet bounded: :data:`FORMATS` does that)."""
    lines = [
        *_demand_lines(rec),
        *_capacity_lines(rec),
        *disruption_markdown(rec),
        *_gate_lines(rec),
        *_rule_lines(rec),
        *_urgent_lines(rec),
        *_change_lines(rec),
    ]
    return "\n".join(lines) + "\n"


def _text(rec: Recommendation) -> str:
    return terminal(to_text(rec))


def _markdown(rec: Recommendation) -> str:
    # the forge refuses a pull-request body over 65,536 characters (looked up when called: a test may
    # swap evidence_markdown)
    return bound_markdown(evidence_markdown(rec))


Format = Callable[[Recommendation], str]
FORMATS: Mapping[str, Format] = {"text": _text, "markdown": _markdown, "json": to_json}
