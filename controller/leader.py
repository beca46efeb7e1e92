"""Leader election on a coordination.k8s.io/v1 Lease.

A small elector of our own instead of ``kubernetes.leaderelection``: that module configures the
root logger at import time and has had bugs around leadership after callback failures and
release on shutdown (see the project's reference notes). Like client-go, expiry is judged by how
long *we* have seen the same record unchanged (local monotonic time), so clock skew between
replicas does not matter. Updates carry the resourceVersion we read, so two candidates racing
for an expired lease get a 409 for all but one on a real API server.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from typing import Any

from controller.errors import ControllerError, NotFoundError, TemporaryError
from controller.kube import Kube
from controller.logs import log
from controller.state import fmt_time


class LeaseElector:
    def __init__(
        self,
        kube: Kube,
        namespace: str,
        name: str,
        identity: str,
        duration: float,
        clock: Callable[[], dt.datetime],
        on_api_ok: Callable[[], None] | None = None,
    ) -> None:
        self.kube = kube
        self.on_api_ok = on_api_ok
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.duration = duration
        self.clock = clock
        self.leading = False
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._renewed_at = 0.0

    def _spec(self, lease: dict[str, Any]) -> dict[str, Any]:
        spec: dict[str, Any] = lease.get("spec") or {}
        return spec

    def tick(self) -> bool:
        """Acquire or renew as needed; returns whether we lead now. Never raises ControllerError."""
        try:
            self.leading = self._tick()
            if self.on_api_ok is not None:
                self.on_api_ok()  # a standby that can reach the API is ready to take over
        except ControllerError as exc:
            # Failing to renew for longer than the lease lasts means another replica may take
            # over; stop acting before that can happen.
            if self.leading and time.monotonic() - self._renewed_at > self.duration * 2 / 3:
                log(logging.WARNING, "leadership lost: renewal failing", error=str(exc))
                self.leading = False
        return self.leading

    def _tick(self) -> bool:
        now_mono = time.monotonic()
        if self.leading and now_mono - self._renewed_at < self.duration / 3:
            return True
        try:
            lease = self.kube.get_lease(self.namespace, self.name)
        except NotFoundError:
            return self._create()
        spec = self._spec(lease)
        holder = spec.get("holderIdentity") or ""
        record = (holder, spec.get("renewTime"), spec.get("leaseTransitions"))
        if record != self._observed:
            self._observed, self._observed_at = record, now_mono
        if holder == self.identity:
            return self._write(lease, spec, new_holder=False)
        if holder and now_mono - self._observed_at < float(spec.get("leaseDurationSeconds") or self.duration):
            if self.leading:
                log(logging.WARNING, "leadership lost", holder=holder)
            return False
        return self._write(lease, spec, new_holder=True)

    def _create(self) -> bool:
        now = fmt_time(self.clock())
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": max(1, round(self.duration)),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }
        try:
            self.kube.create_lease(self.namespace, body)
        except TemporaryError:
            return False  # 409: someone else created it first
        self._renewed_at = time.monotonic()
        log(logging.INFO, "leadership acquired", identity=self.identity, lease=self.name)
        return True

    def _write(self, lease: dict[str, Any], spec: dict[str, Any], *, new_holder: bool) -> bool:
        now = fmt_time(self.clock())
        patch: dict[str, Any] = {
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": max(1, round(self.duration)),
                "renewTime": now,
            }
        }
        if new_holder:
            patch["spec"]["acquireTime"] = now
            patch["spec"]["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        rv = (lease.get("metadata") or {}).get("resourceVersion")
        if rv:
            patch["metadata"] = {"resourceVersion": rv}
        try:
            self.kube.patch_lease(self.namespace, self.name, patch)
        except TemporaryError as exc:
            if exc.status == 409:
                return False
            raise
        self._renewed_at = time.monotonic()
        if new_holder or not self.leading:
            log(logging.INFO, "leadership acquired", identity=self.identity, lease=self.name)
        return True

    def release(self) -> None:
        """On graceful shutdown, let a standby take over at once instead of after expiry."""
        if not self.leading:
            return
        try:
            self.kube.patch_lease(
                self.namespace, self.name, {"spec": {"holderIdentity": None, "renewTime": None}}
            )
        except ControllerError as exc:
            log(logging.WARNING, "could not release the lease", error=str(exc))
        self.leading = False
