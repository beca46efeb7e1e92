"""`migc compile --with monitoring`: the Grafana dashboard and PrometheusRule reference real metrics."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from prometheus_client import generate_latest

from compiler.cli import main
from compiler.pipeline.compiled import compile_policy
from compiler.render import render
from compiler.render.monitoring import METRICS, ksm_resource
from controller.metrics import Metrics

ROOT = Path(__file__).resolve().parents[1]
# PromQL functions and aggregation operators the queries may use (prometheus promql/parser/functions.go,
# promql/parser/lex.go).
FUNCTIONS = {
    "sum", "avg", "max", "min", "count", "quantile", "rate", "time", "vector", "histogram_quantile",
    "label_replace",
}  # fmt: skip
KEYWORDS = {"and", "or", "unless", "bool", "by", "without", "on", "ignoring", "group_left", "group_right"}


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    result = compile_policy([str(ROOT / "examples/prod")], ROOT / "output")
    assert not result.failed
    return render(result.policy, result.solution, result.catalog, with_monitoring=True)  # type: ignore[arg-type]


def exprs(files: dict[str, bytes]) -> list[str]:
    rule = yaml.safe_load(files["prod-east/monitoring/prometheusrule-migc.yaml"])
    board = dashboard(files)
    return [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]] + [
        t["expr"] for p in board["panels"] for t in p["targets"]
    ]


def dashboard(files: dict[str, bytes]) -> dict[str, Any]:
    cm = yaml.safe_load(files["prod-east/monitoring/configmap-migc-grafana-dashboard.yaml"])
    board: dict[str, Any] = json.loads(cm["data"]["migc-prod-east.json"])
    return board


def metric_names(expr: str) -> set[str]:
    """Metric names in a PromQL expression; fails on unknown functions and unbalanced brackets."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1, "{": 1, "}": -1, "[": 1, "]": -1}.get(ch, 0)
        assert depth >= 0, expr
    assert depth == 0, expr
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # range selectors
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1", text)
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        word = m.group(0)
        rest = text[m.end() :].lstrip()
        follows = "(" if re.match(r"(by|without)\b", rest) else rest[:1]  # sum by (x) (...)
        if word in KEYWORDS or re.fullmatch(r"[0-9.e]+", word):
            continue
        if follows == "(":
            assert word in FUNCTIONS, f"unknown function {word} in {expr}"
        else:
            names.add(word)
    return names


def test_metric_names_parser() -> None:
    assert metric_names('sum by (pool) (rate(migc_x_total{a="b(c"}[1h])) and on(ns) y') == {
        "migc_x_total",
        "y",
    }
    with pytest.raises(AssertionError):
        metric_names("sum(x")
    with pytest.raises(AssertionError):
        metric_names("made_up_function(x)")


def test_every_query_uses_only_known_metrics(files: dict[str, bytes]) -> None:
    used: set[str] = set()
    for expr in exprs(files):
        names = metric_names(expr)
        assert names, expr
        assert names <= set(METRICS), f"unlisted metric in {expr}: {names - set(METRICS)}"
        used |= names
    # the panels the issue asks for are there: profile distribution, instance utilisation,
    # reconfiguration timeline, scheduling latency by size
    assert {
        "kube_node_status_allocatable",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "migc_reconfigurations_total",
        "kube_pod_status_scheduled_time",
        "migc_gpu_pod_pending_seconds_bucket",
    } <= used


def test_migc_metric_names_are_exported_by_the_controller() -> None:
    m = Metrics()
    m.reconfigurations.labels(pool="a100", result="success").inc()
    m.duration.observe(42)
    m.evictions.labels(result="ok").inc()
    m.pending.labels(profile="1g.10gb").observe(3)
    exported = {
        line.split("{")[0].split(" ")[0]
        for line in generate_latest(m.registry).decode().splitlines()
        if line and not line.startswith("#")
    }
    ours = {name for name, (source, _v, _f) in METRICS.items() if source == "migc-controller"}
    assert ours and ours <= exported, ours - exported
    for name, (source, version, where) in METRICS.items():
        assert source in ("dcgm-exporter", "kube-state-metrics", "migc-controller") and version and where, (
            name
        )


def test_ksm_resource_names() -> None:
    # kube-state-metrics sanitises label values of resource names (internal/store/utils.go)
    assert ksm_resource("nvidia.com/mig-1g.10gb") == "nvidia_com_mig_1g_10gb"
    assert ksm_resource("nvidia.com/gpu") == "nvidia_com_gpu"


def test_dashboard_model(files: dict[str, bytes]) -> None:
    cm = yaml.safe_load(files["prod-east/monitoring/configmap-migc-grafana-dashboard.yaml"])
    kubernetes_validate.validate(cm, "1.31", strict=True)
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    board = dashboard(files)
    # required fields of Grafana's dashboard JSON model (kinds/dashboard, schemaVersion 39)
    assert board["schemaVersion"] == 39 and board["uid"] and board["title"]
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids)) >= 10
    cells: set[tuple[int, int]] = set()
    for p in board["panels"]:
        assert p["type"] in {"timeseries", "stat", "bargauge", "heatmap"}
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24 and g["h"] > 0
        assert (g["x"], g["y"]) not in cells
        cells.add((g["x"], g["y"]))
        assert p["datasource"]["uid"] == "${datasource}"
        assert all(t["refId"] and t["expr"] for t in p["targets"])
    assert [v["name"] for v in board["templating"]["list"]] == ["datasource"]


def test_prometheus_rule(files: dict[str, bytes]) -> None:
    rule = yaml.safe_load(files["prod-east/monitoring/prometheusrule-migc.yaml"])
    assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["kind"] == "PrometheusRule"
    alerts = [r for g in rule["spec"]["groups"] for r in g["rules"]]
    names = {r["alert"] for r in alerts}
    assert {
        "MigcNodeReconfigurationFailed",
        "MigcRolloutNotFinishing",
        "MigcLayoutDriftPersisting",
        "MigcGpuPodPendingTooLong",
        "MigcTenantStarvedWhileOthersBorrow",
    } <= names
    for r in alerts:
        assert re.fullmatch(r"[0-9]+[smh]", r["for"]) and r["labels"]["severity"] in ("warning", "critical")
    # one starvation rule per tenant guarantee of a MIG profile or whole GPUs; search guarantees 12 1g.10gb
    starved = [r for r in alerts if r["alert"] == "MigcTenantStarvedWhileOthersBorrow"]
    search = next(r for r in starved if "Tenant search waits for 1g.10gb" in r["annotations"]["summary"])
    assert 'namespace=~"search|search-staging"' in search["expr"]
    assert "< 12" in search["expr"] and 'resource="nvidia_com_mig_1g_10gb"' in search["expr"]


def test_compile_with_monitoring_writes_the_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    out = tmp_path / "out"
    assert main(["compile", "examples/prod", "--with", "monitoring", "--out", str(out)]) == 0
    kustomization = yaml.safe_load((out / "prod-east/kustomization.yaml").read_text())
    assert "monitoring/prometheusrule-migc.yaml" in kustomization["resources"]
    assert "monitoring/configmap-migc-grafana-dashboard.yaml" in kustomization["resources"]
    first = (out / "prod-east/monitoring/prometheusrule-migc.yaml").read_bytes()
    assert main(["compile", "examples/prod", "--with", "monitoring", "--out", str(out), "--check"]) == 0
    assert (out / "prod-east/monitoring/prometheusrule-migc.yaml").read_bytes() == first


FLEET_EXAMPLES = sorted(
    p.parent.relative_to(ROOT / "examples").as_posix()
    for p in [*(ROOT / "examples").glob("*/fleet.yaml"), *(ROOT / "examples").glob("*/*/fleet.yaml")]
)
# lab and prod by default (prod has the most tenants, so the most starvation alerts); CI runs them all
RULE_EXAMPLES = [
    e if e in ("lab", "prod") else pytest.param(e, marks=pytest.mark.slow) for e in FLEET_EXAMPLES
]


def _rule_files(tmp_path: Path, example: str) -> list[Path]:
    """One example's rendered PrometheusRules, as the plain rule files promtool reads (their spec)."""
    result = compile_policy([str(ROOT / "examples" / example)], None)
    assert not result.failed, example
    files = render(result.policy, result.solution, result.catalog, with_monitoring=True)  # type: ignore[arg-type]
    out: list[Path] = []
    for path, data in sorted(files.items()):
        if path.endswith("/monitoring/prometheusrule-migc.yaml"):
            target = tmp_path / f"{example.replace('/', '-')}-{path.split('/')[0]}.rules.yaml"
            target.write_text(yaml.safe_dump(yaml.safe_load(data)["spec"]), encoding="utf-8")
            out.append(target)
    assert out
    return out


@pytest.mark.parametrize("example", RULE_EXAMPLES)
def test_every_alert_is_distinct_by_its_labels(tmp_path: Path, example: str) -> None:
    """Two alerts with one name and one label set are one alert to Alertmanager: a second starving
    tenant would be hidden behind the first. promtool's duplicate lint compares the same key
    (prometheus/prometheus d15adb9a cmd/promtool/main.go:1006-1042 checkDuplicates: alert name + the
    group's and the rule's labels)."""
    for path in _rule_files(tmp_path, example):
        groups = yaml.safe_load(path.read_text())["groups"]
        keys = [
            (r["alert"], tuple(sorted({**g.get("labels", {}), **r.get("labels", {})}.items())))
            for g in groups
            for r in g["rules"]
        ]
        assert len(keys) == len(set(keys)), path.name
        if example == "prod":
            alert = "MigcTenantStarvedWhileOthersBorrow"
            starved = [r for g in groups for r in g["rules"] if r["alert"] == alert]
            assert {(r["labels"]["tenant"], r["labels"]["resource"]) for r in starved} >= {
                ("search", "nvidia.com/mig-1g.10gb"),
                ("fraud-detection", "nvidia.com/mig-1g.10gb"),
            }


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (.ci/run installs it)")
@pytest.mark.parametrize("example", RULE_EXAMPLES)
def test_promtool_lint_fatal_accepts_every_rendered_rule_file(tmp_path: Path, example: str) -> None:
    """The consumer's own checker: Prometheus' promtool, duplicates and all lints fatal."""
    files = _rule_files(tmp_path, example)
    proc = subprocess.run(
        ["promtool", "check", "rules", "--lint=all", "--lint-fatal", *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


HOST_PANEL = "Utilisation per MIG instance (graphics engine active)"


def test_the_per_instance_panel_reads_both_spellings_of_the_host_label(files: dict[str, bytes]) -> None:
    """dcgm-exporter releases label the node ``Hostname``, its main branch ``hostname``
    (NVIDIA/dcgm-exporter d5e5f510, #655): the panel groups by a label built from either."""
    (panel,) = [p for p in dashboard(files)["panels"] if p["title"] == HOST_PANEL]
    expr = panel["targets"][0]["expr"]
    assert '"Hostname", "(.+)"' in expr and '"hostname", "(.+)"' in expr
    assert expr.startswith("avg by (gpu_host, gpu, GPU_I_ID, GPU_I_PROFILE)")
    assert panel["targets"][0]["legendFormat"].startswith("{{gpu_host}} ")


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (.ci/run installs it)")
def test_promtool_evaluates_the_host_panel_on_old_and_new_exporter_series(
    files: dict[str, bytes], tmp_path: Path
) -> None:
    """Prometheus itself (``promtool test rules``, promql_expr_test) evaluates the panel's query over
    one series of each spelling: both nodes come out under ``gpu_host``."""
    (panel,) = [p for p in dashboard(files)["panels"] if p["title"] == HOST_PANEL]
    metric = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
    rest = 'gpu="0",GPU_I_ID="1",GPU_I_PROFILE="1g.10gb"'
    spec = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {"series": f'{metric}{{Hostname="old-node",{rest}}}',
                     "values": "0.5x5"},
                    {"series": f'{metric}{{hostname="new-node",{rest}}}',
                     "values": "0.25x5"},
                ],
                "promql_expr_test": [
                    {
                        "expr": panel["targets"][0]["expr"],
                        "eval_time": "2m",
                        "exp_samples": [
                            {"labels": f'{{gpu_host="old-node",{rest}}}',
                             "value": 0.5},
                            {"labels": f'{{gpu_host="new-node",{rest}}}',
                             "value": 0.25},
                        ],
                    }
                ],
            }
        ],
    }  # fmt: skip
    test_file = tmp_path / "panel_test.yaml"
    test_file.write_text(yaml.safe_dump(spec), encoding="utf-8")
    proc = subprocess.run(["promtool", "test", "rules", str(test_file)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
