"""compiler/advise/report.py: the three forms of an advice, each as its reader reads it.

An Advice built by hand (one pool with a finding, one sizing row with a saving, one without a price
baseline, one observed finding) so each named field is seen where it lands: the JSON keys tools
read, the terminal lines and the markdown tables of a budget meeting.
"""

from __future__ import annotations

import json

from compiler.advise.model import Advice, ClusterSizing, Finding, PoolAdvice, SizingRow
from compiler.advise.report import FORMATS, to_json
from compiler.commands.advise import command

WHY = Finding("MIGC501", "note", "isolation hardware: only MIG isolates memory | faults")
POOL = PoolAdvice("east", "a100", "A100-SXM4-80GB", 16, "mig", "mig", "dynamic", (WHY,))
IDLE = PoolAdvice("east", "l40s", "L40S", 4, "time-slicing x4", None, None, ())
A100 = SizingRow("A100-SXM4-80GB", 1.5, True, 10, 8, 2, 40, 40, 14, 24, True)
L40S = SizingRow("L40S", 1234.5, False, 30, 4, 8, 38, 40, None, 30, False)
SIZING = ClusterSizing("east", (A100, L40S), (Finding("MIGC510", "warning", "L40S serves 38 of 40"),))
OBSERVED = Finding("MIGC520", "warning", "tenant search runs 12 1g.10gb, declares 8")
ADVICE = Advice((POOL, IDLE), (SIZING,), (OBSERVED,))


def test_the_cli_offers_exactly_the_formats_the_report_has() -> None:
    (option,) = [p for p in command.params if p.name == "fmt"]
    assert list(option.type.choices) == list(FORMATS) == ["text", "markdown", "json"]  # type: ignore[attr-defined]


def test_json_names_every_field_as_tools_read_it() -> None:
    text = FORMATS["json"](ADVICE)
    assert text == to_json(ADVICE) and text.endswith("}\n") and json.loads(text) == ADVICE.to_dict()
    doc = json.loads(text)
    assert doc["pools"][0] == {
        "cluster": "east",
        "pool": "a100",
        "gpuModel": "A100-SXM4-80GB",
        "gpus": 16,
        "current": "mig",
        "recommended": "mig",
        "partitionMode": "dynamic",
        "findings": [{"code": "MIGC501", "severity": "note", "message": WHY.message}],
    }
    assert doc["pools"][1]["recommended"] is None and doc["pools"][1]["findings"] == []
    assert doc["sizing"][0]["cluster"] == "east"
    assert doc["sizing"][0]["rows"][0] == {
        "gpuModel": "A100-SXM4-80GB",
        "mig": True,
        "pricePerGpuHour": 1.5,
        "gpus": 10,
        "gpusPerNode": 8,
        "nodes": 2,
        "costPerHour": 15.0,
        "replicasServed": 40,
        "replicasWanted": 40,
        "complete": True,
        "optimal": True,
        "allBalancedGpus": 14,
        "savingVsAllBalancedPerHour": 6.0,
        "wholeGpuPerPodGpus": 24,
        "savingVsWholeGpuPerPodPerHour": 21.0,
    }
    row = doc["sizing"][0]["rows"][1]
    assert row["allBalancedGpus"] is None and row["savingVsAllBalancedPerHour"] is None
    assert row["complete"] is False and row["optimal"] is False
    assert doc["sizing"][0]["findings"][0]["code"] == "MIGC510"
    assert doc["findings"] == [{"code": "MIGC520", "severity": "warning", "message": OBSERVED.message}]


def test_text_has_a_line_per_pool_and_finding_and_an_aligned_sizing_table() -> None:
    lines = FORMATS["text"](ADVICE).splitlines()
    assert lines[:4] == [
        "pool east/a100 (16 x A100-SXM4-80GB): current mig, advised mig, dynamic layout",
        f"  [MIGC501] note: {WHY.message}",
        "pool east/l40s (4 x L40S): current time-slicing x4, advised none (no demand to advise on)",
        "",
    ]
    assert lines[4:9] == [
        "sizing of cluster east (declared demand, per priced GPU model):",
        "  GPU model             GPUs                     nodes  $/h         all-balanced  saving/h  "
        "GPU per pod  saving/h  served",
        "  A100-SXM4-80GB (MIG)  10                       2 x 8  $15.00      14            $6.00     "
        "24           $21.00    40/40",
        # no all-balanced baseline without MIG: "-"; thousands separated; an unproven count says so
        "  L40S                  30 (not proven optimal)  8 x 4  $37,035.00  -             -         "
        "30           $0.00     38/40",
        "  [MIGC510] warning: L40S serves 38 of 40",
    ]
    assert lines[-3:] == [
        "[MIGC520] warning: tenant search runs 12 1g.10gb, declares 8",
        "",
        "Each [MIGC5xx] cites a rule: `migc explain CODE` explains it.",
    ]


def test_markdown_has_a_pool_table_and_a_sizing_table_per_cluster_with_pipes_escaped() -> None:
    body = FORMATS["markdown"](ADVICE)
    head = "# migc advise\n\n## Sharing mode per pool\n\n| pool | GPUs | current | advised | rules |\n"
    assert body.startswith(head)
    assert "| east/a100 | 16 x A100-SXM4-80GB | mig | mig, dynamic layout | MIGC501 |\n" in body
    assert "- `MIGC501` note: isolation hardware: only MIG isolates memory \\| faults\n" in body
    assert "## Sizing of cluster east\n" in body
    assert "| A100-SXM4-80GB (MIG) | 10 | 2 x 8 | $15.00 | 14 | $6.00 | 24 | $21.00 | 40/40 |\n" in body
    assert "## Observed demand\n\n- `MIGC520` warning: tenant search runs 12 1g.10gb, declares 8\n" in body
    assert body.endswith("Each code cites a rule: `migc explain CODE` explains it.\n")
