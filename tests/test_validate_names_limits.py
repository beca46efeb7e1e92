"""Issue 17 items 5-7, compiler side: names anchored at the true end, reserved namespaces, size limits,
finite numbers, and a maintenance window without days meaning every day (end to end to the
controller's reader)."""

from __future__ import annotations

import datetime as dt
import json
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import compiler.validate.rules.limits as limits
from compiler.catalog import load_catalog
from compiler.cli import main
from compiler.diagnostics import Diagnostic, lookup
from compiler.load import LoadedDocument, load_text
from compiler.model import Policy
from compiler.render.manifests import SYSTEM_NAMESPACE
from compiler.schemas import DAYS, kind_schemas
from compiler.validate import validate
from compiler.validate.common import ecma_anchors, pattern_matches
from compiler.validate.rules.tenants import RESERVED_NAMESPACES
from controller import assignment as controller_assignment

CATALOG = load_catalog()

FLEET = """\
apiVersion: migc.dev/v1alpha1
kind: Fleet
metadata:
  name: {fleet}
spec:
  pricing:
    NVIDIA-A100-SXM4-80GB: {price}
  clusters:
    - name: {cluster}
      gpuOperatorNamespace: {operator}
      nodePools:
        - name: {pool}
          gpuProduct: NVIDIA-A100-SXM4-80GB
          gpusPerNode: 8
          nodes:
{nodes}
          maintenanceWindows:
            - {window}
              start: "03:00"
              end: "05:00"
              timezone: UTC
"""
TENANT = """\
apiVersion: migc.dev/v1alpha1
kind: Tenant
metadata:
  name: {tenant}
spec:
  namespaces: {namespaces}
  guaranteed:
    gpuMemoryGB: {memory}
  burst:
    profiles: {{1g.10gb: 5000}}  # countable (MIGC131 otherwise), above every test's demand (MIGC134)
"""
WORKLOAD = """\
apiVersion: migc.dev/v1alpha1
kind: Workload
metadata:
  name: {workload}
spec:
  tenant: {tenant}
  replicas: 1
  need:
    profile: 1g.10gb
"""
DEFAULTS: dict[str, Any] = {
    "fleet": "f",
    "price": "2.5",
    "cluster": "c1",
    "operator": "gpu-operator",
    "pool": "p1",
    "nodes": "            names: [n1]",
    "window": "days: [Sun]",
    "tenant": "t1",
    "namespaces": "[ns1]",
    "memory": "10",
    "workload": "w1",
}


def _docs(**values: Any) -> list[LoadedDocument]:
    v = {**DEFAULTS, **values}
    docs: list[LoadedDocument] = []
    for i, (template, name) in enumerate(((FLEET, "fleet.yaml"), (TENANT, "t.yaml"), (WORKLOAD, "w.yaml"))):
        loaded, diags = load_text(template.format(**v), name)
        assert not diags, (i, diags)
        docs.extend(loaded)
    return docs


def _check(**values: Any) -> tuple[Policy | None, list[Diagnostic]]:
    return validate(_docs(**values), CATALOG)


def _codes(**values: Any) -> list[str]:
    return [d.code for d in _check(**values)[1]]


def test_the_template_is_valid() -> None:
    policy, diags = _check()
    assert policy is not None, diags
    assert diags == []


# --- names: anchored at the true end -----------------------------------------------------------------


def test_ecma_anchors_rewrites_only_the_end_anchor() -> None:
    assert ecma_anchors("^[a-z]+$") == "^[a-z]+\\Z"
    assert ecma_anchors("^a[$]b\\$$") == "^a[$]b\\$\\Z"
    assert pattern_matches("^[a-z0-9]+$", "c1")
    assert not pattern_matches("^[a-z0-9]+$", "c1\n")


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("fleet", "|\n    f", "MIGC109"),
        ("cluster", "|\n        c1", "MIGC109"),
        ("pool", "|\n            p1", "MIGC109"),
        ("tenant", "|\n    t1", "MIGC109"),
        ("workload", "|\n    w1", "MIGC109"),
        ("namespaces", '["ns1\\n"]', "MIGC109"),
        ("operator", '"gpu-operator\\n"', "MIGC109"),
        ("nodes", '            names: ["n1\\n"]', "MIGC109"),
        ("window", 'days: ["Sun\\n"]', "MIGC033"),
    ],
)
def test_trailing_newline_is_not_a_name(field: str, value: str, code: str) -> None:
    policy, diags = _check(**{field: value})
    assert policy is None
    assert code in [d.code for d in diags], diags


def test_trailing_newline_in_times_durations_and_labels(tmp_path: Path) -> None:
    window = (
        'days: [Sun]\n              start: "03:00\\n"\n              end: "05:00"\n'
        "              timezone: UTC\n            - days: [Mon]"
    )
    assert "MIGC034" in _codes(window=window)
    nodes = '            selector: {matchLabels: {"gpu\\n": "yes"}}\n            count: 2'
    assert "MIGC034" in _codes(nodes=nodes)
    nodes = '            selector: {matchLabels: {gpu: "yes\\n"}}\n            count: 2'
    assert "MIGC034" in _codes(nodes=nodes)


_ODD = ["", "", "", "\n", "\r", "\t", "\x00", "\x0b", "\x7f", "\x85", "\u2028", " ", "-", ".", "é", "A"]
_NAMES = st.builds(
    lambda head, body, tail: head + body + tail,
    st.sampled_from(_ODD),
    st.text(alphabet="abz09-.", min_size=1, max_size=8),
    st.sampled_from(_ODD),
)
_FIELDS: dict[str, Callable[[str], dict[str, str]]] = {
    "cluster": lambda v: {"cluster": v},
    "pool": lambda v: {"pool": v},
    "tenant": lambda v: {"tenant": v},
    "namespace": lambda v: {"namespaces": f"[{v}]"},
    "node": lambda v: {"nodes": f"            names: [{v}]"},
}


def _yaml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a YAML double-quoted scalar with every escape spelled out


def _policy_names(policy: Policy) -> list[str]:
    return [
        *(c.name for c in policy.clusters),
        *(p.name for c in policy.clusters for p in c.pools),
        *(n for c in policy.clusters for p in c.pools for n in p.node_names),
        *(t.name for t in policy.tenants),
        *(ns for t in policy.tenants for ns in t.namespaces),
    ]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field=st.sampled_from(sorted(_FIELDS)), name=_NAMES)
def test_no_accepted_name_contains_a_control_character(field: str, name: str) -> None:
    policy, _ = _check(**_FIELDS[field](_yaml_string(name)))  # a tenant's name is also the workload's
    if policy is None:
        return
    names = _policy_names(policy)
    assert name in names
    for accepted in names:
        assert all(unicodedata.category(ch) != "Cc" for ch in accepted), repr(accepted)
        assert accepted == accepted.strip() and accepted.isascii(), repr(accepted)


def test_the_name_property_sees_accepted_and_refused_names() -> None:
    """Guards the property above against becoming vacuous: plain names pass, each odd character fails."""
    for field, make_values in sorted(_FIELDS.items()):
        policy, diags = _check(**make_values(_yaml_string("ok-1")))
        assert policy is not None and "ok-1" in _policy_names(policy), (field, diags)
        for odd in sorted({o for o in _ODD if o and o not in "-."}):
            assert _check(**make_values(_yaml_string("ok" + odd)))[0] is None, (field, odd)


# --- reserved namespaces ---------------------------------------------------------------------------------


def test_migc_system_is_the_namespace_migc_renders() -> None:
    assert SYSTEM_NAMESPACE in RESERVED_NAMESPACES


@pytest.mark.parametrize(
    "namespace", ["kube-system", "kube-public", "kube-node-lease", "kube-anything", "default", "migc-system"]
)
def test_reserved_namespace_is_refused(namespace: str) -> None:
    policy, diags = _check(namespaces=f"[ns1, {namespace}]")
    assert policy is None
    [d] = diags
    assert (d.code, d.file, d.line, d.col) == ("MIGC140", "t.yaml", 6, 21)
    assert f"'{namespace}'" in d.message
    assert d.hint == lookup("MIGC140").fix


def test_gpu_operator_namespace_is_reserved_per_cluster() -> None:
    assert _codes(namespaces="[gpu-operator]") == ["MIGC140"]
    assert _codes(operator="nvidia-gpu-operator", namespaces="[nvidia-gpu-operator]") == ["MIGC140"]
    # with the operator elsewhere, "gpu-operator" is an ordinary namespace
    policy, diags = _check(operator="nvidia-gpu-operator", namespaces="[gpu-operator]")
    assert policy is not None, diags


def test_kube_prefix_only() -> None:
    policy, diags = _check(namespaces="[kubeflow, my-kube-system, defaults]")
    assert policy is not None, diags


# --- limits ------------------------------------------------------------------------------------------------


def test_limit_values_are_the_documented_ones() -> None:
    documented = {
        "MIGC142": limits.MAX_PRICE,
        "MIGC143": limits.MAX_POOL_NODES,
        "MIGC144": limits.MAX_TENANTS,
        "MIGC145": limits.MAX_NAMESPACES_PER_TENANT,
        "MIGC146": limits.MAX_WORKLOADS,
    }
    for code, value in documented.items():
        assert f"{value:,.0f}" in lookup(code).explanation, code
    assert f"{limits.MAX_CLUSTER_NODES:,}" in lookup("MIGC143").explanation


def test_huge_selector_count_is_refused_quickly() -> None:
    start = time.perf_counter()
    policy, diags = _check(
        nodes="            selector: {matchLabels: {gpu: a100}}\n            count: 1000000000"
    )
    assert time.perf_counter() - start < 10
    assert policy is None
    assert [d.code for d in diags] == ["MIGC143", "MIGC143"]  # the pool, and its cluster
    assert "1,000,000,000 nodes" in diags[0].message


def test_node_limit_boundary() -> None:
    at = "            selector: {matchLabels: {gpu: a100}}\n            count: 5000"
    assert "MIGC143" not in _codes(nodes=at)
    over = "            selector: {matchLabels: {gpu: a100}}\n            count: 5001"
    assert _codes(nodes=over) == ["MIGC143"]  # the pool; its cluster is within 10,000


def test_named_nodes_over_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_POOL_NODES", 2)
    monkeypatch.setattr(limits, "MAX_CLUSTER_NODES", 2)
    assert _codes(nodes="            names: [n1, n2]") == []
    assert _codes(nodes="            names: [n1, n2, n3]") == ["MIGC143", "MIGC143"]
    monkeypatch.setattr(limits, "MAX_POOL_NODES", 10)
    [d] = _check(nodes="            names: [n1, n2, n3]")[1]
    assert (d.code, d.line) == ("MIGC143", 9)
    assert d.message == "cluster 'c1' has 3 nodes; the limit is 2 per cluster"


def test_namespaces_per_tenant(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_NAMESPACES_PER_TENANT", 3)
    assert _codes(namespaces="[a, b, c]") == []
    policy, diags = _check(namespaces="[a, b, c, d]")
    assert policy is None
    assert [(d.code, d.line) for d in diags] == [("MIGC145", 6)]


def _many(kind: str, n: int) -> list[LoadedDocument]:
    docs: list[LoadedDocument] = []
    for i in range(n):
        text = (TENANT if kind == "Tenant" else WORKLOAD).format(
            **{
                **DEFAULTS,
                "tenant": f"t{i}" if kind == "Tenant" else "t1",
                "namespaces": f"[ns{i}]",
                "workload": f"w{i}",
            }
        )
        loaded, _ = load_text(text, f"{kind.lower()}{i:04d}.yaml")
        docs.extend(loaded)
    return docs


@pytest.mark.slow
def test_tenant_and_workload_limits_at_their_real_values() -> None:
    fleet = [d for d in _docs() if d.file == "fleet.yaml"]
    tenants = _many("Tenant", limits.MAX_TENANTS + 1)
    workloads = _many("Workload", limits.MAX_WORKLOADS + 1)
    diags = validate(fleet + tenants[:-1] + workloads[:-1], CATALOG)[1]
    assert not {"MIGC144", "MIGC146"} & {d.code for d in diags}
    policy, diags = validate(fleet + tenants + workloads, CATALOG)
    assert policy is None
    assert {(d.code, d.file) for d in diags if d.code in ("MIGC144", "MIGC146")} == {
        ("MIGC144", "tenant1000.yaml"),
        ("MIGC146", "workload3000.yaml"),
    }


def test_tenant_and_workload_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_TENANTS", 3)
    monkeypatch.setattr(limits, "MAX_WORKLOADS", 3)
    fleet = [d for d in _docs() if d.file == "fleet.yaml"]
    ok = fleet + _many("Tenant", 3) + _many("Workload", 3)
    policy, diags = validate(ok, CATALOG)
    assert policy is not None, diags
    over = fleet + _many("Tenant", 4) + _many("Workload", 4)
    policy, diags = validate(over, CATALOG)
    assert policy is None
    assert [(d.code, d.file) for d in diags] == [
        ("MIGC144", "tenant0003.yaml"),
        ("MIGC146", "workload0003.yaml"),
    ]


@pytest.mark.parametrize(
    ("value", "code"),
    [(".inf", "MIGC141"), ("1e400", "MIGC141"), ("1.0e+400", "MIGC141"), ("-.inf", "MIGC035")],  # below 0
)
def test_non_finite_numbers_are_refused(value: str, code: str) -> None:
    for field in ("memory", "price"):
        policy, diags = _check(**{field: value})
        assert policy is None
        assert [d.code for d in diags] == [code], (field, diags)


def test_price_limit() -> None:
    assert _codes(price="1e308") == ["MIGC142"]
    assert _codes(price="1000001") == ["MIGC142"]
    policy, diags = _check(price="1000000")
    assert policy is not None, diags


def test_plan_json_is_strict_json_at_the_price_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, text in (("fleet.yaml", FLEET), ("t.yaml", TENANT), ("w.yaml", WORKLOAD)):
        (tmp_path / name).write_text(text.format(**{**DEFAULTS, "price": "1000000"}))
    rc = main(["plan", str(tmp_path), "--from-scratch", "-o", "json"])
    out, _ = capsys.readouterr()
    assert rc in (0, 3), out
    json.loads(out, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c} in plan output"))


# --- a window without days is every day, through to the controller --------------------------------------


@pytest.mark.parametrize("days", ["", "days: []"], ids=["omitted", "empty"])
def test_window_without_days_opens_every_day(days: str, tmp_path: Path) -> None:
    policy_dir = tmp_path / "policy"
    policy_dir.mkdir()
    fleet = FLEET.format(**{**DEFAULTS, "window": days})
    if not days:
        fleet = fleet.replace("- \n              start", "- start")
    window = yaml.safe_load(fleet)["spec"]["clusters"][0]["nodePools"][0]["maintenanceWindows"][0]
    assert window.get("days", []) == []
    (policy_dir / "fleet.yaml").write_text(fleet)
    (policy_dir / "t.yaml").write_text(TENANT.format(**DEFAULTS))
    (policy_dir / "w.yaml").write_text(WORKLOAD.format(**DEFAULTS))
    out = tmp_path / "out"
    assert main(["compile", str(policy_dir), "--out", str(out)]) == 0
    [cm_path] = out.glob("c1/migc-system/configmap-migc-assignment.yaml")
    [text] = yaml.safe_load(cm_path.read_text())["data"].values()
    [pool] = json.loads(text)["pools"]
    every_day = {"days": list(DAYS), "start": "03:00", "end": "05:00", "timezone": "UTC"}
    assert pool["maintenanceWindows"] == [every_day]
    # the controller's own reader: open 03:00-05:00 UTC on each day of a week, closed outside
    [cpool] = controller_assignment.parse(text).pools
    monday = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)
    for day in range(7):
        base = monday + dt.timedelta(days=day)
        assert cpool.in_window(base.replace(hour=4)), base
        assert not cpool.in_window(base.replace(hour=6)), base


def _patterns(schema: Any) -> list[str]:
    if isinstance(schema, dict):
        own = [schema["pattern"]] if isinstance(schema.get("pattern"), str) else []
        return own + [p for v in schema.values() for p in _patterns(v)]
    if isinstance(schema, list):
        return [p for v in schema for p in _patterns(v)]
    return []


def test_every_schema_pattern_is_anchored_at_both_ends() -> None:
    """With ``^`` and a final ``$`` (read as the true end, see ecma_anchors), a pattern judges the whole
    value; an unanchored one would accept any value that merely contains a match."""
    patterns = sorted({p for schema in kind_schemas().values() for p in _patterns(schema)})
    assert len(patterns) >= 8
    for pattern in patterns:
        assert pattern.startswith("^") and pattern.endswith("$") and not pattern.endswith("\\$"), pattern
        assert ecma_anchors(pattern).endswith("\\Z"), pattern
