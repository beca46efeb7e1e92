"""Local demo: ``python tests/controller/demo.py`` (from a checkout, with ``pip install -e '.[test]'``).

Starts an in-memory Kubernetes API (KMock over real HTTP on 127.0.0.1), a fleet built from an
assignment document, the fake GPU Operator MIG manager and the controller; then syncs a second
revision of the assignment and prints the rollout node by node until every node carries its new
layout. Exits 0 when the rollout converged, 1 when it did not within the time limit.

The target revision is the compiler's rendered assignment when one exists
(``output/<cluster>/migc-system/configmap-migc-assignment.yaml``); the fleet then starts from a
rotated variant of it. Without rendered output, the bundled ``demo_data/assignment-v1.json``
(starting state) and ``assignment-v2.json`` (new revision) are used.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import logging
import re
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from emulation import (
    CONFIGMAPS,
    DEVICE_PLUGIN_CONFIGMAP,
    NODES,
    PODS,
    EmulatorThread,
    FakeDevicePlugin,
    FakeMigManager,
    assignment_configmap,
    device_plugin_configmap,
    fleet_nodes,
    mig_parted_configmap,
    node_object,
    pod_object,
    revision_of,
)
from kubernetes import client

from controller import logs
from controller import state as st
from controller.assignment import ASSIGNMENT_KEY, Window, parse, resolve
from controller.runner import Controller
from controller.settings import (
    ApiSettings,
    ApplySettings,
    DrainSettings,
    FailureSettings,
    LeaderSettings,
    LoopSettings,
    Settings,
)

DEMO_DATA = Path(__file__).parent / "demo_data"
RENDERED = Path("migc-system") / "configmap-migc-assignment.yaml"


def _rendered(output: Path, cluster: str | None) -> dict[str, Any] | None:
    candidates = sorted(output.glob(f"{cluster or '*'}/{RENDERED}"))
    if not candidates:
        return None
    cm = yaml.safe_load(candidates[0].read_text())
    doc: dict[str, Any] = json.loads(cm["data"][ASSIGNMENT_KEY])
    print(f"target revision: {candidates[0]}")
    return doc


def _rotated(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A plausible earlier revision: within each pool, every node one config further along.

    A pool with a single config starts from MIG disabled instead (a synthetic config).
    """
    start = copy.deepcopy(dict(doc))
    for pool in start["pools"]:
        used = sorted({n["config"] for n in pool["nodes"]} | set(pool.get("configCounts") or {}))
        if not used:
            continue
        if len(used) == 1:
            devices = len(start["configs"][used[0]]["devices"])
            disabled = f"demo-start-all-disabled-{devices}gpu"
            start["configs"][disabled] = {
                "devices": [{"migEnabled": False, "profiles": {}}] * devices,
                "migStrategy": "none",
                "devicePluginConfig": "default",
                "resources": {"nvidia.com/gpu": devices},
            }
            used.append(disabled)
        nxt = {c: used[(i + 1) % len(used)] for i, c in enumerate(used)}
        for node in pool["nodes"]:
            node["config"] = nxt[node["config"]]
        if pool.get("configCounts"):
            pool["configCounts"] = {nxt[c]: k for c, k in pool["configCounts"].items()}
    start["revision"] = revision_of(start)
    return start


def _next_opening(windows: Sequence[Window], now: dt.datetime) -> dt.datetime | None:
    best: dt.datetime | None = None
    for w in windows:
        local = now.astimezone(w.zone)
        for d in range(8):
            day = local.date() + dt.timedelta(days=d)
            if day.weekday() in w.days:
                opening = dt.datetime.combine(day, w.start, tzinfo=w.zone)
                if opening > now and (best is None or opening < best):
                    best = opening
    return best


class DemoClock:
    """Wall time plus an offset the demo moves forward to the next maintenance window."""

    def __init__(self) -> None:
        self.offset = dt.timedelta()

    def __call__(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC) + self.offset


def _docs(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    target = _rendered(Path(args.output), args.cluster)
    if target is not None:
        return _rotated(target), target
    v1 = json.loads((DEMO_DATA / "assignment-v1.json").read_text())
    v2 = json.loads((DEMO_DATA / "assignment-v2.json").read_text())
    print(f"target revision: bundled {DEMO_DATA / 'assignment-v2.json'} (no rendered output found)")
    return v1, v2


def _phase(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    view = st.NodeView.from_obj(obj)
    return view.phase.value, view.target or "", view.current_config or ""


def _device_plugin_body(name: str) -> dict[str, Any]:
    """The body migc renders for a device-plugin config name (compiler/render/manifests.py
    _device_plugin_body: mixed for MIG configs, sharing replicas from the name's suffix)."""
    m = re.search(r"(time-slicing|mps)-(\d+)$", name)
    body: dict[str, Any] = {"version": "v1", "flags": {"migStrategy": "mixed" if "mixed" in name else "none"}}
    if m:
        kind = "timeSlicing" if m.group(1) == "time-slicing" else "mps"
        body["sharing"] = {kind: {"resources": [{"name": "nvidia.com/gpu", "replicas": int(m.group(2))}]}}
    return body


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python tests/controller/demo.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--output", default="output", help="the compiler's output directory")
    p.add_argument("--cluster", help="cluster folder under --output (default: the first one)")
    p.add_argument("--timeout", type=float, default=25.0, help="give up after this many seconds")
    p.add_argument("--verbose", action="store_true", help="also print the controller's JSON log")
    args = p.parse_args(argv)

    logs.setup("INFO" if args.verbose else "ERROR")
    start_doc, target_doc = _docs(args)
    parse(json.dumps(start_doc))  # both revisions must satisfy the contract
    parse(json.dumps(target_doc))
    resources = {name: c["resources"] for d in (start_doc, target_doc) for name, c in d["configs"].items()}
    fleet = fleet_nodes(start_doc)
    batches = sum(-(-len(p_["nodes"] or [1]) // p_["maxUnavailable"]) for p_ in target_doc["pools"])
    # Slow enough to watch, fast enough to finish in seconds whatever the fleet's size.
    ref = target_doc["migConfigMap"]
    mig = FakeMigManager(
        configmap=(ref["namespace"], ref["name"]), delay=max(0.01, min(0.25, 6.0 / max(1, batches) / 3))
    )
    emu = EmulatorThread(mig, FakeDevicePlugin(delay=mig.delay)).start()
    ctl: Controller | None = None
    thread: threading.Thread | None = None
    try:
        # The GPU Operator's mig-parted and device-plugin ConfigMaps, as a GitOps sync of the
        # rendered output leaves them. They come before the nodes: a node that says its MIG
        # manager applied a config (state success) has that config in the manager's file, and the
        # emulator reads what is on the node's GPUs from there (emulation._check_joining_node).
        every = {**start_doc["configs"], **target_doc["configs"]}
        emu.upsert(CONFIGMAPS, ref["namespace"], ref["name"], mig_parted_configmap(every, **ref))
        dp_names = {c["devicePluginConfig"] for c in every.values()} | {"migc-whole-gpus"}
        emu.upsert(
            CONFIGMAPS,
            *DEVICE_PLUGIN_CONFIGMAP,
            device_plugin_configmap({n: _device_plugin_body(n) for n in dp_names}, *DEVICE_PLUGIN_CONFIGMAP),
        )
        for i, (name, (labels, cfg)) in enumerate(sorted(fleet.items())):
            if labels.get(st.MIG_CAPABLE) == "true":
                mig_labels = {st.MIG_CONFIG: cfg, st.MIG_STATE: "success"}
                obj = node_object(name, {**labels, **mig_labels}, resources[cfg])
            else:
                # No MIG manager on such a node: migc's own annotation records its config.
                dp = start_doc["configs"][cfg]["devicePluginConfig"]
                obj = node_object(name, {**labels, st.DEVICE_PLUGIN_CONFIG: dp}, resources[cfg])
                obj["metadata"]["annotations"] = {st.APPLIED: cfg}
            emu.upsert(NODES, None, name, obj)
            if i % 3 == 1:
                emu.upsert(PODS, "ml", f"train-{name}", pod_object(f"train-{name}", name, namespace="ml"))
            emu.upsert(PODS, "web", f"web-{name}", pod_object(f"web-{name}", name, namespace="web", gpu=None))
        emu.upsert(CONFIGMAPS, "migc-system", "migc-assignment", assignment_configmap(start_doc))
        print(f"fleet: {len(fleet)} nodes, API emulator at {emu.url}, revision {start_doc['revision']}")

        cfg_ = client.Configuration()
        cfg_.host = emu.url
        settings = Settings(
            api=ApiSettings(retry_backoff=0.05, retry_backoff_max=0.5),
            drain=DrainSettings(grace_timeout=0.3, eviction_timeout=10.0, eviction_backoff=0.1),
            # configmap_sync_delay 0: the emulated MIG manager reads the ConfigMap without lag
            apply=ApplySettings(configmap_sync_delay=0.0, apply_timeout=10.0, verify_timeout=5.0),
            failures=FailureSettings(backoff=1.0),
            loop=LoopSettings(poll_interval=0.05, resync_interval=1.0),
            leader=LeaderSettings(lease_duration=3.0, identity="migc-demo"),
        )
        clock = DemoClock()
        ctl = Controller(settings, client.ApiClient(cfg_), clock=clock)
        thread = threading.Thread(target=ctl.run, name="controller", daemon=True)
        thread.start()
        deadline = time.monotonic() + 5
        while ctl.passes < 1 and time.monotonic() < deadline:
            time.sleep(0.02)

        print(f"syncing revision {start_doc['revision']} -> {target_doc['revision']}")
        emu.upsert(CONFIGMAPS, "migc-system", "migc-assignment", assignment_configmap(target_doc))
        t0 = time.monotonic()
        last: dict[str, tuple[str, str, str]] = {n: _phase(o) for n, o in emu.nodes().items()}
        wanted = {n: t.config for n, t in _targets(target_doc, emu).items()}
        width = max(map(len, fleet))
        converged = False
        parsed = parse(json.dumps(target_doc))
        quiet_since = time.monotonic()
        # Every phase the controller writes, in the order the API server received it: read from the
        # emulator's request log, not by sampling the nodes (a sample misses a phase that lasts less
        # than a poll, so Draining or Done seemed skipped; README's state machine has them all).
        printed = {n: p[0] for n, p in last.items()}
        targets = {n: p[1] for n, p in last.items()}
        seen = 0

        def report(final: bool = False) -> None:
            nonlocal seen, quiet_since
            calls = emu.calls()
            upto = len(calls) if final else max(seen, len(calls) - 8)  # the newest may still fail
            for call in calls[seen:upto]:
                if call.resource != "nodes" or call.verb not in ("patch", "update") or call.refused:
                    continue
                notes = ((call.body or {}).get("metadata") or {}).get("annotations") or {}
                phase = notes.get(st.PHASE)
                if call.name is None or not phase or phase == printed.get(call.name):
                    continue
                quiet_since = time.monotonic()
                targets[call.name] = notes.get(st.TARGET) or targets.get(call.name, "")
                carried = _phase(emu.nodes()[call.name])[2]
                detail = f"-> {targets[call.name]}" if phase != "Idle" else f"now {carried}"
                at = time.monotonic() - t0
                print(f"{at:6.2f}s  {call.name:<{width}} {printed[call.name]:>9} -> {phase:<9} {detail}")
                printed[call.name] = phase
            seen = upto

        while time.monotonic() - t0 < args.timeout:
            now = {n: _phase(o) for n, o in emu.nodes().items()}
            report()
            last = now
            drifting = {n for n, c in wanted.items() if now[n][0] != "Idle" or now[n][2] != c}
            if not drifting:
                converged = True
                report(final=True)
                break
            if time.monotonic() - quiet_since > 1.0 and all(now[n][0] == "Idle" for n in drifting):
                # Only nodes outside their pool's maintenance windows are left: fast-forward.
                waiting = [
                    pool
                    for pool in parsed.pools
                    if not pool.in_window(clock())
                    and any(_targets(target_doc, emu)[n].pool == pool.name for n in drifting)
                ]
                openings = [o for pool in waiting if (o := _next_opening(pool.windows, clock())) is not None]
                if openings:
                    jump = min(openings) + dt.timedelta(minutes=1)
                    clock.offset += jump - clock()
                    names = ", ".join(pool.name for pool in waiting)
                    print(
                        f"        (pools {names} are outside their maintenance windows: "
                        f"fast-forwarding the controller's clock to {jump:%a %Y-%m-%d %H:%M %Z})"
                    )
                    ctl.wake.set()
                quiet_since = time.monotonic()
            time.sleep(0.05)
        m = ctl.metrics
        done = sum(
            m.reconfigurations.labels(pool=p_["name"], result="success")._value.get()
            for p_ in target_doc["pools"]
        )
        print(
            f"{'converged' if converged else 'NOT converged'} in {time.monotonic() - t0:.1f}s: "
            f"{int(done)} nodes reconfigured, "
            f"{int(m.evictions.labels(result='evicted')._value.get())} GPU pods evicted, "
            f"{int(m.drift._value.get())} nodes drifting"
        )
        for name in sorted(wanted):
            print(f"  {name:<{width}} {last[name][2]}")
        return 0 if converged else 1
    finally:
        if ctl is not None:
            ctl.stop()
        if thread is not None:
            thread.join(5)
        emu.stop()


def _targets(doc: Mapping[str, Any], emu: EmulatorThread) -> dict[str, Any]:
    nodes = emu.nodes()
    labels = {n: o["metadata"].get("labels") or {} for n, o in nodes.items()}
    carried = {n: st.NodeView.from_obj(o).current_config or "" for n, o in nodes.items()}
    return resolve(parse(json.dumps(doc)), labels, carried)


if __name__ == "__main__":
    logging.captureWarnings(True)
    sys.exit(main())
