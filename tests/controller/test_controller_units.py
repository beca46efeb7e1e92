"""Unit tests: the assignment contract, selector pools, windows, verification, taxonomy, CLI."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from conftest import assignment
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
            "--cluster=east", "--dry-run",
        ]
    )  # fmt: skip
    s = cli.settings_from(args)
    assert (s.namespace, s.assignment_name, s.node_event_namespace) == ("ns", "a", "ev")
    assert (s.drain_grace_timeout, s.eviction_timeout, s.apply_timeout) == (60, 120, 180)
    assert (s.configmap_sync_delay, s.reboot_timeout, s.verify_timeout) == (4, 300, 360)
    assert (s.failure_backoff, s.poll_interval, s.resync_interval, s.lease_duration) == (420, 0.25, 9, 10)
    assert (s.max_failures, s.lease_name, s.identity, s.cluster, s.dry_run) == (11, "l", "me", "east", True)
    defaults = cli.settings_from(cli.parser().parse_args(["--identity=x"]))
    assert defaults.drain_grace_timeout == Settings().drain_grace_timeout
    assert defaults.cluster is None and defaults.dry_run is False
