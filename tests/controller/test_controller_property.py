"""Property: any assignment document that passes the controller's schema is either parsed or
refused with ``InvalidAssignmentError`` -- never another exception -- and a parsed one can be
resolved and planned (admission, windows, budgets, dry-run) against a cluster without raising.

The documents are drawn from the schema's own shapes with hostile leaves: strings with trailing
newlines, control characters and absurd lengths, tzdata directories as time zones, integers
written as floats (JSON Schema's "integer" admits 1e18), huge counts, absent optional keys.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from conftest import FAST, MIG_PARTED, Cluster
from emulation import CONFIGMAPS, NODES, assignment_configmap, mig_parted_configmap, node_object
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as hs
from kubernetes import client

from controller import state as st
from controller.assignment import Assignment, parse, resolve, schema
from controller.errors import InvalidAssignmentError
from controller.kube import Kube
from controller.metrics import Metrics
from controller.reconciler import Reconciler

DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
NODE_NAMES = ["n0", "n1", "n2"]

hostile_text = hs.one_of(
    hs.text(max_size=12),
    hs.sampled_from(["", " ", "a\n", "\x00", "ä", "all-1g.10gb", "mixed", "x" * 64, "x" * 5000, "-a", "a/b"]),
)
label_value = hs.from_regex(r"\A[a-z0-9]([a-z0-9.-]{0,10}[a-z0-9])?\Z")


# Mostly valid names (so that many documents get past parsing into the planner), some hostile.
def mostly(valid: hs.SearchStrategy[str], hostile: hs.SearchStrategy[str]) -> hs.SearchStrategy[str]:
    return hs.tuples(hs.integers(0, 15), valid, hostile).map(lambda t: t[2] if t[0] == 15 else t[1])


name = mostly(label_value, hostile_text)
hhmm = hs.builds(lambda h, m: f"{h:02d}:{m:02d}", hs.integers(0, 23), hs.integers(0, 59))
clock = hs.one_of(hhmm, hhmm.map(lambda t: t + "\n"))
zone = hs.one_of(
    hs.sampled_from(["UTC", "Etc/UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"]),
    hs.sampled_from(
        ["America", "Europe", "", "x" * 5000, "../../etc/passwd", "Europe/Berlin\n", "posixrules"]
    ),
    hostile_text,
)
count = hs.one_of(hs.integers(0, 8), hs.integers(0, 10**20), hs.sampled_from([2.0, 1e18, 1e300]))
positive = hs.one_of(hs.integers(1, 8), hs.integers(1, 10**20), hs.sampled_from([1.0, 3.0, 1e18]))


@hs.composite
def window(draw: hs.DrawFn) -> dict[str, Any]:
    w: dict[str, Any] = {"start": draw(clock), "end": draw(clock), "timezone": draw(zone)}
    if draw(hs.booleans()):
        w["days"] = draw(hs.lists(hs.sampled_from(DAYS), max_size=7))
    return w


@hs.composite
def config(draw: hs.DrawFn) -> dict[str, Any]:
    devices = draw(
        hs.lists(
            hs.fixed_dictionaries(
                {"migEnabled": hs.booleans(), "profiles": hs.dictionaries(name, positive, max_size=2)}
            ),
            min_size=1,
            max_size=3,
        )
    )
    return {
        "devices": devices,
        "migStrategy": draw(hs.sampled_from(["none", "single", "mixed"])),
        "devicePluginConfig": draw(name),
        "resources": draw(hs.dictionaries(name, count, max_size=3)),
    }


@hs.composite
def document(draw: hs.DrawFn) -> dict[str, Any]:
    configs = draw(hs.dictionaries(name, config(), min_size=1, max_size=3))
    config_name = hs.one_of(hs.sampled_from(sorted(configs)), name)
    pools = []
    for _ in range(draw(hs.integers(0, 3))):
        pool: dict[str, Any] = {
            "name": draw(name),
            "gpuModel": draw(hs.sampled_from(["A100-SXM4-80GB", "L40S", ""])),
            "maxUnavailable": draw(positive),
            "maintenanceWindows": draw(hs.lists(window(), max_size=2)),
            "nodes": [],
        }
        if draw(hs.booleans()):
            node_names = hs.one_of(hs.sampled_from(NODE_NAMES), name)
            pool["nodes"] = draw(
                hs.lists(hs.fixed_dictionaries({"name": node_names, "config": config_name}), max_size=3)
            )
        if draw(hs.booleans()):
            pool["selector"] = draw(hs.dictionaries(hs.sampled_from(["pool", "zone"]), name, max_size=2))
            pool["configCounts"] = draw(hs.dictionaries(config_name, count, max_size=3))
        pools.append(pool)
    return {
        "apiVersion": "migc.dev/v1alpha1",
        "kind": "NodeAssignment",
        "cluster": draw(name),
        "revision": draw(mostly(hs.from_regex(r"\A[0-9a-f]{12,16}\Z"), hs.just("0123456789ab\n"))),
        "migConfigMap": {"namespace": MIG_PARTED[0], "name": MIG_PARTED[1]},
        "configs": configs,
        "pools": pools,
    }


def _schema_valid(doc: dict[str, Any]) -> bool:
    return not any(True for _ in jsonschema.Draft202012Validator(schema()).iter_errors(doc))


def _parse(doc: dict[str, Any]) -> Assignment | None:
    try:
        return parse(json.dumps(doc), cluster=None)
    except InvalidAssignmentError:
        return None


PROPERTY = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)


@pytest.mark.slow
@PROPERTY
@given(document(), hs.datetimes(timezones=hs.just(dt.UTC)))
def test_schema_valid_documents_parse_or_are_refused_and_resolve(
    doc: dict[str, Any], now: dt.datetime
) -> None:
    assume(_schema_valid(doc))
    parsed = _parse(doc)
    if parsed is None:
        return
    labels = {n: {"pool": "a", "zone": "z"} for n in NODE_NAMES}
    targets = resolve(parsed, labels, dict.fromkeys(NODE_NAMES, ""))
    assert set(targets) <= set(NODE_NAMES) | {n["name"] for p in doc["pools"] for n in p["nodes"]}
    for pool in parsed.pools:
        assert isinstance(pool.max_unavailable, int)
        pool.in_window(now)
    for cfg in parsed.configs.values():
        assert all(isinstance(v, int) for v in cfg.resources.values())


@pytest.fixture(scope="module")
def planner() -> Iterator[tuple[Cluster, Kube]]:
    """One API emulator for all examples: the planner runs real passes over HTTP against it."""
    cluster = Cluster()
    cfg = client.Configuration()
    cfg.host = cluster.emu.url
    try:
        yield cluster, Kube(client.ApiClient(cfg))
    finally:
        cluster.emu.stop()


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(document(), hs.booleans())
def test_schema_valid_documents_never_crash_a_pass(
    planner: tuple[Cluster, Kube], doc: dict[str, Any], dry_run: bool
) -> None:
    assume(_schema_valid(doc))
    cluster, kube = planner
    for i, n in enumerate(NODE_NAMES):
        labels = {"pool": "a", st.MIG_CAPABLE: "true" if i else "false", st.MIG_CONFIG: "all-disabled"}
        cluster.emu.upsert(NODES, None, n, node_object(n, labels, {"nvidia.com/gpu": 8}))
    cluster.emu.upsert(CONFIGMAPS, *MIG_PARTED, mig_parted_configmap(doc["configs"], *MIG_PARTED))
    cluster.emu.upsert(CONFIGMAPS, "migc-system", "migc-assignment", assignment_configmap(doc))
    settings_ = dataclasses.replace(FAST, dry_run=dry_run)
    kube.dry_run = dry_run
    reconciler = Reconciler(
        kube, settings_, Metrics(), lambda: dt.datetime(2026, 12, 5, 1, 30, tzinfo=dt.UTC)
    )
    for _ in range(3):
        reconciler.reconcile_once()  # must not raise, whatever the document holds
