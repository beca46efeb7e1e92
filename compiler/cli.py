"""The ``migc`` command line: wires one module per subcommand (``compiler/commands/``).

Exit codes, the same for every subcommand:

* 0 success, nothing to report (or only notes/warnings below the fail level)
* 1 invalid input or an infeasible policy
* 2 usage error (click's own convention, kept so shells and CI behave as users expect)
* 3 drift or changes present (only with ``--check`` / ``--exit-code``)
* 70 internal error (``EX_SOFTWARE``): a bug in migc; nothing was written
"""

from __future__ import annotations

import importlib
import sys
import traceback

import click

from compiler import __version__

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_DRIFT = 3
EXIT_INTERNAL = 70

# Each module exposes ``command: click.Command``. Listed explicitly so the CLI surface is reviewable here.
COMMAND_MODULES = (
    "compiler.commands.validate",
    "compiler.commands.explain",
    "compiler.commands.schema",
    "compiler.commands.version",
    "compiler.commands.compile",
    "compiler.commands.plan",
    "compiler.commands.discover",
    "compiler.commands.status",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "-V", "--version", prog_name="migc")
def cli() -> None:
    """migc: compile GPU-sharing policy (fleet, tenants, demand) into MIG layouts and Kubernetes objects."""


def _register() -> None:
    for name in COMMAND_MODULES:
        module = importlib.import_module(name)
        cli.add_command(module.command)


def main(argv: list[str] | None = None) -> int:
    """Entry point; never lets a traceback reach the user except under ``MIGC_DEBUG=1``."""
    _register()
    try:
        rc = cli.main(args=argv, prog_name="migc", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("migc: aborted", err=True)
        return EXIT_INVALID
    except click.exceptions.UsageError as exc:
        exc.show()
        return EXIT_USAGE
    except click.exceptions.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except KeyboardInterrupt:
        click.echo("migc: interrupted; nothing was written", err=True)
        return 130
    except Exception as exc:  # the last line of defence: report, do not crash with a traceback
        import os

        if os.environ.get("MIGC_DEBUG"):
            traceback.print_exc()
        click.echo(
            f"migc: internal error (MIGC000): {type(exc).__name__}: {exc}\n"
            "  nothing was written; rerun with MIGC_DEBUG=1 for a traceback and report it",
            err=True,
        )
        return EXIT_INTERNAL
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
