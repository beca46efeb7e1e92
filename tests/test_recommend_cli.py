"""`migc recommend` end to end on the lab example: window, urgency, dwell, backoff, state, dry run."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from statusfleet import pod

from compiler.cli import main
from compiler.exitcodes import ExitCode

ROOT = Path(__file__).resolve().parents[1]
DYNAMIC = """---
apiVersion: migc.dev/v1alpha1
kind: PartitionPolicy
metadata:
  name: default
spec:
  mode: {mode}
  stabilizationWindow: 10m
"""


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "examples" / "lab", base / "pol")
    (base / "pol" / "partition.yaml").write_text(DYNAMIC.format(mode="dynamic"))
    assert main(["compile", str(base / "pol"), "--out", str(base / "out")]) == 0
    return base


def setup(tmp_path: Path, compiled: Path, *, urgent: bool, extra: list[dict[str, Any]] | None = None) -> Path:
    shutil.copytree(compiled / "pol", tmp_path / "pol")
    shutil.copytree(compiled / "out", tmp_path / "out")
    hint = {"migc.dev/max-wait-time": "15m"} if urgent else None
    pods = [
        pod(f"nb-{i}", "course-dl101", "nvidia.com/mig-1g.10gb", node="lab-dgx-a100-01") for i in range(10)
    ]
    pods += [pod(f"p-{i}", "course-nlp202", "nvidia.com/mig-1g.10gb", annotations=hint) for i in range(8)]
    pods += [pod("ignored", "course-nlp202", None)]  # asks for nothing migc manages
    (tmp_path / "snap.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": pods + (extra or [])})
    )
    return tmp_path


def run(base: Path, at: str, *more: str) -> int:
    return main(
        [
            "recommend",
            str(base / "pol"),
            "--snapshot",
            str(base / "snap.json"),
            "--against",
            str(base / "out"),
            "--now",
            f"2026-12-01T{at}:00Z",
            *more,
        ]
    )


def test_window_then_proposal_edits_replicas_and_keeps_comments(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = setup(tmp_path, compiled, urgent=False)
    before = (base / "pol" / "workloads.yaml").read_text()
    assert run(base, "06:00") == ExitCode.OK  # first seen now: the window holds it back
    assert "stabilizationWindow" in capsys.readouterr().out
    assert (base / "pol" / "workloads.yaml").read_text() == before
    assert "firstSeen: '2026-12-01T06:00:00Z'" in (base / "pol" / "observed-demand.yaml").read_text()
    assert run(base, "06:05", "--dry-run") == ExitCode.OK
    state = (base / "pol" / "observed-demand.yaml").read_text()
    capsys.readouterr()
    assert run(base, "06:11", "--dry-run", "-o", "json") == ExitCode.DRIFT
    doc = json.loads(capsys.readouterr().out)
    assert doc["replicas"] == [{"workload": "student-notebooks", "from": 10, "to": 18}]
    assert doc["gain"] > 20
    assert (base / "pol" / "observed-demand.yaml").read_text() == state  # dry run wrote nothing
    assert run(base, "06:11", "-o", "markdown") == ExitCode.DRIFT
    md = capsys.readouterr().out
    assert "| students | 1g.10gb | 10 | 8 |" in md and "**Change proposed.**" in md
    after = (base / "pol" / "workloads.yaml").read_text()
    assert after == before.replace("replicas: 10", "replicas: 18")
    # the layout just changed: minDwell holds the next proposal back although demand grew again
    assert run(base, "06:30") == ExitCode.OK


def test_max_wait_overrides_the_window(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = setup(tmp_path, compiled, urgent=True)  # pods created 05:00, max wait 15m
    assert run(base, "06:00", "--dry-run") == ExitCode.DRIFT
    assert "overridden: 8 pod(s) past max-wait" in capsys.readouterr().out


def test_static_mode_never_proposes(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = setup(tmp_path, compiled, urgent=True)
    (base / "pol" / "partition.yaml").write_text(DYNAMIC.format(mode="static"))
    assert run(base, "06:00") == ExitCode.OK
    out, err = capsys.readouterr()
    assert "NO  mode" in out and "MIGC422" in err


def test_corrupt_state_degrades_to_no_change(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = setup(tmp_path, compiled, urgent=False)
    assert run(base, "06:00") == ExitCode.OK
    (base / "pol" / "observed-demand.yaml").write_text("spec: [broken\n")
    assert run(base, "06:11") == ExitCode.OK  # window restarts instead of proposing
    assert "MIGC420" in capsys.readouterr().err
    assert run(base, "06:22") == ExitCode.DRIFT  # the rewritten state carries it on


def test_failed_rollout_backs_off(tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "lab-dgx-a100-01",
            "labels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
            # controller/state.py: migc.dev/phase and migc.dev/phase-since record a failed rollout
            "annotations": {"migc.dev/phase": "Failed", "migc.dev/phase-since": "2026-12-01T06:08:00Z"},
        },
        "status": {"allocatable": {"nvidia.com/mig-1g.10gb": "10"}},
    }
    base = setup(tmp_path, compiled, urgent=False, extra=[node])
    assert run(base, "06:00") == ExitCode.OK
    assert run(base, "06:11") == ExitCode.OK
    out = capsys.readouterr().out
    assert "NO  backoff: 1 failure(s); backoff 5m until 2026-12-01T06:13:00Z" in out
    assert "failures: 1" in (base / "pol" / "observed-demand.yaml").read_text()
    assert run(base, "06:14") == ExitCode.DRIFT  # the same failure is counted once; its backoff is over


def test_lost_state_means_no_change_proposed_yet(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = setup(tmp_path, compiled, urgent=False)
    assert run(base, "06:00") == ExitCode.OK
    (base / "pol" / "observed-demand.yaml").unlink()  # e.g. the commit that held it was reverted
    capsys.readouterr()
    assert run(base, "06:11") == ExitCode.OK  # would have proposed with the state: the window starts over
    out, err = capsys.readouterr()
    assert "NO  stabilizationWindow: demand pattern stable for 0s < 10m" in out
    assert "MIGC42" not in err  # losing the state is normal, not a warning
    assert run(base, "06:22") == ExitCode.DRIFT


def test_stale_state_restarts_the_window(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = setup(tmp_path, compiled, urgent=False)
    assert run(base, "06:00") == ExitCode.OK
    capsys.readouterr()
    # interval 15m (default): after 3 intervals the state no longer proves the demand persisted
    assert run(base, "06:46") == ExitCode.OK
    out, err = capsys.readouterr()
    assert "MIGC421" in err and "NO  stabilizationWindow" in out
    assert run(base, "06:57") == ExitCode.DRIFT


def test_malformed_annotation_is_a_warning_naming_the_pod(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    odd = pod(
        "odd",
        "course-nlp202",
        "nvidia.com/mig-1g.10gb",
        annotations={"migc.dev/max-wait-time": "soon", "migc.dev/profile-preference": "fast please"},
    )
    base = setup(tmp_path, compiled, urgent=False, extra=[odd])
    assert run(base, "06:00", "--dry-run", "-o", "json") == ExitCode.OK
    out, err = capsys.readouterr()
    doc = json.loads(out)  # the run went on: the pod's demand is counted, only its hints are dropped
    assert {"tenant": "students", "profile": "1g.10gb", "running": 10, "pending": 9} in doc["demand"]
    warnings = [line for line in err.splitlines() if "MIGC401" in line]
    assert len(warnings) == 2 and all("pod course-nlp202/odd" in w for w in warnings)
    assert "Traceback" not in err


RULED = DYNAMIC.format(mode="dynamic") + """  dailyChangeBudget: 5
  rules:
    - name: many-small
      when: {pendingPodsGreaterThan: 5, profile: 1g.10gb}
      prefer: {maximize: 1g.10gb}
"""
EVIDENCE = ROOT / "tests" / "data" / "recommend" / "evidence.golden.md"


def test_evidence_markdown_snapshot(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every part of the pull-request body: demand per tenant/profile, current vs proposed capacity, the
    gain, each gate with why, the rules fired and what they added, pods past max-wait, the replicas
    edited and the per-node plan. Refresh with MIGC_UPDATE_GOLDEN=1 and review the diff."""
    # one more pending pod that may wait 65m: created 05:00, it is past its max wait at 06:11, not 06:00
    hint = {"migc.dev/max-wait-time": "65m"}
    late = pod("late", "course-dl101", "nvidia.com/mig-1g.10gb", annotations=hint)
    base = setup(tmp_path, compiled, urgent=False, extra=[late])
    (base / "pol" / "partition.yaml").write_text(RULED)
    assert run(base, "06:00") == ExitCode.OK  # first seen: the window holds it back
    capsys.readouterr()
    assert run(base, "06:11", "--dry-run", "-o", "markdown") == ExitCode.DRIFT
    md = capsys.readouterr().out
    if os.environ.get("MIGC_UPDATE_GOLDEN"):
        EVIDENCE.write_text(md, encoding="utf-8")
    assert md == EVIDENCE.read_text(encoding="utf-8")
    parts = ("Observed demand", "since", "Capacity", "Gain:", "Gates", "Rules fired", "max wait", "Plan")
    assert all(part in md for part in parts)
    # JSON carries the same facts
    assert run(base, "06:11", "--dry-run", "-o", "json") == ExitCode.DRIFT
    doc = json.loads(capsys.readouterr().out)
    assert doc["ruleEffects"] == [
        {"rule": "many-small", "tenant": "students", "profile": "1g.10gb", "workload": "student-notebooks",
         "replicas": 9}
    ]
    rows = [r.split(" | ") for r in md.splitlines() if r.startswith("| lab-dgx-")]
    assert [(p["node"], p["gpus"]) for p in doc["plan"]] == [(r[0][2:], int(r[1])) for r in rows]
    assert [p["node"] for p in doc["plan"]] == ["lab-dgx-a100-01"]
    assert doc["urgent"] == ["course-dl101/late"]
