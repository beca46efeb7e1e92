"""Unit tests: the assignment contract, selector pools, windows, verification, taxonomy, CLI."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

import pytest
from conftest import FAST, assignment, tuned
from emulation import revision_of
from kubernetes.client.exceptions import ApiException

from controller import __main__ as cli
from controller.assignment import Window, parse, resolve, schema
from controller.errors import InvalidAssignmentError, NotFoundError, PermanentError, TemporaryError, translate
from controller.reconciler import allocatable_diff
from controller.settings import Settings
from controller.state import NodeView, Phase

REPO = Path(__file__).resolve().parents[2]


def test_packaged_schema_equals_the_repository_contract() -> None:
    assert schema() == json.loads((REPO / "schema" / "assignment.schema.json").read_text())


def test_bundled_demo_assignments_are_valid_and_hashed() -> None:
    docs = sorted((REPO / "tests" / "controller" / "demo_data").glob("*.json"))
    assert len(docs) >= 2
    for path in docs:
        text = path.read_text()
        parsed = parse(text)
        assert parsed.revision == revision_of(json.loads(text)), path.name


def test_parse_reports_schema_and_reference_errors() -> None:
    doc = assignment({"n0": "all-1g.10gb"})
    parse(json.dumps(doc))
    with pytest.raises(InvalidAssignmentError, match="maxUnavailable"):
        parse(json.dumps(dict(doc, pools=[dict(doc["pools"][0], maxUnavailable=0)])))
    with pytest.raises(InvalidAssignmentError, match="unknown config 'nope'"):
        bad = dict(doc["pools"][0], nodes=[{"name": "n0", "config": "nope"}])
        parse(json.dumps(dict(doc, pools=[bad])))
    with pytest.raises(InvalidAssignmentError, match="not JSON"):
        parse("{")
    with pytest.raises(InvalidAssignmentError, match="unknown time zone"):
        w = {"days": ["Sat"], "start": "01:00", "end": "02:00", "timezone": "Mars/Olympus"}
        parse(json.dumps(dict(doc, pools=[dict(doc["pools"][0], maintenanceWindows=[w])])))


def test_selector_pool_keeps_nodes_that_already_carry_a_wanted_config() -> None:
    doc = assignment({"x": "all-1g.10gb"})
    doc["configs"]["all-3g.40gb"] = assignment({"x": "all-3g.40gb"})["configs"]["all-3g.40gb"]
    doc["pools"] = [
        {
            "name": "sel",
            "gpuModel": "A100",
            "maxUnavailable": 1,
            "maintenanceWindows": [],
            "nodes": [],
            "selector": {"pool": "sel"},
            "configCounts": {"all-1g.10gb": 2, "all-3g.40gb": 1},
        }
    ]
    a = parse(json.dumps(doc))
    labels = {n: {"pool": "sel"} for n in ("a", "b", "c", "d")} | {"other": {"pool": "x"}}
    carried = {"a": "all-3g.40gb", "b": "", "c": "all-3g.40gb", "d": "all-1g.10gb", "other": "all-1g.10gb"}
    got = {n: t.config for n, t in resolve(a, labels, carried).items()}
    # a keeps 3g (first in name order), d keeps 1g, the rest filled in name order: b gets 1g; c unassigned.
    assert got == {"a": "all-3g.40gb", "d": "all-1g.10gb", "b": "all-1g.10gb"}


@pytest.mark.parametrize(
    ("when", "inside"),
    [
        (dt.datetime(2026, 11, 28, 23, 30, tzinfo=dt.UTC), True),  # Sat 23:30
        (dt.datetime(2026, 11, 29, 1, 59, tzinfo=dt.UTC), True),  # Sun 01:59, Saturday's window
        (dt.datetime(2026, 11, 29, 2, 0, tzinfo=dt.UTC), False),  # end is exclusive
        (dt.datetime(2026, 11, 29, 23, 30, tzinfo=dt.UTC), False),  # Sun night: no window opens Sunday
        (dt.datetime(2026, 11, 28, 1, 0, tzinfo=dt.UTC), False),  # Sat 01:00 belongs to Friday
    ],
)
def test_window_crossing_midnight(when: dt.datetime, inside: bool) -> None:
    w = Window(frozenset({5}), dt.time(23, 0), dt.time(2, 0), dt.UTC)
    assert w.contains(when) is inside


def test_window_in_a_timezone() -> None:
    from zoneinfo import ZoneInfo

    w = Window(frozenset({0}), dt.time(9, 0), dt.time(10, 0), ZoneInfo("Europe/Berlin"))
    assert w.contains(dt.datetime(2026, 11, 30, 8, 30, tzinfo=dt.UTC))  # 09:30 in Berlin (CET)
    assert not w.contains(dt.datetime(2026, 11, 30, 9, 30, tzinfo=dt.UTC))


def test_allocatable_diff() -> None:
    want = {"nvidia.com/mig-3g.40gb": 16}
    assert allocatable_diff({"nvidia.com/mig-3g.40gb": "16", "cpu": "64"}, want) == {}
    assert allocatable_diff({"nvidia.com/mig-3g.40gb": "8"}, want) == {"nvidia.com/mig-3g.40gb": (16, 8)}
    stale = {"nvidia.com/mig-3g.40gb": "16", "nvidia.com/mig-1g.10gb": "7"}
    assert allocatable_diff(stale, want) == {"nvidia.com/mig-1g.10gb": (0, 7)}
    assert allocatable_diff({"nvidia.com/mig-1g.10gb": "0", "nvidia.com/mig-3g.40gb": "16"}, want) == {}


def test_error_taxonomy() -> None:
    assert isinstance(translate(ApiException(status=409), "x"), TemporaryError)
    assert isinstance(translate(ApiException(status=429), "x"), TemporaryError)
    assert isinstance(translate(ApiException(status=503), "x"), TemporaryError)
    assert isinstance(translate(ConnectionRefusedError(), "x"), TemporaryError)
    assert isinstance(translate(ApiException(status=404), "x"), NotFoundError)
    err = translate(ApiException(status=422, reason="Unprocessable"), "patch node n0")
    assert isinstance(err, PermanentError) and not isinstance(err, TemporaryError)
    assert str(err).startswith("patch node n0: HTTP 422")


def test_unknown_phase_is_never_mistaken_for_idle() -> None:
    node = NodeView.from_obj({"metadata": {"name": "n", "annotations": {"migc.dev/phase": "Exploding"}}})
    assert node.phase == Phase.FAILED


def test_cli_durations_and_flags() -> None:
    assert cli.duration("90") == 90 and cli.duration("30m") == 1800 and cli.duration("1h30m") == 5400
    assert cli.duration("250ms") == 0.25
    with pytest.raises(Exception, match="not a duration"):
        cli.duration("soon")
    args = cli.parser().parse_args(["--dry-run", "--apply-timeout", "5m", "--metrics-port", "0"])
    assert args.dry_run and args.apply_timeout == 300 and args.metrics_port == 0


def test_cli_without_a_cluster_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert cli.main(["--kubeconfig", str(tmp_path / "missing"), "--metrics-port", "0"]) == 2


def test_shipped_package_holds_no_emulator_demo_or_test_hook() -> None:
    """Issue 15/9: the API emulator, the demo and the kill switch live under tests/ only."""
    import subprocess
    import sys

    code = (
        "import importlib, pkgutil, sys, controller\n"
        "mods = [m.name for m in pkgutil.walk_packages(controller.__path__, 'controller.')]\n"
        "[importlib.import_module(m) for m in mods if not m.endswith('__main__')]\n"
        "import controller.__main__\n"
        "print(sorted(mods))\n"
        "print(sorted(m for m in ('kmock', 'aiohttp') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout.splitlines()
    modules = out[0]
    assert "controller.reconciler.core" in modules
    assert "emulation" not in modules and "demo" not in modules
    assert out[1] == "[]", out[1]  # the emulator's libraries are never imported
    from controller.kube import Kube
    from controller.runner import Controller

    assert not hasattr(Kube, "kill") and not hasattr(Controller, "kill")
    assert not (REPO / "controller" / "demo_data").exists()


def test_every_command_line_setting_reaches_the_controller() -> None:
    args = cli.parser().parse_args(
        [
            "--namespace=ns", "--assignment-name=a", "--node-event-namespace=ev",
            "--drain-grace-timeout=1m", "--eviction-timeout=2m", "--apply-timeout=3m",
            "--configmap-sync-delay=4s", "--reboot-timeout=5m", "--verify-timeout=6m",
            "--failure-backoff=7m", "--poll-interval=250ms", "--resync-interval=9s",
            "--lease-duration=10s", "--max-failures=11", "--lease-name=l", "--identity=me",
            "--cluster=east", "--dry-run", "--device-plugin-configmap=ops/dp",
        ]
    )  # fmt: skip
    s = cli.settings_from(args)
    assert (s.api.namespace, s.api.assignment_name, s.api.node_event_namespace) == ("ns", "a", "ev")
    assert (s.drain.grace_timeout, s.drain.eviction_timeout, s.apply.apply_timeout) == (60, 120, 180)
    assert (s.apply.configmap_sync_delay, s.apply.reboot_timeout, s.apply.verify_timeout) == (4, 300, 360)
    assert (s.failures.backoff, s.loop.poll_interval, s.loop.resync_interval) == (420, 0.25, 9)
    assert (s.leader.lease_duration, s.leader.lease_name, s.leader.identity) == (10, "l", "me")
    assert (s.failures.max_failures, s.api.cluster, s.dry_run) == (11, "east", True)
    assert s.api.device_plugin_configmap == "ops/dp"
    defaults = cli.settings_from(cli.parser().parse_args(["--identity=x"]))
    assert defaults.drain.grace_timeout == Settings().drain.grace_timeout
    assert defaults.api.cluster is None and defaults.dry_run is False


def test_command_line_defaults_are_the_settings_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """No flag given: every group holds its own defaults (identity and cluster come from the
    environment, $POD_NAME and $MIGC_CLUSTER), so ``Settings()`` in a test is the deployed controller."""
    monkeypatch.setenv("POD_NAME", "migc-controller")
    monkeypatch.delenv("MIGC_CLUSTER", raising=False)
    assert cli.settings_from(cli.parser().parse_args([])) == Settings()


def test_a_scenario_override_reaches_its_group_and_a_misspelt_one_raises() -> None:
    """``cluster.start(group__field=...)`` (conftest.tuned): an override that silently did nothing
    would leave a scenario testing the defaults it meant to change."""
    s = tuned(FAST, failures__max_attempts=1, apply__verify_timeout=0.5, dry_run=True)
    assert (s.failures.max_attempts, s.apply.verify_timeout, s.dry_run) == (1, 0.5, True)
    assert s.failures.backoff == FAST.failures.backoff and s.drain == FAST.drain
    with pytest.raises(TypeError):
        tuned(FAST, failures__max_attempt=1)
    with pytest.raises(AttributeError):
        tuned(FAST, failure__max_attempts=1)
    with pytest.raises(TypeError):
        tuned(FAST, max_attempts=1)  # the flat name of the old record


def test_settings_defaults() -> None:
    """The defaults controller/README.md documents and deployments rely on, one group at a time."""
    s = Settings()
    assert dataclasses.asdict(s) == {
        "api": {
            "namespace": "migc-system",
            "assignment_name": "migc-assignment",
            "node_event_namespace": "default",
            "cluster": None,
            "device_plugin_configmap": "gpu-operator/migc-device-plugin-config",
            "request_timeout": 30.0,
            "retry_backoff": 0.5,
            "retry_backoff_max": 30.0,
        },
        "drain": {
            "grace_timeout": 1800.0,
            "eviction_timeout": 1800.0,
            "eviction_backoff": 1.0,
            "eviction_backoff_max": 30.0,
        },
        "apply": {
            "configmap_sync_delay": 90.0,
            "apply_timeout": 1800.0,
            "reboot_timeout": 1800.0,
            "verify_timeout": 300.0,
        },
        "failures": {"backoff": 300.0, "max_attempts": 2, "max_failures": 3},
        "loop": {"poll_interval": 2.0, "resync_interval": 60.0, "watch_timeout": 300.0},
        "leader": {"lease_name": "migc-controller", "lease_duration": 15.0, "identity": "migc-controller"},
        "dry_run": False,
    }
