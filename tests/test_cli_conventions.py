"""The command-line conventions every command shares (issue 25, item 15): ``-o/--output`` is the format
of stdout everywhere (discover included, its diagnostics format is ``--diagnostics-format``); bare
``migc`` prints the help and exits 0; migc writes no colour; long sizing solves report progress; the
status pending table has a header per column; recommend gives no verdict on a change that does not
exist."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from statusfleet import fleet, pod, status_argv, write_snapshot

from compiler.advise.sizing import size_policy
from compiler.catalog import load_catalog
from compiler.cli import main
from compiler.pipeline import load_and_validate

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "examples/lab", "--output", "json"],
        ["plan", "examples/lab", "--from-scratch", "--output", "json"],
        # --now: pending times are counted to it, so two runs a second apart would differ
        [
            "status",
            "examples/prod",
            "--snapshot",
            "examples/snapshots/prod-east.json",
            "--now",
            "2026-12-01T12:00:00Z",
            "--output",
            "json",
        ],
    ],
)
def test_long_output_is_the_same_option_as_o(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0
    long = capsys.readouterr().out
    assert main([a if a != "--output" else "-o" for a in argv]) == 0
    assert capsys.readouterr().out == long
    json.loads(long)


def test_bare_migc_prints_help_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: migc") and "Commands:" in out and "-o/--output" in out


def test_no_colour_is_ever_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap = write_snapshot(tmp_path / "cluster.json")
    runs = (
        ["validate", "examples/prod"],
        ["plan", "examples/lab", "--from-scratch"],
        status_argv("--snapshot", str(snap)),
    )
    for argv in runs:
        main(argv)
        captured = capsys.readouterr()
        assert "\x1b[" not in captured.out + captured.err


def test_pending_table_has_a_header_per_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = fleet()
    hint = {"migc.dev/max-wait-time": "5m"}
    cluster["items"].append(pod("waiting", "search", "nvidia.com/mig-1g.10gb", annotations=hint))
    snap = write_snapshot(tmp_path / "cluster.json", cluster)
    assert main(status_argv("--snapshot", str(snap))) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Pending GPU pods: 1"))
    header, row = lines[at + 1].split(), lines[at + 2].split()
    assert header == ["POD", "TENANT", "REQUESTS", "PENDING", "MAX-WAIT", "OVER-MAX"]
    assert len(row) == len(header) and row[0] == "search/waiting" and row[-1] == "yes"


def test_sizing_reports_each_solve_before_it_runs() -> None:
    policy, _ = load_and_validate([ROOT / "examples" / "lab"])
    assert policy is not None
    said: list[str] = []
    size_policy(policy, load_catalog(), 5.0, said.append)
    assert said and all(s.startswith("sizing cluster lab on ") and "up to 5 s" in s for s in said)
    assert said[-1].endswith(f"({len(said)} of {len(said)}, up to 5 s)")


def test_recommend_gives_no_verdict_on_a_change_that_does_not_exist(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["recommend", "examples/prod", "--snapshot", "examples/snapshots/prod-east.json", "--dry-run"]
    assert main([*argv, "-o", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "not worth it" not in md
    assert "**Verdict:** nothing to weigh: the proposal reconfigures no node." in md


def test_status_prints_markdown_with_the_text_report_s_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = write_snapshot(tmp_path / "cluster.json")
    assert main(status_argv("--snapshot", str(snap), "-o", "markdown")) == 0
    md = capsys.readouterr().out
    assert md.startswith("## migc status — ")
    headings = ("### Nodes", "### Pools", "### Tenants", "### Pending GPU pods: 0", "### Drift: 0 node(s)")
    assert all(h in md for h in headings)
    rows = [line for line in md.splitlines() if line.startswith("| gpu-")]
    assert len(rows) == 11 and all(row.count(" | ") == 7 for row in rows)  # 8 cells per node row


def test_a_refused_input_no_command_caught_is_a_diagnostic_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every stage error carries its diagnostic (``DiagnosticError``); one that escapes a command is
    printed as that diagnostic with exit 1, not as an internal error (70)."""
    from compiler import cli
    from compiler.diagnostics import make
    from compiler.fsio import ReadRefused

    def refuse(**_: object) -> int:
        raise ReadRefused(make("MIGC304", "cannot read output/x.yaml: a directory", file="output/x.yaml"))

    monkeypatch.setattr(cli.cli, "main", refuse)
    assert main(["validate", "examples/lab"]) == 1
    err = capsys.readouterr().err
    assert "output/x.yaml" in err and "MIGC304" in err
    assert "MIGC000" not in err and "internal error" not in err


def test_any_other_exception_is_an_internal_error_exit_70(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from compiler import cli

    def crash(**_: object) -> int:
        raise RuntimeError("boom")

    monkeypatch.setattr(cli.cli, "main", crash)
    assert main(["validate", "examples/lab"]) == 70
    err = capsys.readouterr().err
    assert "MIGC000" in err and "RuntimeError: boom" in err and "Traceback" not in err


IGNORE_CASES = {
    "recommend": (
        ["recommend", "examples/prod", "--snapshot", "examples/snapshots/prod-east.json", "--dry-run"],
        "MIGC424",
    ),
}


@pytest.mark.parametrize("name", sorted(IGNORE_CASES))
def test_ignore_works_on_every_command_that_prints_diagnostics(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--ignore CODE`` leaves that code's warnings out of stderr, once, where diagnostics are printed
    (compiler.commands._common.emit_diagnostics); the other diagnostics stay; an unknown code is a
    usage error."""
    argv, code = IGNORE_CASES[name]
    main(argv)
    before = capsys.readouterr().err
    assert code in before
    main([*argv, "--ignore", code])
    after = capsys.readouterr().err
    assert code not in after
    assert [line for line in before.splitlines() if "migc: MIGC" in line and code not in line] == [
        line for line in after.splitlines() if "migc: MIGC" in line
    ]
    assert main([*argv, "--ignore", "MIGC9999"]) == 2


@pytest.mark.parametrize(
    "argv",
    [
        # --now pinned: the report dates itself by the clock, which two runs may straddle
        [
            "status",
            "examples/prod",
            "--snapshot",
            "examples/snapshots/prod-east.json",
            "--now",
            "2026-12-01T06:00:00Z",
        ],
        ["advise", "examples/lab"],
        [
            "simulate",
            "--trace",
            "examples/traces/openb-pod-list-default-300.csv",
            "--gpu-product",
            "NVIDIA-A100-SXM4-80GB",
            "--nodes",
            "2",
            "--baseline",
            "naive",
        ],
        ["discover", "-q"],  # no NVML here: MIGC901/MIGC902, exit 1 with or without --ignore
    ],
    ids=["status", "advise", "simulate", "discover"],
)
def test_every_diagnostic_printing_command_takes_ignore(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The same option everywhere: a known warning code is accepted (same exit and stdout), an
    unknown one is a usage error."""
    rc = main(argv)
    out = capsys.readouterr().out
    assert main([*argv, "--ignore", "MIGC255"]) == rc
    assert capsys.readouterr().out == out
    assert main([*argv, "--ignore", "MIGC9999"]) == 2
