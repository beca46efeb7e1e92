"""The rollout defaults the controller acts on and ``migc recommend`` / ``migc simulate`` model.

One place, imported by both sides (issue 22 item 1: "no copied controller defaults"): the
controller's :mod:`controller.settings` takes its defaults from here, and the compiler's disruption
rule and replay (compiler/recommend/disruption.py, compiler/simulate/engine.py) read the same names,
so a changed default changes what is modelled with it. Plain numbers; this module imports nothing,
so the compiler may import it without the controller's machinery (the import-linter contract
"The compiler reads the controller's assignment format, nothing of its machinery" allows it).
"""

from __future__ import annotations

DRAIN_GRACE_SECONDS = 1800.0
"""How long GPU pods may finish on their own before they are evicted (``--drain-grace-timeout``)."""

FAILURE_BACKOFF_SECONDS = 300.0
"""After the n-th failed apply of a node, the automatic retry waits backoff × 2^(n−1)
(``--failure-backoff``) …"""

MAX_ATTEMPTS = 2
"""… while n < max_attempts (2 = one automatic retry); then a human decides (``migc.dev/retry``)."""

MAX_FAILURES = 3
"""The rollout of a revision stops widening once this many of its nodes failed (0: never;
``--max-failures``)."""

EVICTION_TIMEOUT_SECONDS = 1800.0
"""After the grace, how long evictions a PodDisruptionBudget refuses (HTTP 429) are retried before
the node fails "drain timed out" (``--eviction-timeout``; controller/reconciler/drain.py)."""

EVICTION_BACKOFF_SECONDS = 1.0
"""First delay before a refused eviction is tried again (``--eviction-backoff``) …"""

EVICTION_BACKOFF_MAX_SECONDS = 30.0
"""… doubling up to this (``--eviction-backoff-max``)."""

CONFIGMAP_SYNC_DELAY_SECONDS = 90.0
"""A config name must have been in the mig-parted ConfigMap this long before a node is labelled
with it: the MIG manager reads the ConfigMap through a volume the kubelet refreshes only after its
sync period (1 min) plus its cache's propagation (``--configmap-sync-delay``;
controller/reconciler/migparted.py ``MountedConfigs``)."""
