"""The ``migc`` command line: wires one module per subcommand (``compiler/commands/``).

Subcommands are imported only when they run, so ``migc --version`` or ``migc explain`` does not pay
for the solver, the renderer and their libraries, and ``migc validate`` never imports the solver.
Exit codes, the same for every subcommand, live in :mod:`compiler.exitcodes`.
"""

from __future__ import annotations

import gc
import importlib
import sys
import traceback
from dataclasses import dataclass

import click

from compiler import __version__
from compiler.exitcodes import ExitCode


@dataclass(frozen=True)
class CommandEntry:
    """Where a subcommand lives and the one line ``migc --help`` shows for it (without importing it)."""

    module: str
    summary: str


# Each module exposes ``command: click.Command``. Listed explicitly so the CLI surface is reviewable here;
# a test checks every summary against the command's own short help.
COMMANDS: dict[str, CommandEntry] = {
    "advise": CommandEntry(
        "compiler.commands.advise",
        "Advise a sharing mode per pool and size the demand per GPU model, with $/hour.",
    ),
    "compile": CommandEntry(
        "compiler.commands.compile",
        "Compile policy PATHS (files or directories) into Kubernetes manifests under --out.",
    ),
    "discover": CommandEntry(
        "compiler.commands.discover",
        "Read MIG geometry through NVML (never changes MIG mode, instances or resets) and print it.",
    ),
    "explain": CommandEntry(
        "compiler.commands.explain", "Explain a diagnostic code such as MIGC006, or list every code."
    ),
    "plan": CommandEntry(
        "compiler.commands.plan",
        "Show what compiling policy PATHS would change: nodes, GPUs, capacity, evictions and cost.",
    ),
    "recommend": CommandEntry(
        "compiler.commands.recommend",
        "Propose a re-partitioning from observed demand when the PartitionPolicy's gates allow it.",
    ),
    "schema": CommandEntry(
        "compiler.commands.schema",
        "Print the JSON Schema (draft 2020-12) of KIND (Fleet, Tenant, Workload, PartitionPolicy).",
    ),
    "simulate": CommandEntry(
        "compiler.commands.simulate",
        "Replay a pod trace (openb CSV) on a simulated MIG fleet and compare re-partitioning policies.",
    ),
    "status": CommandEntry(
        "compiler.commands.status",
        "Show GPU capacity, allocation, use, pending pods, rollouts, drift and cost per node, pool and "
        "tenant.",
    ),
    "validate": CommandEntry(
        "compiler.commands.validate", "Check policy sets against the schemas and semantic rules."
    ),
    "version": CommandEntry(
        "compiler.commands.version",
        "Print the migc version, the policy apiVersion it reads and the catalog size.",
    ),
}


class LazyGroup(click.Group):
    """A group that imports a subcommand's module only when that subcommand is looked up to run."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        command: click.Command = importlib.import_module(entry.module).command
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own listing calls get_command for every entry (importing them all); the summaries
        # in COMMANDS give the same table without that.
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = [(n, click.Command(n, help=COMMANDS[n].summary).get_short_help_str(limit)) for n in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, "-V", "--version", prog_name="migc")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """migc: compile GPU-sharing policy (fleet, tenants, demand) into MIG layouts and Kubernetes objects.

    Conventions of every command: data on stdout, logs and diagnostics on stderr (validate and compile
    print their diagnostics on stdout: they are those commands' data); -o/--output names the format of
    stdout; exit 0 ok, 1 invalid input or infeasible, 2 usage error, 3 drift or changes (only with
    --check/--exit-code, or a proposed change), 70 internal error. migc writes no colour (NO_COLOR
    holds trivially); long solves report progress on stderr.
    """
    if ctx.invoked_subcommand is None:
        # bare `migc`, like `kubectl` and `helm`: the help on stdout, exit 0
        click.echo(ctx.get_help())


# Collect cyclic garbage after 100,000 net allocations instead of 700: a compile of 80,000 GPUs
# builds millions of long-lived objects (documents, model, rendered tree) and ran 465 young and 3
# full collections over them (0.13 s of CPU, 0.5 s wall on a busy machine, for plan more); migc's
# commands leave little cyclic garbage, so memory stays bounded by what they hold anyway.
_GC_THRESHOLD = (100_000, 50, 100)


def main(argv: list[str] | None = None) -> int:
    """Entry point; never lets a traceback reach the user except under ``MIGC_DEBUG=1``."""
    gc.set_threshold(*_GC_THRESHOLD)
    try:
        rc = cli.main(args=argv, prog_name="migc", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("migc: aborted", err=True)
        return ExitCode.INVALID
    except click.exceptions.UsageError as exc:
        exc.show()
        return ExitCode.USAGE
    except click.exceptions.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except KeyboardInterrupt:
        click.echo("migc: interrupted; nothing was written", err=True)
        return ExitCode.INTERRUPTED
    except Exception as exc:  # the last line of defence: report, do not crash with a traceback
        import os

        from compiler.diagnostics import DiagnosticError

        if isinstance(exc, DiagnosticError):
            # input a stage refused that its command did not catch: the diagnostic, exit 1 — still
            # not a crash (nothing is written before a command's last step)
            from compiler.commands._common import fail

            return fail([exc.diagnostic])
        if os.environ.get("MIGC_DEBUG"):
            traceback.print_exc()
        click.echo(
            f"migc: internal error (MIGC000): {type(exc).__name__}: {exc}\n"
            "  nothing was written; rerun with MIGC_DEBUG=1 for a traceback and report it",
            err=True,
        )
        return ExitCode.INTERNAL
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
