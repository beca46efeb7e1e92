"""compiler/commands/status.py: expected layouts from --against (or the solved policy), filters that
must name the policy, --exit-code on drift and the HTML file, on tests/cases/valid/minimal with a
cluster built from its own assignment (tests/statusfleet.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
import statusfleet as sf
from click.testing import CliRunner

from compiler.commands.compile import command as compile_command
from compiler.commands.status import command
from compiler.current import ASSIGNMENT_FILE, read_assignment

MINIMAL = str(Path(__file__).resolve().parents[3] / "cases" / "valid" / "minimal")
NOW = "2026-12-01T06:00:00Z"


def _run(cmd: click.Command, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cmd, list(args), standalone_mode=False)
    if isinstance(result.exception, click.ClickException):
        return result.exception.exit_code, result.stdout, result.stderr + result.exception.format_message()
    assert result.exception is None, result.exception
    return int(result.return_value), result.stdout, result.stderr


@pytest.fixture
def rendered(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The minimal policy compiled to tmp_path/out, and the cluster exactly as it assigns."""
    out = tmp_path / "out"
    assert _run(compile_command, MINIMAL, "--out", str(out))[0] == 0
    doc = read_assignment(out / "east" / ASSIGNMENT_FILE)
    return out, sf.fleet(doc)


def _status(tmp_path: Path, cluster: dict[str, Any], *args: str) -> tuple[int, str, str]:
    snap = sf.write_snapshot(tmp_path / "snap.json", cluster)
    return _run(command, MINIMAL, "--snapshot", str(snap), "--now", NOW, *args)


def test_a_cluster_as_assigned_shows_every_node_and_no_drift(
    tmp_path: Path, rendered: tuple[Path, dict[str, Any]]
) -> None:
    out, cluster = rendered
    rc, stdout, err = _status(tmp_path, cluster, "--against", str(out), "--exit-code", "-o", "json")
    report = json.loads(stdout)
    assert rc == 0 and report["expected_from"] == f"{out}/"
    assert sorted(n["name"] for n in report["nodes"]) == sorted(
        sf.node_names(read_assignment(out / "east" / ASSIGNMENT_FILE))
    )
    assert report["missing_nodes"] == []
    assert err.strip().endswith("0 drifted")


def test_a_node_on_another_config_drifts_and_exit_code_makes_it_3(
    tmp_path: Path, rendered: tuple[Path, dict[str, Any]]
) -> None:
    out, cluster = rendered
    node_b = next(i for i in cluster["items"] if i["kind"] == "Node" and i["metadata"]["name"] == "node-b")
    node_b["metadata"]["labels"]["nvidia.com/mig.config"] = "all-disabled-8gpu-whole-gpus"  # node-a's
    rc, _, err = _status(tmp_path, cluster, "--against", str(out))
    assert rc == 0 and err.strip().endswith("1 drifted")  # shown, not a failure
    assert _status(tmp_path, cluster, "--against", str(out), "--exit-code")[0] == 3


def test_without_a_render_the_solved_policy_is_expected(
    tmp_path: Path, rendered: tuple[Path, dict[str, Any]]
) -> None:
    _, cluster = rendered
    rc, stdout, _ = _status(tmp_path, cluster, "--against", str(tmp_path / "none"), "-o", "json")
    assert rc == 0 and json.loads(stdout)["expected_from"] == "the solved policy"


def test_an_unusable_assignment_is_migc405(tmp_path: Path, rendered: tuple[Path, dict[str, Any]]) -> None:
    out, cluster = rendered
    (out / "east" / ASSIGNMENT_FILE).write_text("kind: ConfigMap\ndata: {assignment.json: '{}'}\n")
    rc, stdout, err = _status(tmp_path, cluster, "--against", str(out))
    assert rc == 1 and stdout == "" and "MIGC405" in err and "no usable assignment for cluster east" in err


@pytest.mark.parametrize(("option", "value"), [("--pool", "h100"), ("--tenant", "nobody")])
def test_a_filter_the_policy_does_not_name_is_a_usage_error(
    tmp_path: Path, rendered: tuple[Path, dict[str, Any]], option: str, value: str
) -> None:
    _, cluster = rendered
    rc, _, err = _status(tmp_path, cluster, option, value)
    assert rc == 2 and f"not in the policy: {value}" in err


def test_the_html_console_is_written_and_named(tmp_path: Path, rendered: tuple[Path, dict[str, Any]]) -> None:
    out, cluster = rendered
    page = tmp_path / "console" / "status.html"
    page.parent.mkdir()
    rc, _, err = _status(tmp_path, cluster, "--against", str(out), "--html", str(page))
    assert rc == 0 and err.strip().endswith(f"; wrote {page}")
    assert "node-a" in page.read_text(encoding="utf-8")


def test_a_bad_now_or_two_cluster_sources_are_refused(tmp_path: Path) -> None:
    snap = sf.write_snapshot(tmp_path / "snap.json", {"kind": "List", "items": []})
    rc, _, err = _run(command, MINIMAL, "--snapshot", str(snap), "--now", "noon")
    assert rc == 1 and "MIGC406" in err
    rc, _, err = _run(command, MINIMAL, "--snapshot", str(snap), "--in-cluster")
    assert rc == 2 and "give either --snapshot" in err
