"""The CLI imports a subcommand only when it runs: `--version`, `--help` and `explain` stay cheap, and
`validate` never loads the solver or the renderer. Each check runs the real entry point
(`compiler.cli:main`, what the `migc` script calls) in a fresh interpreter and reads `sys.modules`;
startup *time* is measured in bench/startup.py, never asserted here."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from compiler.cli import COMMANDS, cli, main
from compiler.exitcodes import ExitCode

REPO = Path(__file__).resolve().parents[3]

SOLVER = ("highspy", "networkx", "compiler.solve")
RENDERER = ("jinja2", "compiler.render")
ALL_COMMANDS = tuple(e.module for e in COMMANDS.values())

_PROBE = """
import contextlib, io, json, sys
from compiler.cli import main
out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    rc = main(sys.argv[1:])
    out.flush()
text = out.buffer.getvalue().decode()
print(json.dumps({"rc": int(rc), "out": text, "err": err.getvalue(), "modules": sorted(sys.modules)}))
"""


def _imported(*args: str) -> tuple[int, str, set[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], cwd=REPO, capture_output=True, text=True, check=True
    )
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["rc"] in (ExitCode.OK, ExitCode.INVALID), result["err"]
    return int(result["rc"]), str(result["out"]), set(result["modules"])


def _loaded(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_validate_imports_neither_solver_nor_renderer() -> None:
    rc, _, modules = _imported("validate", "examples/prod")
    assert rc == ExitCode.OK
    assert "compiler.commands.validate" in modules  # the probe really ran the command
    assert _loaded(modules, SOLVER + RENDERER) == []
    assert _loaded(modules, ("compiler.commands.compile", "compiler.commands.plan")) == []


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("explain", "MIGC006")])
def test_short_calls_import_no_pipeline_stage(args: tuple[str, ...]) -> None:
    rc, out, modules = _imported(*args)
    assert rc == ExitCode.OK and out
    heavy = ("jsonschema", "ruamel", "compiler.validate", "compiler.load", *SOLVER, *RENDERER)
    assert _loaded(modules, heavy) == []
    others = [m for m in ALL_COMMANDS if m != "compiler.commands.explain"]
    assert _loaded(modules, tuple(others)) == []


def test_a_valid_compile_never_imports_jsonschema() -> None:
    # jsonschema-rs answers "valid?" for the policy, the catalog and the deployed assignment;
    # jsonschema (0.05 s to import) is only for wording the errors of a document it did not accept.
    pytest.importorskip("jsonschema_rs")
    rc, out, modules = _imported("compile", "examples/prod", "--stdout")
    assert rc == ExitCode.OK and "kind: " in out
    assert "jsonschema_rs" in modules
    assert _loaded(modules, ("jsonschema",)) == []


def test_an_invalid_policy_still_gets_jsonschemas_diagnostics(tmp_path: Path) -> None:
    policy = tmp_path / "bad.yaml"
    policy.write_text("apiVersion: migc.dev/v1alpha1\nkind: Tenant\nmetadata: {name: a}\nspec: {nope: 1}\n")
    rc, _, modules = _imported("validate", str(policy))
    assert rc == ExitCode.INVALID
    assert "jsonschema" in modules


def test_compile_does_load_the_solver_so_the_probe_can_tell() -> None:
    # The negative checks above mean something only if the probe sees a solver import when one happens.
    rc, out, modules = _imported("compile", "examples/prod", "--stdout")
    assert rc == ExitCode.OK and "kind: " in out
    assert "compiler.solve" in modules and "highspy" in modules


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_table_matches_each_command(name: str) -> None:
    command = importlib.import_module(COMMANDS[name].module).command
    assert isinstance(command, click.Command)
    assert command.name == name
    assert COMMANDS[name].summary == command.get_short_help_str(limit=1000)


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == ExitCode.OK
    out = capsys.readouterr().out
    listed = out.split("Commands:", 1)[1].split()
    for name in COMMANDS:
        assert name in listed
    assert sorted(cli.list_commands(click.Context(cli))) == sorted(COMMANDS)


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == ExitCode.USAGE
    assert "No such command 'frobnicate'" in capsys.readouterr().err


def test_code_registry_is_the_same_with_libyaml_and_pure_python(monkeypatch: pytest.MonkeyPatch) -> None:
    # `explain` reads every code at startup, through libyaml when PyYAML has it; both loaders must agree.
    import yaml

    from compiler import diagnostics

    fast = dict(diagnostics.registry())
    monkeypatch.setattr(diagnostics, "_SAFE_LOADER", yaml.SafeLoader)
    diagnostics.registry.cache_clear()
    try:
        assert dict(diagnostics.registry()) == fast
    finally:
        diagnostics.registry.cache_clear()
    assert len(fast) > 50


def test_every_command_runs_with_the_large_collection_threshold() -> None:
    # bench.planspeed: the default 700 ran 465 young and 3 full collections over a compile's
    # long-lived objects at 80,000 GPUs; the entry point raises it for every command.
    import gc

    from compiler import cli as cli_module

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        assert main(["--version"]) == ExitCode.OK
        assert gc.get_threshold() == cli_module._GC_THRESHOLD
    finally:
        gc.set_threshold(*before)


# --- what main() turns each way out of a command into (exit codes: compiler/exitcodes.py) -----------


def _raising(exc: BaseException) -> object:
    def run(**_: object) -> int:
        raise exc

    return run


def test_an_interrupt_is_exit_130_and_says_nothing_was_written(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "main", _raising(KeyboardInterrupt()))
    assert main(["validate", "examples/lab"]) == ExitCode.INTERRUPTED
    assert int(ExitCode.INTERRUPTED) == 130  # 128 + SIGINT, as a shell reports it
    assert capsys.readouterr().err == "migc: interrupted; nothing was written\n"


def test_an_abort_is_exit_1_and_a_click_error_keeps_its_own_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "main", _raising(click.exceptions.Abort()))
    assert main(["validate"]) == ExitCode.INVALID
    assert capsys.readouterr().err == "migc: aborted\n"
    class Refused(click.ClickException):
        exit_code = 4

    error = Refused("cannot do that")
    monkeypatch.setattr(cli, "main", _raising(error))
    assert main(["validate"]) == 4
    assert "cannot do that" in capsys.readouterr().err


def test_an_internal_error_shows_a_traceback_only_under_migc_debug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "main", _raising(ZeroDivisionError("oops")))
    monkeypatch.delenv("MIGC_DEBUG", raising=False)
    assert main(["plan"]) == ExitCode.INTERNAL
    assert "Traceback" not in capsys.readouterr().err
    monkeypatch.setenv("MIGC_DEBUG", "1")
    assert main(["plan"]) == ExitCode.INTERNAL
    err = capsys.readouterr().err
    assert "Traceback" in err and "ZeroDivisionError: oops" in err and "MIGC000" in err


def test_bare_migc_and_an_option_error_exit_0_and_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == ExitCode.OK
    assert capsys.readouterr().out.startswith("Usage: migc")
    assert main(["--no-such-option"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith("Usage: migc") and "--no-such-option" in err
