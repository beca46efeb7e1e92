"""controller/settings.py: frozen, grouped settings whose defaults the docs and CLI promise."""

from __future__ import annotations

import dataclasses

import pytest

from controller.settings import DrainSettings, FailureSettings, LeaderSettings, Settings


def test_settings_are_frozen_and_varied_by_replace() -> None:
    s = Settings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.dry_run = True  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.drain.grace_timeout = 1.0  # type: ignore[misc]
    t = dataclasses.replace(s, drain=dataclasses.replace(s.drain, grace_timeout=5.0))
    assert t.drain.grace_timeout == 5.0 and s.drain.grace_timeout == 1800.0
    assert t.apply == s.apply and t.drain.eviction_timeout == s.drain.eviction_timeout


def test_one_record_per_concern_and_equal_defaults() -> None:
    assert {f.name for f in dataclasses.fields(Settings)} == {
        "api", "drain", "apply", "failures", "loop", "leader", "dry_run",
    }  # fmt: skip
    # Two default records compare equal (tests compare a derived variant with its base).
    assert Settings() == Settings() and Settings(drain=DrainSettings()) == Settings()


def test_documented_defaults() -> None:
    s = Settings()
    # One automatic retry (max_attempts 2), a rollout halted at 3 failures, 5 min backoff.
    assert s.failures == FailureSettings(backoff=300.0, max_attempts=2, max_failures=3)
    # Renewal every third of a 15 s lease; the identity is overridden by --identity / $POD_NAME.
    assert s.leader == LeaderSettings(
        lease_name="migc-controller", lease_duration=15.0, identity="migc-controller"
    )
    assert (s.api.namespace, s.api.assignment_name, s.api.cluster) == ("migc-system", "migc-assignment", None)
    assert (
        s.api.retry_backoff < s.api.retry_backoff_max
        and s.drain.eviction_backoff < s.drain.eviction_backoff_max
    )
    assert s.dry_run is False
