"""compiler/commands/plan.py: --against must be a migc render, --from-scratch plans a first rollout,
and --exit-code turns "changes present" into exit 3, on tests/cases/valid/minimal."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click
from click.testing import CliRunner

from compiler.commands.compile import command as compile_command
from compiler.commands.plan import _render_check, command

MINIMAL = Path(__file__).resolve().parents[3] / "cases" / "valid" / "minimal"


def _run(cmd: click.Command, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cmd, list(args), standalone_mode=False)
    if isinstance(result.exception, click.ClickException):
        return result.exception.exit_code, result.stdout, result.stderr + result.exception.format_message()
    assert result.exception is None, result.exception
    return int(result.return_value), result.stdout, result.stderr


def test_only_a_directory_migc_compile_wrote_is_a_render(tmp_path: Path) -> None:
    assert _render_check(tmp_path / "nope") == f"{tmp_path / 'nope'} does not exist"
    (tmp_path / "file").write_text("x")
    assert _render_check(tmp_path / "file") == f"{tmp_path / 'file'} is not a directory"
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    assert _render_check(tmp_path / "dangling") == f"{tmp_path / 'dangling'} is a dangling symbolic link"
    out = tmp_path / "out"
    (out / "east").mkdir(parents=True)
    why = _render_check(out)
    assert why is not None and "no cluster directory with a .migc-index.json" in why
    (out / "east" / ".migc-index.json").mkdir()  # a directory of that name is not the index
    assert _render_check(out) is not None
    (out / "west").mkdir()
    (out / "west" / ".migc-index.json").write_text("{}")
    assert _render_check(out) is None


def test_planning_against_something_else_is_a_usage_error(tmp_path: Path) -> None:
    rc, stdout, err = _run(command, str(MINIMAL), "--against", str(tmp_path))
    assert rc == 2 and stdout == "" and "MIGC323" in err and "--from-scratch" in err
    rc, _, err = _run(command, str(MINIMAL), "--against", str(tmp_path), "--from-scratch")
    assert rc == 2 and "--from-scratch and --against exclude each other" in err


def test_no_change_against_its_own_render_and_exit_3_only_when_asked(tmp_path: Path) -> None:
    policy = tmp_path / "policy"
    shutil.copytree(MINIMAL, policy)
    out = tmp_path / "out"
    assert _run(compile_command, str(policy), "--out", str(out))[0] == 0
    rc, stdout, _ = _run(command, str(policy), "--against", str(out), "--exit-code", "-o", "json")
    assert rc == 0 and json.loads(stdout)["hasChanges"] is False
    assert _run(command, str(policy), "--from-scratch", "--exit-code")[0] == 3  # a first rollout changes all
    # 14 replicas of bert (1g.10gb, quota raised to match) where the deployed layout carries 7: one
    # more GPU is partitioned
    workloads, tenants = policy / "workloads.yaml", policy / "tenants.yaml"
    workloads.write_text(workloads.read_text().replace("replicas: 4", "replicas: 14"))
    tenants.write_text(tenants.read_text().replace("1g.10gb: 4}", "1g.10gb: 14}"))
    rc, stdout, _ = _run(command, str(policy), "--against", str(out), "-o", "json")
    assert rc == 0 and json.loads(stdout)["hasChanges"] is True  # changes, but no --exit-code
    assert _run(command, str(policy), "--against", str(out), "--exit-code")[0] == 3
