"""`migc plan` takes the tenant capacity "before" from the rendered CapacityReport, or estimates it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.cli import main
from compiler.current import CAPACITY_FILE, read_capacity
from compiler.plan import Plan, RemovedNode, TenantRow, to_markdown, to_text

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def more_search(tmp_path: Path, objective: str | None = None) -> Path:
    """examples/prod with bert-serving (tenant search, pool a100) raised from 12 to 20 replicas;
    ``objective``: a PartitionPolicy ``objective`` list to set (e.g. ``"[gpus]"``)."""
    policy = tmp_path / "prod2"
    shutil.copytree(ROOT / "examples" / "prod", policy)
    path = policy / "workloads.yaml"
    text = path.read_text(encoding="utf-8")
    start = text.index("name: bert-serving")
    at = text.index("replicas: 12", start)
    path.write_text(text[:at] + "replicas: 20" + text[at + len("replicas: 12") :], encoding="utf-8")
    if objective is not None:
        pp = policy / "partition-policy.yaml"
        text = pp.read_text(encoding="utf-8")
        text = text.replace("  mode: static\n", f"  mode: static\n  objective: {objective}\n")
        pp.write_text(text, encoding="utf-8")
    return policy


def plan(capsys: pytest.CaptureFixture[str], policy: Path, against: Path, fmt: str) -> tuple[str, str]:
    capsys.readouterr()
    assert main(["plan", str(policy), "--against", str(against), "-o", fmt, "--detail"]) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def recorded_served(out: Path, cluster: str) -> dict[tuple[str, str, str], int]:
    cm = yaml.safe_load((out / cluster / CAPACITY_FILE).read_text(encoding="utf-8"))
    doc: dict[str, Any] = json.loads(cm["data"]["capacity.json"])
    served: dict[tuple[str, str, str], int] = {}
    for pool in doc["pools"]:
        for d in pool["demand"]:
            key = (d["tenant"], pool["name"], d["resource"])
            served[key] = served.get(key, 0) + d["served"]
    return served


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("capacity") / "out"
    assert main(["compile", "examples/prod", "--out", str(out)]) == 0
    return out


def fresh_copy(compiled: Path, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(compiled, out)
    return out


def test_committed_output_gives_exact_before_for_the_search_increase(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The scenario of the issue, against the committed output/ (kept current by ``compile --check``),
    with fewest GPUs before least disruption: fraud-detection moves to the h100 pool."""
    policy = more_search(tmp_path, "[gpus]")
    text, err = plan(capsys, policy, ROOT / "output", "text")
    assert "estimated" not in text and "MIGC307" not in err
    assert "  prod-east/a100 search 1g.10gb: 12 of 12 → 20 of 20\n" in text
    # fraud-detection leaves the a100 pool to make room: the drop to 0 is listed, and where it went.
    assert "  prod-east/a100 fraud-detection 1g.10gb: 8 of 8 → 0 of 0\n" in text
    assert "  prod-east/h100 fraud-detection 1g.10gb: 0 of 0 → 8 of 8\n" in text
    md, _ = plan(capsys, policy, ROOT / "output", "markdown")
    assert "### Tenant capacity per pool (served of requested)\n" in md
    assert "| prod-east | a100 | search | 1g.10gb | 12 | 20 | 12 → 20 |" in md
    assert "| prod-east | a100 | fraud-detection | 1g.10gb | 8 | 0 | 8 → 0 |" in md
    doc = json.loads(plan(capsys, policy, ROOT / "output", "json")[0])
    rows = {(t["tenant"], t["pool"], t["resource"]): t for t in doc["tenants"]}
    fraud = rows[("fraud-detection", "a100", "1g.10gb")]
    assert (fraud["before"], fraud["after"], fraud["requested_before"]) == (8, 0, 8)
    assert fraud["estimated"] is False
    search = rows[("search", "a100", "1g.10gb")]
    assert (search["before"], search["after"], search["requested"]) == (12, 20, 20)


def test_the_default_order_keeps_deployed_nodes_and_names_the_other_orders_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Disruption first (the default): search's 8 more replicas come from re-laying two whole GPUs
    of one A100 node, fraud-detection stays; fewest GPUs first would have saved one GPU."""
    policy = more_search(tmp_path)
    text, _ = plan(capsys, policy, ROOT / "output", "text")
    assert "  prod-east/a100 search 1g.10gb: 12 of 12 → 20 of 20\n" in text
    assert "fraud-detection" not in text
    assert text.startswith("1 of 11 nodes change (2 GPUs reconfigured)")
    line = (
        "gpus first ([gpus, disruption, preference]) would use 1 fewer GPU (31 instead of 32) and change "
        "as many deployed nodes and GPUs (1 node, 2 GPUs)"
    )
    assert f"  objective order [disruption, gpus, preference]; the other order:\n    {line}\n" in text
    md, _ = plan(capsys, policy, ROOT / "output", "markdown")
    assert f"- **objective order [disruption, gpus, preference]; the other order**: {line}\n" in md
    doc = json.loads(plan(capsys, policy, ROOT / "output", "json")[0])
    other = doc["otherOrder"]
    assert other["order"] == ["disruption", "gpus", "preference"]
    assert other["otherOrder"] == ["gpus", "disruption", "preference"]
    assert (other["chosen"]["gpus_used"], other["other"]["gpus_used"]) == (32, 31)
    assert other["chosen"]["nodes_changed"] == other["other"]["nodes_changed"] == 1
    assert other["text"] == line
    # the other order's numbers are what compiling with it gives
    gpus_first = more_search(tmp_path / "g", "[gpus]")
    doc = json.loads(plan(capsys, gpus_first, ROOT / "output", "json")[0])
    assert doc["otherOrder"]["chosen"] == other["other"]
    assert doc["otherOrder"]["other"] == other["chosen"]


def test_a_first_rollout_has_no_other_order_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["plan", str(more_search(tmp_path)), "--from-scratch", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["otherOrder"] is None


def test_before_is_what_the_previous_render_recorded(
    compiled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = fresh_copy(compiled, tmp_path)
    doc = json.loads(plan(capsys, more_search(tmp_path), out, "json")[0])
    recorded = recorded_served(out, "prod-east")
    rows = {(t["tenant"], t["pool"], t["resource"]): t for t in doc["tenants"]}
    for key, served in recorded.items():
        assert rows[key]["before"] == served and rows[key]["estimated"] is False
    for key, row in rows.items():
        assert row["before"] == recorded.get(key, 0)
    assert recorded[("search", "a100", "1g.10gb")] == 12
    assert rows[("search", "a100", "1g.10gb")]["after"] == 20


def test_unchanged_policy_lists_no_tenant_rows(
    compiled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # compile settles the per-pool split, so planning the same policy shows no phantom moves.
    out = fresh_copy(compiled, tmp_path)
    text, _ = plan(capsys, ROOT / "examples" / "prod", out, "text")
    assert text.startswith("No changes") and "tenant capacity" not in text
    doc = json.loads(plan(capsys, ROOT / "examples" / "prod", out, "json")[0])
    assert all(t["before"] == t["after"] and not t["estimated"] for t in doc["tenants"])


def test_output_without_capacity_report_is_estimated(
    compiled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = fresh_copy(compiled, tmp_path)
    (out / "prod-east" / CAPACITY_FILE).unlink()
    policy = more_search(tmp_path)
    text, err = plan(capsys, policy, out, "text")
    assert "tenant capacity per pool (served of requested, before → after; before is estimated)" in text
    assert "MIGC307" not in err
    doc = json.loads(plan(capsys, policy, out, "json")[0])
    assert doc["tenants"] and all(t["estimated"] and t["requested_before"] is None for t in doc["tenants"])
    md, _ = plan(capsys, policy, out, "markdown")
    assert "### Tenant capacity per pool (served of requested; before is estimated)" in md


def _corrupt_json(cm: dict[str, Any]) -> None:
    cm["data"]["capacity.json"] = "{not json"


def _other_revision(cm: dict[str, Any]) -> None:
    doc = json.loads(cm["data"]["capacity.json"])
    doc["assignmentRevision"] = "0" * 64
    cm["data"]["capacity.json"] = json.dumps(doc)


def _served_above_requested(cm: dict[str, Any]) -> None:
    doc = json.loads(cm["data"]["capacity.json"])
    doc["pools"][0]["demand"][0]["served"] = doc["pools"][0]["demand"][0]["requested"] + 1
    cm["data"]["capacity.json"] = json.dumps(doc)


@pytest.mark.parametrize("corrupt", [_corrupt_json, _other_revision, _served_above_requested])
def test_unusable_capacity_report_warns_and_estimates(
    corrupt: Any, compiled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = fresh_copy(compiled, tmp_path)
    path = out / "prod-east" / CAPACITY_FILE
    cm = yaml.safe_load(path.read_text(encoding="utf-8"))
    corrupt(cm)
    path.write_text(yaml.safe_dump(cm), encoding="utf-8")
    recorded, diagnostics = read_capacity(out)
    assert not recorded.covers("prod-east") and [d.code for d in diagnostics] == ["MIGC307"]
    assert diagnostics[0].severity.name == "WARNING" and diagnostics[0].file == str(path)
    text, err = plan(capsys, more_search(tmp_path), out, "text")
    assert "MIGC307" in err and "before is estimated" in text


def test_unparseable_yaml_warns(compiled: Path, tmp_path: Path) -> None:
    out = fresh_copy(compiled, tmp_path)
    (out / "prod-east" / CAPACITY_FILE).write_text("data: [unclosed\n", encoding="utf-8")
    recorded, diagnostics = read_capacity(out)
    assert recorded.clusters == () and [d.code for d in diagnostics] == ["MIGC307"]


def test_missing_output_reads_nothing(tmp_path: Path) -> None:
    assert read_capacity(tmp_path / "absent") == read_capacity(None)
    assert read_capacity(None)[0].clusters == () and read_capacity(None)[1] == []


def test_mixed_clusters_name_the_estimated_ones() -> None:
    rows = (
        TenantRow("east", "search", "1g.10gb", 4, 2, 4, pool="a100", estimated=False, requested_before=2),
        TenantRow("west", "search", "1g.10gb", 4, 0, 4, pool="a100", estimated=True),
    )
    p = Plan(("east", "west"), 0, (), (RemovedNode("east", "a100", "gone"),), (), rows, (), (), ())
    text = to_text(p, detail=True)
    assert "before → after; before is estimated in west)" in text
    assert "  east/a100 search 1g.10gb: 2 of 2 → 4 of 4\n" in text
    assert "  west/a100 search 1g.10gb: 0 → 4 of 4\n" in text
    assert "| east | a100 | search | 1g.10gb | 2 | 4 | 2 → 4 |" in to_markdown(p)
    summary = to_text(p)
    assert "  tenants (served of requested; before is estimated in west):\n" in summary
    assert "\n    search: 1g.10gb 2 → 8 of 8\n" in summary  # summed over both clusters


def test_the_other_order_solve_leaves_hami_pools_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """HAMi pools keep their own order, so the plan's second solve skips their packing (which may
    take the whole time limit) and compares the MIG pools only."""
    from compiler.catalog import load_catalog
    from compiler.current import read_current
    from compiler.pipeline import load_and_validate
    from compiler.solve import solve

    example = ROOT / "examples" / "hami"
    out = tmp_path / "out"
    assert main(["compile", str(example), "--out", str(out)]) == 0
    policy, _ = load_and_validate([example])
    assert policy is not None
    current, _ = read_current(out, policy)
    catalog = load_catalog()
    assert solve(policy, catalog, current).hami  # the example has HAMi pools
    assert solve(policy, catalog, current, hami=False).hami == ()
    doc = json.loads(plan(capsys, example, out, "json")[0])
    mig_nodes = [n for c in doc["solution"]["clusters"] for p in c["pools"] for n in p["nodes"]]
    assert (doc["otherOrder"] is None) == (not mig_nodes)
