"""DRA pools (``allocation: dra``): the rendered objects against the real formats.

* every object of ``examples/dra`` validates against the Kubernetes schema of its cluster's version
  (kubernetes-validate ships ``resource.k8s.io/v1`` from 1.34), strict;
* each DeviceClass's CEL selector, evaluated with a real CEL library (``common-expression-language``),
  matches exactly the devices of its profile in ResourceSlices built the way NVIDIA's DRA driver
  publishes them (kubernetes-sigs/dra-driver-nvidia-gpu @ 95932046683719c43b6a0dd9613c2e5aad5d6703):
  MIG devices carry ``CommonAttributesMig`` (cmd/gpu-kubelet-plugin/mig.go:139-167: type 'mig',
  parentUUID, profile, productName, brand, architecture, three versions) plus ``uuid``
  (deviceinfo.go:260-263), are named ``gpu-<minor>-mig-<profile without dots>-<id>-<start>``
  (mig.go:111-114); full GPUs carry type 'gpu' (deviceinfo.go:170-196); DynamicMIG devices carry the
  same attributes (partitions.go:175-176) and consume ``memory-slice-<i>`` counters of their GPU's
  counter set (partitions.go:209-214, memory-slice names 251-253);
* quota keys follow the API server's claim evaluator (kubernetes pkg/quota/v1/evaluator/core/
  resource_claims.go @ 95f08499: ``V1ResourceByDeviceClass`` line 41, ``Usage`` from line 107, its
  firstAvailable branch from line 117: one ``<class>.deviceclass.resource.k8s.io/devices`` per class, a
  firstAvailable request charged its largest count per class, every class; the suffix is
  ``ResourceClaimsPerClass``, kubernetes/api @ 10b39a39 core/v1/types.go:8135);
* the patches, applied by the real ``kubectl kustomize`` to a Deployment, give a pod template that
  asks for the claim and validates.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cel
import kubernetes_validate
import pytest
import yaml

from compiler.catalog import load_catalog
from compiler.model import Policy
from compiler.pipeline import load_and_validate
from compiler.render import check_quotas, render
from compiler.render.dra import QUOTA_SUFFIX, dra_diagnostics, selector
from compiler.solve.pipeline import solve
from compiler.solve.result import Solution

ROOT = Path(__file__).resolve().parents[1]
KUBECTL = shutil.which("kubectl")
DRIVER = "gpu.nvidia.com"
VERSIONS = {"east": "1.36.0", "west": "1.36.0"}  # examples/dra's kubernetesVersion per cluster
Obj = dict[str, Any]


def _compile(with_kueue: bool = False) -> tuple[Policy, Solution, dict[str, bytes]]:
    policy, diags = load_and_validate([ROOT / "examples" / "dra"])
    assert policy is not None, diags
    catalog = load_catalog()
    solution = solve(policy, catalog)
    return policy, solution, render(policy, solution, catalog, with_kueue=with_kueue, source_label="x")


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    return _compile()[2]


def _objects(files: dict[str, bytes], suffix: str = ".yaml") -> Iterator[tuple[str, Obj]]:
    for path, data in sorted(files.items()):
        if path.endswith(suffix) and "/patches/" not in path and "-settings/" not in path:
            doc = yaml.safe_load(data)
            if isinstance(doc, dict) and "kind" in doc and doc["kind"] != "Kustomization":
                yield path, doc


def _of_kind(files: dict[str, bytes], kind: str, cluster: str) -> dict[str, Obj]:
    return {p: d for p, d in _objects(files) if d["kind"] == kind and p.startswith(cluster + "/")}


# ----------------------------------------------------------------------------- driver-shaped fixtures


def _attrs(**values: str) -> dict[str, Obj]:
    out: dict[str, Obj] = {}
    for name, value in values.items():
        kind = (
            "version" if name in ("cudaComputeCapability", "driverVersion", "cudaDriverVersion") else "string"
        )
        out[name] = {kind: value}
    return out


def _parent(product: str) -> dict[str, str]:
    return {
        "productName": product,
        "brand": "Nvidia",
        "architecture": "Hopper",
        "cudaComputeCapability": "9.0.0",
        "driverVersion": "580.95.5",
        "cudaDriverVersion": "13.0.0",
    }


def mig_device(minor: int, profile: str, profile_id: int, start: int, product: str) -> Obj:
    """A static MIG device as MigDeviceInfo.GetDevice publishes it (deviceinfo.go:258-281)."""
    name = f"gpu-{minor}-mig-{profile.replace('.', '').replace('+', '-')}-{profile_id}-{start}"
    attrs = _attrs(
        type="mig",
        parentUUID=f"GPU-{minor:08d}",
        profile=profile,
        uuid=f"MIG-{minor}-{start}",
        **_parent(product),
    )
    return {"name": name, "attributes": attrs, "capacity": {"memory": {"value": "10Gi"}}}


def gpu_device(minor: int, product: str) -> Obj:
    return {
        "name": f"gpu-{minor}",
        "attributes": _attrs(type="gpu", uuid=f"GPU-{minor:08d}", **_parent(product)),
    }


def resource_slice(node: str, devices: list[Obj], shared: list[Obj] | None = None) -> Obj:
    spec: Obj = {
        "driver": DRIVER,
        "nodeName": node,
        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
        "devices": devices,
    }
    if shared:
        spec["sharedCounters"] = shared
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpu"},
        "spec": spec,
    }


def static_slice(node: str, layout: dict[str, int], product: str) -> Obj:
    """One GPU per profile instance group, from the layout the DraPlan says the node carries."""
    catalog = load_catalog()
    model = catalog.by_product(product.replace(" ", "-"))
    assert model is not None
    devices: list[Obj] = []
    minor = 0
    for profile, count in sorted(layout.items()):
        if profile == "gpu":
            devices.extend(gpu_device(minor + i, product) for i in range(count))
            minor += count
            continue
        prof = model.profile(profile)
        assert prof is not None and prof.id is not None
        for i in range(count):
            devices.append(
                mig_device(minor, profile, prof.id, prof.placements[i % len(prof.placements)], product)
            )
        minor += 1
    return resource_slice(node, devices)


def dynamic_slice(node: str, product: str) -> Obj:
    """DynamicMIG: every profile and placement of GPU 0, consuming memory-slice counters (partitions.go)."""
    model = load_catalog().by_product(product.replace(" ", "-"))
    assert model is not None
    devices: list[Obj] = [gpu_device(0, product)]
    for prof in model.profiles:
        assert prof.id is not None
        for start in prof.placements:
            dev = mig_device(0, prof.name, prof.id, start, product)
            dev["consumesCounters"] = [
                {
                    "counterSet": "gpu-0-counter-set",
                    "counters": {
                        f"memory-slice-{i}": {"value": "1"} for i in range(start, start + prof.memory_slices)
                    },
                }
            ]
            devices.append(dev)
    shared = [
        {
            "name": "gpu-0-counter-set",
            "counters": {f"memory-slice-{i}": {"value": "1"} for i in range(model.memory_slices)},
        }
    ]
    return resource_slice(node, devices, shared)


def cel_device(driver: str, device: Obj) -> Obj:
    """The CEL ``device`` variable: unqualified attribute names are in the driver's domain
    (k8s.io/api resource/v1 types.go QualifiedName doc, lines 792-796)."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, value in device.get("attributes", {}).items():
        domain, _, ident = name.rpartition("/")
        attributes.setdefault(domain or driver, {})[ident] = next(iter(value.values()))
    return {"driver": driver, "attributes": attributes}


def matches(expression: str, driver: str, device: Obj) -> bool:
    return cel.evaluate(expression, {"device": cel_device(driver, device)}) is True


# ------------------------------------------------------------------------------------------ tests


def test_every_rendered_object_validates_against_its_kubernetes_version(files: dict[str, bytes]) -> None:
    seen = set()
    for path, doc in _objects(files):
        if doc["apiVersion"].startswith("migc.dev/"):
            continue
        kubernetes_validate.validate(doc, VERSIONS[path.split("/")[0]], strict=True)
        seen.add(doc["kind"])
    assert {"DeviceClass", "ResourceClaimTemplate", "ResourceQuota"} <= seen


def test_fixtures_are_valid_resource_slices() -> None:
    for version in VERSIONS.values():
        kubernetes_validate.validate(
            static_slice("n", {"1g.10gb": 2, "gpu": 1}, "NVIDIA H100 80GB HBM3"), version, strict=True
        )
    kubernetes_validate.validate(dynamic_slice("n", "NVIDIA H200"), "1.36.0", strict=True)


def test_each_device_class_selects_exactly_its_profile_on_static_slices(files: dict[str, bytes]) -> None:
    plan = json.loads(yaml.safe_load(files["east/migc-system/configmap-migc-dra.yaml"])["data"]["dra.json"])
    nodes = plan["pools"][0]["nodes"]
    slices = [static_slice(n["name"], n["devices"], "NVIDIA H100 80GB HBM3") for n in nodes]
    devices = [d for s in slices for d in s["spec"]["devices"]]
    classes = _of_kind(files, "DeviceClass", "east")
    assert classes
    for doc in classes.values():
        profile = doc["metadata"]["annotations"]["migc.dev/profile"]
        expression = doc["spec"]["selectors"][0]["cel"]["expression"]
        hit = [d for d in devices if matches(expression, DRIVER, d)]
        want = [d for d in devices if d["attributes"].get("profile", {}).get("string") == profile]
        assert hit, f"{profile}: the class matches no advertised device"
        assert hit == want, profile
        laid_out = sum(n["devices"].get(profile, 0) for n in nodes)
        assert len(hit) == laid_out  # the class sees every instance the layout carries, and only those


def test_device_classes_select_dynamic_mig_devices_of_their_profile_only(files: dict[str, bytes]) -> None:
    devices = dynamic_slice("west-0", "NVIDIA H200")["spec"]["devices"]
    for doc in _of_kind(files, "DeviceClass", "west").values():
        profile = doc["metadata"]["annotations"]["migc.dev/profile"]
        hit = {
            d["name"] for d in devices if matches(doc["spec"]["selectors"][0]["cel"]["expression"], DRIVER, d)
        }
        placements = load_catalog().get("H200-141GB").profile(profile).placements  # type: ignore[union-attr]
        assert len(hit) == len(placements) > 0
        assert all(f"-mig-{profile.replace('.', '')}-" in name for name in hit)


def test_selector_refuses_other_drivers_full_gpus_and_near_names() -> None:
    expression = selector("1g.10gb")
    mig = mig_device(0, "1g.10gb", 19, 0, "NVIDIA H100 80GB HBM3")
    assert matches(expression, DRIVER, mig)
    assert not matches(expression, "gpu.example.com", mig)  # another driver's device
    assert not matches(expression, DRIVER, gpu_device(0, "NVIDIA H100 80GB HBM3"))
    assert not matches(expression, DRIVER, mig_device(0, "1g.10gb+me", 20, 0, "NVIDIA H100 80GB HBM3"))
    assert not matches(expression, DRIVER, mig_device(0, "1g.20gb", 15, 0, "NVIDIA H100 80GB HBM3"))


def claim_usage(spec: Obj) -> dict[str, int]:
    """resource_claims.go Usage (from line 107): per request, ExactCount counts; firstAvailable takes the
    largest count per class over its subrequests and charges every class."""
    out: dict[str, int] = {"count/resourceclaims.resource.k8s.io": 1}
    for request in spec["devices"]["requests"]:
        subs = request.get("firstAvailable") or [request["exactly"]]
        most: dict[str, int] = {}
        for sub in subs:
            key = sub["deviceClassName"] + QUOTA_SUFFIX
            most[key] = max(most.get(key, 0), int(sub.get("count", 1)))
        for key, value in most.items():
            out[key] = out.get(key, 0) + value
    return out


def test_quota_keys_are_what_the_claim_evaluator_charges(files: dict[str, bytes]) -> None:
    for cluster in VERSIONS:
        classes = {d["metadata"]["name"] for d in _of_kind(files, "DeviceClass", cluster).values()}
        quotas = {
            p: d for p, d in _of_kind(files, "ResourceQuota", cluster).items() if p.endswith("migc-dra.yaml")
        }
        templates = _of_kind(files, "ResourceClaimTemplate", cluster)
        assert quotas and templates
        for path, quota in quotas.items():
            keys = set(quota["spec"]["hard"])
            assert all(k.endswith(QUOTA_SUFFIX) for k in keys)
            assert {k.removesuffix(QUOTA_SUFFIX) for k in keys} <= classes | {"gpu.nvidia.com"}
            ns = quota["metadata"]["namespace"]
            for tpl in (t for t in templates.values() if t["metadata"]["namespace"] == ns):
                charged = set(claim_usage(tpl["spec"]["spec"])) - {"count/resourceclaims.resource.k8s.io"}
                assert charged <= keys, (
                    path,
                    tpl["metadata"]["name"],
                )  # nothing a template asks is unlimited


def test_a_preference_list_is_a_prioritized_claim_charged_on_both_classes(files: dict[str, bytes]) -> None:
    tpl = yaml.safe_load(files["east/tenants/search/search/resourceclaimtemplate-migc-embedder.yaml"])
    request = tpl["spec"]["spec"]["devices"]["requests"][0]
    assert [s["deviceClassName"] for s in request["firstAvailable"]] == [
        "mig-1g.10gb.migc.dev",
        "mig-2g.20gb.migc.dev",
    ]  # the workload's order: first choice first
    usage = claim_usage(tpl["spec"]["spec"])
    assert usage["mig-1g.10gb.migc.dev" + QUOTA_SUFFIX] == 1
    assert usage["mig-2g.20gb.migc.dev" + QUOTA_SUFFIX] == 1


def test_static_dra_nodes_are_laid_out_and_verified_with_the_device_plugin_off(
    files: dict[str, bytes],
) -> None:
    assignment = json.loads(
        yaml.safe_load(files["east/migc-system/configmap-migc-assignment.yaml"])["data"]["assignment.json"]
    )
    pools = {p["name"]: p for p in assignment["pools"]}
    dra_configs = {n["config"] for n in pools["h100"]["nodes"]}
    for name in dra_configs:
        cfg = assignment["configs"][name]
        mixed = cfg["migStrategy"] == "mixed"
        assert cfg["devicePluginConfig"] == ("migc-dra-mixed" if mixed else "migc-dra")
        assert cfg["resources"] == {"nvidia.com/gpu": 0}  # a running device plugin fails verification
    for node in pools["a100"]["nodes"]:
        assert not assignment["configs"][node["config"]]["devicePluginConfig"].startswith("migc-dra")
    plan = json.loads(yaml.safe_load(files["east/migc-system/configmap-migc-dra.yaml"])["data"]["dra.json"])
    assert plan["pools"][0]["nodeLabels"] == {"nvidia.com/gpu.deploy.device-plugin": "false"}


def test_dynamic_pools_get_no_layout_and_the_driver_gate(files: dict[str, bytes]) -> None:
    assignment = json.loads(
        yaml.safe_load(files["west/migc-system/configmap-migc-assignment.yaml"])["data"]["assignment.json"]
    )
    assert assignment["pools"] == [] and assignment["configs"] == {}
    mig_parted = yaml.safe_load(files["west/gpu-operator/configmap-migc-mig-parted-config.yaml"])
    assert "h200" not in mig_parted["data"]["config.yaml"]
    values = yaml.safe_load(files["west/dra-settings/dra-driver-values.yaml"])
    assert values["featureGates"] == {"DynamicMIG": True}
    assert not yaml.safe_load(files["east/dra-settings/dra-driver-values.yaml"])["featureGates"]["DynamicMIG"]
    plan = json.loads(yaml.safe_load(files["west/migc-system/configmap-migc-dra.yaml"])["data"]["dra.json"])
    labels = plan["pools"][0]["nodeLabels"]
    assert labels["nvidia.com/gpu.deploy.mig-manager"] == "false"  # all-disabled would undo the driver's MIG
    terms = values["kubeletPlugin"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    exprs = terms["nodeSelectorTerms"][0]["matchExpressions"]
    assert {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5e.48xlarge"]} in exprs


def test_kueue_maps_each_class_to_the_cluster_queue_resource(files: dict[str, bytes]) -> None:
    """kueue pkg/config/validation.go validateDeviceClassMappings: <= 16 mappings, names are label keys,
    a class in one mapping; each mapped name is a resource the tenants' ClusterQueues cover."""
    _, _, with_kueue = _compile(with_kueue=True)
    for cluster in VERSIONS:
        config = yaml.safe_load(files[f"{cluster}/dra-settings/kueue-configuration.yaml"])
        mappings = config["resources"]["deviceClassMappings"]
        assert 0 < len(mappings) <= 16
        seen: set[str] = set()
        for m in mappings:
            assert len(m["deviceClassNames"]) == 1 and m["deviceClassNames"][0] not in seen
            seen.add(m["deviceClassNames"][0])
        covered: set[str] = set()
        for path, doc in _objects(with_kueue):
            if doc["kind"] == "ClusterQueue" and path.startswith(cluster + "/"):
                for group in doc["spec"]["resourceGroups"]:
                    covered.update(group["coveredResources"])
        classes = {d["metadata"]["name"] for d in _of_kind(files, "DeviceClass", cluster).values()}
        assert classes <= seen
        assert {m["name"] for m in mappings if m["deviceClassNames"][0] in classes} <= covered


APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: embedder, namespace: search}
spec:
  selector: {matchLabels: {app: embedder}}
  template:
    metadata: {labels: {app: embedder}}
    spec:
      containers:
      - name: server
        image: app
        resources: {requests: {cpu: "1"}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ranker, namespace: search}
spec:
  selector: {matchLabels: {app: ranker}}
  template:
    metadata: {labels: {app: ranker}}
    spec:
      containers:
      - name: server
        image: app
"""


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not on PATH")
def test_kubectl_kustomize_gives_pods_the_claim(files: dict[str, bytes], tmp_path: Path) -> None:
    for rel, data in files.items():
        (tmp_path / "out" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "out" / rel).write_bytes(data)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "deploy.yaml").write_text(APP)
    (tmp_path / "app" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [deploy.yaml]\n"
        "components: [../out/east/patches/search]\n"
    )
    assert KUBECTL is not None
    done = subprocess.run(
        [KUBECTL, "kustomize", str(tmp_path / "app")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    deploy = next(d for d in yaml.safe_load_all(done.stdout) if d and d["metadata"]["name"] == "embedder")
    spec = deploy["spec"]["template"]["spec"]
    assert spec["resourceClaims"] == [{"name": "migc-gpu", "resourceClaimTemplateName": "migc-embedder"}]
    assert spec["containers"][0]["resources"]["claims"] == [{"name": "migc-gpu"}]
    assert "limits" not in spec["containers"][0]["resources"]  # no nvidia.com/mig-* on a DRA pool
    kubernetes_validate.validate(deploy, "1.36.0", strict=True)
    ranker = next(d for d in yaml.safe_load_all(done.stdout) if d and d["metadata"]["name"] == "ranker")
    # the same namespace's workload on the device-plugin pool keeps its extended-resource limit
    assert ranker["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "limits": {"nvidia.com/mig-1g.10gb": "1"}
    }


def _diagnostics(tmp_path: Path, old: str, new: str) -> list[tuple[str, str]]:
    src = tmp_path / "policy"
    shutil.copytree(ROOT / "examples" / "dra", src)
    text = (src / "tenants.yaml").read_text()
    assert old in text
    (src / "tenants.yaml").write_text(text.replace(old, new))
    policy, _ = load_and_validate([src])
    assert policy is not None
    catalog = load_catalog()
    return [(d.code, d.message) for d in dra_diagnostics(policy, solve(policy, catalog), catalog)]


def test_compile_warns_where_the_quota_evaluator_limits_a_prioritized_claim(tmp_path: Path) -> None:
    # embedder: 4 replicas, first available of 1g.10gb / 2g.20gb; a hard limit of 2 on 2g.20gb admits 2 claims
    diags = _diagnostics(
        tmp_path,
        "burst: {profiles: {1g.10gb: 14, 2g.20gb: 4}}",
        "burst: {profiles: {1g.10gb: 14, 2g.20gb: 2}}",
    )
    assert any(c == "MIGC331" and "admits 2 of its 4 replicas" in m for c, m in diags)
    codes = {c for c, _ in diags}
    assert {"MIGC330", "MIGC332"} <= codes  # two quota counters in east; Kueue refuses firstAvailable


def test_no_prioritized_claim_warning_when_every_alternative_admits_the_replicas(tmp_path: Path) -> None:
    diags = _diagnostics(tmp_path, "2g.20gb: 4}}\n", "2g.20gb: 4}}\n")
    assert "MIGC331" not in {c for c, _ in diags}


def test_dynamic_pool_bursts_are_measured_against_what_the_driver_could_carve(tmp_path: Path) -> None:
    """genai may burst to 8 x 2g.35gb, which the solver's carve-up of west has none of: the driver can carve
    up to 3 per H200 (catalog maxCount) x 32 GPUs; only a burst above that is unreachable (MIGC255)."""
    catalog = load_catalog()
    policy, _ = load_and_validate([ROOT / "examples" / "dra"])
    assert policy is not None
    solution = solve(policy, catalog)
    assert not any(r.resource == "2g.35gb" and r.served for p in solution.pools for r in p.demand)
    assert [d for d in check_quotas(policy, solution, catalog) if d.code == "MIGC255"] == []
    src = tmp_path / "policy"
    shutil.copytree(ROOT / "examples" / "dra", src)
    text = (src / "tenants.yaml").read_text()
    (src / "tenants.yaml").write_text(text.replace("2g.35gb: 8", "2g.35gb: 97"))
    policy, _ = load_and_validate([src])
    assert policy is not None
    over = [d for d in check_quotas(policy, solve(policy, catalog), catalog) if d.code == "MIGC255"]
    assert len(over) == 1 and "97 2g.35gb" in over[0].message and "only 96" in over[0].message


def test_on_kubernetes_1_34_every_object_validates_there(tmp_path: Path) -> None:
    """resource.k8s.io/v1 is GA from 1.34: the same objects, rendered for a 1.34 cluster, validate at 1.34."""
    src = tmp_path / "policy"
    shutil.copytree(ROOT / "examples" / "dra", src)
    (src / "fleet.yaml").write_text((src / "fleet.yaml").read_text().replace('"1.36"', '"1.34"'))
    policy, diags = load_and_validate([src])
    assert policy is not None
    assert sorted({d.code for d in diags}) == ["MIGC162", "MIGC192"]  # DynamicMIG gate, beta admission API
    catalog = load_catalog()
    kinds = set()
    for _, doc in _objects(render(policy, solve(policy, catalog), catalog, source_label="x")):
        if not doc["apiVersion"].startswith("migc.dev/"):
            kubernetes_validate.validate(doc, "1.34.0", strict=True)
            kinds.add(doc["kind"])
    assert {"DeviceClass", "ResourceClaimTemplate", "MutatingAdmissionPolicy"} <= kinds


def test_every_dra_plan_follows_its_schema(files: dict[str, bytes]) -> None:
    import jsonschema

    schema = json.loads((ROOT / "schema" / "draplan.schema.json").read_text(encoding="utf-8"))
    for cluster in VERSIONS:
        cm = yaml.safe_load(files[f"{cluster}/migc-system/configmap-migc-dra.yaml"])
        doc = json.loads(cm["data"]["dra.json"])
        assert list(jsonschema.Draft202012Validator(schema).iter_errors(doc)) == []
        assert cm["metadata"]["annotations"]["migc.dev/revision"] == doc["revision"]
