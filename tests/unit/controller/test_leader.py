"""controller/leader.py: acquiring, renewing, taking over and giving back the Lease."""

from __future__ import annotations

import types
from typing import Any

import pytest

from controller import leader
from controller.errors import TemporaryError
from controller.leader import LeaseElector
from unit.controller.support import NOW, FakeKube

NS, NAME = "migc-system", "migc-controller"


class _Clock:
    """The elector's monotonic clock, moved by hand."""

    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t


@pytest.fixture
def mono(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    clock = _Clock()
    monkeypatch.setattr(leader, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    return clock


def _elector(kube: FakeKube, identity: str = "me", duration: float = 15.0) -> LeaseElector:
    return LeaseElector(kube, NS, NAME, identity, duration, lambda: NOW)


def _held_by(kube: FakeKube, holder: str, transitions: int = 4) -> None:
    kube.leases[(NS, NAME)] = {
        "metadata": {"name": NAME, "namespace": NS, "resourceVersion": "7"},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": 15,
            "renewTime": "2026-12-01T11:59:59.000000Z",
            "leaseTransitions": transitions,
        },
    }


def test_no_lease_creates_one_and_leads(mono: _Clock) -> None:
    kube = FakeKube()
    oks: list[int] = []
    e = LeaseElector(kube, NS, NAME, "me", 15.0, lambda: NOW, on_api_ok=lambda: oks.append(1))
    assert e.tick() and e.leading
    spec = kube.leases[(NS, NAME)]["spec"]
    assert (
        spec["holderIdentity"] == "me"
        and spec["leaseTransitions"] == 0
        and spec["leaseDurationSeconds"] == 15
    )
    assert spec["acquireTime"] == spec["renewTime"] == "2026-12-01T12:00:00.000000Z"
    assert oks == [1]


def test_renews_only_every_third_of_the_duration(mono: _Clock) -> None:
    kube = FakeKube()
    e = _elector(kube)
    e.tick()
    writes = len(kube.writes)
    mono.t += 4.9
    assert e.tick() and len(kube.writes) == writes  # within a third of 15 s: no request at all
    mono.t += 0.2
    assert e.tick()
    verb, _, patch = kube.writes[-1]
    assert verb == "patch-lease" and "acquireTime" not in patch["spec"]  # a renewal, not a takeover
    assert patch["metadata"] == {"resourceVersion": "1"}


def test_a_live_holder_is_respected_an_expired_one_replaced(mono: _Clock) -> None:
    kube = FakeKube()
    _held_by(kube, "other")
    e = _elector(kube)
    assert not e.tick()
    mono.t += 14.0
    assert not e.tick()  # the same record seen for 14 s of a 15 s lease: still held
    assert kube.writes == []
    mono.t += 1.0
    assert e.tick()
    _, _, patch = kube.writes[-1]
    assert patch["spec"]["holderIdentity"] == "me" and patch["spec"]["leaseTransitions"] == 5
    assert patch["metadata"] == {"resourceVersion": "7"}  # a racing candidate gets the 409


def test_a_renewed_record_restarts_the_expiry_clock(mono: _Clock) -> None:
    kube = FakeKube()
    _held_by(kube, "other")
    e = _elector(kube)
    e.tick()
    mono.t += 10.0
    kube.leases[(NS, NAME)]["spec"]["renewTime"] = "2026-12-01T12:00:09.000000Z"
    assert not e.tick()
    mono.t += 10.0  # 20 s since first seen, 10 s since it changed
    assert not e.tick()


def test_losing_the_race_and_failing_renewals(mono: _Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    kube = FakeKube()
    _held_by(kube, "")  # released: free to take at once
    e = _elector(kube)

    def conflict(*_: Any) -> dict[str, Any]:
        raise TemporaryError("HTTP 409", status=409)

    monkeypatch.setattr(kube, "patch_lease", conflict)
    assert not e.tick()  # another candidate won the write
    monkeypatch.undo()
    monkeypatch.setattr(leader, "time", types.SimpleNamespace(monotonic=mono.monotonic))
    assert e.tick()
    kube.lease_error = TemporaryError("HTTP 503", status=503)
    mono.t += 6.0
    assert e.tick()  # one failed renewal: still within 2/3 of the lease
    mono.t += 5.0
    assert not e.tick()  # 11 s without renewal > 10 s: stop acting before another can take over


def test_release_gives_the_lease_back_only_when_leading(mono: _Clock) -> None:
    kube = FakeKube()
    e = _elector(kube)
    e.release()
    assert kube.writes == []
    e.tick()
    e.release()
    assert not e.leading
    assert kube.writes[-1] == ("patch-lease", NAME, {"spec": {"holderIdentity": None, "renewTime": None}})
    assert "holderIdentity" not in kube.leases[(NS, NAME)]["spec"]
