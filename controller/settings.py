"""Tunables of the controller, grouped by what they govern; the CLI fills them, tests shrink them.

Grouped as kopf groups its operator settings (nolar/kopf@60d02aef
``kopf/_cogs/configs/configuration.py``:512-523: ``OperatorSettings`` holds one ``PostingSettings``,
``PeeringSettings``, ``WatchingSettings``, … each a small dataclass documented per field) rather than
one flat record: a reader looking for "how long may a drain take" finds ``Settings.drain``, and a
phase's code names the concern it depends on (``ctx.s.drain.grace_timeout``). Unlike kopf's, every
record here is frozen: a running controller never changes its settings, and tests derive variants
with :func:`dataclasses.replace`.

Every field keeps the default it had in the flat record, and every ``migc-controller`` flag its
field (``controller/__main__.py`` maps each flag to its group and field; fields without a flag are
tuned by tests only); durations are seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller import defaults


@dataclass(frozen=True)
class ApiSettings:
    """Which Kubernetes objects the controller reads and writes, and how its API requests behave."""

    namespace: str = "migc-system"
    """Namespace of the assignment ConfigMap (and its shards, the DraPlan ConfigMap) and of the Lease
    (``--namespace``)."""

    assignment_name: str = "migc-assignment"
    """Name of the assignment ConfigMap the compiler renders (``--assignment-name``)."""

    node_event_namespace: str = "default"
    """Where Node Events are written: where ``kubectl describe node`` looks for them
    (``--node-event-namespace``)."""

    cluster: str | None = None
    """This controller's cluster: an assignment (or DraPlan) whose "cluster" differs is refused. None
    (the flag not given) accepts any, with a warning (``--cluster``, default ``$MIGC_CLUSTER``)."""

    device_plugin_configmap: str = "gpu-operator/migc-device-plugin-config"
    """namespace/name of the device-plugin ConfigMap the GPU Operator's devicePlugin.config.name names
    (the one migc renders): a target whose devicePluginConfig is not one of its keys is refused, as
    upstream's config-manager exits on an unknown name. "": not checked
    (``--device-plugin-configmap``)."""

    request_timeout: float = 30.0
    """Read timeout of one API request (the connect timeout is 5 s)."""

    retry_backoff: float = 0.5
    """Temporary API errors (409, 429, 5xx, connection) back off per node, as do a failed watch and
    a failed pass, starting here …"""

    retry_backoff_max: float = 30.0
    """… doubling up to this."""


@dataclass(frozen=True)
class DrainSettings:
    """Draining: first let GPU pods finish on their own, then evict; a PDB 429 is waited out."""

    grace_timeout: float = defaults.DRAIN_GRACE_SECONDS
    """How long GPU pods may finish on their own before they are evicted (``--drain-grace-timeout``).
    ``migc simulate`` and ``migc recommend`` model the same wait: the default is
    :data:`controller.defaults.DRAIN_GRACE_SECONDS`, which they read too."""

    eviction_timeout: float = defaults.EVICTION_TIMEOUT_SECONDS
    """Then how long blocked evictions (a PDB's 429) are retried before the node fails
    (``--eviction-timeout``)."""

    eviction_backoff: float = defaults.EVICTION_BACKOFF_SECONDS
    """First delay between two evictions of a pod a PDB blocked …"""

    eviction_backoff_max: float = defaults.EVICTION_BACKOFF_MAX_SECONDS
    """… doubling up to this."""


@dataclass(frozen=True)
class ApplySettings:
    """Applying (relabelling a drained node, waiting for the MIG manager) and Verifying."""

    configmap_sync_delay: float = defaults.CONFIGMAP_SYNC_DELAY_SECONDS
    """Before labelling a node: a config name must have been in the mig-parted ConfigMap this long,
    so that the kubelet has refreshed the MIG manager's mounted copy (sync period 1m plus cache
    propagation, by default) (``--configmap-sync-delay``)."""

    apply_timeout: float = 1800.0
    """How long the MIG manager has to report nvidia.com/mig.config.state=success
    (``--apply-timeout``). It also bounds a MIG manager stuck at "pending" (it sets no final state
    when an operand's pods do not stop); its real worst case is a 5m wait for each of five GPU-client
    waits (NVIDIA/mig-parted pkg/mig/reconfigure/reconfigure.go waitForPodsToBeDeleted) plus the
    apply itself."""

    reboot_timeout: float = 1800.0
    """The MIG manager sets state "rebooting" when a MIG mode change needs a node reboot
    (WITH_REBOOT): the node must come back (the state leaves "rebooting") within this long; the apply
    after the reboot then gets ``apply_timeout`` again (``--reboot-timeout``)."""

    verify_timeout: float = 300.0
    """How long node allocatable (and on a static DRA node its ResourceSlices) may take to match the
    config (``--verify-timeout``)."""


@dataclass(frozen=True)
class FailureSettings:
    """What a failed node costs: automatic retries per node, and the halt of a bad revision."""

    backoff: float = defaults.FAILURE_BACKOFF_SECONDS
    """After a failure: wait ``backoff * 2**(attempts-1)`` before the automatic retry
    (``--failure-backoff``) …"""

    max_attempts: int = defaults.MAX_ATTEMPTS
    """… retried automatically while attempts < max_attempts (2 = one automatic retry); after that a
    human decides."""

    max_failures: int = defaults.MAX_FAILURES
    """The rollout stops widening once this many nodes failed in one revision (0: never), like a
    Deployment's progress deadline: a bad config must not walk through the fleet
    (``--max-failures``)."""


@dataclass(frozen=True)
class LoopSettings:
    """Loop cadence: short while a node is in flight, a full relist every resync_interval anyway."""

    poll_interval: float = 2.0
    """Next pass this soon while a node is in flight (``--poll-interval``)."""

    resync_interval: float = 60.0
    """A full pass at least this often, even when the watch reports nothing; also paces the pod
    sweeps and the health check's staleness (``--resync-interval``)."""

    watch_timeout: float = 300.0
    """Server-side timeout of one watch (of the Nodes, of the assignment ConfigMap); the watch is then
    re-established and a pass relists."""


@dataclass(frozen=True)
class LeaderSettings:
    """Leader election: one replica acts, the others wait for its Lease to expire."""

    lease_name: str = "migc-controller"
    """Name of the Lease, in ``ApiSettings.namespace`` (``--lease-name``)."""

    lease_duration: float = 15.0
    """How long a Lease holds without renewal; the leader renews every third of it
    (``--lease-duration``)."""

    identity: str = "migc-controller"
    """This replica's Lease holderIdentity, also the Events' reportingInstance and the User-Agent's
    comment, which tells replicas apart in API audit logs (``--identity``, default ``$POD_NAME``)."""


@dataclass(frozen=True)
class Settings:
    """All of the controller's settings, one record per concern."""

    api: ApiSettings = field(default_factory=ApiSettings)
    drain: DrainSettings = field(default_factory=DrainSettings)
    apply: ApplySettings = field(default_factory=ApplySettings)
    failures: FailureSettings = field(default_factory=FailureSettings)
    loop: LoopSettings = field(default_factory=LoopSettings)
    leader: LeaderSettings = field(default_factory=LeaderSettings)
    dry_run: bool = False
    """Log every step it would take; write nothing (``--dry-run``)."""
