"""Tunables of the controller; the CLI fills them, tests shrink them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    namespace: str = "migc-system"
    assignment_name: str = "migc-assignment"
    node_event_namespace: str = "default"  # where `kubectl describe node` looks for Node events
    # Draining: first let GPU pods finish on their own, then evict; a PDB 429 is waited out.
    drain_grace_timeout: float = 1800.0
    eviction_timeout: float = 1800.0
    eviction_backoff: float = 1.0
    eviction_backoff_max: float = 30.0
    # Before labelling a node: a config name must have been in the mig-parted ConfigMap this
    # long, so that the kubelet has refreshed the MIG manager's mounted copy (sync period 1m
    # plus cache propagation, by default).
    configmap_sync_delay: float = 90.0
    # Applying / Verifying. The apply deadline also bounds a MIG manager stuck at "pending" (it
    # sets no final state when an operand's pods do not stop); its real worst case is a 5m wait
    # for each of five GPU-client waits (NVIDIA/mig-parted pkg/mig/reconfigure/reconfigure.go
    # waitForPodsToBeDeleted) plus the apply itself.
    apply_timeout: float = 1800.0
    # The MIG manager sets state "rebooting" when a MIG mode change needs a node reboot
    # (WITH_REBOOT): the node must come back (the state leaves "rebooting") within this long;
    # the apply after the reboot then gets apply_timeout again.
    reboot_timeout: float = 1800.0
    verify_timeout: float = 300.0
    # After a failure: wait failure_backoff * 2**(attempts-1), then retry automatically while
    # attempts < max_attempts (2 = one automatic retry); after that a human decides.
    failure_backoff: float = 300.0
    max_attempts: int = 2
    # The rollout stops widening once this many nodes failed in one revision (0: never), like a
    # Deployment's progress deadline: a bad config must not walk through the fleet.
    max_failures: int = 3
    # Temporary API errors (409, 429, 5xx, connection) back off per node.
    retry_backoff: float = 0.5
    retry_backoff_max: float = 30.0
    # Loop cadence: short while a node is in flight, a full relist every resync_interval anyway.
    poll_interval: float = 2.0
    resync_interval: float = 60.0
    watch_timeout: float = 300.0
    request_timeout: float = 30.0
    # Leader election.
    lease_name: str = "migc-controller"
    lease_duration: float = 15.0
    identity: str = "migc-controller"
    # This controller's cluster: an assignment whose "cluster" differs is refused. None (the
    # flag not given) accepts any, with a warning.
    cluster: str | None = None
    dry_run: bool = False
    # namespace/name of the device-plugin ConfigMap the GPU Operator's devicePlugin.config.name
    # names (the one migc renders): a target whose devicePluginConfig is not one of its keys is
    # refused, as upstream's config-manager exits on an unknown name. "": not checked.
    device_plugin_configmap: str = "gpu-operator/migc-device-plugin-config"
