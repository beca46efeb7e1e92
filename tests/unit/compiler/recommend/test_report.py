"""compiler/recommend/report.py: the three forms of a recommendation, each as a user reads it.

A Recommendation built by hand (one row of every kind) so each named field is seen where it lands:
the JSON keys scripts read, the text lines of a terminal and the pull-request body's cells.
"""

from __future__ import annotations

import datetime as dt
import json

from compiler.commands.recommend import command
from compiler.escape import GITHUB_BODY_LIMIT
from compiler.recommend import gates as g
from compiler.recommend.engine import (
    Kept,
    NodeChange,
    NodeDisruption,
    Recommendation,
    ReplicaChange,
    RuleEffect,
    TenantDemand,
    WindowDemand,
)
from compiler.recommend.report import FORMATS, evidence_markdown, to_json, to_text
from compiler.recommend.state import State

NOW = dt.datetime(2026, 12, 1, 6, 20, tzinfo=dt.UTC)


def rec(tenant: str = "ml", **more: object) -> Recommendation:
    fields: dict[str, object] = {
        "now": NOW,
        "demand": (TenantDemand(tenant, "1g.10gb", 10, 8),),
        "current": (("1g.10gb", 14),),
        "proposed": (("1g.10gb", 22),),
        "replicas": (ReplicaChange("nb", 10, 18),),
        "nodes": ("n1",),
        "gain": 100.0,
        "gates": (g.Gate("mode", True, "mode dynamic"), g.Gate("disruption", True, "benefit 9 > cost 1")),
        "rules": ("small", "idle"),
        "urgent": ("ml/p-0",),
        "state": State(updated=NOW),
        "diagnostics": (),
        "rule_effects": (
            RuleEffect("small", tenant, "1g.10gb", "nb", 4),
            RuleEffect("small", "ads", "1g.10gb", "", 0),
        ),
        "node_plan": (NodeChange("n1", 2, "14 x 1g.10gb", "22 x 1g.10gb"),),
        "since": NOW - dt.timedelta(minutes=20),
        "window": (WindowDemand(tenant, "1g.10gb", 10, 8, 3, 12, 16.5, 18, 18),),
        "covered": True,
        "window_seconds": 600,
        "keep": (Kept(tenant, "1g.10gb", 18),),
        "keep_covered": False,
        "keep_seconds": 86400,
        "disruption": "expected",
        "benefit": 2742.857,
        "served_pending": 4,
        "node_costs": (NodeDisruption("n1", 8, 2, 10, 685.714, 960.0),),
    }
    fields.update(more)
    return Recommendation(**fields)  # type: ignore[arg-type]


def test_the_cli_offers_exactly_the_formats_the_report_has() -> None:
    (option,) = [p for p in command.params if p.name == "fmt"]
    assert list(option.type.choices) == list(FORMATS) == ["text", "markdown", "json"]  # type: ignore[attr-defined]


def test_json_names_every_row_field_as_scripts_read_it() -> None:
    doc = json.loads(FORMATS["json"](rec()))
    assert FORMATS["json"](rec()) == to_json(rec()) and to_json(rec()).endswith("}\n")
    assert doc["demand"] == [{"tenant": "ml", "profile": "1g.10gb", "running": 10, "pending": 8}]
    assert doc["window"]["demand"] == [
        {
            "tenant": "ml",
            "profile": "1g.10gb",
            "running": 10,
            "pending": 8,
            "samples": 3,
            "min": 12,
            "mean": 16.5,
            "max": 18,
            "sizedFor": 18,
        }
    ]
    assert doc["window"]["since"] == "2026-12-01T06:00:00Z"
    assert doc["scaleDownWindow"] == {
        "seconds": 86400,
        "covered": False,
        "kept": [{"tenant": "ml", "profile": "1g.10gb", "instances": 18}],
    }
    # a rule whose headroom no Workload could take: workload null, not ""
    assert doc["ruleEffects"] == [
        {"rule": "small", "tenant": "ml", "profile": "1g.10gb", "workload": "nb", "replicas": 4},
        {"rule": "small", "tenant": "ads", "profile": "1g.10gb", "workload": None, "replicas": 0},
    ]
    assert doc["replicas"] == [{"workload": "nb", "from": 10, "to": 18}]
    assert doc["plan"] == [{"node": "n1", "gpus": 2, "deployed": "14 x 1g.10gb", "proposed": "22 x 1g.10gb"}]
    assert doc["disruption"]["cost"] == round(685.714 + 960.0, 3)
    assert doc["disruption"]["nodes"][0]["changedGpus"] == 2
    assert doc["proposed"] is True and doc == rec().to_dict()


def test_text_has_one_line_per_row() -> None:
    lines = FORMATS["text"](rec()).splitlines()
    assert lines[:3] == [
        "change proposed",
        "gain 100.0%",
        "demand ml/1g.10gb: now 10 running + 8 pending; window 3 sample(s) min 12 mean 16.5 max 18; "
        "sized for 18",
    ]
    assert (
        "scale-down window 24h00m, not covered yet: nothing shrinks below what is declared; "
        "kept: ml/1g.10gb 18" in lines
    )
    assert "rule small: tenant ml: +4 x 1g.10gb on Workload nb" in lines
    assert "rule small: tenant ads: nothing added" in lines
    assert lines[-2:] == ["Workload nb: replicas 10 -> 18", "node n1: 2 GPU(s): 14 x 1g.10gb -> 22 x 1g.10gb"]


def test_markdown_lists_each_rule_with_its_own_effects_only() -> None:
    body = FORMATS["markdown"](rec())
    assert "| ml | 1g.10gb | 10 | 8 | 3 | 12 | 16.5 | 18 | 18 | 18 |" in body
    assert "- small: tenant ml: +4 x 1g.10gb on Workload nb\n" in body
    assert "- small: tenant ads: no Workload asking for 1g.10gb can take it (in the rule's pools)" in body
    # a fired rule with no effect of its own says so; it does not borrow another rule's lines
    assert "- idle: nothing added (no pending pod it matches waited through the whole window)\n" in body
    assert "- Workload nb: replicas 10 → 18\n" in body
    assert "| n1 | 2 | 14 x 1g.10gb | 22 x 1g.10gb |" in body


def test_each_medium_is_escaped_by_its_format() -> None:
    hostile = rec(tenant="ml\x1b[2J")  # an escape sequence that would clear the terminal
    assert "\x1b" in to_text(hostile)  # the plain renderer leaves it: the format escapes for its medium
    assert "\x1b" not in FORMATS["text"](hostile) and "demand ml/1g.10gb" in FORMATS["text"](hostile)
    assert "\x1b" not in FORMATS["markdown"](hostile)
    assert (
        json.loads(FORMATS["json"](hostile))["demand"][0]["tenant"] == "ml\x1b[2J"
    )  # JSON escapes it itself


def test_the_pull_request_body_is_bounded_for_the_forge() -> None:
    many = rec(urgent=tuple(f"ml/pod-{i}" for i in range(40)), rules=tuple(f"r{i:05d}" for i in range(3000)))
    assert len(evidence_markdown(many)) > GITHUB_BODY_LIMIT
    body = FORMATS["markdown"](many)
    assert len(body) <= GITHUB_BODY_LIMIT and body.startswith("## migc recommend — 2026-12-01 06:20 UTC")


def test_the_markdown_cost_line_names_the_operand_pause_only_when_it_is_priced() -> None:
    """The pull-request body says how the outage was priced: ``R s × GPUs changed``, and with
    ``--drain-seconds D`` the node's fixed pause in front of it (the JSON has ``drainSeconds``)."""
    plain = evidence_markdown(rec())
    assert "its GPUs × 60 s × GPUs changed)" in plain and "drainSeconds" not in plain
    paused = rec(drain_seconds=300.0)
    assert "its GPUs × (300 s + 60 s × GPUs changed))" in evidence_markdown(paused)
    assert json.loads(to_json(paused))["disruption"]["drainSeconds"] == 300.0
    assert json.loads(to_json(rec()))["disruption"]["drainSeconds"] == 0.0


def test_a_per_gpu_price_says_how_many_of_the_running_pods_it_drains() -> None:
    """On a static DRA node only the pods on changing GPUs are drained and charged (engine.py
    ``node_disruption``, scope ``gpu``): the terminal and the pull-request body say how many, not only
    how many run (which read as if every running pod were charged); a node-scope price reads as before."""
    gpu = NodeDisruption("n1", 8, 2, 10, 685.714, 960.0, scope="gpu", drained=3)
    node = NodeDisruption("n2", 8, 2, 4, 100.0, 960.0)
    r = rec(node_costs=(gpu, node))
    text = to_text(r)
    assert "disruption n1: 2 GPU(s) changed, 10 running GPU pod(s), 3 drained (per-GPU drain), cost" in text
    assert "disruption n2: 2 GPU(s) changed, 4 running GPU pod(s), cost" in text
    body = evidence_markdown(r)
    assert "| n1 | 2 | 10 (3 drained per GPU) |" in body and "| n2 | 2 | 4 |" in body
    assert "Σ over the running GPU pods it drains" in body
