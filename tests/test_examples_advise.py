"""examples/ci-cd and examples/inference-autoscaling: the policies compile cleanly, the Kubernetes
manifests pass kubernetes-validate, and the application side agrees with the policy (HPA bounds
from the tenant's quota and the layout; runner templates ask for the stages' profiles)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import latest_version

from compiler.catalog import load_catalog
from compiler.cli import main
from compiler.model import Policy
from compiler.observe.model import profile_of
from compiler.observe.parse import parse_preference
from compiler.pipeline.compiled import compile_policy

ROOT = Path(__file__).resolve().parents[1]
CICD = ROOT / "examples" / "ci-cd"
INFERENCE = ROOT / "examples" / "inference-autoscaling"
CATALOG = load_catalog()


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def compiled(policy_dir: Path) -> tuple[Policy, dict[str, int]]:
    """The policy and, summed over the pools, the instances per resource the solved layout provides."""
    result = compile_policy([str(policy_dir)], None)
    assert not result.failed and result.policy is not None and result.solution is not None
    assert [d.message for d in result.diagnostics] == []  # not even a warning
    capacity: dict[str, int] = {}
    for pool in result.solution.pools:
        for name, count in pool.capacity().items():
            capacity[name] = capacity.get(name, 0) + count
    return result.policy, capacity


@pytest.mark.parametrize("example", [CICD, INFERENCE])
def test_policy_validates_compiles_and_is_advised(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    policy_dir = str((example / "policy").relative_to(ROOT))
    assert main(["validate", policy_dir]) == 0
    assert main(["compile", policy_dir, "--out", str(tmp_path / "out")]) == 0
    assert main(["advise", policy_dir]) == 0
    assert "advised mig" in capsys.readouterr().out


@pytest.mark.parametrize(
    "manifest",
    sorted([*(INFERENCE / "manifests").glob("*.yaml"), CICD / "runners" / "job-templates.yaml"]),
    ids=lambda p: p.name,
)
def test_manifests_pass_kubernetes_validate(manifest: Path) -> None:
    for doc in docs(manifest):
        kubernetes_validate.validate(doc, latest_version(), strict=True)


def test_hpa_bounds_come_from_the_tenant_quota_and_the_layout() -> None:
    policy, capacity = compiled(INFERENCE / "policy")
    (deployment,) = docs(INFERENCE / "manifests" / "deployment.yaml")
    (hpa,) = docs(INFERENCE / "manifests" / "hpa.yaml")
    assert hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert hpa["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    limits = deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    ((resource, per_pod),) = [(k, int(v)) for k, v in limits.items() if k.startswith("nvidia.com/")]
    profile = profile_of(resource)
    assert profile is not None
    workload = next(w for w in policy.workloads if w.name == deployment["metadata"]["name"])
    tenant = policy.tenant(workload.tenant)
    assert deployment["metadata"]["namespace"] in tenant.namespaces
    assert workload.need.profiles == (profile,)
    assert deployment["spec"]["template"]["spec"]["priorityClassName"] == f"migc-{workload.priority_tier}"
    # floor: the declared replicas; ceiling: what the tenant's burst quota admits ...
    assert hpa["spec"]["minReplicas"] == deployment["spec"]["replicas"] == workload.replicas
    burst = dict(tenant.burst.profiles)[profile]
    assert hpa["spec"]["maxReplicas"] == burst // per_pod
    # ... and the layout holds that many instances, so a scale-out never waits for a re-partition
    assert capacity[profile] >= hpa["spec"]["maxReplicas"] * per_pod
    assert dict(tenant.guaranteed.profiles)[profile] >= hpa["spec"]["maxReplicas"] * per_pod


def test_adapter_rule_serves_the_hpa_metric() -> None:
    (adapter,) = docs(INFERENCE / "manifests" / "prometheus-adapter-rules.yaml")
    (hpa,) = docs(INFERENCE / "manifests" / "hpa.yaml")
    (rule,) = yaml.safe_load(adapter["data"]["config.yaml"])["rules"]
    assert rule["name"]["as"] == hpa["spec"]["metrics"][0]["pods"]["metric"]["name"]
    assert rule["seriesQuery"].startswith("DCGM_FI_PROF_GR_ENGINE_ACTIVE{")
    assert set(rule["resources"]["overrides"]) == {"namespace", "pod"}


def test_runner_templates_ask_for_the_stage_profiles() -> None:
    policy, capacity = compiled(CICD / "policy")
    (configmap,) = docs(CICD / "runners" / "job-templates.yaml")
    ci = policy.tenant("ci")
    assert configmap["metadata"]["namespace"] in ci.namespaces
    stages = {w.name: w for w in policy.workloads if w.tenant == "ci"}
    firsts = set()
    for key, text in sorted(configmap["data"].items()):
        template = yaml.safe_load(text)
        preference = parse_preference(template["metadata"]["annotations"]["migc.dev/profile-preference"])
        assert preference, key
        (job,) = [c for c in template["spec"]["containers"] if c["name"] == "$job"]
        ((resource, count),) = job["resources"]["limits"].items()
        assert count == 1 and profile_of(resource) == preference[0]
        assert CATALOG.get("A100-SXM4-80GB").profile(preference[0]).resource_name == resource  # type: ignore[union-attr]
        assert template["spec"]["priorityClassName"] == f"migc-{ci.priority_tier}"
        matching = [w for w in stages.values() if w.need.profiles == preference]
        assert len(matching) == 1, key  # one stage Workload declares exactly this preference
        firsts.add(preference[0])
    assert firsts == {"1g.10gb", "2g.20gb", "3g.40gb"}
    burst = dict(ci.burst.profiles)
    for values_file in sorted((CICD / "runners").glob("arc-values-*.yaml")):
        (values,) = docs(values_file)
        env = {e["name"]: e["value"] for e in values["template"]["spec"]["containers"][0]["env"]}
        key = Path(env["ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE"]).name
        template = yaml.safe_load(configmap["data"][key])
        (job,) = template["spec"]["containers"]
        profile = profile_of(next(iter(job["resources"]["limits"])))
        assert profile is not None
        assert values["maxRunners"] == burst[profile] <= capacity[profile], values_file.name
