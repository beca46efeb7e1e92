"""Atomic writing, pruning through the index, drift comparison, and reading the deployed state back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_render_support import BALANCED, default_solution, policy, solution

from compiler.catalog import load_catalog
from compiler.current import read_current
from compiler.render import render, writer
from compiler.render.writer import compare, write_tree

ROOT = Path(__file__).resolve().parents[4]


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture()
def files() -> dict[str, bytes]:
    return render(policy(), default_solution(), load_catalog())


def test_write_then_compare_is_clean(tmp_path: Path, files: dict[str, bytes]) -> None:
    out = tmp_path / "output"
    assert write_tree(files, out).diagnostics == ()
    assert snapshot(out) == files
    assert compare(files, out).clean
    assert not any(p.name.startswith(".output.migc") for p in tmp_path.iterdir())


def test_compare_lists_stale_missing_and_extra(tmp_path: Path, files: dict[str, bytes]) -> None:
    out = tmp_path / "output"
    write_tree(files, out)
    (out / "east/cluster/priorityclass-migc-low.yaml").write_text("edited\n")
    (out / "east/cluster/priorityclass-migc-high.yaml").unlink()
    (out / "east/cluster/stray.yaml").write_text("x: 1\n")
    (out / "README.md").write_text("not ours\n")
    drift = compare(files, out)
    assert drift.stale == ("east/cluster/priorityclass-migc-low.yaml",)
    assert drift.missing == ("east/cluster/priorityclass-migc-high.yaml",)
    assert drift.extra == ("east/cluster/stray.yaml",)


def test_rewrite_prunes_files_no_longer_generated_and_keeps_foreign_files(
    tmp_path: Path, files: dict[str, bytes]
) -> None:
    out = tmp_path / "output"
    bigger = dict(files)
    bigger["west/kustomization.yaml"] = b"old\n"
    bigger["west/.migc-index.json"] = b'{"files": {"kustomization.yaml": "x"}}\n'
    write_tree(bigger, out)
    (out / "README.md").write_text("hand-written\n")
    written = write_tree(files, out, prune=True)
    assert written.diagnostics == ()
    assert written.removed_clusters == (("west", 2),)
    after = snapshot(out)
    assert "west/kustomization.yaml" not in after and not (out / "west").exists()
    assert after.pop("README.md") == b"hand-written\n"
    assert after == files


def test_refuses_to_replace_a_directory_migc_did_not_write(tmp_path: Path, files: dict[str, bytes]) -> None:
    out = tmp_path / "home"
    out.mkdir()
    (out / "precious.txt").write_text("keep\n")
    diagnostics = write_tree(files, out).diagnostics
    assert [d.code for d in diagnostics] == ["MIGC300"]
    assert snapshot(out) == {"precious.txt": b"keep\n"}


def test_injected_failure_after_half_the_files_leaves_previous_output(
    tmp_path: Path, files: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "output"
    write_tree(files, out)
    before = snapshot(out)
    changed = render(policy(extra_tenant=True), default_solution(), load_catalog())
    assert changed != files
    real, count = writer._write_file, [0]

    def failing(path: Path, data: bytes) -> None:
        count[0] += 1
        if count[0] > len(changed) // 2:
            raise RuntimeError("injected failure")
        real(path, data)

    monkeypatch.setattr(writer, "_write_file", failing)
    with pytest.raises(RuntimeError, match="injected"):
        write_tree(changed, out)
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["output"]


def test_killed_process_mid_write_leaves_previous_output(tmp_path: Path, files: dict[str, bytes]) -> None:
    out = tmp_path / "output"
    write_tree(files, out)
    before = snapshot(out)
    script = (
        "import sys; from pathlib import Path\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from compiler.catalog import load_catalog\n"
        "from compiler.render import render\n"
        "import os, signal\n"
        "import compiler.render.writer as writer\n"
        "from test_render_support import policy, default_solution\n"
        "files = render(policy(extra_tenant=True), default_solution(), load_catalog())\n"
        "real, count = writer._write_file, [0]\n"
        "def dying(path, data):\n"
        "    count[0] += 1\n"
        "    if count[0] > int(sys.argv[3]):\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    real(path, data)\n"
        "writer._write_file = dying\n"
        "writer.write_tree(files, Path(sys.argv[1]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", script, str(out), str(ROOT / "tests"), str(len(files) // 2)],
        env=env,
        capture_output=True,
        check=False,
    )
    assert proc.returncode == -9, proc.stderr.decode()
    assert snapshot(out) == before
    # The next run cleans the leftover temporary tree and succeeds.
    assert write_tree(files, out).diagnostics == ()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["output"]


def test_interrupted_swap_is_restored(tmp_path: Path, files: dict[str, bytes]) -> None:
    out = tmp_path / "output"
    write_tree(files, out)
    before = snapshot(out)
    os.rename(out, tmp_path / ".output.migc-old")  # killed between the two renames
    diagnostics = write_tree(files, out).diagnostics
    assert [d.code for d in diagnostics] == ["MIGC305"]
    assert snapshot(out) == before


def test_read_current_round_trips_the_rendered_assignment(tmp_path: Path, files: dict[str, bytes]) -> None:
    out = tmp_path / "output"
    write_tree(files, out)
    state, diagnostics = read_current(out, policy())
    assert diagnostics == []
    deployed = state.as_dict()
    for pool in default_solution().pools:
        for node in pool.nodes:
            assert deployed[(pool.cluster, pool.pool, node.name)] == node.gpus
    assert len(deployed) == 5


def test_read_current_selector_pool_spreads_counts_over_placeholders(tmp_path: Path) -> None:
    h200 = default_solution()
    files = render(policy(), h200, load_catalog())
    out = tmp_path / "output"
    write_tree(files, out)
    state, _ = read_current(out, policy())
    assert {k[2] for k in state.as_dict() if k[1] == "h200"} == {"h200-0", "h200-1"}
    # Without the policy the placeholders are unknown: selector pools are skipped, named ones kept.
    bare, _ = read_current(out)
    assert {k[1] for k in bare.as_dict()} == {"a100", "l40s"}


def test_read_current_missing_or_broken(tmp_path: Path) -> None:
    state, diagnostics = read_current(tmp_path / "nothing")
    assert state.nodes == () and diagnostics == []
    broken = tmp_path / "out" / "east" / "migc-system"
    broken.mkdir(parents=True)
    (broken / "configmap-migc-assignment.yaml").write_text("data: {assignment.json: '{not json'}\n")
    state, diagnostics = read_current(tmp_path / "out")
    assert state.nodes == () and [d.code for d in diagnostics] == ["MIGC303"]


def test_solution_fixture_differs_for_a_resized_pool() -> None:
    # Guard for the plan tests: a different layout really renders different bytes.
    one = render(policy(), default_solution(), load_catalog())
    two = render(policy(), solution({"a100-01": (BALANCED,) * 8, "a100-02": (BALANCED,) * 8}), load_catalog())
    assert one != two


def test_unwritable_output_is_a_diagnostic_not_a_traceback(tmp_path: Path, files: dict[str, bytes]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("I am a file\n")
    diagnostics = write_tree(files, blocker / "output").diagnostics
    assert [d.code for d in diagnostics] == ["MIGC301"]
    diagnostics = write_tree(files, blocker).diagnostics
    assert [d.code for d in diagnostics] == ["MIGC301"]
    assert blocker.read_text() == "I am a file\n"
