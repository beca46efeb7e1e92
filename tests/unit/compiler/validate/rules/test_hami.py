"""HAMi policy: the model built from sharing: hami pools, need.hami and hami quotas, and each MIGC17x rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.catalog import load_catalog
from compiler.diagnostics import Diagnostic
from compiler.load import LoadedDocument, load_text
from compiler.model import HamiNeed, HamiSettings, Policy
from compiler.pipeline import load_and_validate
from compiler.validate import validate
from compiler.validate.registry import rules
from compiler.validate.rules import hami as hami_rules

REPO = Path(__file__).resolve().parents[5]

FLEET = """\
apiVersion: migc.dev/v1alpha1
kind: Fleet
metadata: {name: f}
spec:
  clusters:
    - name: c
      nodePools:
        - name: l40s
          gpuProduct: NVIDIA-L40S
          gpusPerNode: 2
          nodes: {names: [n1]}
          sharing: {mode: hami, hami: {splitCount: 3%s}}
        - name: a100
          gpuProduct: NVIDIA-A100-SXM4-80GB
          gpusPerNode: 2
          nodes: {names: [n2]}
"""
TENANT = """\
apiVersion: migc.dev/v1alpha1
kind: Tenant
metadata: {name: t}
spec:
  namespaces: [t]
  burst: {hami: {vgpus: 4, memory: 40Gi, cores: 150}}
"""
WORKLOAD = """\
apiVersion: migc.dev/v1alpha1
kind: Workload
metadata: {name: w}
spec:
  tenant: t
  replicas: %d
  need: {hami: %s}
%s"""


def _run(
    fleet_extra: str = "",
    replicas: int = 2,
    need: str = "{memory: 12Gi, cores: 30}",
    extra: str = "",
    tenant: str = TENANT,
) -> tuple[Policy | None, list[Diagnostic]]:
    docs: list[LoadedDocument] = []
    for i, text in enumerate((FLEET % fleet_extra, tenant, WORKLOAD % (replicas, need, extra))):
        loaded, diags = load_text(text, f"f{i}.yaml")
        assert not diags
        docs.extend(loaded)
    return validate(docs, load_catalog())


def _codes(diags: list[Diagnostic]) -> list[str]:
    return [d.code for d in diags]


def test_model_of_a_hami_pool_need_and_quota() -> None:
    policy, diags = _run(
        ", memoryScaling: 1, gpuPolicy: binpack", need="{memory: 25%, cores: 30, distinctGpus: true}"
    )
    assert policy is not None, diags
    pool = policy.cluster("c").pools[1]
    assert pool.name == "l40s" and not pool.mig
    assert pool.sharing.mode == "hami"
    assert pool.sharing.hami == HamiSettings(split_count=3, gpu_policy="binpack")
    w = policy.workloads[0]
    assert w.isolation == "shared" and w.need.kind == "hami"
    assert w.need.hami == HamiNeed(memory_percent=25, cores=30, distinct_gpus=True)
    assert w.need.hami.memory_on(49152) == 12288
    t = policy.tenants[0]
    assert (t.burst.hami_vgpus, t.burst.hami_memory_mib, t.burst.hami_cores) == (4, 40960, 150)


def test_a100_hami_pool_defaults_to_no_migc_partitioning() -> None:
    fleet = FLEET.replace(
        "          nodes: {names: [n2]}\n",
        "          nodes: {names: [n2]}\n          sharing: {mode: hami, hami: {operatingMode: mig}}\n",
    )
    docs = []
    for i, text in enumerate((fleet % "", TENANT, WORKLOAD % (1, "{memory: 20Gi}", "  pools: [a100]\n"))):
        loaded, _ = load_text(text, f"f{i}.yaml")
        docs.extend(loaded)
    policy, diags = validate(docs, load_catalog())
    assert policy is not None, diags
    a100 = policy.cluster("c").pools[0]
    assert not a100.mig and a100.sharing.hami is not None and a100.sharing.hami.operating_mode == "mig"


@pytest.mark.parametrize(
    ("fleet_extra", "replicas", "need", "extra", "code", "line"),
    [
        ("", 1, "{memory: 12Gi}", "  pools: [a100]\n", "MIGC170", 7),
        ("", 1, "{memory: 50Gi}", "", "MIGC171", 7),
        ("", 7, "{memory: 1Gi}", "", "MIGC172", 6),  # 2 GPUs × splitCount 3
        ("", 3, "{memory: 1Gi, distinctGpus: true}", "", "MIGC172", 6),
        (", memoryScaling: 1.5", 1, "{memory: 1Gi}", "", "MIGC173", 12),
        (", operatingMode: mig", 1, "{memory: 1Gi}", "", "MIGC174", 12),
        ("", 1, "{memory: 1Gi}", "  isolation: hardware\n", "MIGC175", 8),
    ],
)
def test_hami_rules(fleet_extra: str, replicas: int, need: str, extra: str, code: str, line: int) -> None:
    _, diags = _run(fleet_extra, replicas, need, extra)
    found = [d for d in diags if d.code == code]
    assert found, _codes(diags)
    assert found[0].line == line and found[0].col > 0


def test_scaled_memory_lets_a_larger_share_fit_with_a_warning() -> None:
    policy, diags = _run(", memoryScaling: 2", 1, "{memory: 60Gi}")
    assert policy is not None and _codes(diags) == ["MIGC173"]


def test_hami_settings_on_a_time_sliced_pool_and_replicas_on_a_hami_pool() -> None:
    fleet = FLEET.replace(
        "{mode: hami, hami: {splitCount: 3%s}}", "{mode: time-slicing, replicas: 4, hami: {}}"
    )
    loaded, _ = load_text(fleet, "f.yaml")
    _, diags = validate(loaded, load_catalog())
    assert "MIGC176" in _codes(diags)
    fleet = FLEET.replace("{mode: hami, hami: {splitCount: 3%s}}", "{mode: hami, replicas: 4}")
    loaded, _ = load_text(fleet, "f.yaml")
    _, diags = validate(loaded, load_catalog())
    assert "MIGC176" in _codes(diags)


def test_hami_quota_without_a_hami_pool_warns() -> None:
    fleet = FLEET.replace("          sharing: {mode: hami, hami: {splitCount: 3%s}}\n", "")
    docs = []
    for i, text in enumerate((fleet, TENANT)):
        loaded, _ = load_text(text, f"f{i}.yaml")
        docs.extend(loaded)
    _, diags = validate(docs, load_catalog())
    assert _codes(diags) == ["MIGC177"]


def test_bad_memory_syntax_is_a_schema_error() -> None:
    _, diags = _run(need="{memory: 12GB}")
    assert diags and all(d.code.startswith("MIGC0") for d in diags)


def test_hami_example_validates() -> None:
    policy, diags = load_and_validate([REPO / "examples" / "hami"])
    assert policy is not None, diags
    assert not [d for d in diags if d.severity.name == "ERROR"]


def test_the_family_declares_every_migc17x_code() -> None:
    """compiler/validate/rules/hami.py owns MIGC170-MIGC179 (and the target rule's MIGC178/179)."""
    declared = {c for r in rules() if r.check.__module__ == hami_rules.__name__ for c in r.codes}
    assert declared == {f"MIGC{n}" for n in range(170, 180)}
