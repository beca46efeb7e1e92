"""The process: leader election, watches that wake the loop, the reconcile loop, endpoints.

Watches only *wake* the loop; every pass relists, so a dropped or broken watch costs latency,
never correctness, and ``resync_interval`` bounds that latency.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client, watch

from controller.errors import ControllerError
from controller.kube import Kube
from controller.leader import LeaseElector
from controller.logs import log
from controller.metrics import Endpoint, Health, Metrics
from controller.reconciler import Reconciler
from controller.settings import Settings


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class Controller:
    def __init__(
        self,
        settings: Settings,
        api_client: client.ApiClient,
        *,
        clock: Callable[[], dt.datetime] = utcnow,
        metrics: Metrics | None = None,
        http_address: str | None = None,
        http_port: int | None = None,
    ) -> None:
        self.s = settings
        self.kube = Kube(api_client, dry_run=settings.dry_run, identity=settings.leader.identity)
        self.kube.request_timeout = (5.0, settings.api.request_timeout)
        self.metrics = metrics if metrics is not None else Metrics()
        self.health = Health(stale_after=max(30.0, settings.loop.resync_interval * 3))
        self.reconciler = Reconciler(self.kube, settings, self.metrics, clock, self.health)
        self.elector = LeaseElector(
            self.kube,
            settings.api.namespace,
            settings.leader.lease_name,
            settings.leader.identity,
            settings.leader.lease_duration,
            clock,
            on_api_ok=self.health.api_ok,
        )
        self.stop_event = threading.Event()
        self.wake = threading.Event()
        self.passes = 0  # completed reconcile passes (tests wait on it instead of sleeping)
        self.endpoint = (
            Endpoint(self.metrics, self.health, http_address, http_port)
            if http_address is not None and http_port is not None
            else None
        )
        self._threads: list[threading.Thread] = []

    # --- watches -----------------------------------------------------------------------------
    def _watch(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        delay = self.s.api.retry_backoff
        while not self.stop_event.is_set():
            w = watch.Watch()  # type: ignore[no-untyped-call]  # the client's watch module is untyped
            try:
                for _event in w.stream(  # type: ignore[no-untyped-call]  # untyped client module
                    fn,
                    *args,
                    timeout_seconds=max(1, int(self.s.loop.watch_timeout)),
                    _request_timeout=(5.0, self.s.loop.watch_timeout + 5.0),
                    **kwargs,
                ):
                    self.wake.set()
                    delay = self.s.api.retry_backoff
                    if self.stop_event.is_set():
                        w.stop()  # type: ignore[no-untyped-call]  # untyped client module
                log(logging.DEBUG, "watch ended; re-establishing", watch=what)
            except Exception as exc:
                if self.stop_event.is_set():
                    return
                log(
                    logging.WARNING,
                    "watch failed; re-establishing",
                    watch=what,
                    error=str(exc)[:256],
                    retry_in=round(delay, 3),
                )
                self.stop_event.wait(delay)
                delay = min(self.s.api.retry_backoff_max, delay * 2)
            # Events may have been missed while the watch was down: relist now.
            self.wake.set()

    def _start_watches(self) -> None:
        core = self.kube.core
        specs: list[tuple[str, Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = [
            ("nodes", core.list_node, (), {}),
            (
                "assignment",
                core.list_namespaced_config_map,
                (self.s.api.namespace,),
                {"field_selector": f"metadata.name={self.s.api.assignment_name}"},
            ),
        ]
        for what, fn, args, kwargs in specs:
            t = threading.Thread(
                target=self._watch,
                args=(what, fn, *args),
                kwargs=kwargs,
                name=f"migc-watch-{what}",
                daemon=True,
            )
            t.start()
            self._threads.append(t)

    # --- main loop ---------------------------------------------------------------------------
    def run(self) -> None:
        """Block until ``stop()``."""
        log(
            logging.INFO,
            "starting",
            identity=self.s.leader.identity,
            dry_run=self.s.dry_run,
            namespace=self.s.api.namespace,
            assignment=self.s.api.assignment_name,
        )
        if self.endpoint is not None:
            self.endpoint.start()
        watches_started = False
        error_delay = self.s.api.retry_backoff
        next_pass = 0.0  # monotonic time of the next pass when nothing wakes us earlier
        renew_every = max(0.02, self.s.leader.lease_duration / 3)
        try:
            while not self.stop_event.is_set():
                self.health.loop_tick()
                # Dry-run writes nothing, not even the Lease: it never acts, so it needs no lock.
                leading = True if self.s.dry_run else self.elector.tick()
                self.metrics.leader.set(1 if leading else 0)
                timeout = renew_every
                if leading:
                    if not watches_started:
                        self._start_watches()
                        watches_started = True
                    if self.wake.is_set() or time.monotonic() >= next_pass:
                        self.wake.clear()
                        next_pass = time.monotonic() + self.s.loop.resync_interval
                        try:
                            self.reconciler.reconcile_once()
                            error_delay = self.s.api.retry_backoff
                            if self.reconciler.busy:
                                next_pass = time.monotonic() + self.s.loop.poll_interval
                        except Exception as exc:
                            # A pass fails as a whole only when the API does (list nodes, read the
                            # assignment); anything else is a bug, logged at ERROR, and the loop
                            # still goes on: no single document or object may stop it.
                            expected = isinstance(exc, ControllerError)
                            log(
                                logging.WARNING if expected else logging.ERROR,
                                "pass failed; backing off",
                                error=str(exc) if expected else f"{type(exc).__name__}: {exc}",
                                retry_in=error_delay,
                            )
                            next_pass = time.monotonic() + error_delay
                            error_delay = min(self.s.api.retry_backoff_max, error_delay * 2)
                        self.passes += 1
                    timeout = max(0.0, next_pass - time.monotonic())
                    if not self.s.dry_run:
                        # Wake up in time to renew the Lease even when no pass is due.
                        timeout = min(timeout, renew_every)
                if self.wake.wait(timeout):
                    # Coalesce a burst of watch events into one pass.
                    self.stop_event.wait(min(0.05, self.s.loop.poll_interval))
        finally:
            if self.endpoint is not None:
                self.endpoint.stop()
        self.elector.release()
        log(logging.INFO, "stopped", identity=self.s.leader.identity)

    def stop(self) -> None:
        self.stop_event.set()
        self.wake.set()


def wait_for(cond: Callable[[], bool], timeout: float, interval: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(interval)
    return cond()
