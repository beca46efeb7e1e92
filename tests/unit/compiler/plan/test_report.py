"""compiler/plan/report.py: the three stdout forms of a plan, each as its reader reads it, and the
View (``--detail``, ``--svg``) each form honours.

The plan is a first rollout of the render tests' policy (test_render_support: pools a100, h200,
l40s; nothing deployed), so every node is new and the grouping --detail undoes is visible.
"""

from __future__ import annotations

import json

from test_render_support import default_solution, policy

from compiler.catalog import load_catalog
from compiler.commands.plan import command
from compiler.model import CurrentState
from compiler.plan import build_plan
from compiler.plan.data import Plan
from compiler.plan.json import to_dict
from compiler.plan.report import FORMATS, View


def first_rollout() -> Plan:
    return build_plan(policy(), default_solution(), load_catalog(), CurrentState())


def test_the_cli_offers_exactly_the_formats_the_report_has() -> None:
    (option,) = [p for p in command.params if p.name == "fmt"]
    assert list(option.type.choices) == list(FORMATS) == ["text", "markdown", "json"]  # type: ignore[attr-defined]


def test_text_groups_identical_gpus_unless_detail_is_asked() -> None:
    plan = first_rollout()
    grouped = FORMATS["text"](plan, View()).splitlines()
    assert grouped[0] == "5 of 5 nodes change (36 GPUs reconfigured) in 1 cluster(s)."
    assert "      6 GPUs (0-5): (not deployed) → 7x 1g.10gb" in grouped
    assert "      2 nodes × 8 GPUs: (not deployed) → 1x 7g.141gb" in grouped
    detail = FORMATS["text"](plan, View(detail=True)).splitlines()
    assert "      gpu 5: (not deployed) → 7x 1g.10gb" in detail
    assert "      gpu 6: (not deployed) → whole GPU (MIG off)" in detail
    h200 = "  + node h200-1 (pool h200, H200-141GB; selector pool: stands for any matching node): new node"
    assert f"{h200}: no layout deployed yet" in detail


def test_markdown_links_the_svg_pictures_only_where_they_are_written() -> None:
    plan = first_rollout()
    body = FORMATS["markdown"](plan, View(svg_dir="svg"))
    assert body.startswith("## migc plan\n\n5 of 5 nodes change (36 GPUs reconfigured) in 1 cluster(s).\n")
    assert "| east | a100 | `a100-02` | 0-5 | (not deployed) | 7x 1g.10gb |\n" in body
    assert "![a100-01](svg/east-a100-01.svg)" in body
    assert "svg/" not in FORMATS["markdown"](plan, View())
    assert "| east | a100 | `a100-02` | 5 | (not deployed) | 7x 1g.10gb |\n" in FORMATS["markdown"](
        plan, View(detail=True)
    )


def test_json_lists_every_change_whatever_the_view() -> None:
    plan = first_rollout()
    text = FORMATS["json"](plan, View())
    assert text == FORMATS["json"](plan, View(detail=True, svg_dir="svg")) and text.endswith("}\n")
    doc = json.loads(text)
    assert doc == json.loads(json.dumps(to_dict(plan)))
    assert doc["hasChanges"] is True and doc["nodesTotal"] == 5
    assert sorted(c["node"] for c in doc["changes"]) == ["a100-01", "a100-02", "h200-0", "h200-1", "l40s-01"]
    a100 = next(c for c in doc["changes"] if c["node"] == "a100-02")
    assert a100["before"] is None and a100["changedGpus"] == list(range(8))
    assert a100["after"][0] == {"migEnabled": True, "profiles": {"1g.10gb": 7}}
