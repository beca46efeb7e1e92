"""The README's tour, run as written, top to bottom, in a copy of the checkout (issue 25, item 9).

Each line of the tour's code block runs with ``bash`` in a fresh copy of the repository's files
(tracked and not ignored: what a clone holds), the virtual environment's ``migc`` and ``python``
first on PATH. A line must exit 0, or ``N`` where its comment says ``exit N here``. The tour reads
only data that ships (``output/``, ``examples/snapshots/``, ``examples/traces/``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def tour() -> list[tuple[str, int]]:
    """(command line, expected exit status) of every line of the README's tour block."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## A short tour\n", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    out = []
    for line in block.splitlines():
        if not line.strip():
            continue
        command, _, comment = line.partition("  #")
        match = re.search(r"exit (\d+) here", comment)
        out.append((command.strip(), int(match.group(1)) if match else 0))
    return out


def checkout_copy(dest: Path) -> Path:
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def test_the_tour_reads_only_data_that_ships() -> None:
    lines = tour()
    assert len(lines) >= 20
    for command, _ in lines:
        assert "../" not in command and "cluster.json" not in command, command
        for arg in command.split():
            if arg.startswith(("examples/", "output")) and "/" in arg.rstrip("/"):
                assert (ROOT / arg).exists(), arg


@pytest.mark.slow
def test_the_readme_tour_runs_top_to_bottom(tmp_path: Path) -> None:
    work = checkout_copy(tmp_path / "clone")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    for command, expected in tour():
        done = subprocess.run(
            ["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=900
        )
        assert done.returncode == expected, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        assert "Traceback" not in done.stderr, command
    # the tour leaves the committed output/ as it was: every command read or wrote it in sync
    check = subprocess.run(
        ["git", "diff", "--no-index", "--stat", str(ROOT / "output"), str(work / "output")],
        capture_output=True,
        text=True,
    )
    assert check.stdout == "", check.stdout


def test_the_shipped_snapshot_matches_the_committed_output() -> None:
    """``examples/snapshots/prod-east.json`` is the cluster ``output/`` describes; regenerate it with
    ``python tests/statusfleet.py`` when output/ changes."""
    from statusfleet import TOUR_SNAPSHOT, tour_snapshot_text

    assert TOUR_SNAPSHOT.read_text(encoding="utf-8") == tour_snapshot_text()


def test_the_shipped_trace_is_a_byte_exact_slice_of_the_openb_trace() -> None:
    """The header and first 300 pods of openb_pod_list_default.csv (examples/traces/README.md)."""
    lines = (ROOT / "examples/traces/openb-pod-list-default-300.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0].split(",")[:5] == ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"]
    assert [line.split(",")[0] for line in lines[1:]] == [f"openb-pod-{i:04d}" for i in range(300)]
