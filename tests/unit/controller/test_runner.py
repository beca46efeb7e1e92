"""controller/runner.py: the loop keeps turning whatever a pass raises, and stops on request."""

from __future__ import annotations

import dataclasses
import threading

import pytest
from kubernetes import client

from controller.errors import TemporaryError
from controller.reconciler import Reconciler
from controller.runner import Controller, utcnow, wait_for
from unit.controller.support import SETTINGS


class _Passes(Reconciler):
    """A reconciler whose passes fail as scripted (no API behind it)."""

    def __init__(self, script: list[BaseException | None]) -> None:
        self.script = script
        self.calls = 0
        self.busy = False

    def reconcile_once(self) -> None:
        self.calls += 1
        failure = self.script.pop(0) if self.script else None
        if failure is not None:
            raise failure


def test_wait_for() -> None:
    ticks = iter(range(100))
    assert wait_for(lambda: next(ticks) >= 3, timeout=5.0, interval=0.0)
    assert not wait_for(lambda: False, timeout=0.0)
    assert wait_for(lambda: True, timeout=0.0)  # checked once more at the deadline


def test_utcnow_is_aware() -> None:
    offset = utcnow().utcoffset()
    assert offset is not None and offset.total_seconds() == 0


def test_a_failing_pass_never_stops_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    s = dataclasses.replace(
        SETTINGS,
        dry_run=True,  # no Lease: the elector is not consulted
        api=dataclasses.replace(SETTINGS.api, retry_backoff=0.001, retry_backoff_max=0.002),
        loop=dataclasses.replace(SETTINGS.loop, resync_interval=0.001, poll_interval=0.001),
    )
    ctl = Controller(s, client.ApiClient(client.Configuration()))
    assert ctl.kube.dry_run and ctl.kube.request_timeout == (5.0, s.api.request_timeout)
    watches: list[int] = []
    monkeypatch.setattr(ctl, "_start_watches", lambda: watches.append(1))
    passes = _Passes([TemporaryError("list nodes: HTTP 503"), KeyError("a bug"), None])
    ctl.reconciler = passes
    released: list[int] = []
    monkeypatch.setattr(ctl.elector, "release", lambda: released.append(1))
    t = threading.Thread(target=ctl.run, daemon=True)
    t.start()
    try:
        assert wait_for(lambda: ctl.passes >= 4, timeout=10.0)
    finally:
        ctl.stop()
        t.join(timeout=10.0)
    assert not t.is_alive()
    assert passes.calls >= 4  # both failures were survived and the loop went on
    assert watches == [1]  # the watches start once, when leading
    assert released == [1]
    assert ctl.metrics.registry.get_sample_value("migc_leader") == 1.0
