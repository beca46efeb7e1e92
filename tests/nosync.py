"""Replay settings for the hand-made timelines of tests/test_simulate*.py."""

from __future__ import annotations

from typing import Any

from compiler.simulate.engine import Settings


def settings(**kw: Any) -> Settings:
    """Settings without the controller's wait for the ConfigMap's refresh (``sync_seconds`` 0): those
    timelines are about the other mechanisms; tests/test_simulate_sync.py covers that wait."""
    return Settings(**{"sync_seconds": 0.0, **kw})
