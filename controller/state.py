"""The per-node state machine as it is persisted: annotations, labels and taints on the Node.

Nothing about a node's progress lives only in memory, so a restarted (or newly elected)
controller reads the exact phase back from the API and continues from there.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

P = "migc.dev/"
PHASE = P + "phase"
TARGET = P + "target-config"
REVISION = P + "revision"
POOL = P + "pool"
PREVIOUS = P + "previous-config"
PREVIOUS_DP = P + "previous-device-plugin-config"
ATTEMPTS = P + "attempts"
PHASE_SINCE = P + "phase-since"
STARTED_AT = P + "started-at"
LAST_ERROR = P + "last-error"
RETRY_AFTER = P + "retry-after"
ROLLING_BACK = P + "rolling-back"
HELD_REVISION = P + "held-revision"
PRE_CORDONED = P + "pre-cordoned"
# The config migc applied on a node without MIG, where no MIG manager records it in
# nvidia.com/mig.config (see NodeView.current_config).
APPLIED = P + "applied-config"
# When migc saw the MIG manager's reboot start ("rebooting"), then its apply resume after it;
# REBOOTED_STAGE says which of the two REBOOTED marks.
REBOOTED = P + "rebooted-at"
REBOOTED_STAGE = P + "reboot-stage"
# Set by humans:
RETRY = P + "retry"
ROLLBACK = P + "rollback"
PAUSED = P + "paused"

# Set (with spec.unschedulable) when migc cordons a node, cleared when it uncordons it. migc adds
# no taint: the GPU Operator's operands (device plugin, GFD, DCGM exporter, validator) are
# DaemonSets that the MIG manager stops and restarts around a reconfiguration, and a NoSchedule
# taint they do not tolerate (the operator's defaults tolerate only nvidia.com/gpu) would keep
# the device plugin from coming back. A cordon alone keeps new pods off; DaemonSet pods
# tolerate node.kubernetes.io/unschedulable by design.
CORDONED = P + "cordoned"
# The taint earlier versions added; still removed on uncordon, never added.
TAINT_KEY = P + "reconfiguring"

MIG_CONFIG = "nvidia.com/mig.config"
MIG_STATE = "nvidia.com/mig.config.state"
DEVICE_PLUGIN_CONFIG = "nvidia.com/device-plugin.config"
# Set by GPU Feature Discovery; the GPU Operator runs the MIG manager only where it is "true".
MIG_CAPABLE = "nvidia.com/mig.capable"
# The GPU Operator runs its MIG manager DaemonSet pod only on nodes where this label is "true";
# "false" removes the pod (the operator's per-node switch for each operand).
DEPLOY_MIG_MANAGER = "nvidia.com/gpu.deploy.mig-manager"
MIG_MANAGER_APP = "nvidia-mig-manager"  # the pod label app=... of that DaemonSet

# Everything a finished reconfiguration clears again (human-set and audit keys stay).
TRANSIENT = (
    TARGET,
    POOL,
    ATTEMPTS,
    STARTED_AT,
    LAST_ERROR,
    RETRY_AFTER,
    ROLLING_BACK,
    PRE_CORDONED,
    CORDONED,
    REBOOTED,
    REBOOTED_STAGE,
)


class Phase(enum.StrEnum):
    IDLE = "Idle"
    CORDONED = "Cordoned"
    DRAINING = "Draining"
    APPLYING = "Applying"
    VERIFYING = "Verifying"
    DONE = "Done"
    FAILED = "Failed"


# The phases migc writes only in the same PATCH as a cordon (or later, while the cordon stays):
# a node claiming one of them without spec.unschedulable was not put there by migc.
CORDONED_PHASES = frozenset({Phase.CORDONED, Phase.DRAINING, Phase.APPLYING, Phase.VERIFYING})


def fmt_time(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(s: str | None) -> dt.datetime | None:
    if not s:
        return None
    try:
        return dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None


def _truthy(v: str | None) -> bool:
    return (v or "").strip().lower() in ("true", "1", "yes")


@dataclass(frozen=True)
class NodeView:
    """The parts of a Node object the controller reads (camelCase JSON as the API serves it)."""

    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    unschedulable: bool
    taints: tuple[Mapping[str, Any], ...]
    allocatable: Mapping[str, str]
    resource_version: str | None

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> NodeView:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        return cls(
            name=str(meta.get("name", "")),
            labels=dict(meta.get("labels") or {}),
            annotations=dict(meta.get("annotations") or {}),
            unschedulable=bool(spec.get("unschedulable")),
            taints=tuple(spec.get("taints") or ()),
            allocatable=dict(status.get("allocatable") or {}),
            resource_version=meta.get("resourceVersion"),
        )

    @property
    def phase(self) -> Phase:
        try:
            return Phase(self.annotations.get(PHASE, Phase.IDLE.value))
        except ValueError:
            # An unknown value (a newer controller wrote it?) must not be mistaken for Idle,
            # or the node could be admitted twice; Failed waits for a human.
            return Phase.FAILED

    @property
    def mig_capable(self) -> bool:
        return self.labels.get(MIG_CAPABLE) == "true"

    @property
    def current_config(self) -> str | None:
        # Where the MIG manager runs, its label is the truth. Elsewhere nothing reads or writes
        # nvidia.com/mig.config, so migc records what it applied in its own annotation.
        if not self.mig_capable and APPLIED in self.annotations:
            return self.annotations[APPLIED]
        return self.labels.get(MIG_CONFIG)

    def converged_to(self, config: str | None) -> bool:
        """Whether the node really carries ``config`` now: read from what the GPU Operator wrote,
        not from migc's annotations. On a MIG-capable node the MIG manager's label must name it
        *and* its state must be ``success`` (a stale ``failed`` or ``pending`` under the right
        label is a change that did not finish); elsewhere the config migc applied.
        """
        if not config or self.current_config != config:
            return False
        return not self.mig_capable or self.labels.get(MIG_STATE) == "success"

    @property
    def mig_busy(self) -> bool:
        """The MIG manager says it is reconfiguring this node (states it sets while it works)."""
        return self.mig_capable and self.labels.get(MIG_STATE) in ("pending", "rebooting")

    @property
    def target(self) -> str | None:
        return self.annotations.get(TARGET)

    @property
    def attempts(self) -> int:
        try:
            return int(self.annotations.get(ATTEMPTS, "0"))
        except ValueError:
            return 0

    @property
    def paused(self) -> bool:
        return _truthy(self.annotations.get(PAUSED))

    @property
    def wants_retry(self) -> bool:
        return _truthy(self.annotations.get(RETRY))

    @property
    def wants_rollback(self) -> bool:
        return _truthy(self.annotations.get(ROLLBACK))

    @property
    def rolling_back(self) -> bool:
        return _truthy(self.annotations.get(ROLLING_BACK))

    @property
    def legacy_taint(self) -> bool:
        return any(t.get("key") == TAINT_KEY for t in self.taints)

    @property
    def cordoned_by_migc(self) -> bool:
        """Whether migc cordoned this node (and has not released it yet)."""
        return _truthy(self.annotations.get(CORDONED)) or self.legacy_taint

    def since(self, key: str = PHASE_SINCE) -> dt.datetime | None:
        return parse_time(self.annotations.get(key))
