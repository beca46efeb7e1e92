"""Hostile filesystems (issue 17 items 1-4, issue 9 item 7): links, FIFOs, devices, two runs at once.

Every case that could hang (a FIFO read, /dev/zero read until memory runs out) runs under a short
SIGALRM deadline, so a regression fails the test instead of blocking the suite.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from compiler.cli import main

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "examples" / "lab"
ASSIGNMENT = "migc-system/configmap-migc-assignment.yaml"
CAPACITY = "migc-system/configmap-migc-capacity.yaml"


class Hung(Exception):
    pass


@pytest.fixture(autouse=True)
def deadline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail, instead of hanging, when a case blocks for more than 60 seconds."""
    monkeypatch.chdir(ROOT)

    def expired(_signum: int, _frame: object) -> None:
        raise Hung("blocked: a read that should have been refused")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(60)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def lab_compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compile of examples/lab for the whole module; never handed out, only copied."""
    out = tmp_path_factory.mktemp("lab-compiled") / "out"
    with contextlib.chdir(ROOT):
        assert main(["compile", str(LAB), "--out", str(out)]) == 0
    return out


@pytest.fixture()
def lab_out(tmp_path: Path, lab_compiled: Path) -> Path:
    """A compiled examples/lab output of the test's own, which it may change: a copy of the
    module's one compile (issue 27: compiling it again for each of ~35 tests was a third of
    this file's time). The tree is the compile's, byte for byte, directory modes included."""
    out = tmp_path / "out"
    shutil.copytree(lab_compiled, out, symlinks=True)
    assert tree(out) == tree(lab_compiled)
    return out


# ------------------------------------------------------------------------------------ writing


def test_svg_never_writes_through_a_planted_symlink(
    tmp_path: Path, lab_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "policy"
    shutil.copytree(LAB, policy)
    workloads = policy / "workloads.yaml"
    workloads.write_text(workloads.read_text().replace("replicas: 10", "replicas: 12"))
    svg = tmp_path / "svg"
    code, _ = run(capsys, "plan", str(policy), "--against", str(lab_out), "--svg", str(svg))
    assert code == 0
    names = sorted(p.name for p in svg.iterdir())
    assert names
    shutil.rmtree(svg)
    svg.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    for name in names:
        (svg / name).symlink_to(victim)
    code, _ = run(capsys, "plan", str(policy), "--against", str(lab_out), "--svg", str(svg))
    assert code == 0
    assert victim.read_text() == "precious\n"
    for name in names:
        assert not (svg / name).is_symlink()
        assert (svg / name).read_text().startswith("<svg")


def test_svg_directory_that_is_a_symlink_is_refused(
    tmp_path: Path, lab_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "svg").symlink_to(elsewhere)
    code, text = run(capsys, "plan", str(LAB), "--against", str(lab_out), "--svg", str(tmp_path / "svg"))
    assert code == 1 and "MIGC320" in text
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("target", ["secret", "/dev/zero", "/proc/self/environ"])
def test_foreign_symlink_in_out_is_carried_as_a_link_never_dereferenced(
    target: str, tmp_path: Path, lab_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("TOKEN=hunter2\n")
    secret.chmod(0o600)
    link_target = str(secret) if target == "secret" else target
    (lab_out / "NOTES.txt").symlink_to(link_target)
    code, text = run(capsys, "compile", str(LAB), "--out", str(lab_out))
    assert code == 0, text
    notes = lab_out / "NOTES.txt"
    assert notes.is_symlink() and os.readlink(notes) == link_target
    for path in lab_out.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert b"hunter2" not in path.read_bytes()
    assert run(capsys, "compile", str(LAB), "--out", str(lab_out), "--check")[0] == 0


def test_link_in_place_of_a_cluster_directory_is_replaced_not_followed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep\n")
    other = tmp_path / "other"  # a migc output (of prod) with a link where lab/ will go
    assert run(capsys, "compile", "examples/prod", "--out", str(other))[0] == 0
    (other / "lab").symlink_to(victim)
    code, text = run(capsys, "compile", str(LAB), "--out", str(other))
    assert code == 0 and f"removed {other / 'lab'} (no longer rendered)" in text
    assert not (other / "lab").is_symlink() and (other / "lab" / "kustomization.yaml").is_file()
    assert sorted(p.name for p in victim.iterdir()) == ["keep.txt"]


def test_special_file_in_out_is_refused_and_nothing_written(
    lab_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = tree(lab_out)
    os.mkfifo(lab_out / "pipe")
    code, text = run(capsys, "compile", str(LAB), "--out", str(lab_out))
    assert code == 1 and "MIGC321" in text and "pipe" in text
    assert tree(lab_out) == before


def test_symlinked_out_is_refused_and_leaves_nothing_behind(
    tmp_path: Path, lab_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "linked"
    link.symlink_to(lab_out)
    before = tree(lab_out)
    code, text = run(capsys, "compile", str(LAB), "--out", str(link))
    assert code == 1 and "MIGC320" in text
    assert link.is_symlink() and tree(lab_out) == before
    code, text = run(capsys, "compile", str(LAB), "--out", str(link), "--check")
    assert code == 1 and "MIGC320" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["linked", "out"]
    # The directory itself still compiles (nothing dangling blocks it).
    assert run(capsys, "compile", str(LAB), "--out", str(lab_out))[0] == 0


def test_planted_backup_link_is_removed_not_followed(
    tmp_path: Path, lab_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep\n")
    (tmp_path / ".out.migc-old").symlink_to(victim)
    assert run(capsys, "compile", str(LAB), "--out", str(lab_out))[0] == 0
    assert (victim / "keep.txt").read_text() == "keep\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "victim"]


# ------------------------------------------------------------------------------------ locking


LOCK_HOLDER = """
import sys, time
from pathlib import Path
from compiler.fsio import OutputLock
with OutputLock(Path(sys.argv[1])):
    print("locked", flush=True)
    time.sleep(120)
"""


def test_second_compile_fails_while_another_holds_the_output(
    lab_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(lab_out)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        before = tree(lab_out)
        code, text = run(capsys, "compile", str(LAB), "--out", str(lab_out))
        assert code == 1 and "MIGC322" in text and f"pid {holder.pid}" in text
        assert tree(lab_out) == before
    finally:
        holder.kill()
        holder.wait()
    assert run(capsys, "compile", str(LAB), "--out", str(lab_out))[0] == 0


def test_two_concurrent_compiles_never_mix_trees(tmp_path: Path, lab_out: Path) -> None:
    expected = tree(lab_out)
    out = tmp_path / "shared"
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "compiler", "compile", str(LAB), "--out", str(out)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    results = [(p.wait(timeout=300), p.stdout.read() if p.stdout else b"") for p in procs]
    for code, stdout in results:
        assert code == 0 or (code == 1 and b"MIGC322" in stdout), stdout
    assert any(code == 0 for code, _ in results)
    assert tree(out) == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "shared"]


def test_a_run_removes_only_temporary_trees_of_dead_runs(
    tmp_path: Path, lab_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        live_tmp = tmp_path / f".out.migc-tmp-{alive.pid}-abc"
        dead_tmp = tmp_path / f".out.migc-tmp-{dead.pid}-def"
        for tmp in (live_tmp, dead_tmp):
            (tmp / "lab").mkdir(parents=True)
        assert run(capsys, "compile", str(LAB), "--out", str(lab_out))[0] == 0
        assert live_tmp.exists() and not dead_tmp.exists()
    finally:
        alive.kill()
        alive.wait()


# -------------------------------------------------------------------------------- bounded reads


def _replace(path: Path, kind: str) -> None:
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


# (file replaced, command) → (exit code, code in the output). compile reads the assignment (what is
# deployed) and the index (what it owns); plan also reads the capacity report; --check reads all.
EXPECT = {
    (ASSIGNMENT, "check"): (1, "MIGC015"),
    (ASSIGNMENT, "plan"): (1, "MIGC015"),
    (ASSIGNMENT, "compile"): (1, "MIGC015"),
    (CAPACITY, "check"): (3, "stale: "),  # compared, never read
    (CAPACITY, "plan"): (1, "MIGC015"),
    (CAPACITY, "compile"): (0, "wrote"),  # not read: replaced by the rendered file
    (".migc-index.json", "check"): (1, "MIGC015"),
    (".migc-index.json", "plan"): (2, "MIGC323"),  # no readable index: not a migc render
    (".migc-index.json", "compile"): (1, "MIGC015"),
}


@pytest.mark.parametrize("kind", ["fifo", "zero"])
@pytest.mark.parametrize("which", [ASSIGNMENT, CAPACITY, ".migc-index.json"])
def test_special_files_in_out_are_refused_not_read(
    which: str, kind: str, lab_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _replace(lab_out / "lab" / which, kind)
    for name, argv in (
        ("check", ("compile", str(LAB), "--out", str(lab_out), "--check")),
        ("plan", ("plan", str(LAB), "--against", str(lab_out))),
        ("compile", ("compile", str(LAB), "--out", str(lab_out))),
    ):
        code, text = run(capsys, *argv)
        want_code, want_text = EXPECT[(which, name)]
        assert code == want_code and want_text in text, (argv, text)
        assert "Traceback" not in text


def test_oversized_files_in_out_and_snapshot_are_refused_unread(
    tmp_path: Path, lab_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from compiler.fsio import ASSIGNMENT_LIMIT, SNAPSHOT_LIMIT

    snap = tmp_path / "snap.json"
    with snap.open("wb") as handle:  # sparse: the size is there, the bytes are not
        handle.truncate(SNAPSHOT_LIMIT + 1)
    code, text = run(capsys, "plan", str(LAB), "--against", str(lab_out), "--snapshot", str(snap))
    assert code == 1 and "MIGC016" in text and "512 MiB" in text
    with (lab_out / "lab" / ASSIGNMENT).open("r+b") as handle:
        handle.truncate(ASSIGNMENT_LIMIT + 1)
    code, text = run(capsys, "compile", str(LAB), "--out", str(lab_out))
    assert code == 1 and "MIGC016" in text and "16 MiB" in text


def test_read_bounded_stops_at_the_limit_even_when_the_file_grows(tmp_path: Path) -> None:
    from compiler.fsio import ReadRefused, read_bounded

    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert read_bounded(path, 100, what="a test file") == b"x" * 100
    with pytest.raises(ReadRefused) as refused:
        read_bounded(path, 99, what="a test file")
    assert refused.value.diagnostic.code == "MIGC016"
    # /proc files report size 0 and then yield bytes: the read loop itself enforces the limit.
    with pytest.raises(ReadRefused) as refused:
        read_bounded(Path("/proc/self/status"), 16, what="a test file")
    assert refused.value.diagnostic.code == "MIGC016"


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_special_rendered_file_is_stale_for_check_not_read(
    kind: str, lab_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _replace(lab_out / "lab" / "kustomization.yaml", kind)
    code, text = run(capsys, "compile", str(LAB), "--out", str(lab_out), "--check")
    assert code == 3 and "stale:" in text and "kustomization.yaml" in text


@pytest.mark.parametrize("kind", ["fifo", "zero", "dir"])
def test_snapshot_that_is_not_a_regular_file(
    kind: str, tmp_path: Path, lab_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = tmp_path / "snap.json"
    if kind == "fifo":
        os.mkfifo(snap)
    elif kind == "zero":
        snap.symlink_to("/dev/zero")
    else:
        snap.mkdir()
    code, text = run(capsys, "plan", str(LAB), "--against", str(lab_out), "--snapshot", str(snap))
    if kind == "dir":
        assert code == 2 and "is a directory" in text  # click's usage error for a file option
    else:
        assert code == 1 and "MIGC015" in text


GPU_LIMIT = '"containers": [{"resources": {"limits": {"nvidia.com/gpu": %s}}}]'


@pytest.mark.parametrize(
    "content",
    [
        "",
        "[]",
        "null",
        '"text"',
        '{"items": 5}',
        '{"items": [5]}',
        '{"items": [{"spec": []}]}',
        '{"items": [{"spec": {"nodeName": "n", "containers": [{"resources": {"limits": []}}]}}]}',
        '{"items": [{"spec": {"nodeName": "n", %s}}]}' % (GPU_LIMIT % "1.5"),
        '{"items": [{"spec": {"nodeName": ["n"], %s}}]}' % (GPU_LIMIT % "1"),
        '{"pods": [{"name": "p", "node": "n", "resources": {"nvidia.com/gpu": "x"}}]}',
        '{"pods": [{"name": "p", "node": "n", "resources": {"nvidia.com/gpu": Infinity}}]}',
        '{"pods": [{"name": "p", "node": "n", "resources": {"nvidia.com/gpu": 1e400}}]}',
        '{"pods": [{"name": "p", "node": "n", "resources": []}]}',
        '{"pods": [{"name": 5, "node": "n", "resources": {"nvidia.com/gpu": 1}}]}',
        '{"pods": [{"name": "p"}]}',
        "[" * 100000,
        "\xff\xfe garbage",
    ],
)
def test_malformed_snapshot_is_a_coded_input_error(
    content: str, tmp_path: Path, lab_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = tmp_path / "snap.json"
    snap.write_bytes(content.encode("latin-1"))
    code, text = run(capsys, "plan", str(LAB), "--against", str(lab_out), "--snapshot", str(snap))
    assert code == 1 and "MIGC304" in text and "MIGC000" not in text, text


def test_plan_json_refuses_non_finite_numbers() -> None:
    from compiler.plan import Cost, Plan, to_json

    cost = Cost("c", 1, 1, 1, 1, 0, float("inf"), 1.0, 1.0, ())
    plan = Plan(("c",), 0, (), (), (), (), (), (), (cost,))
    with pytest.raises(ValueError, match="JSON"):
        to_json(plan)


@pytest.mark.parametrize("kind", ["fifo", "zero", "loop"])
def test_policy_path_that_is_not_a_file_or_directory(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "policy.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path = Path("/dev/zero")
    else:
        path.symlink_to(path)
    code, text = run(capsys, "validate", str(path))
    assert code == 1
    assert "no such file" not in text
    assert ("MIGC017" if kind == "loop" else "MIGC015") in text
    if kind != "loop":
        assert "FIFO" in text or "character device" in text


@pytest.mark.parametrize("kind", ["fifo", "zero", "loop", "dangling"])
def test_bad_entry_inside_a_policy_dir_is_reported_not_skipped(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "policy"
    shutil.copytree(LAB, policy)
    bad = policy / "extra.yaml"
    if kind == "fifo":
        os.mkfifo(bad)
    elif kind == "zero":
        bad.symlink_to("/dev/zero")
    elif kind == "loop":
        bad.symlink_to(bad)
    else:
        bad.symlink_to(tmp_path / "gone.yaml")
    code, text = run(capsys, "validate", str(policy))
    assert code == 1
    assert ("MIGC015" if kind in ("fifo", "zero") else "MIGC017") in text
    assert "extra.yaml" in text


# ---------------------------------------------------------------- prune, --against, working directory


def test_compile_keeps_other_clusters_unless_pruned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert run(capsys, "compile", "examples/prod", "--out", str(out))[0] == 0
    prod = tree(out)
    clusters = sorted({p.split("/", 1)[0] for p in prod})
    code, text = run(capsys, "compile", str(LAB), "--out", str(out))
    assert code == 0 and "MIGC324" in text and "removed 0" in text
    after = tree(out)
    for path, data in prod.items():
        assert after[path] == data  # every prod file kept as it was
    code, text = run(capsys, "compile", str(LAB), "--out", str(out), "--prune")
    assert code == 0
    for cluster in clusters:
        assert f"removed {out / cluster}{os.sep} (" in text
        assert not (out / cluster).exists()
    assert "lab" in {p.name for p in out.iterdir()}


def test_compile_reports_each_file_it_removes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert run(capsys, "compile", str(LAB), "--out", str(out))[0] == 0
    (out / "lab" / "stray.yaml").write_text("x: 1\n")
    code, text = run(capsys, "compile", str(LAB), "--out", str(out))
    assert code == 0 and f"removed {out / 'lab' / 'stray.yaml'}" in text and "removed 1" in text


@pytest.mark.parametrize("against", ["missing", "empty", "not-migc", "file"])
def test_plan_against_a_non_render_is_a_usage_error(
    against: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / against
    if against == "empty":
        path.mkdir()
    elif against == "not-migc":
        (path / "sub").mkdir(parents=True)
        (path / "sub" / "README.md").write_text("hello\n")
    elif against == "file":
        path.write_text("x\n")
    code, text = run(capsys, "plan", str(LAB), "--against", str(path))
    assert code == 2 and "MIGC323" in text and "--from-scratch" in text


def test_plan_from_scratch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = run(capsys, "plan", str(LAB), "--from-scratch")
    assert code == 0 and "nodes change" in text and "gpu 0: (not deployed)" not in text
    code, text = run(capsys, "plan", str(LAB), "--from-scratch", "--detail")
    assert code == 0 and "gpu 0: (not deployed)" in text
    code, text = run(capsys, "plan", str(LAB), "--from-scratch", "--against", str(tmp_path))
    assert code == 2


def test_check_does_not_depend_on_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "repo"
    shutil.copytree(ROOT / "examples" / "lab", work / "examples" / "lab")
    monkeypatch.chdir(work)
    assert run(capsys, "compile", "examples/lab", "--out", "output")[0] == 0
    header = (work / "output" / "lab" / "kustomization.yaml").read_text().splitlines()[0]
    assert "from examples/lab." in header
    monkeypatch.chdir(work / "examples")
    code, text = run(capsys, "compile", "lab", "--out", "../output", "--check")
    assert code == 0, text
    monkeypatch.chdir(work / "output")
    code, text = run(capsys, "compile", "../examples/lab", "--out", ".", "--check")
    assert code == 0, text

