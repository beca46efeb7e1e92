"""compiler/commands/recommend.py: where the state is written (beside the policy, --state, or nowhere
with --dry-run), the proposal written with it (exit 3), and what is refused before anything is
read or written. On examples/lab in mode dynamic; the gates themselves are compiler/recommend's
(tests/test_recommend_cli.py drives them end to end)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from statusfleet import pod

from compiler.commands.compile import command as compile_command
from compiler.commands.recommend import command
from compiler.recommend.state import STATE_FILE

ROOT = Path(__file__).resolve().parents[4]
DYNAMIC = """apiVersion: migc.dev/v1alpha1
kind: PartitionPolicy
metadata:
  name: default
spec:
  mode: dynamic
  stabilizationWindow: 10m
"""


def _run(cmd: click.Command, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cmd, list(args), standalone_mode=False)
    if isinstance(result.exception, click.ClickException):
        return result.exception.exit_code, result.stdout, result.stderr + result.exception.format_message()
    assert result.exception is None, result.exception
    return int(result.return_value), result.stdout, result.stderr


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "examples" / "lab", base / "pol")
    (base / "pol" / "partition.yaml").write_text(DYNAMIC)
    assert _run(compile_command, str(base / "pol"), "--out", str(base / "out"))[0] == 0
    return base


def _lab(tmp_path: Path, compiled: Path, urgent: bool = False) -> Path:
    """The lab with its 10 notebooks running (started at 06:00) and 8 more pending since 05:00 for a
    1g.10gb (``urgent``: with a max wait of 15m)."""
    shutil.copytree(compiled / "pol", tmp_path / "pol")
    shutil.copytree(compiled / "out", tmp_path / "out")
    hint = {"migc.dev/max-wait-time": "15m"} if urgent else None
    pods = [
        pod(f"nb-{i}", "course-dl101", "nvidia.com/mig-1g.10gb", node="lab-dgx-a100-01") for i in range(10)
    ]
    for running in pods:  # just started: evicting them costs little (the disruption rule)
        running["status"]["startTime"] = "2026-12-01T06:00:00Z"
    pods += [pod(f"p-{i}", "course-nlp202", "nvidia.com/mig-1g.10gb", annotations=hint) for i in range(8)]
    (tmp_path / "snap.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}))
    return tmp_path


def _recommend(base: Path, *more: str) -> tuple[int, str, str]:
    return _run(
        command,
        str(base / "pol"),
        "--snapshot",
        str(base / "snap.json"),
        "--against",
        str(base / "out"),
        "--now",
        "2026-12-01T06:00:00Z",
        *more,
    )


def test_the_state_is_written_beside_the_policy_and_the_lock_is_gone_after(
    tmp_path: Path, compiled: Path
) -> None:
    base = _lab(tmp_path, compiled)
    rc, _, err = _recommend(base)
    assert rc == 0  # first seen now: the stabilization window holds a change back
    state = base / "pol" / STATE_FILE
    assert err.strip().endswith(f"no change proposed; state in {state}")
    assert "students/1g.10gb" in state.read_text(encoding="utf-8")
    assert sorted(p.name for p in (base / "pol").iterdir() if p.name.startswith(".")) == []


@pytest.mark.slow  # two more recommend runs (0.3 s); the default location is checked above
def test_state_elsewhere_and_a_dry_run_that_writes_nothing(tmp_path: Path, compiled: Path) -> None:
    base = _lab(tmp_path, compiled)
    elsewhere = tmp_path / "state" / "demand.yaml"
    elsewhere.parent.mkdir()
    assert _recommend(base, "--state", str(elsewhere))[0] == 0
    assert elsewhere.is_file() and not (base / "pol" / STATE_FILE).exists()
    before = {p.name: p.read_bytes() for p in (base / "pol").iterdir()}
    rc, _, err = _recommend(base, "--dry-run")
    assert rc == 0 and "(dry run: nothing written)" in err
    assert {p.name: p.read_bytes() for p in (base / "pol").iterdir()} == before


def test_a_proposal_edits_the_workload_and_records_the_state_exit_3(tmp_path: Path, compiled: Path) -> None:
    base = _lab(tmp_path, compiled, urgent=True)  # pending an hour with a 15m max wait: no window
    workloads = base / "pol" / "workloads.yaml"
    before = workloads.read_text(encoding="utf-8")
    rc, stdout, err = _recommend(base, "-o", "json")
    assert rc == 3 and "change proposed; state in" in err
    assert json.loads(stdout)["replicas"] == [{"workload": "student-notebooks", "from": 10, "to": 18}]
    assert workloads.read_text(encoding="utf-8") == before.replace("replicas: 10", "replicas: 18")
    assert (base / "pol" / STATE_FILE).is_file()


def test_an_unreadable_cluster_or_a_bad_now_writes_nothing(tmp_path: Path, compiled: Path) -> None:
    base = _lab(tmp_path, compiled)
    (base / "snap.json").write_text("{not json")
    rc, stdout, err = _recommend(base)
    assert rc == 1 and stdout == "" and "MIGC400" in err
    assert not (base / "pol" / STATE_FILE).exists()
    rc, _, err = _run(command, str(base / "pol"), "--snapshot", str(base / "snap.json"), "--now", "06:00")
    assert rc == 1 and "MIGC406" in err
    rc, _, err = _run(command, str(base / "pol"))
    assert rc == 2 and "give either --snapshot" in err


@pytest.mark.parametrize(
    "given", [("--drain-grace", "600"), ("--reconfigure-seconds", "90"), ("--drain-seconds", "300")]
)
def test_the_disruption_rules_prices_are_a_usage_error_without_the_rule(
    tmp_path: Path, compiled: Path, given: tuple[str, str]
) -> None:
    """``--disruption off`` weighs nothing by G, R or D: given with it, they were accepted and ignored
    (the JSON evidence even echoed ``"drainSeconds": 300`` under ``"model": "off"``). A usage error
    names them, before anything is read or written; each is still taken with the rule on."""
    base = _lab(tmp_path, compiled)
    rc, stdout, err = _recommend(base, "--disruption", "off", *given)
    assert rc == 2 and stdout == "" and f"{given[0]}: not with --disruption off" in err
    assert not (base / "pol" / STATE_FILE).exists()
    rc, stdout, _ = _recommend(base, "--dry-run", "-o", "json", *given)
    assert rc in (0, 3) and json.loads(stdout)["disruption"]["model"] == "expected"
    rc, stdout, _ = _recommend(base, "--dry-run", "-o", "json", "--disruption", "off")
    assert rc in (0, 3) and json.loads(stdout)["disruption"]["model"] == "off"  # the defaults: fine
