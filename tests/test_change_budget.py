"""compile/plan warn (MIGC423) when a change reconfigures more nodes than dailyChangeBudget allows."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from compiler.cli import main
from compiler.model import GpuLayout, PartitionPolicy, Policy, Span
from compiler.pipeline.compiled import change_budget
from compiler.solve.result import NodeResult, PoolResult, Solution

OLD = (GpuLayout.of({"1g.10gb": 7}),)
NEW = (GpuLayout.of({"3g.40gb": 2}),)


def solution(changed: int, unchanged: int, new_nodes: int) -> Solution:
    nodes = [NodeResult(f"c{i}", NEW, OLD, (0,)) for i in range(changed)]
    nodes += [NodeResult(f"u{i}", OLD, OLD, ()) for i in range(unchanged)]
    nodes += [NodeResult(f"n{i}", NEW, None, (0,)) for i in range(new_nodes)]  # first rollout: not counted
    pool = PoolResult("east", "a100", "A100-SXM4-80GB", tuple(nodes), (), (), True)
    return Solution(pools=(pool,))


def policy(budget: int) -> Policy:
    part = PartitionPolicy(daily_change_budget=budget, span=Span("partition.yaml", 4, 9, "metadata.name"))
    return Policy(clusters=(), tenants=(), workloads=(), partition=part)


def test_budget_exceeded_is_a_warning_at_the_partition_policy() -> None:
    diags = change_budget(policy(2), solution(changed=3, unchanged=5, new_nodes=4))
    assert [(d.code, d.severity.name, d.file, d.line) for d in diags] == [
        ("MIGC423", "WARNING", "partition.yaml", 4)
    ]
    assert "reconfigures 3 nodes" in diags[0].message


def test_within_budget_unlimited_or_first_rollout_is_silent() -> None:
    assert change_budget(policy(3), solution(changed=3, unchanged=1, new_nodes=0)) == []
    assert change_budget(policy(0), solution(changed=30, unchanged=0, new_nodes=0)) == []
    assert change_budget(policy(1), solution(changed=0, unchanged=2, new_nodes=9)) == []


# End to end: `migc compile` and `migc plan` both report the budget when a human change exceeds it.

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/prod compiled (the deployed state), then bert-serving raised from 12 to 80 replicas:
    at least 2 of the 11 nodes must change whichever of gpus/disruption the solver puts first."""
    base = tmp_path_factory.mktemp("budget")
    shutil.copytree(ROOT / "examples" / "prod", base / "pol")
    assert main(["compile", str(base / "pol"), "--out", str(base / "out")]) == 0
    path = base / "pol" / "workloads.yaml"
    text = path.read_text(encoding="utf-8")
    at = text.index("replicas: 12", text.index("name: bert-serving"))
    path.write_text(text[:at] + "replicas: 80" + text[at + len("replicas: 12") :], encoding="utf-8")
    # search's burst follows (else its quota would refuse the extra pods: MIGC134)
    tenants = base / "pol" / "tenants.yaml"
    old = "profiles: {1g.10gb: 20, 2g.20gb: 8, 3g.40gb: 4}"
    tenants.write_text(tenants.read_text().replace(old, old.replace("1g.10gb: 20", "1g.10gb: 80")))
    return base


def with_budget(deployed: Path, tmp_path: Path, budget: int) -> Path:
    pol = tmp_path / "pol"
    shutil.copytree(deployed / "pol", pol)
    path = pol / "partition-policy.yaml"
    text = path.read_text(encoding="utf-8")
    assert "dailyChangeBudget: 4 " in text
    path.write_text(text.replace("dailyChangeBudget: 4 ", f"dailyChangeBudget: {budget} "), encoding="utf-8")
    return pol


def budget_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """MIGC423 lines (compile writing --out reports on stdout, plan on stderr: its stdout is the plan)."""
    out, err = capsys.readouterr()
    return [line for line in (out + err).splitlines() if "MIGC423" in line]


@pytest.mark.parametrize("command", ["compile", "plan"])
def test_compile_and_plan_report_a_change_over_the_budget(
    command: str, deployed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pol = with_budget(deployed, tmp_path, 1)
    out = tmp_path / "out"
    shutil.copytree(deployed / "out", out)
    if command == "compile":
        argv = ["compile", str(pol), "--out", str(out)]
    else:
        argv = ["plan", str(pol), "--against", str(out)]
    capsys.readouterr()
    assert main(argv) == 0  # a warning: a human change is never blocked by the budget
    (line,) = budget_lines(capsys)
    # at the field: partition-policy.yaml line 11 is `dailyChangeBudget: 1`
    where = f"{pol / 'partition-policy.yaml'}:11:22: MIGC423 warning: cluster prod-east: this change "
    found = re.fullmatch(re.escape(where) + r"reconfigures (\d+) nodes, more than dailyChangeBudget 1", line)
    assert found is not None, line
    nodes = int(found.group(1))
    assert nodes >= 2
    # the same change within the budget, or with the warning ignored, is silent
    pol3 = with_budget(deployed, tmp_path / "b3", nodes)
    argv3 = [argv[0], str(pol3), *argv[2:]]
    if command == "compile":
        shutil.rmtree(out)
        shutil.copytree(deployed / "out", out)
    assert main(argv3) == 0
    assert budget_lines(capsys) == []
    if command == "compile":
        shutil.rmtree(out)
        shutil.copytree(deployed / "out", out)
    assert main([*argv, "--ignore", "MIGC423"]) == 0
    assert budget_lines(capsys) == []
