"""The ObservedDemand state file (lost, corrupt, stale, round trip) and comment-keeping Workload edits."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from compiler.model import PartitionPolicy
from compiler.pipeline import load_and_validate
from compiler.recommend.history import Sample
from compiler.recommend.state import State, dump_state, edit_replicas, parse_state, read_state

NOW = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
P = PartitionPolicy(mode="dynamic")
TESTS = Path(__file__).resolve().parents[3]
DATA = TESTS / "data" / "recommend"


def t(seconds_ago: int) -> dt.datetime:
    return NOW - dt.timedelta(seconds=seconds_ago)


def test_round_trip_and_old_changes_dropped() -> None:
    state = State(
        history=(
            Sample(t(600), (("ml", "1g.10gb", 3, 2), ("ml", "gpu", 1, 0))),
            Sample(t(300), (("web", "3g.40gb", 0, 4),)),
        ),
        last_change=t(4000),
        changes=(("n1", t(4000)), ("n2", t(90000))),
        failures=2,
        last_failure=t(100),
    )
    text = dump_state(state, NOW)
    back, diags = parse_state(text, "s.yaml", NOW, P)
    assert diags == []
    assert back.history == state.history and back.failures == 2
    row = "  - at: '2026-01-01T11:50:00Z'\n    demand:\n      ml/1g.10gb: [3, 2]\n      ml/gpu: [1, 0]\n"
    assert row in text  # one line per (tenant, profile) and sample
    assert back.changes == (("n1", t(4000)),)  # older than a day: forgotten
    assert back.updated == NOW
    assert dump_state(back, NOW) == text  # deterministic


def test_lost_state_is_empty_without_warning(tmp_path: Path) -> None:
    state, diags = read_state(tmp_path / "observed-demand.yaml", NOW, P)
    assert diags == [] and state.history == () and state.notes == ("lost",)


def test_corrupt_state_warns_and_is_empty(tmp_path: Path) -> None:
    sampled = dump_state(State(history=(Sample(t(60), (("ml", "1g.10gb", 3, 2),)),)), NOW)
    broken = (
        "{{{not yaml",
        "kind: Fleet\n",
        dump_state(State(), NOW).replace("updated:", "updatedd:"),
        sampled.replace("[3, 2]", "[3, -2]"),  # a negative count
        sampled.replace("[3, 2]", "[3]"),  # running without pending
    )
    for text in broken:
        state, diags = parse_state(text, "s.yaml", NOW, P)
        assert [d.code for d in diags] == ["MIGC420"], text
        assert state.history == () and state.failures == 0 and state.notes == ("corrupt",)
    # a key the schema refuses costs that key (MIGC445), not the state (issue 24)
    for text in (
        sampled.replace("ml/1g.10gb", "ml/1g.10gib"),  # not a profile
        sampled.replace("ml/1g.10gb", "1g.10gb"),  # no tenant
    ):
        state, diags = parse_state(text, "s.yaml", NOW, P)
        assert [d.code for d in diags] == ["MIGC445"], text
        assert state.history == (Sample(t(60), ()),) and state.notes == ()
    bad = tmp_path / "observed-demand.yaml"
    bad.write_bytes(b"\xff\xfe")
    assert [d.code for d in read_state(bad, NOW, P)[1]] == ["MIGC420"]


def test_stale_state_restarts_the_window_but_keeps_failures() -> None:
    history = (
        Sample(t(99999), (("ml", "1g.10gb", 1, 1),)),
        Sample(t(3 * 900 + 1), (("ml", "1g.10gb", 1, 2),)),
    )
    text = dump_state(State(history=history, failures=3, last_failure=t(99999)), t(5))
    # the newest sample is what proves continuity, not `updated` (a run may store no sample)
    state, diags = parse_state(text, "s.yaml", NOW, P)
    assert [d.code for d in diags] == ["MIGC421"]
    assert "the last demand sample is 2701s old" in diags[0].message
    assert state.history == () and state.failures == 3 and state.notes == ("stale",)
    fresh, none = parse_state(text, "s.yaml", t(2), P)
    assert none == [] and fresh.history == history


def test_state_file_validates_with_the_policy_set(tmp_path: Path) -> None:
    for name in ("fleet.yaml", "tenants.yaml", "workloads.yaml"):
        (tmp_path / name).write_text((TESTS.parent / "examples" / "lab" / name).read_text())
    sampled = State(history=(Sample(NOW, (("students", "1g.10gb", 2, 1),)),))
    (tmp_path / "observed-demand.yaml").write_text(dump_state(sampled, NOW))
    policy, diags = load_and_validate([str(tmp_path)])
    assert policy is not None, diags
    (tmp_path / "observed-demand.yaml").write_text(dump_state(State(), NOW).replace("updated", "when"))
    policy, diags = load_and_validate([str(tmp_path)])
    assert policy is None and any(d.file.endswith("observed-demand.yaml") for d in diags)


def test_replica_edit_keeps_every_comment_and_key_order() -> None:
    text = (DATA / "commented-workloads.yaml").read_text()
    edited = edit_replicas(text, {("Workload", "notebooks"): 7, ("Workload", "training"): 2})
    assert edited == (DATA / "commented-workloads.golden.yaml").read_text()
    assert edit_replicas(text, {}) == text  # no change: byte-identical


def test_replica_forms_it_cannot_rewrite_are_refused() -> None:
    text = "kind: Workload\nmetadata: {name: w}\nspec:\n  replicas: &r 4\n"
    with pytest.raises(ValueError, match="cannot edit replicas of Workload w"):
        edit_replicas(text, {("Workload", "w"): 5})


def test_replica_edit_on_a_heavily_commented_file_changes_only_the_replicas_tokens() -> None:
    """Header and trailing comments, aligned and inline comments, blank lines, a block scalar and a label
    that mention ``replicas:``, ``...`` and comment-only documents, flow-style metadata and spec, a
    Tenant and an unchanged Workload, a value that grows a digit, no final newline."""
    text = (DATA / "heavily-commented.yaml").read_text(encoding="utf-8")
    changes = {("Workload", "bert-serving"): 10, ("Workload", "ranker"): 8, ("Tenant", "replicas"): 5}
    edited = edit_replicas(text, changes)
    assert edited == (DATA / "heavily-commented.golden.yaml").read_text(encoding="utf-8")
    before, after = text.splitlines(), edited.splitlines()
    assert [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b] == [26, 39]
    assert not edited.endswith("\n")
