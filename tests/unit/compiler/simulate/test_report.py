"""compiler/simulate/report.py: the two stdout forms of a replay and of a fill, as their readers read them.

Results built by hand (two baselines, one with a censored wait; two packing policies) so each named
field is seen where it lands: the JSON keys bench and scripts read, and the terminal's table.
"""

from __future__ import annotations

import json
from dataclasses import replace

from compiler.commands.simulate import command
from compiler.simulate.engine import Result, Settings
from compiler.simulate.fill import FillResult
from compiler.simulate.report import FORMATS, Fill, Replay, to_json

DEFAULT = Result(
    "default",
    hours=10.0,
    reconfigurations=3,
    gpus_touched=4,
    waits={"1g": [(10.0, False), (30.0, False)], "3g": [(600.0, True)]},
    busy_slice_seconds=0.5 * 56 * 10 * 3600,
    total_slices=56,
    blocked={"minDwell": 2, "disruption": 1},
    evictions=1,
    lost_gpu_seconds=5400.0,
    sync_waits=2,
    evictions_blocked=3,
    drain_timeouts=1,
    trace_hours=8.0,
)
STATIC = Result("static", hours=9.5, waits={"1g": [(0.0, False)]}, trace_hours=8.0)
REPLAY = Replay(
    trace="t.csv",
    pods=3,
    skipped_no_gpu=5,
    skipped_never_ran=1,
    gpu_model="A100-SXM4-80GB",
    settings=Settings(nodes=1, failure_rate=0.1, seed=7),
    demand_window_seconds=None,
    operator_retry_seconds=3600,
    results=(DEFAULT, STATIC),
)
FILL = Fill(
    "t.csv", 300, 2, 8, "A100-SXM4-80GB", "compute", 3, 40, 15.99999, 0.91234567, 0.8,
    (FillResult("best-fit", 38, 2, 14.5, 16), FillResult("first-fit", 36, 4, 13.0, 16)),
)  # fmt: skip


def test_the_cli_offers_exactly_the_formats_the_report_has() -> None:
    (option,) = [p for p in command.params if p.name == "fmt"]
    assert list(option.type.choices) == list(FORMATS) == ["text", "json"]  # type: ignore[attr-defined]


def test_replay_json_names_the_settings_and_each_baseline_s_row() -> None:
    text = FORMATS["json"](REPLAY)
    assert text == to_json(REPLAY) and text.endswith("}\n")
    doc = json.loads(text)
    assert doc == REPLAY.to_dict()
    assert {k: doc[k] for k in ("trace", "pods", "nodes", "gpusPerNode", "failureRate", "seed")} == {
        "trace": "t.csv",
        "pods": 3,
        "nodes": 1,
        "gpusPerNode": 8,
        "failureRate": 0.1,
        "seed": 7,
    }
    # the options as given: no --demand-window is null, not the 0 the engine's Settings holds
    assert doc["demandWindowSeconds"] is None and doc["operatorRetrySeconds"] == 3600
    row = doc["results"][0]
    assert row["baseline"] == "default" and row["reconfigurationsPerHour"] == 0.375  # per trace hour
    assert row["lostGpuHours"] == 1.5 and row["sliceUtilisation"] == 0.5
    assert row["blockedBy"] == {"disruption": 1, "minDwell": 2}
    assert row["waitSeconds"]["3g"] == {"p50": 600.0, "p95": 600.0, "p99": 600.0, "pods": 1, "censored": 1,
                                        "lowerBound": ["p50", "p95", "p99"]}  # fmt: skip
    assert row["waitSeconds"]["all"]["pods"] == 3 and row["waitSeconds"]["all"]["p50"] == 30.0
    # the controller's ConfigMap wait and the PDB model: the settings, and what they did
    assert (doc["configMapSyncSeconds"], doc["pdbFraction"], doc["pdbSeconds"]) == (90.0, 0.0, 900.0)
    assert (row["syncWaits"], row["evictionsBlocked"], row["drainTimeouts"]) == (2, 3, 1)


def test_replay_text_has_a_header_a_row_per_baseline_and_the_p95_per_size() -> None:
    lines = FORMATS["text"](REPLAY).splitlines()
    assert lines[0].startswith("trace t.csv: 3 GPU pods replayed (5 without GPU, 1 never ran, skipped); ")
    assert "1 x 8 A100-SXM4-80GB" in lines[0] and lines[0].endswith("failure rate 0.1; ConfigMap sync 90 s")
    assert lines[2].split() == ["baseline", "reconf", "reconf/h", "GPUs", "evict", "lost", "GPU-h",
                                "p50", "s", "p95", "s", "p99", "s", "util", "never", "cens"]  # fmt: skip
    # a percentile a censored wait bounds from below reads ">x"
    assert lines[3].split() == ["default", "3", "0.375", "4", "1", "1.5",
                                "30.0", ">600.0", ">600.0", "0.5", "0", "1"]  # fmt: skip
    assert lines[4].split()[0] == "static"
    pdb = replace(REPLAY, settings=Settings(nodes=1, pdb_fraction=0.25, pdb_seconds=600))
    assert FORMATS["text"](pdb).splitlines()[0].endswith("ConfigMap sync 90 s; PDB on 0.25 of pods for 600 s")
    assert lines[-2:] == ["  default: 1g 30.0 (2 pods); 3g >600.0 (1 pods)", "  static: 1g 0.0 (1 pods)"]


def test_fill_json_and_text_round_as_the_protocol_reports() -> None:
    doc = json.loads(FORMATS["json"](FILL))
    assert doc["mode"] == "fill" and doc["capacityGpus"] == 16 and doc["requestedGpus"] == 16.0
    assert doc["migRoundingCeiling"] == 0.9123 and doc["results"][0] == {
        "policy": "best-fit",
        "placed": 38,
        "failed": 2,
        "allocatedGpus": 14.5,
        "allocationRatio": 0.9062,
    }
    lines = FORMATS["text"](FILL).splitlines()
    assert lines[0] == (
        "trace t.csv: FGD fill protocol, seed 3; 2 x 8 A100-SXM4-80GB; 40 requests for 16.0 GPUs; "
        "MIG rounding ceiling 0.9123"
    )
    assert lines[2:] == [
        "policy          placed  failed  allocated GPUs   ratio",
        "best-fit            38       2            14.5  0.9062",
        "first-fit           36       4            13.0  0.8125",
    ]
