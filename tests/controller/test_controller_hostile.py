"""Issue 17 item 8: assignments that pass the controller's own schema must neither crash nor
mislead it. Unit cases for each hostile value, end-to-end cases against the API emulator (the run
loop survives, a refusal is an Event + a metric + a log line and no node is touched), and a
property test that feeds random schema-valid documents to the parser and the planner."""

from __future__ import annotations

import datetime as dt
import json
import logging
from typing import Any

import jsonschema
import pytest
from conftest import CONFIGS, MIG_PARTED, Cluster, assignment, max_cordoned, writes
from emulation import CONFIGMAPS, NODES, assignment_configmap, revision_of

from controller import state as st
from controller.assignment import MAX_BYTES, MAX_DEPTH, Window, parse, schema
from controller.errors import InvalidAssignmentError, WrongClusterError
from controller.metrics import Metrics
from controller.reconciler.admission import max_unavailable

OLD, NEW = "all-1g.10gb", "all-3g.40gb"


def _window(**w: Any) -> dict[str, Any]:
    return {"days": ["Sat"], "start": "01:00", "end": "02:00", "timezone": "UTC", **w}


def _with_window(doc: dict[str, Any], window: dict[str, Any]) -> dict[str, Any]:
    doc = dict(doc, pools=[dict(doc["pools"][0], maintenanceWindows=[window])])
    doc["revision"] = revision_of(doc)
    return doc


def _schema_errors(doc: Any) -> list[str]:
    return [e.message for e in jsonschema.Draft202012Validator(schema()).iter_errors(doc)]


# --- unit cases: every hostile value the probe found passes the schema and is refused by parse ----
HOSTILE_WINDOWS = {
    "time with a trailing newline": _window(end="02:00\n"),
    "start with a trailing newline": _window(start="01:00\n"),
    "a tzdata directory as time zone": _window(timezone="America"),
    "a 5000-character time zone": _window(timezone="x" * 5000),
    "a path as time zone": _window(timezone="../../etc/passwd"),
    "an empty time zone": _window(timezone=""),
    "a NUL in the time zone": _window(timezone="Europe/Berlin\x00"),
}


@pytest.mark.parametrize("window", HOSTILE_WINDOWS.values(), ids=HOSTILE_WINDOWS.keys())
def test_hostile_window_values_pass_the_schema_and_are_refused(window: dict[str, Any]) -> None:
    doc = _with_window(assignment({"n0": NEW}), window)
    assert _schema_errors(doc) == []  # the schema alone does not catch it
    with pytest.raises(InvalidAssignmentError, match=r"maintenanceWindows/0/(start|end|timezone)"):
        parse(json.dumps(doc))


def test_deeply_nested_json_is_refused_before_parsing() -> None:
    doc = assignment({"n0": NEW})
    text = json.dumps(doc)[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(InvalidAssignmentError, match=f"nested deeper than {MAX_DEPTH}"):
        parse(text)
    # Brackets inside strings are data, not nesting.
    deep_string = dict(doc, cluster="[" * 1000)
    parse(json.dumps(dict(deep_string, revision=revision_of(deep_string))))


def test_oversized_document_is_refused_before_parsing() -> None:
    doc = assignment({"n0": NEW})
    doc["cluster"] = "c" * MAX_BYTES
    with pytest.raises(InvalidAssignmentError, match="more than the limit"):
        parse(json.dumps(doc))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("config", "all-3g.40gb\n"),
        ("config", "x" * 64),
        ("config", "all 3g"),
        ("config", "-leading-dash"),
        ("devicePluginConfig", "mixed\n"),
        ("devicePluginConfig", "a/b"),
    ],
)
def test_config_names_that_are_not_label_values_are_refused(field: str, value: str) -> None:
    doc = assignment({"n0": NEW})
    if field == "config":
        doc["configs"] = {value: doc["configs"][NEW]}
        doc["pools"][0]["nodes"] = [{"name": "n0", "config": value}]
    else:
        doc["configs"][NEW] = dict(doc["configs"][NEW], devicePluginConfig=value)
    doc["revision"] = revision_of(doc)
    assert _schema_errors(doc) == []
    with pytest.raises(InvalidAssignmentError, match="not a valid label value"):
        parse(json.dumps(doc))


def test_revision_with_a_trailing_newline_is_refused() -> None:
    doc = dict(assignment({"n0": NEW}), revision="0123456789ab\n")
    assert _schema_errors(doc) == []
    with pytest.raises(InvalidAssignmentError, match="revision"):
        parse(json.dumps(doc))


def test_assignment_for_another_cluster_is_refused() -> None:
    text = json.dumps(assignment({"n0": NEW}))  # cluster "test"
    assert parse(text, cluster="test").cluster == "test"
    assert parse(text).cluster == "test"  # no identity configured: any cluster
    with pytest.raises(WrongClusterError, match=r"addressed to cluster 'test'.*'prod-east'"):
        parse(text, cluster="prod-east")


@pytest.mark.parametrize("days", [None, []], ids=["key absent", "empty list"])
def test_window_without_days_means_every_day(days: list[str] | None) -> None:
    window = _window(start="22:00", end="23:00")
    if days is None:
        del window["days"]
    else:
        window["days"] = days
    doc = _with_window(assignment({"n0": NEW}), window)
    assert _schema_errors(doc) == []
    (pool,) = parse(json.dumps(doc)).pools
    monday = dt.datetime(2026, 11, 30, 22, 30, tzinfo=dt.UTC)
    for d in range(7):
        assert pool.in_window(monday + dt.timedelta(days=d)), d
        assert not pool.in_window(monday + dt.timedelta(days=d, hours=1))


@pytest.mark.parametrize("value", [10**18, 1e18, 3.0])
def test_max_unavailable_is_an_int_capped_at_the_pool_size(value: float) -> None:
    doc = assignment(dict.fromkeys(["n0", "n1", "n2"], NEW))
    doc["pools"][0]["maxUnavailable"] = value
    a = parse(json.dumps(doc))
    (pool,) = a.pools
    assert isinstance(pool.max_unavailable, int)
    from controller.assignment import Target
    from controller.reconciler.context import Context
    from controller.settings import Settings

    ctx = Context(None, Settings(), Metrics(), lambda: dt.datetime.now(dt.UTC))  # type: ignore[arg-type]
    targets = {n: Target(pool.name, NEW) for n in ("n0", "n1", "n2")}
    assert max_unavailable(ctx, pool, targets, a) == 3


def test_window_contains_is_total() -> None:
    w = Window(frozenset(range(7)), dt.time(0, 0), dt.time(0, 0), dt.UTC)  # start == end: all day
    assert w.contains(dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC))


# --- end to end against the API emulator ------------------------------------------------------------
def _events(cluster: Cluster, reason: str) -> list[dict[str, Any]]:
    return [
        c.body
        for c in cluster.controller_calls()
        if c.resource == "events" and c.verb == "create" and (c.body or {}).get("reason") == reason
    ]


def _node_writes(cluster: Cluster) -> list[Any]:
    return [c for c in writes(cluster.controller_calls()) if c.resource == "nodes"]


def _logged_refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.__dict__["migc"]["reason"] for r in caplog.records if "refused" in r.getMessage()]


def _refusals(ctl: Any, reason: str) -> float:
    value: float = ctl.metrics.refusals.labels(reason=reason)._value.get()
    return value


def _hostile_text(kind: str, nodes: list[str]) -> str:
    doc = assignment(dict.fromkeys(nodes, NEW))
    if kind == "deep nesting":
        return json.dumps(doc)[:-1] + ', "x": ' + "[" * 50_000 + "]" * 50_000 + "}"
    return json.dumps(_with_window(doc, HOSTILE_WINDOWS[kind]))


# An idle controller (a refused document leaves nothing in flight) passes once per resync, so at
# FAST's 0.5 s each settle() of n passes waited n/2 s. What shows that nothing happens is the number
# of passes, not the time: the scenarios that settle on a refused document resync every 0.1 s.
IDLE_RESYNC = 0.1


# The documents the probe crashed the run loop with (issue 17 item 8), in both modes.
@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry-run"])
@pytest.mark.parametrize(
    "kind",
    [
        "time with a trailing newline",
        "a tzdata directory as time zone",
        "a 5000-character time zone",
        "deep nesting",
    ],
)
def test_run_loop_survives_a_hostile_document_and_touches_no_node(
    cluster: Cluster, caplog: pytest.LogCaptureFixture, kind: str, dry_run: bool
) -> None:
    nodes = ["n0", "n1"]
    cluster.add_nodes(nodes, OLD)
    ctl = cluster.start(dry_run=dry_run, loop__resync_interval=IDLE_RESYNC)
    cm = assignment_configmap(assignment(dict.fromkeys(nodes, NEW)))
    cm["data"]["assignment.json"] = _hostile_text(kind, nodes)
    with caplog.at_level(logging.ERROR, logger="migc"):
        cluster.emu.upsert(CONFIGMAPS, "migc-system", "migc-assignment", cm)
        cluster.settle(ctl, 5)
    assert cluster.running[0].thread.is_alive()
    assert _node_writes(cluster) == []
    assert _refusals(ctl, "invalid") == 1
    assert _logged_refusals(caplog) == ["invalid"]
    if not dry_run:
        (event,) = _events(cluster, "InvalidAssignment")
        assert event["involvedObject"]["name"] == "migc-assignment"
        # The same loop picks up the next, valid revision.
        cluster.set_assignment(assignment(dict.fromkeys(nodes, NEW)))
        cluster.wait(lambda: cluster.converged(dict.fromkeys(nodes, NEW)))


def test_assignment_for_another_cluster_touches_no_node(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.add_nodes(["n0"], OLD)
    ctl = cluster.start(api__cluster="prod-east")
    with caplog.at_level(logging.ERROR, logger="migc"):
        cluster.set_assignment(assignment({"n0": NEW}))  # cluster "test"
        cluster.settle(ctl, 5)
    assert _node_writes(cluster) == []
    assert _refusals(ctl, "wrong-cluster") == 1
    (event,) = _events(cluster, "AssignmentForAnotherCluster")
    assert "prod-east" in event["message"]
    assert _logged_refusals(caplog) == ["wrong-cluster"]


def test_config_missing_from_the_mig_parted_configmap_touches_no_node(cluster: Cluster) -> None:
    nodes = ["n0", "n1"]
    cluster.add_nodes(nodes, OLD)
    cluster.set_mig_parted({OLD: CONFIGS[OLD]})  # the new config is not (yet) in the ConfigMap
    ctl = cluster.start(loop__resync_interval=IDLE_RESYNC)
    cluster.set_assignment(assignment(dict.fromkeys(nodes, NEW)), mig_parted=False)
    cluster.settle(ctl, 8)
    assert _node_writes(cluster) == []
    assert _refusals(ctl, "config-missing") == 1  # once per revision and config, not per pass
    (event,) = _events(cluster, "MigConfigMissing")
    assert f"{NEW} is not defined in mig-parted ConfigMap {MIG_PARTED[0]}/{MIG_PARTED[1]}" in event["message"]
    # The ConfigMap catches up (the GitOps sync finished): the rollout proceeds.
    cluster.set_mig_parted(CONFIGS)
    cluster.wait(lambda: cluster.converged(dict.fromkeys(nodes, NEW)))


def test_mig_parted_configmap_absent_touches_no_node(cluster: Cluster) -> None:
    cluster.add_nodes(["n0"], OLD)
    cluster.emu.remove(*_mig_parted_key())
    ctl = cluster.start(loop__resync_interval=IDLE_RESYNC)
    cluster.set_assignment(assignment({"n0": NEW}), mig_parted=False)
    cluster.settle(ctl, 5)
    assert _node_writes(cluster) == []
    (event,) = _events(cluster, "MigConfigMissing")
    assert "not found" in event["message"]


def _mig_parted_key() -> tuple[Any, str, str]:
    return CONFIGMAPS, MIG_PARTED[0], MIG_PARTED[1]


@pytest.mark.parametrize("value", [10**18, 1e18])
def test_huge_max_unavailable_cordons_at_most_the_pool(cluster: Cluster, value: float) -> None:
    nodes = [f"n{i}" for i in range(4)]
    cluster.add_nodes(nodes, OLD)
    # A second pool in the same cluster must not be swept into the first one's budget.
    cluster.add_nodes(["m0", "m1"], OLD)
    doc = assignment(dict.fromkeys(nodes, NEW))
    doc["pools"][0]["maxUnavailable"] = value
    other = assignment(dict.fromkeys(["m0", "m1"], NEW), max_unavailable=1, pool="b")["pools"][0]
    doc["pools"].append(other)
    doc["revision"] = revision_of(doc)
    cluster.start()
    cluster.set_assignment(doc)
    cluster.wait(lambda: cluster.converged(dict.fromkeys([*nodes, "m0", "m1"], NEW)))
    assert max_cordoned(cluster.controller_calls()) <= 4 + 1


@pytest.mark.parametrize("change", ["invalid", "node dropped"])
def test_document_changing_mid_rollout_never_leaves_a_node_cordoned(cluster: Cluster, change: str) -> None:
    nodes = ["n0", "n1"]
    cluster.add_nodes(nodes, OLD)
    cluster.mig.gate.clear()  # the MIG manager holds the batch in Applying
    ctl = cluster.start()
    cluster.set_assignment(assignment(dict.fromkeys(nodes, NEW), max_unavailable=2))
    cluster.wait(lambda: list(cluster.phases().values()).count("Applying") == 2)
    if change == "invalid":
        bad = _with_window(assignment(dict.fromkeys(nodes, NEW)), _window(end="02:00\n"))
        cluster.set_assignment(bad)
    else:  # both nodes leave the assignment; only another node remains
        cluster.add_nodes(["n9"], OLD)
        cluster.set_assignment(assignment({"n9": OLD}))
    cluster.settle(ctl, 3)
    cluster.mig.gate.set()
    cluster.wait(lambda: all(p == "Idle" for p in cluster.phases().values()))
    assert cluster.running[0].thread.is_alive()
    for name in nodes:
        spec = cluster.node(name)["spec"]
        assert not spec.get("unschedulable"), name
        assert not any(t["key"] == st.TAINT_KEY for t in spec.get("taints") or []), name
        assert st.NodeView.from_obj(cluster.node(name)).current_config == NEW, name


def test_node_dropped_before_relabelling_is_released_unchanged(cluster: Cluster) -> None:
    cluster.add_nodes(["n0"], OLD)
    cluster.add_pod("train", "n0", namespace="ml")
    ctl = cluster.start(drain__grace_timeout=60.0)  # the pod keeps n0 in Draining
    cluster.set_assignment(assignment({"n0": NEW}))
    cluster.wait(lambda: cluster.phases()["n0"] == "Draining")
    cluster.add_nodes(["n9"], OLD)
    cluster.set_assignment(assignment({"n9": OLD}))  # n0 leaves the assignment
    cluster.settle(ctl, 3)  # every later pass reads the new revision
    cluster.emu.remove(*_pod_key("ml", "train"))  # the pod finishes on its own
    cluster.wait(lambda: cluster.phases()["n0"] == "Idle")
    cluster.settle(ctl, 3)
    node = cluster.node("n0")
    assert not node["spec"].get("unschedulable")
    assert st.NodeView.from_obj(node).current_config == OLD
    abandoned = ctl.metrics.reconfigurations.labels(pool="a100", result="abandoned")._value.get()
    assert abandoned == 1


def _pod_key(ns: str, name: str) -> tuple[Any, str, str]:
    from emulation import PODS

    return PODS, ns, name


def test_nodes_resource_is_untouched_by_refusals_in_the_emulator_history(cluster: Cluster) -> None:
    """Guard for the helpers above: a valid revision does write to nodes (the checks can fail)."""
    cluster.add_nodes(["n0"], OLD)
    cluster.start()
    cluster.set_assignment(assignment({"n0": NEW}))
    cluster.wait(lambda: cluster.converged({"n0": NEW}))
    assert _node_writes(cluster) and _refusals(cluster.running[0].controller, "invalid") == 0
    assert cluster.emu.get(NODES, None, "n0") is not None


def test_run_loop_survives_an_unexpected_exception_in_a_pass(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.add_nodes(["n0"], OLD)
    ctl = cluster.start()
    real = ctl.reconciler.reconcile_once
    calls = {"n": 0}

    def flaky() -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("a bug in one pass")
        real()

    ctl.reconciler.reconcile_once = flaky  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR, logger="migc"):
        cluster.set_assignment(assignment({"n0": NEW}))
        cluster.wait(lambda: cluster.converged({"n0": NEW}))
    assert calls["n"] > 2 and cluster.running[0].thread.is_alive()
    errors = [str(r.__dict__["migc"].get("error")) for r in caplog.records]
    assert "RuntimeError: a bug in one pass" in errors


def test_cluster_identity_flag_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from controller import __main__ as cli

    monkeypatch.delenv("MIGC_CLUSTER", raising=False)
    assert cli.parser().parse_args([]).cluster is None
    assert cli.parser().parse_args(["--cluster", "prod-east"]).cluster == "prod-east"
    monkeypatch.setenv("MIGC_CLUSTER", "prod-west")
    assert cli.parser().parse_args([]).cluster == "prod-west"
    monkeypatch.setenv("MIGC_CLUSTER", "")  # the Deployment's default: accept any, with a warning
    assert cli.parser().parse_args([]).cluster is None
