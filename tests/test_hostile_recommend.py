"""Hostile input to `migc recommend` (issue 24): one pod cannot poison the state, a bad or lost state
does not make it forget, concurrent or killed runs leave both files consistent, and the pull-request
body is escaped and bounded.

The lab example and its helpers come from tests/test_recommend_cli.py (10 running 1g.10gb notebooks,
8 pending; a 10-minute stabilization window).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from statusfleet import pod
from test_recommend_cli import compiled, run, setup

from compiler.escape import GITHUB_BODY_LIMIT, bound_markdown, markdown_cell
from compiler.exitcodes import ExitCode
from compiler.fsio import write_file_atomic
from compiler.model import PartitionPolicy
from compiler.observe import Observation, ObservedNode, Rollout
from compiler.pipeline import load_and_validate
from compiler.recommend.history import Sample
from compiler.recommend.state import (
    State,
    StateBusy,
    StateLock,
    dump_state,
    parse_state,
    read_state,
    rebuild_from_cluster,
    write_state,
)

__all__ = ["compiled"]  # the module fixture of test_recommend_cli, used here by name

NOW = dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.UTC)
P = PartitionPolicy(mode="dynamic")


def stamp(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def with_spec(text: str, **spec: Any) -> str:
    """The state document ``text`` with ``spec`` fields set (written as a hand or another tool would)."""
    doc = yaml.safe_load(text)
    doc["spec"].update(spec)
    return yaml.safe_dump(doc)


# --- the state file: what it reads ---------------------------------------------------------------


@pytest.mark.parametrize("bad", ["2026-13-45T25:61:61Z", "0000-01-01T00:00:00Z", "3000-01-01T00:00:00Z"])
def test_impossible_times_in_the_state_are_dropped_not_a_crash(bad: str) -> None:
    good = dump_state(State(history=(Sample(NOW, (("ml", "1g.10gb", 1, 1),)),), failures=2), NOW)
    for text in (
        good.replace(f"updated: '{stamp(NOW)}'", f"updated: '{bad}'"),
        good.replace(f"at: '{stamp(NOW)}'", f"at: '{bad}'"),
        with_spec(good, lastChange=bad, changes=[{"node": "n1", "at": bad}]),
    ):
        assert bad in text
        state, diags = parse_state(text, "s.yaml", NOW, P)
        assert [d.code for d in diags] == ["MIGC445"], text
        assert state.failures == 2 and state.notes == ()  # the rest is kept, not thrown away


def test_a_future_change_is_dropped_with_a_warning_and_never_written_again() -> None:
    future = NOW + dt.timedelta(days=30)
    text = with_spec(dump_state(State(), NOW), changes=[{"node": "n1", "at": stamp(future)}])
    state, diags = parse_state(text, "s.yaml", NOW, P)
    assert state.changes == () and [d.code for d in diags] == ["MIGC445"]
    assert "in the future" in diags[0].message
    # the writer never keeps one either (a negative age passed the old `< 86400` test)
    assert "changes" not in dump_state(State(changes=(("n1", future),)), NOW)
    skew = NOW + dt.timedelta(seconds=60)  # another machine's clock a minute ahead: kept
    text = with_spec(dump_state(State(), NOW), changes=[{"node": "n1", "at": stamp(skew)}])
    assert parse_state(text, "s.yaml", NOW, P)[0].changes == (("n1", skew),)


# --- the state file: what it writes ----------------------------------------------------------------

HOSTILE_KEYS = [
    ("students", "foo"),  # nvidia.com/mig-foo: a valid resource name, no profile
    ("a b " * 30, "1g.10gb"),  # over 80 characters with spaces: folded by the YAML writer
    ("ml\u0085x", "1g.10gb"),  # NEL: read back as a line break or a space
    ("ml", "1g.10gb\u202e"),
]


def test_keys_the_schema_refuses_are_not_written(tmp_path: Path) -> None:
    rows = tuple(sorted((t, p, 1, 1) for t, p in [*HOSTILE_KEYS, ("ml", "1g.10gb")]))
    state = State(history=(Sample(NOW, rows),))
    path = tmp_path / "observed-demand.yaml"
    warned = write_state(path, state, NOW)
    assert [d.code for d in warned] == ["MIGC445"] and "4 demand key(s)" in warned[0].message
    back, diags = read_state(path, NOW, P)
    assert diags == [] and back.history == (Sample(NOW, (("ml", "1g.10gb", 1, 1),)),)


@given(
    st.lists(
        st.tuples(st.text(min_size=1, max_size=90), st.sampled_from(["1g.10gb", "gpu", "foo", "3g.40gb+me"])),
        max_size=6,
    ),
    st.lists(st.text(min_size=1, max_size=260), max_size=4),
)
@settings(max_examples=60, deadline=None)
def test_whatever_the_state_holds_the_file_written_reads_back(
    keys: list[tuple[str, str]], nodes: list[str]
) -> None:
    import tempfile

    rows = tuple(sorted({(t, p, 1, 0) for t, p in keys}))
    state = State(history=(Sample(NOW, rows),), changes=tuple((n, NOW) for n in sorted(set(nodes))))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "observed-demand.yaml"
        try:
            write_state(path, state, NOW)
        except Exception as exc:  # only the documented refusal, never a crash
            assert type(exc).__name__ == "StateNotWritten"
            assert not path.exists()
            return
        _, diags = read_state(path, NOW, P)
        assert [d.code for d in diags if d.code == "MIGC420"] == []


def test_a_check_that_fails_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_text("old")

    def refuse(data: bytes) -> None:
        assert data == b"new"
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        write_file_atomic(path, b"new", refuse)
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["f"]


# --- a lost state is rebuilt from the cluster ---------------------------------------------------------


def node(name: str, **rollout: Any) -> ObservedNode:
    return ObservedNode(name, (), (), None, None, None, None, None, Rollout(**rollout))


def test_a_lost_state_is_rebuilt_from_the_controllers_annotations() -> None:
    obs = Observation(
        taken_at=NOW,
        source="t",
        nodes=(
            node("busy", phase="Draining", since=NOW, started=NOW - dt.timedelta(minutes=20)),
            node("done", phase="Idle", since=NOW - dt.timedelta(hours=2), previous_config="a"),
            node("old", phase="Idle", since=NOW - dt.timedelta(days=3), previous_config="a"),
            node("never", phase="Idle"),
            node("failed", phase="Failed", since=NOW - dt.timedelta(minutes=5), started=NOW),
            node("forged", phase="Idle", since=NOW + dt.timedelta(days=9), previous_config="a"),
        ),
    )
    rebuilt, diags = rebuild_from_cluster(State(notes=("lost",)), obs, NOW)
    assert dict(rebuilt.changes) == {
        "busy": NOW - dt.timedelta(minutes=20),
        "done": NOW - dt.timedelta(hours=2),
        "failed": NOW,
    }
    assert rebuilt.last_change == NOW and rebuilt.failures == 1
    assert [d.code for d in diags] == ["MIGC420"]
    # a state that was read is the record: the cluster is not consulted
    assert rebuild_from_cluster(State(), obs, NOW) == (State(), [])


def mid_rollout(items: list[Any]) -> list[Any]:
    node = {
        "kind": "Node",
        "metadata": {
            "name": "lab-dgx-a100-01",
            "labels": {"nvidia.com/mig.config": "x"},
            "annotations": {
                "migc.dev/phase": "Idle",
                "migc.dev/phase-since": "2026-12-01T06:05:00.000000Z",
                "migc.dev/previous-config": "old",
            },
        },
    }
    return [*items, node]


def test_deleting_the_state_does_not_make_recommend_forget_min_dwell(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = setup(tmp_path, compiled, urgent=True)  # past their max wait: proposed at once
    (base / "pol" / "observed-demand.yaml").unlink(missing_ok=True)
    assert run(base, "06:20", "--dry-run") == ExitCode.DRIFT  # nothing in the cluster says otherwise
    capsys.readouterr()
    # the controller finished a reconfiguration of the node at 06:05; the state file is gone
    assert run(base, "06:20", "--dry-run", "-o", "json", pods=mid_rollout) == ExitCode.OK
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert "MIGC420" in err and "rebuilt from the cluster" in err
    assert any(g["name"] == "minDwell" and not g["passed"] for g in doc["gates"])


# --- the pod that poisoned the state --------------------------------------------------------------


def test_an_unknown_mig_resource_never_reaches_the_state(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    foo = pod("foo", "course-nlp202", "nvidia.com/mig-foo")
    base = setup(tmp_path, compiled, urgent=False, extra=[foo])
    assert run(base, "06:00") == ExitCode.OK
    err = capsys.readouterr().err
    assert "MIGC402" in err and "'nvidia.com/mig-foo'" in err and "course-nlp202/foo" in err
    saved = (base / "pol" / "observed-demand.yaml").read_text()
    assert "foo" not in saved
    policy, diags = load_and_validate([str(base / "pol")])
    assert policy is not None, diags  # validate and compile still accept the directory
    assert run(base, "06:05") == ExitCode.OK
    assert "MIGC420" not in capsys.readouterr().err  # the next run reads it back


# --- concurrency and a kill between the two writes -------------------------------------------------


def test_a_second_run_waits_for_the_lock_then_gives_up_with_a_code(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = setup(tmp_path, compiled, urgent=True)
    state = base / "pol" / "observed-demand.yaml"
    monkeypatch.setattr("compiler.recommend.state.LOCK_WAIT_S", 0.3)
    monkeypatch.setattr(StateLock.__init__, "__defaults__", (0.3,))
    with StateLock(state):
        assert run(base, "06:20") == ExitCode.INVALID
    err = capsys.readouterr().err
    assert "MIGC447" in err and f"pid {os.getpid()}" in err
    assert not state.exists() and "replicas: 10" in (base / "pol" / "workloads.yaml").read_text()
    assert not (base / "pol" / ".observed-demand.yaml.migc-lock").exists()


def test_a_waiting_run_proceeds_when_the_first_finishes(tmp_path: Path) -> None:
    state = tmp_path / "observed-demand.yaml"
    order: list[str] = []

    def second() -> None:
        with StateLock(state, wait=10):
            order.append("second")

    with StateLock(state):
        t = threading.Thread(target=second)
        t.start()
        time.sleep(0.2)
        order.append("first")
    t.join(10)
    assert order == ["first", "second"]
    with pytest.raises(StateBusy), StateLock(state), StateLock(state, wait=0):
        pass


def test_a_run_killed_between_the_writes_leaves_the_change_recorded(
    tmp_path: Path, compiled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = setup(tmp_path, compiled, urgent=True)
    workloads = base / "pol" / "workloads.yaml"
    real = os.replace

    def killed(src: str, dst: Path) -> None:
        if Path(dst).name == "workloads.yaml":
            raise KeyboardInterrupt  # the process dies after the first rename
        real(src, dst)

    monkeypatch.setattr("compiler.fsio.os.replace", killed)
    assert run(base, "06:20") != ExitCode.DRIFT  # main() reports the interrupt
    # the state already holds the change; the Workloads are untouched; no temporary file is left
    saved = (base / "pol" / "observed-demand.yaml").read_text()
    assert "changes:" in saved and "lastChange" in saved
    assert "replicas: 10" in workloads.read_text()
    assert not list((base / "pol").glob("*.migc-tmp")) and not list((base / "pol").glob(".*.migc-tmp"))


def test_a_failed_check_writes_neither_file(
    tmp_path: Path, compiled: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from compiler.recommend import state as state_module

    base = setup(tmp_path, compiled, urgent=True)
    before = (base / "pol" / "workloads.yaml").read_text()
    real = state_module.dump_state
    calls = {"n": 0}

    def drifting(
        state: State, now: dt.datetime, name: str = "observed-demand", *, keep_seconds: float = 86_400
    ) -> str:
        calls["n"] += 1  # the second dump (of what was read back) differs: as a writer bug would
        return real(state, now, name, keep_seconds=keep_seconds) + ("# drift\n" if calls["n"] > 1 else "")

    monkeypatch.setattr(state_module, "dump_state", drifting)
    assert run(base, "06:20") == ExitCode.INVALID
    assert "MIGC446" in capsys.readouterr().err
    assert (base / "pol" / "workloads.yaml").read_text() == before
    assert not (base / "pol" / "observed-demand.yaml").exists()


# --- file modes -----------------------------------------------------------------------------------


def test_files_follow_the_umask_and_keep_a_users_mode(tmp_path: Path, compiled: Path) -> None:
    base = setup(tmp_path, compiled, urgent=True)
    workloads = base / "pol" / "workloads.yaml"
    os.chmod(workloads, 0o640)
    old = os.umask(0o022)
    try:
        assert run(base, "06:20") == ExitCode.DRIFT
    finally:
        os.umask(old)
    assert "replicas: 18" in workloads.read_text()
    assert stat.S_IMODE(workloads.stat().st_mode) == 0o640  # the user's mode, not 0600
    assert stat.S_IMODE((base / "pol" / "observed-demand.yaml").stat().st_mode) == 0o644


# --- the pull-request body ------------------------------------------------------------------------

MD_PAYLOADS = [
    "<img src=x onerror=alert(1)>",
    "[click](https://e.vil)",
    "@octocat",
    "a|b",
    "`code`",
    "\u202eevil",
    "https://e.vil/x",
    "www.e.vil",
    "<!-- hide",
    "**bold** _it_ ~~s~~",
    "line\nbreak",
]


@pytest.mark.parametrize("payload", MD_PAYLOADS)
def test_markdown_cells_carry_no_markup(payload: str) -> None:
    cell = markdown_cell(payload)
    for raw in ("|", "`", "[", "]", "\n", "\u202e", "**", "~~"):
        assert raw not in cell
    assert not re.search(r"<[A-Za-z/!?]", cell)
    assert "@octocat" not in cell and "https://" not in cell and "www.e" not in cell


@given(st.text(max_size=400))
@settings(max_examples=300, deadline=None)
def test_markdown_cell_is_bounded_and_inert(text: str) -> None:
    cell = markdown_cell(text)
    assert not set(cell) & set("|`[]\\*_~\n\r")
    assert not re.search(r"<[A-Za-z/!?]", cell)
    assert len(cell) <= 8 * 300 + 20


def test_the_body_is_bounded() -> None:
    body = "".join(f"| row {i} | x |\n" for i in range(20000))
    bounded = bound_markdown(body)
    assert len(bounded) <= GITHUB_BODY_LIMIT and "more line(s) left out" in bounded
    assert bound_markdown("short\n") == "short\n"


def test_recommend_markdown_escapes_pod_names_and_fits_a_pull_request(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evil = [
        pod(
            f"x-{i}-img-src-x-onerror",
            "course-nlp202",
            "nvidia.com/mig-1g.10gb",
            annotations={"migc.dev/max-wait-time": "1m"},
        )
        for i in range(3000)
    ]
    for p in evil[:3]:
        p["metadata"]["name"] = "<img src=x onerror=alert(1)>|@octocat[a](https://e.vil)\u202e"
        p["metadata"]["name"] += str(evil.index(p))
    base = setup(tmp_path, compiled, urgent=True, extra=evil)
    run(base, "06:20", "--dry-run", "-o", "markdown")
    out, err = capsys.readouterr()
    assert len(out) <= GITHUB_BODY_LIMIT
    for raw in ("<img", "@octocat", "](https", "\u202e"):
        assert raw not in out
    assert "\u202e" not in err and "\x1b" not in err  # stderr is for a terminal: no control characters
    assert "more" in out  # the list of pods past their max wait is summarized


MD_PAYLOAD = "<img src=x onerror=alert(1)>|@octocat [a](https://e.vil) `x` \u202e"


def md_poison(value: Any) -> Any:
    """``value`` with MD_PAYLOAD before every string it holds (the disruption model and state kept)."""
    from dataclasses import fields, is_dataclass, replace

    if isinstance(value, str):
        return MD_PAYLOAD + value
    if isinstance(value, tuple):
        return tuple(md_poison(v) for v in value)
    if is_dataclass(value) and not isinstance(value, type):
        keep = {"disruption", "state", "diagnostics", "now"}
        return replace(
            value, **{f.name: md_poison(getattr(value, f.name)) for f in fields(value) if f.name not in keep}
        )
    return value


def test_every_field_of_the_pr_body_is_escaped(
    tmp_path: Path, compiled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from compiler.recommend import report

    real = report.evidence_markdown
    seen: list[str] = []

    def poisoned(rec: Any) -> str:
        clean = real(rec)
        body = real(md_poison(rec))
        seen.extend([clean, body])
        return body

    monkeypatch.setattr(report, "evidence_markdown", poisoned)
    base = setup(tmp_path, compiled, urgent=True)
    assert run(base, "06:20", "--dry-run", "-o", "markdown") == ExitCode.DRIFT
    out = capsys.readouterr().out
    clean, body = seen
    assert out == body and body.count("&lt;img") >= 10  # the payload is there, many times, as text
    for raw in ("<img", "@octocat", "](https", "`x`", "\u202e", "|@"):
        assert raw not in body

    # no payload added a table cell: every table row has as many cells as in the clean body
    def cells(text: str) -> list[int]:
        return [line.count("|") for line in text.splitlines() if line.startswith("|")]

    assert cells(body) == cells(clean)
    # parsed as CommonMark with GFM tables: the same table cells, and not one link, image, code span,
    # emphasis or raw HTML more than the clean body has
    parser = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")

    def shape(text: str) -> tuple[int, dict[str, int]]:
        tokens = parser.parse(text)
        inline = [c.type for t in tokens if t.type == "inline" for c in t.children or []]
        blocks = [t.type for t in tokens]
        counted = ("link_open", "image", "code_inline", "html_inline", "em_open", "strong_open", "s_open")
        kinds = {k: inline.count(k) for k in counted} | {"html_block": blocks.count("html_block")}
        return blocks.count("td_open") + blocks.count("th_open"), kinds

    (cells_body, kinds_body), (cells_clean, kinds_clean) = shape(body), shape(clean)
    assert cells_body == cells_clean
    # (a poisoned gate name hides the verdict line, so the poisoned body may have less, never more)
    assert all(kinds_body[k] <= kinds_clean[k] for k in kinds_clean), (kinds_body, kinds_clean)
    assert kinds_clean["html_inline"] == kinds_clean["link_open"] == kinds_body["html_inline"] == 0


def test_demand_counts_and_failures_in_the_state_are_bounded() -> None:
    huge = "9" * 30
    good = dump_state(State(history=(Sample(NOW, (("ml", "1g.10gb", 1, 1), ("ml", "gpu", 2, 0))),)), NOW)
    text = good.replace("ml/gpu: [2, 0]", f"ml/gpu: [{huge}, 0]")
    assert huge in text
    state, diags = parse_state(with_spec(text, failures=int(huge)), "s.yaml", NOW, P)
    assert [d.code for d in diags] == ["MIGC445"] and "more than 1,000,000" in diags[0].message
    assert state.history == (Sample(NOW, (("ml", "1g.10gb", 1, 1),)),)
    assert state.failures == 1_000_000


def test_a_state_an_earlier_version_poisoned_keeps_everything_but_the_key() -> None:
    """The file the issue's run wrote: `students/foo` beside real history, changes and failures."""
    good = dump_state(
        State(
            history=(Sample(NOW, (("students", "1g.10gb", 2, 1),)),),
            changes=(("n1", NOW - dt.timedelta(minutes=16)),),
            last_change=NOW - dt.timedelta(minutes=16),
            failures=1,
            last_failure=NOW - dt.timedelta(hours=1),
        ),
        NOW,
    )
    poisoned = good.replace(
        "students/1g.10gb: [2, 1]", "students/1g.10gb: [2, 1]\n      students/foo: [0, 1]"
    )
    assert "students/foo" in poisoned
    state, diags = parse_state(poisoned, "s.yaml", NOW, P)
    assert [d.code for d in diags] == ["MIGC445"] and "students/foo" in diags[0].message
    assert state.changes == (("n1", NOW - dt.timedelta(minutes=16)),) and state.failures == 1
    assert state.history == (Sample(NOW, (("students", "1g.10gb", 2, 1),)),)


def test_markdown_entities_stay_whole() -> None:
    cell = markdown_cell("a|b `c` #1 @d [e]")
    assert "&#124;" in cell and "&#96;" in cell and "&#91;" in cell  # no zero-width space inside one
    assert re.fullmatch(r"[^&]*(&(#[0-9]+|lt);[^&]*)*", cell)  # every & starts a complete entity
