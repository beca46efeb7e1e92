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
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from compiler.diagnostics import Diagnostic, has_errors, make
from compiler.fsio import ReadRefused, read_bounded
from compiler.load import load_text
from compiler.model import PartitionPolicy
from compiler.recommend.history import Sample, stale_after
from compiler.schemas import API_VERSION
from compiler.validate.schema_errors import schema_diagnostics

STATE_FILE = "observed-demand.yaml"
STATE_LIMIT = 4 * 1024 * 1024
KIND = "ObservedDemand"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


@dataclass(frozen=True)
class State:
    updated: dt.datetime | None = None
    history: tuple[Sample, ...] = ()  # demand samples, oldest first (compiler.recommend.history)
    last_change: dt.datetime | None = None
    changes: tuple[tuple[str, dt.datetime], ...] = ()  # (node, when), last 24 h
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
    if not isinstance(value, str):
        return None
    return dt.datetime.strptime(value, TIME_FORMAT).replace(tzinfo=dt.UTC)


def parse_state(
    text: str, file: str, now: dt.datetime, policy: PartitionPolicy
) -> tuple[State, list[Diagnostic]]:
    """The state in ``text`` (one ObservedDemand document); a broken one is an empty state plus MIGC420."""
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
    errors = [d for d in schema_diagnostics(doc, KIND, ()) if d.severity.name == "ERROR"]
    if errors:
        e = errors[0]
        return _lost("corrupt"), [
            make("MIGC420", f"recommender state {file}: {e.message}", file=e.file, line=e.line, col=e.col)
        ]
    spec = data["spec"]
    state = State(
        updated=_time(spec.get("updated")),
        history=_history(spec.get("history") or []),
        last_change=_time(spec.get("lastChange")),
        changes=tuple(
            sorted(
                (str(c["node"]), t) for c in spec.get("changes") or [] if (t := _time(c["at"])) is not None
            )
        ),
        failures=int(spec.get("failures", 0)),
        last_failure=_time(spec.get("lastFailure")),
    )
    last = state.history[-1].at if state.history else state.updated
    if last is not None and (now - last).total_seconds() > stale_after(policy):
        age = int((now - last).total_seconds())
        return replace(state, history=(), notes=("stale",)), [
            make(
                "MIGC421",
                f"recommender state {file}: the last demand sample is {age}s old "
                f"(more than {int(stale_after(policy))}s); "
                "the stabilization window starts over",
                file=file,
            )
        ]
    return state, []


def _history(items: list[Any]) -> tuple[Sample, ...]:
    """Samples of the schema-valid ``history`` list (``tenant/profile: [running, pending]``), oldest first."""
    out: list[Sample] = []
    for item in items:
        at = _time(item["at"])
        if at is None:
            continue
        rows = []
        for key, (running, pending) in (item.get("demand") or {}).items():
            tenant, profile = str(key).split("/", 1)
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


def dump_state(state: State, now: dt.datetime, name: str = "observed-demand") -> str:
    """The YAML of ``state`` (deterministic; changes older than a day are dropped)."""
    spec: dict[str, Any] = {"updated": fmt_time(now)}
    if state.history:
        spec["history"] = [
            {"at": fmt_time(s.at), "demand": {f"{t}/{p}": [r, q] for t, p, r, q in s.counts}}
            for s in state.history
        ]
    if state.last_change is not None:
        spec["lastChange"] = fmt_time(state.last_change)
    recent = [(n, t) for n, t in state.changes if (now - t).total_seconds() < 86400]
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
