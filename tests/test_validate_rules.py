"""validate(): the Policy it builds (resolution, defaults, order) and rules the cases cannot show."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource

from compiler.catalog import load_catalog
from compiler.load import LoadedDocument, load_paths, load_text
from compiler.model import Policy
from compiler.pipeline import load_and_validate
from compiler.schemas import BASE_URI, POLICY_FILE, all_schema_files, dumps
from compiler.validate import parse_duration, validate

REPO = Path(__file__).resolve().parents[1]
PROD = REPO / "examples" / "prod"

FLEET = """\
apiVersion: migc.dev/v1alpha1
kind: Fleet
metadata: {name: f}
spec:
  pricing: {NVIDIA-H100-80GB-HBM3: 4.5, A100-SXM4-80GB: 3}
  clusters:
    - name: c
      nodePools:
        - name: sel
          gpuProduct: NVIDIA-H100-80GB-HBM3
          gpusPerNode: 8
          nodes: {selector: {matchLabels: {b: "2", a: "1"}}, count: 3}
          maxUnavailable: "50%"
        - name: named
          gpuProduct: nvidia-a100-sxm4-80gb
          gpusPerNode: 4
          nodes: {names: [z-node, a-node]}
          maxUnavailable: "10%"
"""
TENANT = """\
apiVersion: migc.dev/v1alpha1
kind: Tenant
metadata: {name: t}
spec:
  namespaces: [t-b, t-a]
  priorityClass: high
"""
WORKLOAD = """\
apiVersion: migc.dev/v1alpha1
kind: Workload
metadata: {name: %s}
spec:
  tenant: t
  replicas: 2
  need: %s
"""


def _docs(*texts: str) -> list[LoadedDocument]:
    out: list[LoadedDocument] = []
    for i, text in enumerate(texts):
        docs, diags = load_text(text, f"f{i}.yaml")
        assert diags == []
        out.extend(docs)
    return out


def _policy(*texts: str) -> Policy:
    policy, diags = validate(_docs(*texts), load_catalog())
    assert [d.as_dict() for d in diags] == []
    assert policy is not None
    return policy


def test_pools_resolve_products_selectors_and_max_unavailable() -> None:
    policy = _policy(FLEET, TENANT)
    (cluster,) = policy.clusters
    named, sel = cluster.pools  # sorted by name
    assert (named.name, named.gpu_model, named.node_names) == (
        "named",
        "A100-SXM4-80GB",
        ("a-node", "z-node"),
    )
    assert named.max_unavailable == 1  # 10% of 2 nodes rounds down to 0, and at least one node
    assert sel.node_names == ("sel-0", "sel-1", "sel-2")
    assert sel.node_selector == (("a", "1"), ("b", "2"))
    assert sel.node_count == 3 and sel.uses_selector
    assert sel.max_unavailable == 1  # 50% of 3 rounds down
    assert sel.mig and sel.total_gpus == 24
    assert sel.price_per_gpu_hour == 4.5 and named.price_per_gpu_hour == 3.0
    assert policy.partition.pricing == (("A100-SXM4-80GB", 3.0), ("H100-80GB", 4.5))


def test_workload_defaults_tier_cluster_and_isolation() -> None:
    policy = _policy(
        FLEET, TENANT, WORKLOAD % ("w-gpus", "{gpus: 2}"), WORKLOAD % ("w-mem", "{gpuMemoryGB: 12}")
    )
    by_name = {w.name: w for w in policy.workloads}
    assert [w.name for w in policy.workloads] == ["w-gpus", "w-mem"]
    assert by_name["w-gpus"].isolation == "exclusive" and by_name["w-gpus"].need.gpus == 2
    assert by_name["w-mem"].isolation == "hardware" and by_name["w-mem"].need.gpu_memory_gb == 12.0
    assert by_name["w-mem"].need.kind == "resources"
    assert {w.priority_tier for w in policy.workloads} == {"high"}  # inherited from the tenant
    assert {w.cluster for w in policy.workloads} == {"c"}  # the only cluster
    assert policy.tenants[0].namespaces == ("t-a", "t-b")


def test_preference_order_is_kept() -> None:
    policy = _policy(FLEET, TENANT, WORKLOAD % ("w", "{profiles: [3g.40gb, 1g.10gb, 2g.20gb]}"))
    assert policy.workloads[0].need.profiles == ("3g.40gb", "1g.10gb", "2g.20gb")


def test_default_partition_policy_and_lowest_tier_default() -> None:
    tenant = TENANT.replace("  priorityClass: high\n", "")
    policy = _policy(FLEET, tenant)
    assert policy.tenants[0].priority_tier == "low"
    assert policy.partition.interval_seconds == 900 and policy.partition.mode == "static"


def test_prod_example_model() -> None:
    policy, diags = load_and_validate([PROD])
    assert diags == [] and policy is not None
    assert policy.fleet_name == "prod"
    assert [p.name for p in policy.clusters[0].pools] == ["a100", "h100", "h200", "l40s"]
    l40s = policy.clusters[0].pools[3]
    assert not l40s.mig and l40s.sharing.mode == "time-slicing" and l40s.sharing.replicas == 4
    assert policy.partition.backoff_max_seconds == 7200 and policy.partition.min_dwell_seconds == 3600
    # static, with only the fields compile and plan read (dynamic-only ones would be MIGC180)
    assert policy.partition.mode == "static" and policy.partition.daily_change_budget == 4
    assert policy.partition.rules == ()
    assert policy.source_files == tuple(sorted(policy.source_files))
    fraud = next(w for w in policy.workloads if w.name == "fraud-graph-features")
    assert fraud.priority_tier == "high"  # its own, not the tenant's critical


def test_result_is_independent_of_document_order() -> None:
    docs, diags = load_paths([PROD])
    assert diags == []
    reference = validate(docs, load_catalog())
    rng = random.Random(7)
    for _ in range(5):
        shuffled = list(docs)
        rng.shuffle(shuffled)
        assert validate(shuffled, load_catalog()) == reference


@pytest.mark.parametrize(
    ("need", "expected"),
    [
        # the profiles branch's own error, never "is not valid under any of the given schemas"
        ("{profiles: 1g.10gb}", [("MIGC032", "$.spec.need.profiles")]),
        ("{profile: 7}", [("MIGC032", "$.spec.need.profile")]),
        ("{gpus: 0}", [("MIGC035", "$.spec.need.gpus")]),
        ("{profile: 1g.10gb, gpuMemoryGB: 10}", [("MIGC036", "$.spec.need")]),
        ("{}", [("MIGC036", "$.spec.need")]),
        ("{cpus: 2}", [("MIGC036", "$.spec.need"), ("MIGC031", "$.spec.need.cpus")]),
    ],
)
def test_need_union_reports_the_relevant_branch(need: str, expected: list[tuple[str, str]]) -> None:
    _, diags = validate(_docs(FLEET, TENANT, WORKLOAD % ("w", need)), load_catalog())
    assert [(d.code, d.path) for d in diags] == expected
    assert not any("valid under" in d.message for d in diags)


def test_semantic_rules_wait_for_the_schema() -> None:
    # a schema-invalid Fleet stops pool-dependent rules: only the schema error is reported
    broken = FLEET.replace("gpusPerNode: 8", "gpusPerNode: many")
    policy, diags = validate(_docs(broken, TENANT, WORKLOAD % ("w", "{profile: 7g.99gb}")), load_catalog())
    assert policy is None
    assert [d.code for d in diags] == ["MIGC032"]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("10m", 600),
        ("1h30m", 5400),
        ("2d", 172800),
        ("1d2h3m4s", 93784),
        ("", None),
        ("1x", None),
        ("m", None),
        ("10m1h", None),
    ],
)
def test_parse_duration(text: str, seconds: int | None) -> None:
    assert parse_duration(text) == seconds


def test_schema_files_are_generated_from_compiler_schemas() -> None:
    for name, schema in all_schema_files().items():
        path = REPO / "schema" / name
        assert path.read_text(encoding="utf-8") == dumps(schema), (
            f"regenerate: python -m compiler.schemas --write ({name})"
        )


def _described(node: object, where: str, missing: list[str]) -> None:
    if isinstance(node, dict):
        for key, sub in node.get("properties", {}).items():
            if isinstance(sub, dict) and "description" not in sub and "$ref" not in sub:
                missing.append(f"{where}.{key}")
        for key, sub in node.items():
            if key not in ("if", "then", "not"):  # conditions restate fields, they do not define them
                _described(sub, f"{where}.{key}", missing)
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            _described(sub, f"{where}[{i}]", missing)


def test_every_schema_field_has_a_description() -> None:
    missing: list[str] = []
    for name, schema in all_schema_files().items():
        jsonschema.Draft202012Validator.check_schema(schema)
        _described(schema, name, missing)
    assert missing == []


def test_editor_schema_accepts_the_examples_and_rejects_by_kind() -> None:
    files = all_schema_files()
    registry: Registry[Any] = Registry().with_resources(
        [(BASE_URI + n, Resource.from_contents(s)) for n, s in files.items()]
    )
    # retrieved by URI, so its relative "$ref"s resolve against it exactly as an editor resolves them
    # against the file's location
    validator = jsonschema.Draft202012Validator({"$ref": BASE_URI + POLICY_FILE}, registry=registry)
    docs, _ = load_paths([REPO / "examples" / n for n in ("lab", "prod", "multi-cluster")])
    assert len(docs) >= 30
    for doc in docs:
        assert list(validator.iter_errors(doc.data)) == [], doc.file
    bad = json.loads(json.dumps(docs[0].data))
    bad["spec"]["surprise"] = 1
    assert list(validator.iter_errors(bad))


def test_every_example_file_has_the_modeline() -> None:
    for path in sorted((REPO / "examples").glob("*/*.yaml")):
        if (path.parent / "fleet.yaml").exists():
            first = path.read_text(encoding="utf-8").splitlines()[0]
            assert first == "# yaml-language-server: $schema=../../schema/policy.schema.json", path


def test_every_missing_field_is_reported_even_at_one_position() -> None:
    # same file, line, column and code: still three different findings
    text = "apiVersion: migc.dev/v1alpha1\nkind: Workload\nmetadata: {name: w}\nspec: {}\n"
    docs, _ = load_text(text, "w.yaml")
    _, diags = validate(docs, load_catalog())
    missing = sorted(d.message for d in diags if d.code == "MIGC030")
    assert missing == [f"missing required field '{f}' in $.spec" for f in ("need", "replicas", "tenant")]


SHARED_FLEET = """\
apiVersion: migc.dev/v1alpha1
kind: Fleet
metadata: {name: f}
spec:
  clusters:
    - name: c
      nodePools:
        - name: shared
          gpuProduct: NVIDIA-L40S
          gpusPerNode: 4
          nodes: {names: [l-1]}
          partitioning: none
          sharing: {mode: %s, replicas: 4}
%s"""
MIG_POOL = """\
        - name: mig
          gpuProduct: NVIDIA-A100-SXM4-80GB
          gpusPerNode: 8
          nodes: {names: [a-1]}
          partitioning: %s
"""


@pytest.mark.parametrize(
    ("mode", "mig_pool", "codes"),
    [
        # k8s-device-plugin cmd/nvidia-device-plugin/main.go validateFlags: "using --mig-strategy=mixed is
        # not supported with MPS"; the GPU Operator sets MIG_STRATEGY cluster-wide (mixed for MIG pools).
        ("mps", MIG_POOL % "mig", ["MIGC132"]),
        # A MIG-capable model with partitioning: none needs no MIG strategy: MPS is fine.
        ("mps", MIG_POOL % "none", []),
        ("mps", "", []),
        # Time-slicing has no MIG-strategy rule in validateFlags: allowed beside MIG pools.
        ("time-slicing", MIG_POOL % "mig", []),
    ],
)
def test_mps_is_refused_beside_mig_pools(mode: str, mig_pool: str, codes: list[str]) -> None:
    _, diags = validate(_docs(SHARED_FLEET % (mode, mig_pool), TENANT), load_catalog())
    assert [d.code for d in diags if d.code.startswith("MIGC13")] == codes


def test_other_device_plugin_refusals_are_caught() -> None:
    # k8s-device-plugin api/config/v1/replicas.go: "number of replicas must be >= 2" (schema minimum).
    fleet = (SHARED_FLEET % ("time-slicing", "")).replace("replicas: 4", "replicas: 1")
    _, diags = validate(_docs(fleet, TENANT), load_catalog())
    assert [(d.code, d.message) for d in diags] == [
        ("MIGC035", "$.spec.clusters[0].nodePools[0].sharing.replicas: 1 is below the minimum 2")
    ]
    # k8s-device-plugin internal/plugin/mps.go: "sharing using MPS is not supported for MIG devices"
    # (and migc time-slices only whole GPUs): sharing on a MIG pool is MIGC119.
    mig_mps = (SHARED_FLEET % ("mps", "")).replace("NVIDIA-L40S", "NVIDIA-A100-SXM4-80GB")
    mig_mps = mig_mps.replace("partitioning: none", "partitioning: mig")
    _, diags = validate(_docs(mig_mps, TENANT), load_catalog())
    assert "MIGC119" in [d.code for d in diags]


_PARTITION = """\
apiVersion: migc.dev/v1alpha1
kind: PartitionPolicy
metadata: {name: p}
spec:
  objective: %s
"""


def test_objective_order_defaults_and_completes_a_partial_list() -> None:
    assert _policy(FLEET, TENANT).partition.objective == ("disruption", "gpus", "preference")
    named = _policy(FLEET, TENANT, _PARTITION % "[preference]")
    assert named.partition.objective == ("preference", "disruption", "gpus")
    full = _policy(FLEET, TENANT, _PARTITION % "[disruption, preference, gpus]")
    assert full.partition.objective == ("disruption", "preference", "gpus")


@pytest.mark.parametrize("value", ["[gpus, gpus]", "[cost]", "gpus"])
def test_objective_order_rejects_repeats_and_unknown_goals(value: str) -> None:
    policy, diags = validate(_docs(FLEET, TENANT, _PARTITION % value), load_catalog())
    assert policy is None
    (d,) = [d for d in diags if d.severity.name == "ERROR"]
    assert d.code.startswith("MIGC0") and d.file == "f2.yaml" and d.line == 5


def test_joint_guarantee_bound_summarises_a_long_list_of_tenants() -> None:
    # 12 tenants x 20 x 1g.10gb = 240 > 7 per GPU x 32 GPUs = 224, while each alone fits
    tenants = [
        f"apiVersion: migc.dev/v1alpha1\nkind: Tenant\nmetadata: {{name: g{i:02d}}}\nspec:\n"
        f"  namespaces: [g{i:02d}]\n  priorityClass: high\n  guaranteed: {{profiles: {{1g.10gb: 20}}}}\n"
        for i in range(12)
    ]
    _, diags = validate(_docs(FLEET, *tenants), load_catalog())
    (d,) = [d for d in diags if d.code == "MIGC110"]
    names = ", ".join(f"g{i:02d}" for i in range(10))
    assert d.message == (
        f"tenants {names} … and 2 more are guaranteed 240 × 1g.10gb together, but the fleet can "
        "provide at most 224"
    )
