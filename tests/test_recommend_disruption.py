"""The disruption rule (compiler/recommend/disruption.py), shared by recommend and simulate."""

from __future__ import annotations

import pytest

from compiler.recommend import disruption as dis
from compiler.simulate import engine
from controller.settings import Settings


def test_grace_constant_is_the_controllers_default() -> None:
    # the compiler may not import the controller (import-linter): the constant is repeated, checked here
    assert Settings().drain_grace_timeout == dis.DRAIN_GRACE_SECONDS
    assert engine.DRAIN_GRACE_SECONDS == dis.DRAIN_GRACE_SECONDS  # simulate uses the same one
    assert engine.Settings(nodes=1).reconfigure_seconds == dis.RECONFIGURE_SECONDS


def test_expected_loss_by_hand() -> None:
    # E = 600 s, G = 1800 s: 600² / 2400 = 150 s; E = 0: nothing to lose
    assert dis.expected_loss(600, 1800) == pytest.approx(150.0)
    assert dis.expected_loss(0, 1800) == 0.0
    # a pod that has run 30 days loses almost all of it: 2592000² / 2593800
    assert dis.expected_loss(2_592_000, 1800) == pytest.approx(2_592_000 * 2_592_000 / 2_593_800)


def test_node_cost_and_outage_by_hand() -> None:
    # one 1g pod (1/7) for 600 s and one whole-GPU pod for 1800 s; 8 GPUs, 2 changed, 60 s each
    outage = dis.outage(8, 2, 60.0)
    assert outage == 8 * 120
    cost = dis.node_cost([(1 / 7, 600.0), (1.0, 1800.0)], 1800.0, outage)
    assert cost == pytest.approx(150 / 7 + 900 + 960)


def test_newly_served_takes_the_queue_after_those_served_already() -> None:
    waits = [900.0, 600.0, 300.0]  # 3 pending instances, longest waiting first
    # demand 5 = 2 running + 3 pending; capacity 3 -> 4: the first pending one was served already,
    # the change serves the second
    assert dis.newly_served(waits, 5, 3, 4) == 600.0
    assert dis.newly_served(waits, 5, 2, 5) == 900.0 + 600.0 + 300.0
    assert dis.newly_served(waits, 5, 5, 7) == 0.0  # nothing more to serve
    assert dis.newly_served(waits, 5, 4, 3) == 0.0  # capacity lost


def test_worth_is_strictly_above_the_threshold() -> None:
    assert dis.worth(121.0, 100.0, 20)
    assert not dis.worth(120.0, 100.0, 20)
    assert not dis.worth(0.0, 0.0, 20)
