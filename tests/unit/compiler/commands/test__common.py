"""compiler/commands/_common.py: the options and exit path every command shares, driven through a
tiny click command built from them (``click.testing.CliRunner``)."""

from __future__ import annotations

import datetime as dt
import errno

import click
import pytest
from click.testing import CliRunner

from compiler.cli import main
from compiler.commands._common import (
    cannot_write,
    emit_diagnostics,
    fail,
    ignore_option,
    ignored_codes,
    observation_time,
    output_format_option,
    require_one_cluster_source,
    result_format_option,
)
from compiler.diagnostics import Diagnostic, make

WARNING = make("MIGC404", "no usage from Prometheus: down")  # a warning
NOTE = make("MIGC512", "no declared workload is served by this pool")  # a note
ERROR = make("MIGC301", "cannot write out/x.yaml: disk full", file="out/x.yaml")  # an error


@click.command()
@ignore_option
@output_format_option
def report(ignore: tuple[str, ...], output_format: str) -> None:
    click.echo(f"ignored={','.join(ignored_codes())}", err=True)
    emit_diagnostics([WARNING, NOTE, ERROR], output_format, to_stderr=False)


def test_ignore_leaves_out_warnings_and_notes_of_the_codes_but_never_errors() -> None:
    result = CliRunner().invoke(report, ["--ignore", "migc404, MIGC512", "--ignore", "MIGC404"])
    assert result.exit_code == 0
    assert "ignored=MIGC404,MIGC512" in result.stderr  # upper-cased, split on commas, de-duplicated
    assert "MIGC404" not in result.stdout and "MIGC512" not in result.stdout
    assert "MIGC301" in result.stdout and "out/x.yaml" in result.stdout
    plain = CliRunner().invoke(report, [])
    assert all(code in plain.stdout for code in ("MIGC404", "MIGC512", "MIGC301"))


@pytest.mark.parametrize(
    ("code", "why"), [("MIGC301", "is an error"), ("MIGC9999", "is not a migc diagnostic code")]
)
def test_ignoring_an_error_or_an_unknown_code_is_a_usage_error(code: str, why: str) -> None:
    result = CliRunner().invoke(report, ["--ignore", code])
    assert result.exit_code == 2 and why in result.stderr


def test_output_format_names_the_diagnostics_format_under_three_spellings() -> None:
    for flag in ("-o", "--output", "--output-format"):
        result = CliRunner().invoke(report, [flag, "json"])
        assert result.exit_code == 0 and result.stdout.lstrip().startswith(("[", "{")), flag
    assert CliRunner().invoke(report, ["-o", "yaml"]).exit_code == 2


def test_result_format_offers_only_the_given_choices() -> None:
    @click.command()
    @result_format_option(["text", "markdown"])
    def show(fmt: str) -> None:
        click.echo(fmt)

    assert CliRunner().invoke(show, []).stdout == "text\n"
    assert CliRunner().invoke(show, ["--output", "markdown"]).stdout == "markdown\n"
    assert CliRunner().invoke(show, ["-o", "json"]).exit_code == 2


def test_fail_prints_the_diagnostics_and_the_summary_on_stderr_and_returns_the_status() -> None:
    @click.command()
    def broken() -> None:
        raise SystemExit(fail([ERROR, WARNING], summary="policy", status=7))

    result = CliRunner().invoke(broken, [])
    assert result.exit_code == 7 and result.stdout == ""
    assert "MIGC301" in result.stderr and "MIGC404" in result.stderr
    assert result.stderr.rstrip().endswith("migc: 1 error, 1 warning")


def test_observation_time_reads_rfc3339_with_a_zone_only() -> None:
    assert observation_time("2026-12-01T06:00:00Z") == dt.datetime(2026, 12, 1, 6, tzinfo=dt.UTC)
    later = observation_time("2026-12-01T08:00:00+02:00")
    assert later == dt.datetime(2026, 12, 1, 6, tzinfo=dt.UTC)  # the same instant
    for bad in ("2026-12-01T06:00:00", "yesterday", ""):
        d = observation_time(bad)
        assert isinstance(d, Diagnostic) and d.code == "MIGC406", bad
    now = observation_time(None)
    assert isinstance(now, dt.datetime) and now.tzinfo is not None and now.microsecond == 0


def test_exactly_one_cluster_source() -> None:
    require_one_cluster_source(["a.json"], None, None, False)
    require_one_cluster_source([], "/k/config", None, False)
    require_one_cluster_source([], None, None, True)
    for snapshots, kubeconfig, in_cluster in (([], None, False), (["a.json"], "/k/config", False)):
        with pytest.raises(click.UsageError, match="give either --snapshot"):
            require_one_cluster_source(snapshots, kubeconfig, None, in_cluster)
    with pytest.raises(click.UsageError):
        require_one_cluster_source(["a.json"], None, "prod", False)  # a context is a live source


def test_cannot_write_names_the_file_and_the_os_reason() -> None:
    d = cannot_write("out/x.yaml", OSError(errno.ENOSPC, "No space left on device"))
    assert (d.code, d.file) == ("MIGC301", "out/x.yaml")
    assert d.message == "cannot write out/x.yaml: No space left on device"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("nan", "is not a finite number"),
        ("inf", "is not a finite number"),
        ("1e999", "is not a finite number"),
        ("1e300", "is not in the range 0<=x<=604800"),
        ("-1", "is not in the range 0<=x<=604800"),
    ],
)
@pytest.mark.parametrize("flag", ["--drain-seconds", "--drain-grace", "--reconfigure-seconds"])
def test_a_disruption_option_that_is_not_a_finite_number_is_a_usage_error(
    flag: str, value: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """click's FloatRange(min=0) let ``nan`` and ``inf`` through (NaN fails no comparison): recommend
    then printed ``"drainSeconds": NaN`` (not JSON) and the replay under ``--drain-seconds inf`` (or
    1e300) never ended. Both commands refuse such a G, R or D, and one above a week, before reading
    anything (exit 2, no output)."""
    recommend = ["recommend", "missing-policy", "--snapshot", "missing.json", "--dry-run"]
    a100 = ["--gpu-product", "NVIDIA-A100-SXM4-80GB", "--nodes", "1"]
    simulate = ["simulate", "--trace", "missing.csv", *a100]
    for args in (recommend, simulate):
        assert main([*args, flag, value]) == 2, (args[0], flag, value)
        out, err = capsys.readouterr()
        assert out == "" and flag in err and why in err, err
        assert "MIGC001" not in err and "MIGC425" not in err  # refused before a file is read
    for args, missing in ((recommend, "MIGC001"), (simulate, "MIGC425")):  # 0 and a week are seconds
        for fine in ("0", "604800"):
            assert main([*args, flag, fine]) == 1
            assert missing in capsys.readouterr().err  # past the option: the missing file is next


@pytest.mark.parametrize(
    ("args", "flag", "bad", "fine", "missing"),
    [
        (
            ["simulate", "--trace", "missing.csv", "--gpu-product", "NVIDIA-A100-SXM4-80GB", "--nodes", "1"],
            "--time-scale",
            ("nan", "inf"),
            "1e300",
            "MIGC425",
        ),
        (
            ["simulate", "--trace", "missing.csv", "--gpu-product", "NVIDIA-A100-SXM4-80GB", "--nodes", "1"],
            "--failure-rate",
            ("nan",),
            "0.5",
            "MIGC425",
        ),
        (["advise", "missing-policy"], "--time-limit", ("nan", "inf", "1e300"), "86400", "MIGC001"),
        (["status", "missing-policy", "--snapshot", "missing.json"], "--timeout", ("nan",), "600", "MIGC001"),
    ],
)
def test_every_number_option_refuses_nan_and_what_its_command_cannot_use(
    args: list[str],
    flag: str,
    bad: tuple[str, ...],
    fine: str,
    missing: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The other commands' FloatRange options let ``nan`` through too, and some ``inf``: ``simulate
    --time-scale nan`` was an internal error (exit 70), ``--time-scale inf`` and ``--failure-rate nan``
    printed ``Infinity`` / ``NaN`` (not JSON), ``advise --time-limit inf`` (or 1e300) aborted the
    process (HiGHS's thread wait overflowed), ``--time-limit nan`` gave "the nans solver time limit".
    Each is now a usage error before anything is read; the largest value a command can use passes."""
    for value in bad:
        assert main([*args, flag, value]) == 2, (flag, value)
        out, err = capsys.readouterr()
        assert out == "" and flag in err and missing not in err, err
        assert "is not a finite number" in err or "is not in the range" in err, err
    assert main([*args, flag, fine]) == 1
    assert missing in capsys.readouterr().err  # past the option: the missing file is next
