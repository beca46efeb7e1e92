"""compiler/status/report.py: the three stdout forms of a fleet status, each as its reader reads it.

A FleetStatus built by hand (one node mid-rollout and drifted, one priced pool, one tenant above its
guarantee, one pod past its max wait) so each named field is seen where it lands: the JSON keys
scripts read (FleetStatus.to_dict), the terminal's tables and the pull request's markdown cells.
"""

from __future__ import annotations

import datetime as dt
import json

from compiler.commands.status import command
from compiler.status.model import Cost, FleetStatus, NodeStatus, PendingPod, PoolStatus, TenantStatus
from compiler.status.report import FORMATS, to_json

NOW = dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.UTC)
MIG = "nvidia.com/mig-1g.10gb"
NODE = NodeStatus(
    name="a100-01",
    cluster="east",
    pool="a100",
    gpu_model="A100-SXM4-80GB",
    capacity=((MIG, 14),),
    allocated=((MIG, 12),),
    free=((MIG, 2),),
    config="migc-a100-7x1g",
    expected_config="migc-a100-balanced",
    mig_state="pending",
    phase="Draining",
    phase_since=NOW - dt.timedelta(minutes=5),
    last_error="",
    unschedulable=True,
    drift=("carries migc-a100-7x1g, assigned migc-a100-balanced",),
    gpus=(),
    pods=("search/bert-0",),
)
POOL = PoolStatus(
    "east", "a100", "A100-SXM4-80GB", 2, 1, 16, ((MIG, 14),), ((MIG, 12),), ((MIG, 2),),
    1.71, 0.29, 0.0, 1500.0, 3000.0, 429.0, None,
)  # fmt: skip
TENANT = TenantStatus(
    "search", ("search",), ((MIG, 12),), ((MIG, 8),), ((MIG, 16),), 1.71, 1, 2571.43, (MIG,), (),
    memory_gb=(120.0, 80.0, 0.0),
)  # fmt: skip
PENDING = PendingPod("search/bert-9", "search", ((MIG, 1),), 3 * 3600 + 300, 900, ("a100",))
COST = Cost(3000.0, 2571.43, 428.57, 6000.0, 3000.0, -1.5)
STATUS = FleetStatus(
    "snapshot snap.json", NOW, "output/", False, (NODE,), (POOL,), (TENANT,), (PENDING,), ("a100-02",), (),
    COST,
)  # fmt: skip


def test_the_cli_offers_exactly_the_formats_the_report_has() -> None:
    (option,) = [p for p in command.params if p.name == "fmt"]
    assert list(option.type.choices) == list(FORMATS) == ["text", "json", "markdown"]  # type: ignore[attr-defined]
    # the HTML console is a file (--html FILE), not a stdout format
    assert "html" not in FORMATS and any(p.name == "html_file" for p in command.params)


def test_json_names_every_field_with_counts_as_objects() -> None:
    text = FORMATS["json"](STATUS)
    assert text == to_json(STATUS) and text.endswith("}\n")
    doc = json.loads(text)
    assert doc == json.loads(json.dumps(STATUS.to_dict()))
    assert (doc["apiVersion"], doc["kind"]) == ("migc.dev/v1alpha1", "FleetStatus")
    assert doc["taken_at"] == "2026-12-01T06:00:00Z" and doc["source"] == "snapshot snap.json"
    (node,) = doc["nodes"]
    assert node["capacity"] == {MIG: 14} and node["free"] == {MIG: 2}
    assert node["rolling_out"] is True and node["phase_since"] == "2026-12-01T05:55:00Z"
    (pod,) = doc["pending"]
    assert pod["requests"] == {MIG: 1} and pod["over_max_wait"] is True and pod["pending_seconds"] == 11100
    (tenant,) = doc["tenants"]
    assert tenant["guaranteed"] == {MIG: 8} and tenant["memory_gb"] == [120.0, 80.0, 0.0]
    assert doc["missing_nodes"] == ["a100-02"] and doc["cost"]["savings_vs_balanced_per_hour"] == -1.5


def test_text_has_aligned_tables_durations_and_money() -> None:
    lines = FORMATS["text"](STATUS).splitlines()
    assert lines[0] == (
        "migc status — snapshot snap.json at 2026-12-01T06:00:00Z; expected layouts from output/"
    )
    assert lines[2:5] == [
        "Nodes",
        "NODE     POOL  CAPACITY    ALLOCATED   FREE       USED  STATE     DRIFT",
        "a100-01  a100  1g.10gb×14  1g.10gb×12  1g.10gb×2  -     Draining  "
        "carries migc-a100-7x1g, assigned migc-a100-balanced",
    ]
    assert "a100  A100-SXM4-80GB  1/2    16    1.71       0.29  0.00        $3,000.00  $429.00" in lines
    assert "search/bert-9  search  1g.10gb×1  3h05m    15m       yes" in lines
    assert "  a100-01: Draining (mig.config.state pending) since 2026-12-01T05:55:00Z" in lines
    assert lines[-2:] == [
        "Cost: $3,000.00/h in total, $2,571.43/h allocated, $428.57/h idle",
        "Savings: $3,000.00/h vs one whole GPU per instance requested; "
        "$-1.50/h vs all-balanced on every MIG GPU",
    ]


def test_markdown_has_the_same_report_as_tables_and_headings() -> None:
    body = FORMATS["markdown"](STATUS)
    assert body.startswith("## migc status — snapshot snap.json at 2026-12-01T06:00:00Z")
    assert "\n### Nodes\n\n| NODE | POOL | CAPACITY | ALLOCATED | FREE | USED | STATE | DRIFT |\n" in body
    assert "| a100 | A100-SXM4-80GB | 1/2 | 16 | 1.71 | 0.29 | 0.00 | $3,000.00 | $429.00 |\n" in body
    assert "| search/bert-9 | search | 1g.10gb×1 | 3h05m | 15m | yes |\n" in body
    assert "- a100-01: Draining (mig.config.state pending) since 2026-12-01T05:55:00Z\n" in body
    assert "Not found in the cluster: a100-02" in body
