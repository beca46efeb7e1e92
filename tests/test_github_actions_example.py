"""The GitHub Actions example (examples/github-actions/migc.yml), its steps run as bash in a real git
repository (issue 25, item 16): a stale PR still gets its plan comment and then fails; the comment
embeds no relative SVG (a PR comment cannot show a file of the run); a base branch without output/
is planned from scratch instead of failing with exit 2."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "examples" / "github-actions" / "migc.yml"


def steps() -> list[dict[str, Any]]:
    doc = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    out: list[dict[str, Any]] = doc["jobs"]["migc"]["steps"]
    return out


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def run_steps(repo: Path) -> dict[str, tuple[int, str]]:
    """Run every ``run:`` step but the install and the PR comment, as Actions would (bash -e), with GitHub's
    expressions substituted; each step's outcome feeds ``steps.<id>.outcome``."""
    env = {
        **os.environ,
        "POLICY": "policies/",
        "OUTPUT": "output/",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    outcomes: dict[str, str] = {}
    results: dict[str, tuple[int, str]] = {}
    for step in steps():
        script = step.get("run")
        if script is None or "gh pr comment" in script or script.startswith("pip install"):
            continue  # the comment needs GitHub; migc is installed already (this venv's, on PATH)
        condition = step.get("if")
        if condition:
            sid, want = re.fullmatch(r"steps\.(\w+)\.outcome == '(\w+)'", condition).groups()  # type: ignore[union-attr]
            if outcomes.get(sid) != want:
                continue
        script = script.replace("${{ github.base_ref }}", "main")
        script = re.sub(r"\$\{\{ steps\.(\w+)\.outcome \}\}", lambda m: outcomes.get(m.group(1), ""), script)
        done = subprocess.run(
            ["bash", "-e", "-c", script], cwd=repo, env=env, capture_output=True, text=True, timeout=300
        )
        results[step.get("name", script.split()[0])] = (done.returncode, done.stdout + done.stderr)
        if "id" in step:
            outcomes[step["id"]] = "success" if done.returncode == 0 else "failure"
        if done.returncode != 0 and not step.get("continue-on-error"):
            break
    return results


@pytest.mark.parametrize("base_has_output", [True, False])
def test_a_stale_pr_gets_its_plan_then_fails(tmp_path: Path, base_has_output: bool) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    shutil.copytree(ROOT / "examples" / "lab", origin / "policies")
    if base_has_output:
        subprocess.run(
            [str(Path(sys.executable).parent / "migc"), "compile", "policies", "--out", "output"],
            cwd=origin,
            check=True,
            capture_output=True,
        )
    git(origin, "add", "-A")
    git(origin, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    work = tmp_path / "pr"
    subprocess.run(["git", "clone", "-q", str(origin), str(work)], check=True, capture_output=True)
    # the PR changes the policy without recompiling output/: stale
    workloads = work / "policies" / "workloads.yaml"
    workloads.write_text(workloads.read_text().replace("replicas: 10\n", "replicas: 12\n", 1))
    results = run_steps(work)
    assert results["output/ matches the policy"][0] != 0
    assert results["Plan against the base branch's output"][0] == 0, results
    plan = (work / "plan.md").read_text()
    assert "lab-dgx-a100-01" in plan
    assert not re.search(r"!\[[^\]]*\]\((?!https?:)[^)]*\.svg\)", plan)  # no relative pictures
    assert "**output/ is stale**" in plan
    assert any((work / "plan-svg").glob("*.svg"))  # the pictures went to the artifact
    assert results["Fail when output/ is stale"][0] == 1
