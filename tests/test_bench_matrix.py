"""bench.matrix: the issue-22 verdict per cell, on hand-made rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.matrix import table, verdict


def row(name: str, recarves: int, p95: float, classes: dict[str, tuple[float, int]], never: int = 0) -> Any:
    waits = {k: {"p95": v, "pods": n} for k, (v, n) in classes.items()} | {"all": {"p95": p95, "pods": 100}}
    return {
        "baseline": name,
        "reconfigurations": recarves,
        "reconfigurationsPerHour": recarves / 100,
        "traceHours": 100.0,
        "hours": 100.0,
        "waitSeconds": waits,
        "neverServed": never,
        "heldOnIdleGpu": 0 if name != "per-pod" else None,
        "nonMaximalLayouts": 0 if name != "per-pod" else None,
    }


def test_verdict_follows_the_issue() -> None:
    naive = row("naive", 50, 1000.0, {"1g": (1000.0, 50), "7g": (0.0, 10)})
    # 10 re-carves against 50 (once per 2 h: the 5x rule applies), p95 1,200 <= 1.2 x 1,000;
    # the 7g class has fewer than 20 pods, so its 10,000 s does not count
    ok = row("default", 10, 1200.0, {"1g": (1100.0, 50), "7g": (10_000.0, 10)})
    assert verdict({"naive": naive, "default": ok}, "default") == "meets"
    bad = row("default", 11, 1300.0, {"1g": (250.0, 50)}, never=1)
    assert verdict({"naive": naive, "default": bad}, "default") == "misses: re-carves, p95 all, never served"
    # 5 minutes is the floor of the bound
    quiet = row("naive", 50, 10.0, {"1g": (10.0, 50)})
    assert (
        verdict({"naive": quiet, "default": row("default", 1, 299.0, {"1g": (299.0, 50)})}, "default")
        == "meets"
    )
    idle = row("naive", 5, 0.0, {})
    assert verdict({"naive": idle, "default": row("default", 9, 9.0, {})}, "default") == "not contended"


def test_table_has_one_line_per_baseline(tmp_path: Path) -> None:
    cell = {
        "trace": "t",
        "nodes": 8,
        "timeScale": 4.0,
        "reconf": "60",
        "failureRate": 0.0,
        "seed": 0,
        "results": [row("naive", 50, 1000.0, {}), row("default", 5, 900.0, {}), row("per-pod", 0, 5.0, {})],
    }
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps(cell) + "\n")
    lines = table(path).splitlines()
    assert len(lines) == 5
    assert lines[3].endswith("| 0 | 0 | meets |") and lines[4].endswith("| 0 |  |  |  |")


def test_node_resources_are_taken_as_migc_simulate_takes_them(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--node-cpu-milli / --node-memory-mib: a whole number 1..2^40, as the CLI's range (a 0 would
    model a node nothing fits on, and every cell would be a run of censored pods)."""
    from bench import matrix

    for bad in ("0", "-5", "x", str(2**40 + 1)):
        monkeypatch.setattr("sys.argv", ["matrix", "--node-cpu-milli", bad, "--table", "none.jsonl"])
        with pytest.raises(SystemExit) as exit_:
            matrix.main()
        assert exit_.value.code == 2
        assert "--node-cpu-milli" in capsys.readouterr().err
    assert matrix._node_amount("96000") == 96000 and matrix._node_amount(str(2**40)) == 2**40


def test_no_idle_pass_adds_the_loop_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--no-idle-pass`` adds the row ``default-noidle`` (the loop with ``Settings.idle_pass`` off),
    and every cell records whether its ``default`` row had the pass. On one node of 8 GPUs where a 1g
    pod arrives after a whole-GPU pod has left, the shipped loop re-carves the idle node for it and
    the loop without the pass holds it (the sizing keeps what the scaleDownWindow remembers)."""
    from bench import matrix

    (tmp_path / "openb_pod_list_tiny.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
        "scheduled_time\nbig,1,1,1,1000,,BE,Running,0,3600,0\nsmall,1,1,1,100,,BE,Running,6000,6600,6000\n"
    )
    out = tmp_path / "m.jsonl"
    argv = ["matrix", "--data", str(tmp_path), "--traces", "tiny", "--nodes", "1", "--time-scales", "1"]
    argv += ["--reconf", "60", "--failure-rates", "0", "--baselines", "default", "--no-idle-pass"]
    monkeypatch.setattr("sys.argv", [*argv, "--out", str(out)])
    matrix.main()
    capsys.readouterr()
    (cell,) = [json.loads(line) for line in out.read_text().splitlines()]
    rows = {r["baseline"]: r for r in cell["results"]}
    assert sorted(rows) == ["default", "default-noidle"] and cell["idlePass"] is True
    assert cell["idleSurge"] == 0  # the policy's default (compiler.model.IDLE_SURGE)
    assert rows["default"]["idleRecarves"] > 0 and rows["default"]["heldOnIdleGpu"] == 0
    assert rows["default-noidle"]["idleRecarves"] == 0 and rows["default-noidle"]["heldOnIdleGpu"] > 0


def test_idle_surge_reaches_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--idle-surge N`` is the admission of every row (Settings.idle_surge) and the cell records it:
    two idle nodes of 8 GPUs and sixteen whole-GPU pods at 0 need both re-carved; naive with
    maxUnavailable 1 re-carves them one after the other with 0, side by side with 1."""
    from bench import matrix

    (tmp_path / "openb_pod_list_two.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
        "scheduled_time\n" + "".join(f"w{i},1,1,1,1000,,BE,Running,0,9000,0\n" for i in range(16))
    )
    cells = {}
    for surge in ("0", "1"):
        out = tmp_path / f"m{surge}.jsonl"
        argv = ["matrix", "--data", str(tmp_path), "--traces", "two", "--nodes", "2", "--time-scales", "1"]
        argv += ["--reconf", "60", "--failure-rates", "0", "--baselines", "naive", "--idle-surge", surge]
        monkeypatch.setattr("sys.argv", [*argv, "--out", str(out)])
        matrix.main()
        capsys.readouterr()
        (cells[surge],) = [json.loads(line) for line in out.read_text().splitlines()]
    assert cells["0"]["idleSurge"] == 0 and cells["1"]["idleSurge"] == 1
    (zero,), (one,) = cells["0"]["results"], cells["1"]["results"]
    assert zero["reconfigurations"] == one["reconfigurations"] == 2
    assert one["waitSeconds"]["7g"]["p95"] < zero["waitSeconds"]["7g"]["p95"]


def test_whole_gpu_reaches_the_rows_and_is_refused_where_it_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--whole-gpu full-instance`` (with ``--drain-scope gpu``) is every row's Settings.whole_gpu and
    the cell records it: one node of 8 GPUs (bench.matrix's fleet), a 1g pod running on one of them and
    a whole-GPU pod arriving later; as a full instance an idle GPU is re-carved alone and the 1g pod is
    never evicted, with MIG disabled that is a mode change that drains it. Without ``--drain-scope
    gpu`` it is a usage error (exit 2), as in ``migc simulate``."""
    from bench import matrix

    (tmp_path / "openb_pod_list_two.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
        "scheduled_time\na,1,1,1,100,,BE,Running,0,10000,0\nbig,1,1,1,1000,,BE,Running,100,600,100\n"
    )
    cells = {}
    base = ["matrix", "--data", str(tmp_path), "--traces", "two", "--nodes", "1", "--time-scales", "1"]
    base += ["--reconf", "60", "--failure-rates", "0", "--baselines", "naive"]
    for mode in ("mig-disabled", "full-instance"):
        out = tmp_path / f"{mode}.jsonl"
        args = [*base, "--drain-scope", "gpu", "--whole-gpu", mode, "--out", str(out)]
        monkeypatch.setattr("sys.argv", args)
        matrix.main()
        capsys.readouterr()
        (cells[mode],) = [json.loads(line) for line in out.read_text().splitlines()]
    assert cells["mig-disabled"]["wholeGpu"] == "mig-disabled"
    assert cells["full-instance"]["wholeGpu"] == "full-instance"
    (off,), (full,) = cells["mig-disabled"]["results"], cells["full-instance"]["results"]
    assert (off["evictions"], full["evictions"]) == (1, 0)
    monkeypatch.setattr("sys.argv", [*base, "--whole-gpu", "full-instance", "--out", str(tmp_path / "x")])
    with pytest.raises(SystemExit) as stop:
        matrix.main()
    assert stop.value.code == 2 and "only with --drain-scope gpu" in capsys.readouterr().err
