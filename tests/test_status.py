"""`migc status` against snapshot files of the example fleet (examples/prod and its output/).

The cluster is built by ``statusfleet`` from the committed NodeAssignment, so every expected number
here follows from that document and examples/prod/fleet.yaml, not from the code under test.
"""

from __future__ import annotations

import copy
import datetime as dt
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import statusfleet as sf
import yaml
from fakeprometheus import FakePrometheus, dcgm_sample

from compiler.cli import main
from compiler.observe.model import Observation
from compiler.observe.parse import parse_objects
from compiler.observe.prometheus import FB_USED, GR_ENGINE_ACTIVE, InstanceUsage
from compiler.pipeline.compiled import compile_policy
from compiler.status import Filters, build_status, to_html, to_json
from compiler.status.model import FleetStatus

ROOT = Path(__file__).resolve().parents[1]
NOW = dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.UTC)
A100_MIG = "gpu-a100-use1-04"


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


@pytest.fixture(scope="module")
def compiled() -> Any:
    result = compile_policy(["examples/prod"], ROOT / "output")
    assert not result.failed
    return result


def status(
    compiled: Any,
    cluster: dict[str, Any],
    *,
    doc: dict[str, Any] | None = None,
    usage: tuple[InstanceUsage, ...] | None = None,
    filters: Filters = Filters(),  # noqa: B008
) -> FleetStatus:
    nodes, pods, diags, _ = parse_objects([(o, "snap.json") for o in cluster["items"]], NOW)
    obs = Observation(
        taken_at=NOW, source="snapshot snap.json", nodes=nodes, pods=pods, warnings=tuple(diags)
    )
    return build_status(
        compiled.policy,
        compiled.catalog,
        obs,
        {"prod-east": doc or sf.prod_assignment()},
        expected_from="output/",
        usage=usage,
        filters=filters,
    )


def items_named(cluster: dict[str, Any], name: str) -> dict[str, Any]:
    return next(i for i in cluster["items"] if i["metadata"]["name"] == name)


def test_capacity_allocated_free_per_node(compiled: Any) -> None:
    doc = sf.prod_assignment()
    s = status(compiled, sf.fleet(doc))
    by_name = {n.name: n for n in s.nodes}
    assert set(by_name) == set(sf.node_names(doc))
    for name, (_pool, config, _labels) in sf.node_names(doc).items():
        resources = doc["configs"][config]["resources"]
        n = by_name[name]
        assert dict(n.capacity) == resources
        assert dict(n.allocated) == {r: (c - 1 if c > 1 else c) for r, c in resources.items()}
        assert dict(n.free) == {r: 1 for r, c in resources.items() if c > 1}
        assert n.drift == () and not n.rolling_out
        assert len(n.gpus) == len(doc["configs"][config]["devices"])
    assert s.missing_nodes == () and s.unmanaged_nodes == () and s.pending == ()


def test_gpu_bars_follow_the_config(compiled: Any) -> None:
    doc = sf.prod_assignment()
    node = next(n for n in status(compiled, sf.fleet(doc)).nodes if n.name == A100_MIG)
    devices = doc["configs"][sf.node_names(doc)[A100_MIG][1]]["devices"]
    for gpu, device in zip(node.gpus, devices, strict=True):
        assert gpu.mig_enabled == device["migEnabled"]
        drawn: dict[str, int] = {}
        for slot in gpu.slots:
            if slot.resource:
                drawn[slot.resource] = drawn.get(slot.resource, 0) + 1
        if device["migEnabled"]:
            expected = {"nvidia.com/mig-" + p.replace("+", "."): c for p, c in device["profiles"].items()}
        else:
            expected = {"nvidia.com/gpu": 1}
        assert drawn == expected
        # slots do not overlap and stay inside the GPU
        edges = sorted((s.start, s.start + s.width) for s in gpu.slots)
        assert all(a[1] <= b[0] + 1e-9 for a, b in itertools.pairwise(edges))
        assert edges[-1][1] <= 1.0 + 1e-9
    # every pod on the node is drawn exactly once, with its namespace's tenant
    pods = [s.pod for g in node.gpus for s in g.slots if s.pod]
    assert sorted(pods) == sorted(node.pods)
    tenants = {s.tenant for g in node.gpus for s in g.slots if s.pod.startswith("fraud/")}
    assert tenants == {"fraud-detection"}


def test_cost_from_fleet_prices(compiled: Any) -> None:
    s = status(compiled, sf.fleet())
    # examples/prod/fleet.yaml: 4×8 A100 at 3.4, 3×8 H100 at 4.9, 2×8 H200 at 6.1, 2×4 L40S at 1.6
    assert s.cost.per_hour == pytest.approx(32 * 3.4 + 24 * 4.9 + 16 * 6.1 + 8 * 1.6)
    by_pool = {p.name: p for p in s.pools}
    assert by_pool["l40s"].cost_per_hour == pytest.approx(12.8)
    # each L40S node: 16 time-sliced shares of 4 GPUs, 15 taken → 1/4 GPU idle per node
    assert by_pool["l40s"].free_share == pytest.approx(0.5)
    assert by_pool["l40s"].idle_cost_per_hour == pytest.approx(0.5 * 1.6)
    assert s.cost.idle_per_hour == pytest.approx(sum(p.idle_cost_per_hour or 0 for p in s.pools))
    assert s.cost.allocated_per_hour + s.cost.idle_per_hour == pytest.approx(s.cost.per_hour)
    assert sum(t.cost_per_hour or 0 for t in s.tenants) == pytest.approx(s.cost.allocated_per_hour)
    assert s.cost.savings_vs_whole_gpu_per_hour > 0


def test_pending_pods_starvation_and_max_wait(compiled: Any) -> None:
    cluster = sf.fleet()
    cluster["items"] += [
        sf.pod(
            "late",
            "search",
            "nvidia.com/mig-1g.10gb",
            created="2026-12-01T05:30:00Z",
            annotations={"migc.dev/max-wait-time": "15m"},
        ),
        sf.pod("fresh", "fraud", "nvidia.com/mig-1g.20gb", created="2026-12-01T05:58:00Z"),
    ]
    s = status(compiled, cluster)
    assert [(p.pod, p.tenant, p.pending_seconds, p.over_max_wait) for p in s.pending] == [
        ("fraud/fresh", "fraud-detection", 120.0, False),
        ("search/late", "search", 1800.0, True),
    ]
    tenants = {t.name: t for t in s.tenants}
    # search holds 10 1g.10gb of its 12 guaranteed and waits for one: starved
    assert dict(tenants["search"].allocated)["nvidia.com/mig-1g.10gb"] == 10
    assert tenants["search"].starved == ("nvidia.com/mig-1g.10gb",)
    assert tenants["search"].pending == 1
    assert tenants["genai-platform"].starved == ()


def test_drift_rollout_missing_and_unmanaged(compiled: Any) -> None:
    doc = sf.prod_assignment()
    cluster = sf.fleet(doc)
    # a node still on its old config, mid-rollout
    other = items_named(cluster, "gpu-h100-use1-01")
    other["metadata"]["labels"]["nvidia.com/mig.config"] = "all-balanced"
    other["metadata"]["labels"]["nvidia.com/mig.config.state"] = "pending"
    other["metadata"]["annotations"].update(
        {"migc.dev/phase": "Applying", "migc.dev/phase-since": "2026-12-01T05:50:00Z"}
    )
    # a node whose device plugin advertises less than its config
    short = items_named(cluster, "gpu-h100-use1-02")
    short["status"]["allocatable"]["nvidia.com/gpu"] = "7"
    # one selector node gone, one GPU node no pool selects
    cluster["items"] = [i for i in cluster["items"] if i["metadata"]["name"] != "gpu-h200-use1a-01"]
    stray = sf.node("gpu-stray", "h100", "all-disabled-8gpu-whole-gpus", doc, {})
    stray["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-H100-80GB-HBM3"
    cluster["items"].append(stray)
    s = status(compiled, cluster)
    by_name = {n.name: n for n in s.nodes}
    applying = by_name["gpu-h100-use1-01"]
    assert applying.rolling_out and applying.phase == "Applying"
    assert applying.phase_since == dt.datetime(2026, 12, 1, 5, 50, tzinfo=dt.UTC)
    assert applying.drift == ("carries all-balanced, assignment says all-disabled-8gpu-whole-gpus",)
    assert not any(g.known for g in applying.gpus)  # all-balanced is not in the assignment: not guessed
    assert by_name["gpu-h100-use1-02"].drift == ("allocatable differs (has/expected): nvidia.com/gpu 7/8",)
    assert s.missing_nodes == ("h200: 1 of 2 selector nodes",)
    assert s.unmanaged_nodes == ("gpu-stray",)
    assert [n.name for n in s.nodes if n.drift] == ["gpu-h100-use1-01", "gpu-h100-use1-02"]


def test_selector_pool_nodes_take_the_counted_configs(compiled: Any) -> None:
    doc = sf.prod_assignment()
    cluster = sf.fleet(doc)
    counts = next(p for p in doc["pools"] if p["name"] == "h200")["configCounts"]
    a, b = items_named(cluster, "gpu-h200-use1a-01"), items_named(cluster, "gpu-h200-use1a-02")
    # swapping the two nodes' configs is no drift: the pool's multiset is what is assigned
    la, lb = a["metadata"]["labels"], b["metadata"]["labels"]
    la["nvidia.com/mig.config"], lb["nvidia.com/mig.config"] = (
        lb["nvidia.com/mig.config"],
        la["nvidia.com/mig.config"],
    )
    a["status"]["allocatable"], b["status"]["allocatable"] = (
        b["status"]["allocatable"],
        a["status"]["allocatable"],
    )
    s = status(compiled, cluster)
    h200 = [n for n in s.nodes if n.pool == "h200"]
    assert sorted(n.expected_config for n in h200) == sorted(c for c, k in counts.items() for _ in range(k))
    assert all(n.drift == () for n in h200)


def test_filters(compiled: Any) -> None:
    cluster = sf.fleet()
    full = items_named(cluster, "gpu-l40s-use1-01")
    cluster["items"].append(
        sf.pod("one-more", "research-notebooks", "nvidia.com/gpu", node=full["metadata"]["name"])
    )
    s = status(compiled, cluster, filters=Filters(pools=("a100",)))
    assert {n.pool for n in s.nodes} == {"a100"} and [p.name for p in s.pools] == ["a100"]
    s = status(compiled, cluster, filters=Filters(free_only=True))
    assert "gpu-l40s-use1-01" not in {n.name for n in s.nodes} and "gpu-l40s-use1-02" in {
        n.name for n in s.nodes
    }
    s = status(compiled, cluster, filters=Filters(tenants=("genai-platform",)))
    assert [t.name for t in s.tenants] == ["genai-platform"]
    assert all(any(p.startswith(("genai/", "genai-eval/")) for p in n.pods) for n in s.nodes)
    assert "gpu-l40s-use1-01" not in {n.name for n in s.nodes}


def test_usage_is_attached_to_gpus_and_instances(compiled: Any) -> None:
    doc = sf.prod_assignment()
    devices = doc["configs"][sf.node_names(doc)[A100_MIG][1]]["devices"]
    mig_gpu = next(i for i, d in enumerate(devices) if d["migEnabled"] and "1g.20gb" in d["profiles"])
    usage = (
        InstanceUsage("gpu-a100-use1-01", 0, "", engine_active=0.9, memory_used_mib=70000.0),
        InstanceUsage("gpu-a100-use1-01", 1, "", engine_active=0.0),
        InstanceUsage(A100_MIG, mig_gpu, "5", profile="1g.20gb", engine_active=0.4),
    )
    s = status(compiled, sf.fleet(doc), usage=usage)
    nodes = {n.name: n for n in s.nodes}
    n1 = nodes["gpu-a100-use1-01"]
    assert n1.used_instances == 1 and n1.mean_engine_active == pytest.approx(0.45)
    assert n1.gpus[0].slots[0].memory_used_mib == 70000.0
    inst = [sl for sl in nodes[A100_MIG].gpus[mig_gpu].slots if sl.engine_active is not None]
    assert [(sl.resource, sl.engine_active) for sl in inst] == [("nvidia.com/mig-1g.20gb", 0.4)]
    assert (
        nodes["gpu-a100-use1-02"].used_instances == 0 and nodes["gpu-a100-use1-02"].mean_engine_active is None
    )


def test_output_is_deterministic(compiled: Any) -> None:
    cluster = sf.fleet()
    shuffled = copy.deepcopy(cluster)
    shuffled["items"].reverse()
    a, b = status(compiled, cluster), status(compiled, shuffled)
    assert to_json(a) == to_json(b) and to_html(a) == to_html(b)
    body = json.loads(to_json(a))
    assert body["kind"] == "FleetStatus" and len(body["nodes"]) == 11


# --- the command end to end --------------------------------------------------------------------------
def test_cli_html_replaces_a_planted_symlink_never_writes_through_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = sf.write_snapshot(tmp_path / "cluster.json")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    html = tmp_path / "status.html"
    html.symlink_to(victim)
    rc = main(sf.status_argv("--snapshot", str(snap), "--html", str(html)))
    _, err = capsys.readouterr()
    assert rc == 0, err
    assert victim.read_text() == "precious\n"
    assert not html.is_symlink() and html.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".migc-tmp")] == []


def test_cli_snapshot_text_json_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = sf.fleet()
    cluster["items"].append(
        sf.pod("odd", "fraud", "nvidia.com/mig-1g.20gb", annotations={"migc.dev/max-wait-time": "soon"})
    )
    snap = sf.write_snapshot(tmp_path / "cluster.json", cluster)
    html = tmp_path / "console" / "status.html"
    samples = {
        GR_ENGINE_ACTIVE: [dcgm_sample(GR_ENGINE_ACTIVE, "gpu-a100-use1-01", 0, 0.5)],
        FB_USED: [dcgm_sample(FB_USED, "gpu-a100-use1-01", 0, 1024.0)],
    }
    with FakePrometheus(samples) as prom:
        rc = main(
            sf.status_argv(
                "--snapshot", str(snap), "-o", "json", "--html", str(html), "--prometheus", prom.url
            )
        )
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "MIGC401" in err and "pod fraud/odd" in err
    body = json.loads(out)
    assert body["with_usage"] is True and body["expected_from"] == "output/"
    assert [p["pod"] for p in body["pending"]] == ["fraud/odd"]
    node = next(n for n in body["nodes"] if n["name"] == "gpu-a100-use1-01")
    assert node["used_instances"] == 1 and node["mean_engine_active"] == 0.5
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "http://" not in page and "https://" not in page
    assert page.count('class="gpu"') == 32 + 24 + 16 + 8
    rc = main(sf.status_argv("--snapshot", str(snap), "--pool", "l40s"))
    out, err = capsys.readouterr()
    assert rc == 0
    assert "gpu-l40s-use1-01" in out and "gpu-a100-use1-01" not in out
    assert "Pending GPU pods: 1" in out and "fraud/odd" in out
    argv = sf.status_argv("--snapshot", str(snap), "--exit-code")
    assert main(argv) == 0  # nothing drifts
    node = next(i for i in cluster["items"] if i["metadata"]["name"] == "gpu-l40s-use1-02")
    node["status"]["allocatable"]["nvidia.com/gpu"] = "4"  # time-slicing lost: 4 shares instead of 16
    sf.write_snapshot(snap, cluster)
    assert main(argv) == 3
    assert "nvidia.com/gpu 4/16" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "rc", "needle"),
    [
        (["status", "examples/prod"], 2, "either --snapshot"),
        (["status", "examples/prod", "--snapshot", "x.json", "--in-cluster"], 2, "either --snapshot"),
        (["status", "examples/prod", "--snapshot", "x.json", "--now", "yesterday"], 1, "MIGC406"),
        (["status", "examples/prod", "--snapshot", "x.json", "-o", "yaml"], 2, "yaml"),
    ],
)
def test_cli_usage(argv: list[str], rc: int, needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == rc
    assert needle in capsys.readouterr().err


def test_cli_errors_are_coded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.json"
    assert main(["status", "examples/prod", "--snapshot", str(missing)]) == 1
    _, err = capsys.readouterr()
    assert "MIGC400" in err and "Traceback" not in err
    snap = sf.write_snapshot(tmp_path / "c.json")
    assert main(["status", "examples/prod", "--snapshot", str(snap), "--pool", "nope"]) == 2
    assert "not in the policy: nope" in capsys.readouterr().err
    bad = tmp_path / "out" / "prod-east" / "migc-system"
    bad.mkdir(parents=True)
    (bad / "configmap-migc-assignment.yaml").write_text("data: {assignment.json: '{'}\n")
    assert main(["status", "examples/prod", "--snapshot", str(snap), "--against", str(tmp_path / "out")]) == 1
    out, err = capsys.readouterr()
    assert "MIGC405" in err and out == ""
    doc = sf.prod_assignment()
    next(p for p in doc["pools"] if p["name"] == "h200")["configCounts"] = {
        "all-disabled-8gpu-whole-gpus": "two"
    }
    (bad / "configmap-migc-assignment.yaml").write_text(
        yaml.safe_dump({"data": {"assignment.json": json.dumps(doc)}})
    )
    assert main(["status", "examples/prod", "--snapshot", str(snap), "--against", str(tmp_path / "out")]) == 1
    out, err = capsys.readouterr()
    assert "MIGC405" in err and "Traceback" not in err and out == ""
    unreachable = tmp_path / "kubeconfig"
    unreachable.write_text(sf.kubeconfig("http://127.0.0.1:9"))
    assert main(["status", "examples/prod", "--kubeconfig", str(unreachable), "--timeout", "2"]) == 1
    out, err = capsys.readouterr()
    assert "MIGC403" in err and out == ""


def test_all_balanced_comparison(compiled: Any) -> None:
    from compiler.status.build import _balanced_gpus

    a100 = compiled.catalog.get("A100-SXM4-80GB")
    # all-balanced A100 (GPU Operator default-mig-parted-config): 2×1g.10gb, 1×2g.20gb, 1×3g.40gb per GPU
    assert dict(a100.balanced) == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    alloc = {
        "nvidia.com/mig-1g.10gb": 19,
        "nvidia.com/mig-1g.10gb.me": 1,  # held by a 1g.10gb instance
        "nvidia.com/mig-1g.20gb": 3,  # 20 GB needs a 2g.20gb
        "nvidia.com/mig-2g.20gb": 4,
        "nvidia.com/mig-7g.80gb": 1,  # larger than any balanced instance: a GPU of its own
        "nvidia.com/gpu": 22,
    }
    assert _balanced_gpus(a100, alloc) == max(-(-20 // 2), 7) + 1 + 22
    assert _balanced_gpus(compiled.catalog.get("L40S"), {"nvidia.com/gpu": 3}) is None
    s = status(compiled, sf.fleet())
    a100_pool = next(p for p in s.pools if p.name == "a100")
    assert a100_pool.balanced_gpus_needed == 33


def test_tenant_memory_and_compute_against_quota(compiled: Any) -> None:
    s = status(compiled, sf.fleet())
    rec = next(t for t in s.tenants if t.name == "recommendations")
    # recsys holds 3 of the 4 H100 3g.40gb (40 GB, 3 slices) and 2 of the 3 H200 3g.71gb (71 GB, 3 slices);
    # examples/prod/tenants.yaml: guaranteed gpuMemoryGB 240; the burst is countable profiles (a burst in
    # GB or slices cannot be enforced, MIGC130), so no memory or slice burst
    assert dict(rec.allocated) == {"nvidia.com/mig-3g.40gb": 3, "nvidia.com/mig-3g.71gb": 2}
    assert rec.memory_gb == (float(3 * 40 + 2 * 71), 240.0, 0.0)
    assert rec.compute_slices == (5 * 3, 0, 0)
