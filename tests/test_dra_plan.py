"""The DRA part of ``migc plan``: a device-plugin → DRA migration, step by step, guarded by guarantees;
a DynamicMIG pool's fit and worst-case fragmentation; the previous backend read back from output/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from compiler.catalog import load_catalog
from compiler.cli import main
from compiler.current import read_current
from compiler.model import CurrentState, Policy
from compiler.pipeline import load_and_validate
from compiler.plan import build_plan, to_json, to_markdown, to_text
from compiler.plan.dra import _blockers, dra_pools, dra_text
from compiler.render import render
from compiler.solve.pipeline import solve

ROOT = Path(__file__).resolve().parents[1]


def _policy(tmp_path: Path, edits: list[tuple[str, str, str]] | None = None) -> Policy:
    """examples/dra with ``(file, old, new)`` replacements."""
    src = tmp_path / "policy"
    shutil.copytree(ROOT / "examples" / "dra", src)
    for name, old, new in edits or []:
        text = (src / name).read_text()
        assert old in text
        (src / name).write_text(text.replace(old, new))
    policy, diags = load_and_validate([src])
    assert policy is not None, [d.as_dict() for d in diags]
    return policy


def _write(policy: Policy, out: Path) -> None:
    catalog = load_catalog()
    for rel, data in render(policy, solve(policy, catalog), catalog, source_label="x").items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)


def test_the_previous_backend_is_read_back_from_output(tmp_path: Path) -> None:
    _write(_policy(tmp_path), tmp_path / "out")
    current, diags = read_current(tmp_path / "out")
    assert diags == []
    assert dict(current.backends) == {
        ("east", "a100"): "device-plugin",
        ("east", "h100"): "dra-static",
        ("west", "h200"): "dra-dynamic",
    }


def test_a_migration_lists_the_steps_in_order_and_the_templates_that_change(tmp_path: Path) -> None:
    policy = _policy(tmp_path)
    catalog = load_catalog()
    solution = solve(policy, catalog)
    current = CurrentState(backends=((("east", "h100"), "device-plugin"),))
    rows = {r.pool: r for r in dra_pools(policy, solution, catalog, current)}
    h100 = rows["h100"]
    assert (h100.before, h100.after) == ("device-plugin", "dra-static")
    assert h100.steps[0].startswith("cordon") and h100.steps[-1] == "uncordon"
    assert "device plugin off" in h100.steps[1] and "ResourceSlices" in h100.steps[3]
    assert h100.templates == ("embedder", "finetune")
    # research's 2 x 3g.40gb guarantee sits on one H100 node only: no node may go before capacity is added
    assert h100.batch == 0 and "3g.40gb (0 left of 2 guaranteed)" in h100.guard
    assert "add capacity before migrating" in dra_text(tuple(rows.values()))
    assert rows["h200"].steps == ()  # not deployed before: nothing to migrate


def test_the_guard_allows_the_batch_when_guarantees_hold_elsewhere(tmp_path: Path) -> None:
    search = ("guaranteed: {profiles: {1g.10gb: 8, 2g.20gb: 4}}", "guaranteed: {profiles: {1g.10gb: 4}}")
    research = ("guaranteed: {profiles: {3g.40gb: 2}, gpus: 2}", "guaranteed: {gpus: 2}")
    policy = _policy(tmp_path, [("tenants.yaml", *search), ("tenants.yaml", *research)])
    catalog = load_catalog()
    solution = solve(policy, catalog)
    current = CurrentState(backends=((("east", "h100"), "device-plugin"),))
    h100 = next(r for r in dra_pools(policy, solution, catalog, current) if r.pool == "h100")
    assert (h100.batch, h100.guard) == (1, "")  # 1g.10gb: the A100 node's 7 cover 4


def test_dynamic_pools_report_fit_and_worst_case_fragmentation(tmp_path: Path) -> None:
    policy = _policy(tmp_path)
    catalog = load_catalog()
    rows = {r.pool: r for r in dra_pools(policy, solve(policy, catalog), catalog, CurrentState())}
    h200 = rows["h200"]
    assert h200.fits is True and h200.gpus_total == 32
    # H200: 1g.18gb at 0..6 (one slice), 3g.71gb at 0 or 4 (four slices): one at 0-3 and one at 4-6 block both
    assert _blockers(catalog.get("H200-141GB"), "1g.18gb", "3g.71gb") == 2  # type: ignore[arg-type]
    assert "2 1g.18gb on a GPU leave no placement for 3g.71gb" in h200.fragmentation


def test_a_dynamic_pool_that_cannot_hold_its_demand_says_so(tmp_path: Path) -> None:
    old = "replicas: 4\n  need: {profile: 3g.71gb}"
    policy = _policy(
        tmp_path,
        [
            ("workloads.yaml", old, old.replace("replicas: 4", "replicas: 80")),
            # the quota must admit the 80 (MIGC134): the pool, not the quota, is what cannot hold them
            ("tenants.yaml", "2g.35gb: 8, 3g.71gb: 8}", "2g.35gb: 8, 3g.71gb: 80}"),
        ],
    )
    catalog = load_catalog()
    h200 = next(
        r for r in dra_pools(policy, solve(policy, catalog), catalog, CurrentState()) if r.pool == "h200"
    )
    assert h200.fits is False
    assert "do NOT fit" in dra_text((h200,))


def test_migc_plan_shows_the_migration_in_every_format(tmp_path: Path) -> None:
    """What a reviewer reads: the previous output rendered with east/h100 on the device plugin."""
    before = _policy(
        tmp_path / "before", [("fleet.yaml", "          allocation: dra\n          dra: {mig: static}\n", "")]
    )
    _write(before, tmp_path / "out")
    policy = _policy(tmp_path / "after")
    catalog = load_catalog()
    current, diags = read_current(tmp_path / "out", policy)
    assert diags == []
    plan = build_plan(policy, solve(policy, catalog, current), catalog, current)
    rows = {(r["cluster"], r["pool"]): r for r in json.loads(to_json(plan))["dra"]}
    east = rows[("east", "h100")]
    assert (east["before"], east["after"]) == ("device-plugin", "dra-static")
    assert east["steps"][1] == "label nvidia.com/gpu.deploy.device-plugin=false (device plugin off)"
    assert east["podTemplatesChanging"] == ["embedder", "finetune"]
    assert rows[("west", "h200")]["before"] == "dra-dynamic" and rows[("west", "h200")]["steps"] == []
    assert "### DRA pools" in to_markdown(plan) and "migrating from `device-plugin`" in to_markdown(plan)
    assert "east/h100: dra-static (migrating from device-plugin" in to_text(plan)


def test_a_broken_previous_dra_plan_is_a_diagnostic_not_a_traceback(tmp_path: Path) -> None:
    _write(_policy(tmp_path), tmp_path / "out")
    plan_file = tmp_path / "out" / "east" / "migc-system" / "configmap-migc-dra.yaml"
    for broken in (
        "data: {dra.json: '{not json'}\n",
        'data: {dra.json: \'{"cluster": "east", "pools": [{"name": "h100", "mig": "sideways"}]}\'}\n',
        "- a list\n",
        "data: [\n",
    ):
        plan_file.write_text(broken)
        current, diags = read_current(tmp_path / "out")
        assert [d.code for d in diags] == ["MIGC303"], broken
        assert "cannot read the previous DRA plan" in diags[0].message
        assert ("east", "h100") in dict(current.backends)  # from the assignment: the device plugin
        assert (
            dict(current.backends)[("west", "h200")] == "dra-dynamic"
        )  # the other cluster's plan still read


def test_a_dynamic_pool_is_never_a_change_so_an_unchanged_policy_plans_no_drift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """DynamicMIG nodes carry no layout migc deploys (the driver creates an instance per claim), so
    the solver's layouts for them are never a node change: ``migc plan --exit-code`` of the policy that
    rendered ``output/`` exits 0. (It used to list west/h200's nodes as new on every run, 32 GPUs
    "reconfigured", so a CI drift check on a cluster with a DynamicMIG pool never passed.)"""
    src = tmp_path / "policy"
    shutil.copytree(ROOT / "examples" / "dra", src)
    assert main(["compile", str(src), "--out", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    assert main(["plan", str(src), "--against", str(tmp_path / "out"), "--exit-code", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["hasChanges"] is False and doc["changes"] == []
    policy, _ = load_and_validate([src])
    assert policy is not None
    for pool in solve(policy, load_catalog()).pools:
        if pool.pool == "h200":  # deployed = target, whatever the demand asks of the driver
            assert all(n.current == n.gpus and not n.changed for n in pool.nodes)


@pytest.mark.parametrize(
    "edit",
    [
        # east/h100 moves from the static layouts migc deploys to the driver's DynamicMIG
        ("fleet.yaml", "dra: {mig: static}", "dra: {mig: dynamic}"),
        # east/a100 moves from the device plugin to a static DRA pool (a100 and h100 both static)
        (
            "fleet.yaml",
            "            names: [east-a100-01, east-a100-02]\n",
            "            names: [east-a100-01, east-a100-02]\n          allocation: dra\n"
            "          dra: {mig: static}\n",
        ),
    ],
)
def test_a_backend_migration_is_a_change_plan_exit_code_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: tuple[str, str, str]
) -> None:
    """A pool whose backend changes is cordoned and drained node by node (the DRA section's steps),
    even where the solver's layouts stay the same (a DynamicMIG pool's nodes are never a layout
    change at all): ``migc plan --exit-code`` must exit 3 and say so, not "No changes: all nodes
    already carry their target layout" with exit 0, which let a CI gate pass a migration unseen."""
    src = tmp_path / "policy"
    shutil.copytree(ROOT / "examples" / "dra", src)
    assert main(["compile", str(src), "--out", str(tmp_path / "out")]) == 0
    name, old, new = edit
    text = (src / name).read_text()
    assert old in text
    (src / name).write_text(text.replace(old, new))
    capsys.readouterr()
    argv = ["plan", str(src), "--against", str(tmp_path / "out"), "--exit-code"]
    assert main([*argv, "-o", "json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["hasChanges"] is True
    assert any(r["before"] != r["after"] and r["steps"] for r in doc["dra"])
    assert main(argv) == 3
    text = capsys.readouterr().out
    assert "No changes" not in text and "migrat" in text.splitlines()[0]
