"""Small helpers every part of validation shares: paths, durations, wording of suggestions."""

from __future__ import annotations

import difflib
import functools
import math
import re
import zoneinfo
from collections.abc import Iterable, Sequence
from typing import Any

# unique_sorted moved to compiler.diagnostics (the Collector calls it); kept importable from here
from compiler.diagnostics import unique_sorted as unique_sorted

PathT = tuple[str | int, ...]

_DURATION_RE = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


def ecma_anchors(pattern: str) -> str:
    """A JSON-Schema (ECMA-262) ``pattern`` rewritten so Python's ``re`` reads its anchors the same way.

    In ECMA-262 (and RE2) ``$`` is the end of the string. In Python it also matches just before a
    final newline, so ``re.search("^[a-z]+$", "c1\\n")`` accepts a name with a trailing newline
    (what a YAML block scalar ``name: |`` produces). Every ``$`` outside a character class becomes
    ``\\Z``; the published schemas keep ``$``, which is right for every ECMA-262 validator.
    """
    out: list[str] = []
    in_class = False
    escaped = False
    for ch in pattern:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "$":
            out.append("\\Z")
            continue
        out.append(ch)
    return "".join(out)


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(ecma_anchors(pattern))


def pattern_matches(pattern: str, text: str) -> bool:
    """JSON-Schema ``pattern`` semantics (an unanchored search, ``$`` the true end of ``text``)."""
    return _compiled(pattern).search(text) is not None


def parse_duration(text: str) -> int | None:
    """``1h30m`` → 5400 seconds; None when malformed."""
    m = _DURATION_RE.fullmatch(text)
    if not m or not text:
        return None
    d, h, mi, s = (int(g) if g else 0 for g in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + s


def suggest(value: str, candidates: Iterable[str]) -> str:
    """``; did you mean 'x'?`` for the closest candidate, or nothing."""
    pool = sorted(set(candidates))
    lowered = {c.lower(): c for c in pool}
    hits = difflib.get_close_matches(value.lower(), list(lowered), n=1, cutoff=0.6)
    return f"; did you mean '{lowered[hits[0]]}'?" if hits else ""


def listing(items: Iterable[str]) -> str:
    values = sorted(set(items))
    return ", ".join(values) if values else "(none)"


def value_at(data: Any, path: Sequence[str | int]) -> Any:
    """The value at ``path`` inside ``data``, or None where the path does not lead anywhere."""
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def type_name(value: Any) -> str:
    """The policy language's word for a YAML value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


def article(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@functools.cache
def time_zones() -> frozenset[str]:
    """IANA zone names known here; empty when the machine has no time-zone database (then not checked)."""
    try:
        return frozenset(zoneinfo.available_timezones())
    except Exception:  # a broken or missing tzdata must not turn into a policy error
        return frozenset()


def resolve_max_unavailable(raw: Any, nodes: int) -> int:
    """``maxUnavailable`` (absent, a count or a percentage) → a node count for a pool of ``nodes``."""
    if raw is None:
        return 1
    if isinstance(raw, str):
        return max(1, math.floor(int(raw.rstrip("%")) * nodes / 100))
    return int(raw)
