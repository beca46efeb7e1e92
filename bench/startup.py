"""CLI startup: what a short ``migc`` call costs, each run in a fresh interpreter.

Every command runs as ``python -m compiler ARGS`` (the same ``compiler.cli:main`` the ``migc``
script calls) from the repository root; wall time is measured around the child process and CPU time
(user + system) from ``RUSAGE_CHILDREN``, the best of ``repeats`` runs reported (the machine is
shared, so the minimum is the least noisy estimate). A second child per command runs the same entry
point and lists which heavy libraries it imported, so the table shows *why* a command costs what it
does. Never asserts on time.
"""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Short calls a user or a pre-commit hook makes often, then the full pipeline for scale.
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("--version",),
    ("--help",),
    ("explain", "MIGC006"),
    ("schema", "Fleet"),
    ("validate", "examples/prod"),
    ("compile", "examples/prod", "--stdout"),
)

# Libraries and migc stages whose import is the startup cost worth seeing.
HEAVY = ("highspy", "networkx", "jinja2", "jsonschema", "ruamel.yaml", "compiler.solve", "compiler.render")

_PROBE = """
import io, json, sys, contextlib
from compiler.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    rc = main(sys.argv[2:])
heavy = json.loads(sys.argv[1])
print(json.dumps([h for h in heavy if h in sys.modules]))
"""


@dataclass(frozen=True)
class Startup:
    command: str
    wall_s: float
    cpu_s: float
    runs: int
    imported: tuple[str, ...]
    error: str = ""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(args: Sequence[str], repeats: int = 5, timeout: float = 120.0) -> Startup:
    """Best wall and CPU time of ``python -m compiler ARGS`` over ``repeats`` fresh processes."""
    walls: list[float] = []
    cpus: list[float] = []
    label = "migc " + " ".join(args)
    for _ in range(max(1, repeats)):
        cpu0 = _children_cpu()
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "compiler", *args],
            cwd=REPO,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        walls.append(time.perf_counter() - t0)
        cpus.append(_children_cpu() - cpu0)
        if proc.returncode != 0:
            last = (proc.stderr.decode(errors="replace").strip().splitlines() or ["failed"])[-1]
            return Startup(label, math.nan, math.nan, len(walls), (), f"exit {proc.returncode}: {last}")
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(HEAVY), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    imported: tuple[str, ...] = ()
    if probe.returncode == 0 and probe.stdout.strip():
        imported = tuple(json.loads(probe.stdout.strip().splitlines()[-1]))
    return Startup(label, min(walls), min(cpus), len(walls), imported)


def run(repeats: int = 5) -> list[Startup]:
    return [measure(args, repeats) for args in COMMANDS]


def render(rows: Sequence[Startup]) -> str:
    head = "| command | wall s (best) | CPU s (best) | runs | heavy imports |"
    lines = [head, "|---|---|---|---|---|"]
    for r in rows:
        if r.error:
            lines.append(f"| `{r.command}` | - | - | {r.runs} | FAILED: {r.error} |")
            continue
        imported = ", ".join(r.imported) or "none"
        lines.append(f"| `{r.command}` | {r.wall_s:.3f} | {r.cpu_s:.3f} | {r.runs} | {imported} |")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    """``python -m bench.startup [REPEATS]``: print the startup table alone."""
    rows = run(int(argv[0]) if argv else 5)
    print(render(rows))
    return 1 if any(r.error for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
