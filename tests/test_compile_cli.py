"""`migc compile` and `migc plan` end to end on the bundled examples (real loader, validator and solver)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_render import assert_valid_tree

from compiler.cli import main

ROOT = Path(__file__).resolve().parents[1]
POLICY_EXAMPLES = sorted(
    p.parent.name
    for p in (ROOT / "examples").glob("*/*.yaml")
    if "\nkind: Fleet\n" in p.read_text(encoding="utf-8")
)


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # Headers name the policy paths relative to the working directory.
    monkeypatch.chdir(ROOT)


# Runs the CLI with the writer's per-file write replaced by one that SIGKILLs the process after
# argv[1] files, like an OOM kill in the middle of writing the temporary tree.
KILL_MIDWAY = """
import os, signal, sys
import compiler.render.writer as writer
limit, real, count = int(sys.argv[1]), writer._write_file, [0]
def dying(path, data):
    count[0] += 1
    if count[0] > limit:
        os.kill(os.getpid(), signal.SIGKILL)
    real(path, data)
writer._write_file = dying
from compiler.cli import main
sys.exit(main(sys.argv[2:]))
"""


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run(*argv: str) -> int:
    return main(list(argv))


# The smallest example runs by default; the larger ones (tens of seconds of schema checks) with -m slow.
@pytest.mark.parametrize(
    "example", [e if e == "lab" else pytest.param(e, marks=pytest.mark.slow) for e in POLICY_EXAMPLES]
)
def test_compile_every_example_renders_valid_objects(example: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("compile", f"examples/{example}", "--out", str(out), "--with", "kueue") == 0
    files = tree(out)
    assert files
    targets = {
        str(c.get("kubernetesVersion", "1.31"))
        for f in (ROOT / "examples" / example).glob("*.yaml")
        for doc in yaml.safe_load_all(f.read_text(encoding="utf-8"))
        if isinstance(doc, dict) and doc.get("kind") == "Fleet"
        for c in doc["spec"]["clusters"]
    }
    assert_valid_tree(files, sorted(targets))
    assert run("compile", f"examples/{example}", "--out", str(out), "--with", "kueue", "--check") == 0


def test_check_reports_stale_missing_and_extra(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert run("compile", "examples/lab", "--out", str(out)) == 0
    capsys.readouterr()
    (out / "lab/cluster/priorityclass-migc-low.yaml").write_text("# edited\n")
    (out / "lab/cluster/priorityclass-migc-high.yaml").unlink()
    (out / "lab/cluster/leftover.yaml").write_text("x: 1\n")
    assert run("compile", "examples/lab", "--out", str(out), "--check") == 3
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert any(
        line.startswith("stale: ") and line.endswith("lab/cluster/priorityclass-migc-low.yaml")
        for line in lines
    )
    assert any(
        line.startswith("missing: ") and line.endswith("priorityclass-migc-high.yaml") for line in lines
    )
    assert any(line.startswith("extra: ") and line.endswith("lab/cluster/leftover.yaml") for line in lines)
    assert "MIGC302" in captured.err
    # compile repairs it, and removes the extra file it owns.
    assert run("compile", "examples/lab", "--out", str(out)) == 0
    assert run("compile", "examples/lab", "--out", str(out), "--check") == 0
    assert not (out / "lab/cluster/leftover.yaml").exists()


def test_stdout_prints_only_manifests(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert run("compile", "examples/lab", "--stdout", "--out", str(tmp_path / "none")) == 0
    captured = capsys.readouterr()
    docs = list(yaml.safe_load_all(captured.out))
    assert docs and all(isinstance(d, dict) and "apiVersion" in d and "kind" in d for d in docs)
    assert "Kustomization" not in {d["kind"] for d in docs}
    assert "rendered to stdout" in captured.err
    assert not (tmp_path / "none").exists()


def test_invalid_policy_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert run("compile", "examples/lab", "--out", str(out)) == 0
    before = tree(out)
    broken = tmp_path / "policy"
    shutil.copytree(ROOT / "examples/lab", broken)
    text = (broken / "workloads.yaml").read_text()
    (broken / "workloads.yaml").write_text(text.replace("tenant: students", "tenant: nobody", 1))
    capsys.readouterr()
    assert run("compile", str(broken), "--out", str(out)) == 1
    captured = capsys.readouterr()
    assert "nothing was written" in captured.err
    assert "workloads.yaml:" in captured.out
    assert tree(out) == before


def test_guarantees_that_only_fail_together_are_caught(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each tenant's 400 GB fits the lab's 640 GB (the validator checks tenants one by one); both do not."""
    policy = tmp_path / "policy"
    shutil.copytree(ROOT / "examples/lab", policy)
    text = (policy / "tenants.yaml").read_text()
    text = text.replace("    gpus: 2\n  burst:", "    gpus: 2\n    gpuMemoryGB: 400\n  burst:", 1)
    text = text.replace(
        "    profiles: {1g.10gb: 8}\n", "    profiles: {1g.10gb: 8}\n    gpuMemoryGB: 400\n", 1
    )
    (policy / "tenants.yaml").write_text(text)
    assert run("compile", str(policy), "--out", str(tmp_path / "out")) == 1
    out = capsys.readouterr().out
    assert "MIGC252 error: cluster lab: tenants are guaranteed 800 GB of GPU memory" in out
    assert "(students 400, vision-group 400)" in out and "short by 160" in out
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_killed_compile_leaves_previous_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("compile", "examples/lab", "--out", str(out)) == 0
    before = tree(out)
    policy = tmp_path / "policy"
    shutil.copytree(ROOT / "examples/lab", policy)
    (policy / "workloads.yaml").write_text(
        (policy / "workloads.yaml").read_text().replace("replicas: 10", "replicas: 12")
    )
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-c", KILL_MIDWAY, str(len(before) // 2), "compile", str(policy), "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        check=False,
    )
    assert proc.returncode == -9, proc.stderr.decode()
    assert tree(out) == before
    proc = subprocess.run(
        [sys.executable, "-m", "compiler", "compile", str(policy), "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert tree(out) != before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "policy"]


def _compile_subprocess(args: list[str], out: Path, seed: str) -> dict[str, bytes]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    proc = subprocess.run(
        [sys.executable, "-m", "compiler", "compile", *args, "--out", str(out), "--with", "kueue"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    return tree(out)


@pytest.mark.slow
def test_identical_across_hash_seeds_and_file_order(tmp_path: Path) -> None:
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples/prod").glob("*.yaml"))
    first = _compile_subprocess(files, tmp_path / "a", "1")
    second = _compile_subprocess(list(reversed(files)), tmp_path / "b", "4242")
    assert first == second


def test_plan_exit_codes_and_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert run("compile", "examples/lab", "--out", str(out)) == 0
    capsys.readouterr()
    assert run("plan", "examples/lab", "--against", str(out), "--exit-code") == 0
    assert capsys.readouterr().out.startswith("No changes")
    policy = tmp_path / "policy"
    shutil.copytree(ROOT / "examples/lab", policy)
    text = (policy / "workloads.yaml").read_text()
    # Triple the notebooks: far beyond the deployed 1g.10gb capacity, so the layout must change (and
    # the students' burst with them, else the quota would refuse the extra pods: MIGC134).
    (policy / "workloads.yaml").write_text(text.replace("replicas: 10\n", "replicas: 30\n", 1))
    tenants = (policy / "tenants.yaml").read_text()
    raised = tenants.replace("profiles: {1g.10gb: 14}", "profiles: {1g.10gb: 30}", 1)
    (policy / "tenants.yaml").write_text(raised)
    svg = tmp_path / "svg"
    code = run("plan", str(policy), "--against", str(out), "--exit-code", "-o", "markdown", "--svg", str(svg))
    assert code == 3
    md = capsys.readouterr().out
    assert "### Nodes to reconfigure" in md
    assert "lab-dgx-a100-01" in md
    assert (svg / "lab-lab-dgx-a100-01.svg").exists()
    assert f"]({svg}/lab-lab-dgx-a100-01.svg)" in md
    assert run("plan", str(policy), "--against", str(out), "-o", "json") == 0
    assert '"solution"' in capsys.readouterr().out


def test_gitops_examples_point_at_the_rendered_output() -> None:
    apps = list(yaml.safe_load_all((ROOT / "examples/argocd/application.yaml").read_text()))
    assert (ROOT / apps[0]["spec"]["source"]["path"] / "kustomization.yaml").exists()
    flux = list(yaml.safe_load_all((ROOT / "examples/flux/kustomization.yaml").read_text()))
    assert (ROOT / flux[1]["spec"]["path"] / "kustomization.yaml").exists()
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert {h["id"] for h in hooks} == {"migc-validate", "migc-compile-check", "migc-compile"}
    workflow = yaml.safe_load((ROOT / "examples/github-actions/migc.yml").read_text())
    steps = " ".join(str(s.get("run", "")) for s in workflow["jobs"]["migc"]["steps"])
    assert "migc compile" in steps and "--check" in steps and "--output-format markdown" in steps


def test_recompiling_a_changed_policy_reaches_a_fixpoint(tmp_path: Path) -> None:
    """compile(old) → change → compile(new, against old) → --check is clean: CI stays green after a PR."""
    out = tmp_path / "out"
    assert run("compile", "examples/prod", "--out", str(out)) == 0
    policy = tmp_path / "policy"
    shutil.copytree(ROOT / "examples/prod", policy)
    text = (policy / "workloads.yaml").read_text()
    (policy / "workloads.yaml").write_text(text.replace("replicas: 12\n", "replicas: 16\n", 1))
    assert run("compile", str(policy), "--out", str(out)) == 0
    assert run("compile", str(policy), "--out", str(out), "--check") == 0
    assert run("plan", str(policy), "--against", str(out), "--exit-code") == 0


def test_500_tenants_whose_guarantees_do_not_fit_get_a_short_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each guarantee and each profile's total fits 64 A100s (validate passes); together they do not."""
    policy = tmp_path / "policy"
    policy.mkdir()
    nodes = ", ".join(f"n{i}" for i in range(8))
    (policy / "fleet.yaml").write_text(
        "apiVersion: migc.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n  clusters:\n"
        "    - name: c\n      nodePools:\n        - name: a100\n          gpuProduct: A100-SXM4-80GB\n"
        f"          gpusPerNode: 8\n          nodes: {{names: [{nodes}]}}\n"
    )
    docs = []
    for i in range(500):
        prof = "3g.40gb" if i < 120 else "1g.10gb"  # 120 <= 2 x 64 and 380 <= 7 x 64
        docs.append(
            f"apiVersion: migc.dev/v1alpha1\nkind: Tenant\nmetadata: {{name: t{i:03d}}}\nspec:\n"
            f"  namespaces: [t{i:03d}]\n  priorityClass: high\n  guaranteed: {{profiles: {{{prof}: 1}}}}\n"
        )
        docs.append(
            f"apiVersion: migc.dev/v1alpha1\nkind: Workload\nmetadata: {{name: w{i:03d}}}\nspec:\n"
            f"  tenant: t{i:03d}\n  cluster: c\n  replicas: 1\n  need: {{profile: 2g.20gb}}\n"
        )
    (policy / "tenants.yaml").write_text("---\n".join(docs))
    assert run("compile", str(policy), "--out", str(tmp_path / "out")) == 1
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert len(out) < 2500
    assert out.count("MIGC200 error") == 1 and out.count("MIGC201 warning") == 1
    assert "120 tenants are guaranteed 120 x 3g.40gb together in cluster c" in out
    assert "… and 489 more" in out and "t000 (1), t001 (1)" in out
    assert not (tmp_path / "out").exists()
