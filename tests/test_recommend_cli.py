"""`migc recommend` end to end on the lab example: window, urgency, dwell, backoff, state, dry run."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
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


def setup(
    tmp_path: Path,
    compiled: Path,
    *,
    urgent: bool,
    extra: list[dict[str, Any]] | None = None,
    started: str | None = "2026-12-01T06:00:00Z",
) -> Path:
    """The lab with 10 running notebooks (``started``: their status.startTime; they were created at 05:00)
    and 8 pending ones (created 05:00)."""
    shutil.copytree(compiled / "pol", tmp_path / "pol")
    shutil.copytree(compiled / "out", tmp_path / "out")
    hint = {"migc.dev/max-wait-time": "15m"} if urgent else None
    pods = [
        pod(f"nb-{i}", "course-dl101", "nvidia.com/mig-1g.10gb", node="lab-dgx-a100-01") for i in range(10)
    ]
    for p in pods:
        if started:
            p["status"]["startTime"] = started
    pods += [pod(f"p-{i}", "course-nlp202", "nvidia.com/mig-1g.10gb", annotations=hint) for i in range(8)]
    pods += [pod("ignored", "course-nlp202", None)]  # asks for nothing migc manages
    (tmp_path / "snap.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": pods + (extra or [])})
    )
    return tmp_path


def run(base: Path, at: str, *more: str, pods: Callable[[list[Any]], list[Any]] | None = None) -> int:
    """``migc recommend`` at 2026-12-01T``at``; ``pods`` rewrites setup()'s pods for this run only."""
    if pods is not None and not (base / "snap.base.json").exists():
        shutil.copy(base / "snap.json", base / "snap.base.json")
    if (base / "snap.base.json").exists():
        items = json.loads((base / "snap.base.json").read_text())["items"]
        items = pods(items) if pods is not None else items
        (base / "snap.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
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
    saved = (base / "pol" / "observed-demand.yaml").read_text()
    assert "  - at: '2026-12-01T06:00:00Z'\n    demand:\n      students/1g.10gb: [10, 8]\n" in saved
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
    assert "NO  stabilizationWindow: demand watched for 0s < 10m" in out
    assert "MIGC42" not in err  # losing the state is normal, not a warning
    assert run(base, "06:22") == ExitCode.DRIFT


def test_stale_state_restarts_the_window(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the notebooks started recently, so the disruption rule lets the change through at 06:57
    base = setup(tmp_path, compiled, urgent=False, started="2026-12-01T06:40:00Z")
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


RULED = (
    DYNAMIC.format(mode="dynamic")
    + """  dailyChangeBudget: 5
  interval: 5m
  rules:
    - name: many-small
      when: {pendingPodsGreaterThan: 5, profile: 1g.10gb}
      prefer: {maximize: 1g.10gb}
"""
)
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
    # the window (10m, samples every 5m): 22 instances at 06:00 (a burst of 3 more pending pods),
    # 17 at 06:05 (two of the waiting pods gone), 19 at 06:11: min 17, time-weighted mean 19.0, max 22;
    # sized for 17 + 1 pod past its max wait = 18 (the burst never counts), plus the rule's headroom:
    # the pending pods that persisted through the window, min(12, 7, 9) = 7
    burst = [pod(f"burst-{i}", "course-nlp202", "nvidia.com/mig-1g.10gb") for i in range(3)]
    assert run(base, "06:00", pods=lambda ps: ps + burst) == ExitCode.OK  # the window holds it back
    gone = ("p-0", "p-1")
    fewer = run(base, "06:05", pods=lambda ps: [p for p in ps if p["metadata"]["name"] not in gone])
    assert fewer == ExitCode.OK
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
        {
            "rule": "many-small",
            "tenant": "students",
            "profile": "1g.10gb",
            "workload": "student-notebooks",
            "replicas": 7,
        }
    ]
    plan = md[md.index("### Plan of the change") :]
    rows = [r.split(" | ") for r in plan.splitlines() if r.startswith("| lab-dgx-")]
    assert [(p["node"], p["gpus"]) for p in doc["plan"]] == [(r[0][2:], int(r[1])) for r in rows]
    assert [p["node"] for p in doc["plan"]] == ["lab-dgx-a100-01"]
    assert doc["urgent"] == ["course-dl101/late"]
    assert doc["window"] == {
        "seconds": 600,
        "covered": True,
        "since": "2026-12-01T06:00:00Z",
        "demand": [
            {
                "tenant": "students",
                "profile": "1g.10gb",
                "running": 10,
                "pending": 9,
                "samples": 3,
                "min": 17,
                "mean": 19.0,
                "max": 22,
                "sizedFor": 18,
            }
        ],
    }


# Sizing over the window (docs/recommend.md "Demand history"): runs every 5 minutes, a 10m window. The
# Workload student-notebooks declares 10 instances of 1g.10gb; 10 pods run, 8 more may wait.
EVERY_5M = DYNAMIC.format(mode="dynamic") + "  interval: 5m\n"


def no_waiting(items: list[Any]) -> list[Any]:
    return [p for p in items if not p["metadata"]["name"].startswith("p-")]


def test_a_burst_shorter_than_the_window_never_proposes(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = setup(tmp_path, compiled, urgent=False)
    (base / "pol" / "partition.yaml").write_text(EVERY_5M)
    assert run(base, "06:00", pods=no_waiting) == ExitCode.OK
    assert run(base, "06:05") == ExitCode.OK  # 8 pods wait from 06:05 ...
    assert run(base, "06:10") == ExitCode.OK  # ... still (the window's start, 06:00, had none) ...
    capsys.readouterr()
    assert run(base, "06:14", "--dry-run", "-o", "json") == ExitCode.OK  # ... until just before 06:15
    doc = json.loads(capsys.readouterr().out)
    # the window 06:04–06:14 starts with 06:00's sample (10, in force until 06:05): min 10
    assert doc["window"]["demand"] == [
        {
            "tenant": "students",
            "profile": "1g.10gb",
            "running": 10,
            "pending": 8,
            "samples": 4,
            "min": 10,
            "mean": 17.2,
            "max": 18,
            "sizedFor": 10,
        }
    ]
    # the window is covered (the gate passes): it is the sizing that leaves the replicas alone
    assert doc["replicas"] == [] and doc["window"]["covered"] is True
    assert {x["name"]: x["passed"] for x in doc["gates"]}["stabilizationWindow"] is True
    for at in ("06:15", "06:20", "06:25"):  # gone by 06:15: never proposed
        assert run(base, at, pods=no_waiting) == ExitCode.OK
    # by 06:25 the burst has left the window (06:15–06:25); the state file keeps it only for the
    # scaleDownWindow's peak (24h by default), which holds capacity but never grows it
    assert "[10, 8]" in (base / "pol" / "observed-demand.yaml").read_text()


def test_a_shift_that_persists_is_proposed_once_the_window_has_passed(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = setup(tmp_path, compiled, urgent=False)
    (base / "pol" / "partition.yaml").write_text(EVERY_5M)
    assert run(base, "06:00", pods=no_waiting) == ExitCode.OK
    assert run(base, "06:05") == ExitCode.OK  # from 06:05 on, 8 pods wait
    assert run(base, "06:10") == ExitCode.OK  # the window (06:00–06:10) still starts at 10
    capsys.readouterr()
    assert run(base, "06:15", "-o", "json") == ExitCode.DRIFT  # 18 for the whole window 06:05–06:15
    doc = json.loads(capsys.readouterr().out)
    assert doc["replicas"] == [{"workload": "student-notebooks", "from": 10, "to": 18}]
    assert doc["window"]["demand"][0]["min"] == 18 and doc["window"]["covered"] is True
    assert "replicas: 18" in (base / "pol" / "workloads.yaml").read_text()


def running_briefly(items: list[Any]) -> list[Any]:
    """The 8 waiting pods bound for one run (demand unchanged, nothing pending)."""
    out: list[Any] = json.loads(json.dumps(items))
    for p in out:
        if p["metadata"]["name"].startswith("p-"):
            p["spec"]["nodeName"] = "lab-dgx-a100-01"
            p["status"] = {"phase": "Running", "startTime": "2026-12-01T06:04:00Z"}
    return out


def test_a_shortage_that_paused_inside_the_window_is_not_proposed(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Demand (running + pending) stays 18 all along, so the sizing wants 18 from 06:10 on; but at 06:05
    nothing of 1g.10gb was pending: the shortage did not persist through the window 06:00–06:10, and
    the stabilizationWindow gate holds the proposal until it has (06:20: 06:05's sample, in force at
    06:15's window start, has left the window)."""
    base = setup(tmp_path, compiled, urgent=False)
    (base / "pol" / "partition.yaml").write_text(EVERY_5M)
    assert run(base, "06:00") == ExitCode.OK  # 8 pods wait
    assert run(base, "06:05", pods=running_briefly) == ExitCode.OK  # they run for a while
    capsys.readouterr()
    assert run(base, "06:10", "--dry-run", "-o", "json", pods=lambda ps: ps) == ExitCode.OK  # they wait again
    doc = json.loads(capsys.readouterr().out)
    assert doc["window"]["covered"] is True and doc["window"]["demand"][0]["min"] == 18
    gate = {x["name"]: x for x in doc["gates"]}["stabilizationWindow"]
    assert gate["passed"] is False
    assert gate["why"] == "1g.10gb not short (no pending pod) in all 3 sample(s) of the 10m window"
    assert run(base, "06:10") == ExitCode.OK
    capsys.readouterr()
    assert run(base, "06:15") == ExitCode.OK  # the window 06:05–06:15 still starts with 06:05's sample
    assert "NO  stabilizationWindow: 1g.10gb not short" in capsys.readouterr().out
    assert run(base, "06:20") == ExitCode.DRIFT  # short at 06:10, 06:15 and 06:20: proposed


def test_state_lost_mid_window_restarts_the_window(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = setup(tmp_path, compiled, urgent=False)
    (base / "pol" / "partition.yaml").write_text(EVERY_5M)
    assert run(base, "06:00") == ExitCode.OK
    assert run(base, "06:05") == ExitCode.OK
    (base / "pol" / "observed-demand.yaml").unlink()  # would have proposed at 06:10
    assert run(base, "06:10") == ExitCode.OK
    capsys.readouterr()
    assert run(base, "06:15") == ExitCode.OK  # watched since 06:10 only
    assert "NO  stabilizationWindow: demand watched for 5m < 10m" in capsys.readouterr().out
    assert run(base, "06:20") == ExitCode.DRIFT


def test_a_rule_fired_by_a_burst_adds_nothing(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = setup(tmp_path, compiled, urgent=False)
    (base / "pol" / "partition.yaml").write_text(RULED)  # many-small: more than 5 pending 1g.10gb
    assert run(base, "06:00", pods=no_waiting) == ExitCode.OK
    assert run(base, "06:05", pods=no_waiting) == ExitCode.OK
    capsys.readouterr()
    assert run(base, "06:10", "-o", "markdown") == ExitCode.OK  # 8 pods wait since 06:08, say
    md = capsys.readouterr().out
    assert "- many-small: nothing added (no pending pod it matches waited through the whole window)" in md
    assert "| students | 1g.10gb | 10 | 8 | 3 | 10 | 10.0 | 18 | 18 | 10 |" in md  # kept 18: no shrink below


def test_disruption_rule_holds_a_change_that_would_evict_long_running_notebooks(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # no startTime: the 10 notebooks count as running since their creation (05:00), 71m at 06:11
    base = setup(tmp_path, compiled, urgent=False, started=None)
    assert run(base, "06:00") == ExitCode.OK  # the window starts
    capsys.readouterr()
    assert run(base, "06:11", "--dry-run", "-o", "json") == ExitCode.OK
    doc = json.loads(capsys.readouterr().out)
    d = doc["disruption"]
    # benefit: the 4 pending instances the change serves, 71m each, 1/7 GPU: 4 × 4260 / 7
    assert d["model"] == "expected" and d["servedPending"] == 4 and d["benefit"] == round(4 * 4260 / 7, 3)
    (node,) = d["nodes"]
    e, grace = 4260, 1800
    assert node["running"] == 10 and node["loss"] == round(10 * e * e / (e + grace) / 7, 3)
    assert node["outage"] == node["gpus"] * 60 * node["changedGpus"]
    gates = {x["name"]: x["passed"] for x in doc["gates"]}
    assert gates["disruption"] is False and all(ok for name, ok in gates.items() if name != "disruption")
    # the gain threshold alone would propose it
    assert run(base, "06:11", "--dry-run", "--disruption", "off") == ExitCode.DRIFT
    assert "disruption" not in capsys.readouterr().out


def test_the_state_file_keeps_a_change_as_long_as_min_dwell(tmp_path: Path, compiled: Path) -> None:
    """minDwell 48h: a node change of 30 h ago is still in the state file recommend writes back (it
    kept only the last day's, so the next run saw the node as never changed and minDwell passed a
    day early)."""
    import datetime as dt

    from compiler.model import PartitionPolicy
    from compiler.recommend.state import State, dump_state, read_state

    base = setup(tmp_path, compiled, urgent=False)
    partition = base / "pol" / "partition.yaml"
    partition.write_text(partition.read_text() + "  minDwell: 48h\n")
    now = dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.UTC)
    when = now - dt.timedelta(hours=30)
    old = State(updated=now - dt.timedelta(minutes=5), changes=(("lab-dgx-a100-01", when),), last_change=when)
    (base / "pol" / "observed-demand.yaml").write_text(
        dump_state(old, now - dt.timedelta(minutes=5), keep_seconds=2 * 86_400)
    )
    assert run(base, "06:00") == ExitCode.OK
    back, _ = read_state(
        base / "pol" / "observed-demand.yaml", now, PartitionPolicy(min_dwell_seconds=2 * 86_400)
    )
    assert ("lab-dgx-a100-01", when) in back.changes
