"""The real entry point as a process: kubeconfig, JSON logs, SIGTERM, exit status."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml
from conftest import Cluster, assignment


def test_cli_dry_run_against_the_emulator_logs_json_and_stops_on_sigterm(
    cluster: Cluster, tmp_path: Path
) -> None:
    cluster.add_nodes(["n0"], "all-1g.10gb")
    cluster.set_assignment(assignment({"n0": "all-3g.40gb"}))
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "emu",
                "clusters": [{"name": "emu", "cluster": {"server": cluster.emu.url}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "emu", "context": {"cluster": "emu", "user": "u"}}],
            }
        )
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller",
            "--kubeconfig",
            str(kubeconfig),
            "--dry-run",
            "--metrics-port",
            "0",
            "--identity",
            "cli",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    records = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        records.append(json.loads(line))  # every log line is one JSON object
        if records[-1]["msg"] == "dry-run: would reconfigure node":
            break
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 0
    plan = [r for r in records if r["msg"] == "dry-run: would reconfigure node"]
    assert plan and plan[0]["node"] == "n0" and plan[0]["to"] == "all-3g.40gb"
    assert all({"ts", "level", "logger", "msg"} <= set(r) for r in records)
    assert not [c for c in cluster.emu.calls() if c.verb in ("create", "patch", "update", "delete")]
