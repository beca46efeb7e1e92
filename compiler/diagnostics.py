"""The one diagnostic type every stage reports, and the registry of stable codes.

Codes live in ranges (documented in ``compiler/codes/*.yaml``, one file per range):

* ``MIGC0xx`` syntax and schema (load, JSON Schema)
* ``MIGC1xx`` semantics (cross-references, names, bounds)
* ``MIGC2xx`` solving (infeasible guarantees, unmet demand)
* ``MIGC3xx`` output (rendering, drift, quota feasibility)
* ``MIGC4xx`` observing a cluster (snapshots, live reads, Prometheus; ``migc status``)
* ``MIGC9xx`` internal and environment problems (discover, NVML)

Stages never print; they return diagnostics and the reporters in ``compiler.report`` present them.
Every command hands what its stages returned to one :class:`Collector`, which merges,
de-duplicates, sorts and applies ``--ignore`` once, before a reporter prints.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Protocol

import yaml


class Severity(enum.IntEnum):
    """Ordered so that ``max()`` over diagnostics gives the worst one."""

    NOTE = 0
    WARNING = 1
    ERROR = 2

    def __str__(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One finding about the user's input, located as precisely as we can.

    ``line`` and ``col`` are 1-based; 0 means "the whole file" (or no file at all when ``file`` is empty).
    ``path`` is a JSON path into the document (``$.spec.nodePools[0].gpuModel``) so tools that do not
    read YAML positions still know which node is meant.
    """

    file: str
    line: int
    col: int
    code: str
    severity: Severity = field(compare=False)
    message: str = field(compare=False)
    hint: str = field(default="", compare=False)
    path: str = field(default="", compare=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": str(self.severity),
            "file": self.file,
            "line": self.line,
            "col": self.col,
            "path": self.path,
            "message": self.message,
            "hint": self.hint,
        }


@dataclass(frozen=True)
class CodeInfo:
    code: str
    title: str
    severity: Severity
    explanation: str
    fix: str


class UnknownCodeError(KeyError):
    pass


# libyaml's safe loader when PyYAML was built with it (about 7x faster: `migc explain` reads every
# code at startup); the pure-Python one otherwise. Both build the same plain data.
_SAFE_LOADER: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class DiagnosticError(Exception):
    """Input a stage cannot go on with: ``diagnostic`` says which file, what and how to fix it.

    The one base of the errors a stage raises instead of returning diagnostics (the observed
    cluster, a refused read, discovery, a trace); a command catches it once and prints the
    diagnostic through a reporter, never a traceback.
    """

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


@functools.cache
def registry() -> Mapping[str, CodeInfo]:
    """All documented codes, read from the YAML files shipped in ``compiler/codes``."""
    entries: dict[str, CodeInfo] = {}
    for item in sorted(resources.files("compiler.codes").iterdir(), key=lambda p: p.name):
        if not item.name.endswith(".yaml"):
            continue
        raw = yaml.load(item.read_text(encoding="utf-8"), Loader=_SAFE_LOADER) or {}
        for code, body in raw.get("codes", {}).items():
            if code in entries:
                raise ValueError(f"diagnostic code {code} is documented twice (second time in {item.name})")
            entries[code] = CodeInfo(
                code=code,
                title=str(body["title"]),
                severity=Severity[str(body["severity"]).upper()],
                explanation=str(body["explanation"]).strip(),
                fix=str(body.get("fix", "")).strip(),
            )
    return entries


def lookup(code: str) -> CodeInfo:
    try:
        return registry()[code.upper()]
    except KeyError:
        raise UnknownCodeError(code) from None


def make(
    code: str,
    message: str,
    *,
    file: str = "",
    line: int = 0,
    col: int = 0,
    path: str = "",
    hint: str = "",
    severity: Severity | None = None,
) -> Diagnostic:
    """Build a diagnostic for a registered code; the severity defaults to the registry's.

    Unregistered codes are a programming error: every code a user can see must be explainable
    with ``migc explain``.
    """
    info = lookup(code)
    return Diagnostic(
        file=file,
        line=line,
        col=col,
        code=info.code,
        severity=info.severity if severity is None else severity,
        message=message,
        hint=hint or info.fix,
        path=path,
    )


class Located(Protocol):
    """Where a policy object came from (``compiler.model.Span`` has these)."""

    @property
    def file(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def col(self) -> int: ...
    @property
    def path(self) -> str: ...


def at(code: str, message: str, span: Located, severity: Severity | None = None) -> Diagnostic:
    """:func:`make` at a policy object's position (its file, line, column and field path)."""
    return make(
        code, message, file=span.file, line=span.line, col=span.col, path=span.path, severity=severity
    )


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.severity >= Severity.ERROR for d in diagnostics)


def sort_key(d: Diagnostic) -> tuple[str, int, int, str, str]:
    return (d.file, d.line, d.col, d.code, d.message)


def unique_sorted(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Sorted for reports (:func:`sort_key`; stable, so equal keys keep the order they came in),
    exact repeats dropped.

    Not ``set()``: Diagnostic equality compares only file, line, col and code, so two different
    messages at one spot (two missing fields of one mapping) would collapse into one. Call it
    through :meth:`Collector.finish`.
    """
    seen: set[tuple[str, int, int, str, str, str]] = set()
    out: list[Diagnostic] = []
    for d in sorted(diagnostics, key=sort_key):
        key = (d.file, d.line, d.col, d.code, d.message, d.path)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def ignorable(code: str) -> str | None:
    """None when ``code`` may be given to ``--ignore``; otherwise why not, in words for a usage error.

    Only warnings and notes can be ignored: an error means the input has no valid meaning (no
    Policy is built, nothing can be solved or rendered), so hiding one would only turn a clear
    "invalid, here is why" into an unexplained failure.
    """
    try:
        info = lookup(code)
    except UnknownCodeError:
        return f"{code} is not a migc diagnostic code (`migc explain` lists every code)"
    if info.severity >= Severity.ERROR:
        return f"{info.code} ({info.title}) is an error; only warnings and notes can be ignored"
    return None


def suppress(diagnostics: Iterable[Diagnostic], ignore: Iterable[str]) -> list[Diagnostic]:
    """``diagnostics`` without the warnings and notes whose code is in ``ignore``; errors always stay.

    :func:`ignorable` refuses an error code as a usage error; an error given here anyway stays.
    Call it through :meth:`Collector.finish`.
    """
    codes = {c.upper() for c in ignore}
    return [d for d in diagnostics if not (d.code in codes and d.severity < Severity.ERROR)]


class Collector:
    """The diagnostics of one run, from every stage, reported once.

    Stages (load, validation, reading what is deployed, the solve, the registered post-solve and
    render checks, a command's own reads) return plain lists; the command, or the pipeline for it,
    adds each to one collector with :meth:`add` / :meth:`extend`, asks :meth:`has_errors` to decide
    whether to go on, and calls :meth:`finish` once where it reports: that merges everything,
    drops exact repeats, sorts by file, line, column, code (and message) and leaves out the
    warnings and notes of the ``--ignore`` codes; errors always stay.

    The shape is cfn-lint's runner (aws-cloudformation/cfn-lint at 217397c8,
    ``src/cfnlint/runner/template/runner.py``): every rule's matches of one template are chained
    into one stream, ``_dedup`` (lines 22-36) drops repeats of the whole stream, the directives
    filter (``_check_metadata_directives``, lines 39-71) suppresses what the user asked to ignore
    except checks that are mandatory (here: errors), and ``runner/cli.py`` (line 159) sorts the
    matches once, just before the formatter prints them. Stages never sort or filter for a report.
    """

    __slots__ = ("_items",)

    def __init__(self, diagnostics: Iterable[Diagnostic] = ()) -> None:
        self._items: list[Diagnostic] = list(diagnostics)

    def add(self, diagnostic: Diagnostic) -> None:
        self._items.append(diagnostic)

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        self._items.extend(diagnostics)

    def has_errors(self) -> bool:
        """Whether anything collected so far is an error (``--ignore`` never hides one)."""
        return has_errors(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def collected(self) -> tuple[Diagnostic, ...]:
        """Everything added so far, in the order it was added (not yet de-duplicated or sorted)."""
        return tuple(self._items)

    def finish(self, ignore: Iterable[str] = ()) -> list[Diagnostic]:
        """The report: merged, exact repeats dropped, sorted, ``ignore``'s warnings and notes left out.

        Suppressing before de-duplicating or after gives the same list (both only drop items);
        the collector keeps what it holds, so a later stage may still add to it.
        """
        return unique_sorted(suppress(self._items, ignore))
