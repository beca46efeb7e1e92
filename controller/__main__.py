"""migc-controller: apply the rendered node -> MIG config assignment safely (cordon, drain, relabel)."""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import signal
import socket
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any

try:
    from kubernetes import client, config

    from controller import logs
    from controller.runner import Controller
    from controller.settings import Settings
except ModuleNotFoundError as exc:  # `pip install migc` without the extra: say which one, not a traceback
    if exc.name is None or exc.name.split(".")[0] not in {"kubernetes", "prometheus_client"}:
        raise
    sys.exit(
        f"migc-controller: the Python package {exc.name.split('.')[0]!r} is not installed; "
        "install the controller extra: pip install 'migc[controller]'"
    )

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration(text: str) -> float:
    """Seconds from '90', '90s', '30m', '1h', '1h30m', '250ms'."""
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (use e.g. 90s, 30m, 1h)")
    return sum(float(n) * _UNITS[u] for n, u in parts)


# Flags given as durations, in --help order: (flag, Settings group, field, --help text or None).
_TIMEOUTS: tuple[tuple[str, str, str, str | None], ...] = (
    (
        "drain-grace-timeout",
        "drain",
        "grace_timeout",
        "wait this long for GPU pods to finish before evicting them",
    ),
    (
        "eviction-timeout",
        "drain",
        "eviction_timeout",
        "then keep retrying blocked evictions this long before failing the node",
    ),
    (
        "apply-timeout",
        "apply",
        "apply_timeout",
        "wait this long for nvidia.com/mig.config.state=success (bounds a stuck pending too)",
    ),
    (
        "configmap-sync-delay",
        "apply",
        "configmap_sync_delay",
        "label a node with a config only this long after it appeared in the mig-parted ConfigMap",
    ),
    (
        "reboot-timeout",
        "apply",
        "reboot_timeout",
        "how long the node may stay at nvidia.com/mig.config.state=rebooting",
    ),
    ("verify-timeout", "apply", "verify_timeout", "wait this long for allocatable resources to match"),
    ("failure-backoff", "failures", "backoff", "delay before the one automatic retry of a failed node"),
    ("poll-interval", "loop", "poll_interval", None),
    ("resync-interval", "loop", "resync_interval", None),
    ("lease-duration", "leader", "lease_duration", None),
)
# Flags taken as they are: (flag, Settings group or "" for a top-level field, field).
_PLAIN: tuple[tuple[str, str, str], ...] = (
    ("namespace", "api", "namespace"),
    ("assignment-name", "api", "assignment_name"),
    ("node-event-namespace", "api", "node_event_namespace"),
    ("max-failures", "failures", "max_failures"),
    ("lease-name", "leader", "lease_name"),
    ("identity", "leader", "identity"),
    ("dry-run", "", "dry_run"),
    ("cluster", "api", "cluster"),
    ("device-plugin-configmap", "api", "device_plugin_configmap"),
)


def parser() -> argparse.ArgumentParser:
    d = Settings()
    p = argparse.ArgumentParser(prog="migc-controller", description=__doc__)
    conn = p.add_argument_group("connection")
    conn.add_argument(
        "--kubeconfig",
        help="kubeconfig file (default: in-cluster when running in a pod, "
        "else $KUBECONFIG or ~/.kube/config)",
    )
    conn.add_argument("--context", help="kubeconfig context")
    conn.add_argument("--in-cluster", action="store_true", help="use the pod's service account")
    p.add_argument(
        "--namespace", default=d.api.namespace, help="namespace of the assignment ConfigMap and Lease"
    )
    p.add_argument(
        "--assignment-name", default=d.api.assignment_name, help="name of the assignment ConfigMap"
    )
    p.add_argument("--node-event-namespace", default=d.api.node_event_namespace)
    t = p.add_argument_group("timeouts (seconds, or 90s / 30m / 1h)")
    for flag, group, field, text in _TIMEOUTS:
        t.add_argument("--" + flag, type=duration, default=getattr(getattr(d, group), field), help=text)
    p.add_argument(
        "--max-failures",
        type=int,
        default=d.failures.max_failures,
        help="stop admitting nodes once this many failed in one revision (0: never)",
    )
    p.add_argument("--lease-name", default=d.leader.lease_name)
    p.add_argument(
        "--identity",
        default=os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}",
        help="leader-election identity (default: $POD_NAME)",
    )
    p.add_argument(
        "--cluster",
        default=os.environ.get("MIGC_CLUSTER") or None,
        help="this cluster's name in the policy: an assignment for another cluster is refused "
        "(default: $MIGC_CLUSTER; unset accepts any, with a warning)",
    )
    p.add_argument(
        "--device-plugin-configmap",
        default=d.api.device_plugin_configmap,
        help="NAMESPACE/NAME of the device-plugin ConfigMap (devicePlugin.config.name); '' skips the check",
    )
    p.add_argument("--dry-run", action="store_true", help="log every step it would take; write nothing")
    p.add_argument("--metrics-address", default="0.0.0.0")
    p.add_argument("--metrics-port", type=int, default=8080, help="/metrics, /healthz, /readyz (0: disabled)")
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return p


def settings_from(args: argparse.Namespace) -> Settings:
    """The controller's Settings from parsed command-line arguments (each flag into its group)."""
    top: dict[str, Any] = {}
    groups: dict[str, dict[str, Any]] = {}
    for flag, group, field in (*((f, g, n) for f, g, n, _ in _TIMEOUTS), *_PLAIN):
        value = getattr(args, flag.replace("-", "_"))
        if group:
            groups.setdefault(group, {})[field] = value
        else:
            top[field] = value
    d = Settings()
    return dataclasses.replace(
        d,
        **top,
        **{group: dataclasses.replace(getattr(d, group), **fields) for group, fields in groups.items()},
    )


def _api_client(args: argparse.Namespace) -> client.ApiClient:
    cfg = client.Configuration()
    if args.in_cluster or (not args.kubeconfig and os.environ.get("KUBERNETES_SERVICE_HOST")):
        config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]  # untyped
    else:
        config.load_kube_config(  # type: ignore[no-untyped-call]  # the client's config module is untyped
            config_file=args.kubeconfig, context=args.context, client_configuration=cfg
        )
    return client.ApiClient(cfg)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logs.setup(args.log_level)
    settings = settings_from(args)
    try:
        api = _api_client(args)
    except Exception as exc:
        logs.log(40, "cannot configure the Kubernetes client", error=str(exc))
        return 2
    ctl = Controller(
        settings,
        api,
        http_address=args.metrics_address if args.metrics_port else None,
        http_port=args.metrics_port or None,
    )

    def _stop(signum: int, frame: FrameType | None) -> None:
        ctl.stop()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    ctl.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
