"""The recommender's memory between runs: an ``ObservedDemand`` document kept beside the policy files.

A CronJob runs ``migc recommend`` stateless; what it must remember (the demand history over the
stabilization window, :mod:`compiler.recommend.history`; which nodes changed in the last day;
consecutive failures) lives in Git in this machine-owned file. Every way the file can be wrong
degrades to "no change proposed yet":

* **lost** (no file): an empty state; the history starts now, so the stabilization window starts over.
* **corrupt** (not YAML, or not the ObservedDemand schema): MIGC420 warning, then as lost.
* **stale** (the newest sample, or ``updated`` when there is none, older than :func:`stale_after`):
  MIGC421 warning; the history is dropped (the window starts over) while ``changes`` and ``failures``
  are kept — they only ever make the recommender more careful.
* **entries it cannot trust** (a timestamp that is no date, before 1970 or after 2999, or later
  than now plus :data:`CLOCK_SKEW_S`; a demand count over :data:`MAX_COUNT`): MIGC445 warning;
  those entries are dropped and the rest kept (a ``changes`` entry dated in the future would
  otherwise hold minDwell for good; a count of 10^30 would size a Workload for it).

A lost or corrupt state is rebuilt from what the cluster shows (:func:`rebuild_from_cluster`): the
controller's ``migc.dev/*`` annotations date every node change of the last day, so minDwell, the
daily budget and backoff hold across a deleted file; only the demand history starts over.

Writing (:func:`write_state`): only a document its own reader accepts is written — the text is
written to a temporary file, read back, decoded and dumped again, and renamed over the state
only when that gives the same text; ``tenant/profile`` keys the schema does not admit are refused
(MIGC445). :class:`StateLock` serializes recommend runs on one state file.
"""

from __future__ import annotations

import datetime as dt
import io
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from compiler.diagnostics import Diagnostic, has_errors, make
from compiler.fsio import FileLock, ReadRefused, read_bounded, write_file_atomic
from compiler.load import load_text
from compiler.model import PartitionPolicy
from compiler.observe import Observation
from compiler.recommend.history import Sample, stale_after
from compiler.schemas import API_VERSION
from compiler.validate.schema_errors import schema_diagnostics

STATE_FILE = "observed-demand.yaml"
STATE_LIMIT = 4 * 1024 * 1024
KIND = "ObservedDemand"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
MIN_YEAR, MAX_YEAR = 1970, 2999
CLOCK_SKEW_S = 300  # an entry up to five minutes ahead of now is another machine's clock, not the future
DAY_S = 86400
MAX_COUNT = 1_000_000  # instances of one demand key, and failures (observe's bound on all pods together)
# The schema's ``tenant/profile`` key (schema/observeddemand.schema.json, history[].demand)
KEY = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?/([1-8]g\.[0-9]+gb(\+me)?|gpu)$")
LOCK_WAIT_S = 120.0  # a second recommend run waits this long for the first, then MIGC447


@dataclass(frozen=True)
class State:
    updated: dt.datetime | None = None
    history: tuple[Sample, ...] = ()  # demand samples, oldest first (compiler.recommend.history)
    last_change: dt.datetime | None = None
    changes: tuple[tuple[str, dt.datetime], ...] = ()  # (node, when): a day, or minDwell if longer
    failures: int = 0
    last_failure: dt.datetime | None = None
    notes: tuple[str, ...] = field(default=(), compare=False)  # lost / corrupt / stale, for the evidence

    def node_last_change(self) -> dict[str, dt.datetime]:
        out: dict[str, dt.datetime] = {}
        for node, at in self.changes:
            if node not in out or at > out[node]:
                out[node] = at
        return out


def fmt_time(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime(TIME_FORMAT)


def _time(value: Any) -> dt.datetime | None:
    """A ``TIME_FORMAT`` timestamp with a year MIN_YEAR–MAX_YEAR; ``None`` for anything else."""
    if not isinstance(value, str) or len(value) != 20:
        return None
    try:
        t = dt.datetime.strptime(value, TIME_FORMAT).replace(tzinfo=dt.UTC)
    except ValueError:  # 2026-13-45T25:61:61Z matches the schema's pattern but is no time
        return None
    return t if MIN_YEAR <= t.year <= MAX_YEAR else None


class _Dropped:
    """Entries of a state file that cannot be trusted, for one MIGC445 warning."""

    def __init__(self, now: dt.datetime | None) -> None:
        self.latest = None if now is None else now + dt.timedelta(seconds=CLOCK_SKEW_S)
        self.what: list[str] = []

    def time(self, value: Any, where: str) -> dt.datetime | None:
        t = _time(value)
        if t is None and value is not None:
            self.what.append(f"{where} {str(value)[:40]!r} is not a time between {MIN_YEAR} and {MAX_YEAR}")
        elif t is not None and self.latest is not None and t > self.latest:
            self.what.append(f"{where} {fmt_time(t)} is in the future")
            return None
        return t

    def diagnostics(self, file: str) -> list[Diagnostic]:
        if not self.what:
            return []
        shown = "; ".join(self.what[:3]) + (f"; and {len(self.what) - 3} more" if len(self.what) > 3 else "")
        return [
            make(
                "MIGC445",
                f"recommender state {file}: dropped {len(self.what)} entr"
                f"{'y' if len(self.what) == 1 else 'ies'}: {shown}",
                file=file,
            )
        ]


def parse_state(
    text: str, file: str, now: dt.datetime | None, policy: PartitionPolicy | None
) -> tuple[State, list[Diagnostic]]:
    """The state in ``text`` (one ObservedDemand document); a broken one is an empty state plus MIGC420.

    ``now`` ``None``: decode only (no entry is in the future, nothing is stale), as the writer's check.
    """
    docs, diags = load_text(text, file)
    if has_errors(diags) or len(docs) != 1 or not isinstance(docs[0].data, dict):
        why = diags[0].message if diags else "expected exactly one ObservedDemand document"
        return _lost("corrupt"), [make("MIGC420", f"recommender state {file}: {why}", file=file)]
    doc = docs[0]
    data = doc.data
    if data.get("kind") != KIND or data.get("apiVersion") != API_VERSION:
        return _lost("corrupt"), [
            make("MIGC420", f"recommender state {file}: not an {API_VERSION} {KIND} document", file=file)
        ]
    dropped = _Dropped(now)
    _drop_bad_keys(data, dropped)  # what an earlier migc wrote (mig-foo) costs that key, not the state
    errors = [d for d in schema_diagnostics(doc, KIND, ()) if d.severity.name == "ERROR"]
    if errors:
        e = errors[0]
        return _lost("corrupt"), [
            make("MIGC420", f"recommender state {file}: {e.message}", file=e.file, line=e.line, col=e.col)
        ]
    spec = data["spec"]
    state = State(
        updated=dropped.time(spec.get("updated"), "updated"),
        history=_history(spec.get("history") or [], dropped),
        last_change=dropped.time(spec.get("lastChange"), "lastChange"),
        changes=tuple(
            sorted(
                (str(c["node"]), t)
                for c in spec.get("changes") or []
                if (t := dropped.time(c["at"], f"changes[{c['node']!r}]")) is not None
            )
        ),
        failures=min(int(spec.get("failures", 0)), MAX_COUNT),
        last_failure=dropped.time(spec.get("lastFailure"), "lastFailure"),
    )
    warned = dropped.diagnostics(file)
    if now is None:
        return state, warned
    last = state.history[-1].at if state.history else state.updated
    if last is not None and policy is not None and (now - last).total_seconds() > stale_after(policy):
        age = int((now - last).total_seconds())
        return replace(state, history=(), notes=("stale",)), [
            *warned,
            make(
                "MIGC421",
                f"recommender state {file}: the last demand sample is {age}s old "
                f"(more than {int(stale_after(policy))}s); "
                "the stabilization window starts over",
                file=file,
            ),
        ]
    return state, warned


def _drop_bad_keys(data: dict[str, Any], dropped: _Dropped) -> None:
    """Remove the ``history[].demand`` keys the schema refuses (in place), noting each in ``dropped``."""
    spec = data.get("spec")
    history = spec.get("history") if isinstance(spec, dict) else None
    if not isinstance(history, list):
        return
    for i, item in enumerate(history):
        demand = item.get("demand") if isinstance(item, dict) else None
        if not isinstance(demand, dict):
            continue
        for key in [k for k in demand if not (isinstance(k, str) and KEY.match(k))]:
            dropped.what.append(f"history[{i}] key {str(key)[:80]!r} is no tenant/profile")
            del demand[key]


def _history(items: list[Any], dropped: _Dropped) -> tuple[Sample, ...]:
    """Samples of the schema-valid ``history`` list (``tenant/profile: [running, pending]``), oldest first."""
    out: list[Sample] = []
    for i, item in enumerate(items):
        at = dropped.time(item["at"], f"history[{i}]")
        if at is None:
            continue
        rows = []
        for key, (running, pending) in (item.get("demand") or {}).items():
            tenant, profile = str(key).split("/", 1)
            if int(running) > MAX_COUNT or int(pending) > MAX_COUNT:
                dropped.what.append(f"history[{i}] {key} counts more than {MAX_COUNT:,} instances")
                continue
            rows.append((tenant, profile, int(running), int(pending)))
        out.append(Sample(at, tuple(sorted(rows))))
    return tuple(sorted(out, key=lambda s: s.at))


def _lost(why: str) -> State:
    return State(notes=(why,))


def read_state(path: Path, now: dt.datetime, policy: PartitionPolicy) -> tuple[State, list[Diagnostic]]:
    """The state at ``path``; a missing file is a lost state (no diagnostic), an unreadable one MIGC420."""
    if not path.exists() and not path.is_symlink():
        return _lost("lost"), []
    try:
        raw = read_bounded(path, STATE_LIMIT, what="the recommender state")
    except ReadRefused as exc:
        return _lost("corrupt"), [
            make("MIGC420", f"recommender state {path}: {exc.diagnostic.message}", file=str(path))
        ]
    except OSError as exc:
        return _lost("corrupt"), [
            make("MIGC420", f"recommender state {path}: {exc.strerror or exc}", file=str(path))
        ]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return _lost("corrupt"), [make("MIGC420", f"recommender state {path}: not UTF-8", file=str(path))]
    return parse_state(text, str(path), now, policy)


def refused_keys(state: State) -> list[str]:
    """The ``tenant/profile`` keys of ``state``'s history that the schema does not admit (never written)."""
    return sorted({f"{t}/{p}" for s in state.history for t, p, _, _ in s.counts if not KEY.match(f"{t}/{p}")})


def change_horizon(policy: PartitionPolicy | None) -> float:
    """How long a node change is kept (in memory and in the file): a day (the dailyChangeBudget's
    window), or the policy's minDwell when that is longer — minDwell is measured from the node's
    last recorded change, so a change dropped earlier would let the node change again too soon."""
    return float(DAY_S) if policy is None else float(max(DAY_S, policy.min_dwell_seconds))


def dump_state(
    state: State, now: dt.datetime, name: str = "observed-demand", *, keep_seconds: float = DAY_S
) -> str:
    """The YAML of ``state`` (deterministic; changes older than ``keep_seconds`` (a day; see
    :func:`change_horizon`) or after ``now`` are dropped, and so are keys the schema does not admit:
    :func:`refused_keys`)."""
    spec: dict[str, Any] = {"updated": fmt_time(now)}
    if state.history:
        spec["history"] = [
            {
                "at": fmt_time(s.at),
                "demand": {f"{t}/{p}": [r, q] for t, p, r, q in s.counts if KEY.match(f"{t}/{p}")},
            }
            for s in state.history
        ]
    if state.last_change is not None:
        spec["lastChange"] = fmt_time(state.last_change)
    recent = [(n, t) for n, t in state.changes if 0 <= (now - t).total_seconds() < keep_seconds]
    if recent:
        spec["changes"] = [{"node": n, "at": fmt_time(t)} for n, t in sorted(recent)]
    if state.failures:
        spec["failures"] = state.failures
    if state.last_failure is not None:
        spec["lastFailure"] = fmt_time(state.last_failure)
    doc = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name},
        "spec": spec,
    }
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = None  # collections of scalars in flow style: one line per sample row
    yaml.width = 1 << 16  # never fold a long scalar (a node name is at most 253 characters)
    buf = io.StringIO()
    buf.write("# Machine-owned: written by `migc recommend`; do not edit. Deleting it is safe.\n")
    yaml.dump(doc, buf)
    return buf.getvalue()


def edit_replicas(text: str, changes: Mapping[tuple[str, str], int]) -> str:
    """``text`` (a multi-document policy file) with ``spec.replicas`` of each ``(kind, name)`` set.

    ruamel's round-trip parser locates each ``replicas`` value (line and column); only that token is
    replaced, so every comment, blank line, key order, quote and flow style stays byte for byte
    (re-dumping would drop a comment above an explicit ``---``).
    """
    yaml = YAML(typ="rt")
    lines = text.splitlines(keepends=True)
    for doc in yaml.load_all(text):
        if not isinstance(doc, Mapping):
            continue
        meta = doc.get("metadata")
        key = (str(doc.get("kind")), str(meta.get("name") if isinstance(meta, Mapping) else None))
        spec = doc.get("spec")
        if key not in changes or not isinstance(spec, Mapping) or "replicas" not in spec:
            continue
        line, col = spec.lc.value("replicas")  # type: ignore[attr-defined]  # ruamel CommentedMap position
        old = str(spec["replicas"])
        row = lines[line]
        if row[col : col + len(old)] != old:  # a form this editor does not handle (anchor, tag, quotes)
            raise ValueError(f"cannot edit replicas of {key[0]} {key[1]} at line {line + 1}")
        lines[line] = row[:col] + str(int(changes[key])) + row[col + len(old) :]
    return "".join(lines)


class StateNotWritten(Exception):
    """The state could not be written in a form its reader accepts; carries MIGC446."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def prepare_state(
    path: Path, state: State, now: dt.datetime, *, keep_seconds: float = DAY_S
) -> tuple[bytes, Callable[[bytes], None], list[Diagnostic]]:
    """What :func:`write_state` writes: the bytes, the read-back check for the temporary file (raises
    :class:`StateNotWritten`, MIGC446) and the warnings (MIGC445 for refused keys); ``keep_seconds``:
    :func:`dump_state`'s (:func:`change_horizon` of the policy)."""
    text = dump_state(state, now, keep_seconds=keep_seconds)
    warned = []
    refused = refused_keys(state)
    if refused:
        shown = ", ".join(repr(k[:80]) for k in refused[:5]) + (" …" if len(refused) > 5 else "")
        warned.append(
            make(
                "MIGC445",
                f"recommender state {path}: {len(refused)} demand key(s) are no tenant/profile the "
                f"schema admits and were not written: {shown}",
                file=str(path),
            )
        )

    def check(raw: bytes) -> None:
        try:
            decoded = raw.decode("utf-8")
        except UnicodeDecodeError:
            decoded = ""
        back, diags = parse_state(decoded, str(path), None, None)
        if diags or dump_state(back, now, keep_seconds=keep_seconds) != text:
            why = diags[0].message if diags else "the text read back decodes to another state"
            raise StateNotWritten(
                make("MIGC446", f"recommender state {path} not written: {why}", file=str(path))
            )

    return text.encode("utf-8"), check, warned


def write_state(path: Path, state: State, now: dt.datetime) -> list[Diagnostic]:
    """Write ``state`` to ``path`` atomically, only in a form :func:`parse_state` reads back unchanged.

    Returns the warnings (MIGC445 for refused keys); raises :class:`StateNotWritten` (MIGC446) when
    the text read back from the temporary file differs from what was meant (nothing is renamed).
    """
    data, check, warned = prepare_state(path, state, now)
    write_file_atomic(path, data, check)
    return warned


def rebuild_from_cluster(state: State, obs: Observation, now: dt.datetime) -> tuple[State, list[Diagnostic]]:
    """A lost or corrupt ``state`` with the node changes the cluster still shows (the rest unchanged).

    The migc controller (controller/state.py, reconciler/admission.py ``start_record``,
    reconciler/apply.py ``done``) keeps ``migc.dev/started-at`` on a node while it reconfigures it
    and, afterwards, ``migc.dev/previous-config`` with ``migc.dev/phase-since`` the moment it went
    back to Idle; a node in ``Failed`` counts as a failure. Every such time of the last day (and
    not after now) is a change, so minDwell, dailyChangeBudget and backoff hold across a lost
    file. Annotations anyone can forge only make the recommender more careful, never bolder.
    """
    if not ({"lost", "corrupt"} & set(state.notes)):
        return state, []
    changes = dict(state.changes)
    failures, last_failure = state.failures, state.last_failure
    for node in obs.nodes:
        r = node.rollout
        at = r.started if r.in_progress else (r.since if r.previous_config else None)
        if at is not None and 0 <= (now - at).total_seconds() < DAY_S:
            changes[node.name] = max(at, changes.get(node.name, at))
        if r.phase == "Failed" and r.since is not None and r.since <= now:
            failures += 1
            last_failure = r.since if last_failure is None else max(last_failure, r.since)
    if len(changes) == len(state.changes) and failures == state.failures:
        return state, []
    added = len(changes) - len(state.changes)
    rebuilt = replace(
        state,
        changes=tuple(sorted(changes.items())),
        last_change=max(changes.values(), default=state.last_change),
        failures=failures,
        last_failure=last_failure,
    )
    return rebuilt, [
        make(
            "MIGC420",
            f"recommender state rebuilt from the cluster: {added} node change(s) of the last day and "
            f"{failures - state.failures} failed node(s) from the controller's migc.dev annotations",
        )
    ]


class StateBusy(Exception):
    """Another recommend run held the state's lock for longer than the wait; carries MIGC447."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


class StateLock(FileLock):
    """``with StateLock(state_file):`` holds an exclusive ``flock`` on ``.<state>.migc-lock`` beside it.

    Held from before the policy files are read until both the policy edit and the state are written,
    so two runs never interleave their read and write. A second run waits up to ``wait`` seconds,
    then raises :class:`StateBusy` (compiler.fsio.FileLock, as the output lock).
    """

    def __init__(self, state_file: Path, wait: float = LOCK_WAIT_S) -> None:
        self.state_file = state_file
        super().__init__(state_file.parent / f".{state_file.name}.migc-lock", wait, self._busy)

    def _busy(self, holder: str) -> Exception:
        return StateBusy(
            make(
                "MIGC447",
                f"another migc recommend (pid {holder or 'unknown'}) has held "
                f"{self.state_file} for more than {self.wait:g}s; nothing was written",
                file=str(self.state_file),
            )
        )
