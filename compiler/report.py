"""Reporters: the only code that prints diagnostics (text, json, github, sarif).

Diagnostics go to stdout in the chosen format (they are the command's data); the one-line summary
goes to stderr so ``migc validate -o json > out.json`` stays machine-readable. Output is sorted by
file, line, column and code, and contains no timestamps, so it is stable across runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Literal, TextIO

from compiler import __version__
from compiler.diagnostics import Diagnostic, Severity, registry, sort_key
from compiler.escape import terminal

OutputFormat = Literal["text", "json", "github", "sarif"]
FORMATS: tuple[OutputFormat, ...] = ("text", "json", "github", "sarif")

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _sorted(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    return sorted(diagnostics, key=sort_key)


def _location(d: Diagnostic) -> str:
    if not d.file:
        return "migc"
    if d.line <= 0:
        return d.file
    return f"{d.file}:{d.line}:{d.col}" if d.col > 0 else f"{d.file}:{d.line}"


def format_text(diagnostics: Sequence[Diagnostic]) -> str:
    """``path:line:col: CODE severity: message`` then ``  hint: ...`` (gcc style: clickable in editors)."""
    lines: list[str] = []
    for d in _sorted(diagnostics):  # messages quote cluster data: no control sequence reaches a terminal
        lines.append(terminal(f"{_location(d)}: {d.code} {d.severity}: {d.message}", keep_newlines=False))
        if d.hint:
            lines.append(terminal(f"  hint: {d.hint}", keep_newlines=False))
    return "\n".join(lines) + ("\n" if lines else "")


def format_json(diagnostics: Sequence[Diagnostic]) -> str:
    counts = _counts(diagnostics)
    payload = {
        "diagnostics": [d.as_dict() for d in _sorted(diagnostics)],
        "summary": {"errors": counts[Severity.ERROR], "warnings": counts[Severity.WARNING],
                    "notes": counts[Severity.NOTE]},
    }
    return json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def _gh_escape(value: str, *, prop: bool = False) -> str:
    # GitHub workflow commands: %, CR and LF always; ':' and ',' inside properties too.
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def format_github(diagnostics: Sequence[Diagnostic]) -> str:
    """GitHub Actions workflow commands: annotations on the pull request's changed lines."""
    out: list[str] = []
    level = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}
    for d in _sorted(diagnostics):
        props: list[str] = []
        if d.file:
            props.append(f"file={_gh_escape(d.file, prop=True)}")
        if d.line > 0:
            props.append(f"line={d.line}")
        if d.col > 0:
            props.append(f"col={d.col}")
        props.append(f"title={_gh_escape(d.code, prop=True)}")
        message = d.message + (f"\n{d.hint}" if d.hint else "")
        out.append(f"::{level[d.severity]} {','.join(props)}::{_gh_escape(message)}")
    return "\n".join(out) + ("\n" if out else "")


def _rule_name(title: str) -> str:
    """SARIF rule names are identifiers: ``Duplicate key`` → ``DuplicateKey``."""
    words = "".join(c if c.isalnum() else " " for c in title).split()
    return "".join(w[:1].upper() + w[1:] for w in words)


def sarif_log(diagnostics: Sequence[Diagnostic]) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run; rules are every registered code, results reference them by index."""
    codes = sorted(registry())
    index = {code: i for i, code in enumerate(codes)}
    level = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}
    rules = []
    for code in codes:
        info = registry()[code]
        rule: dict[str, Any] = {
            "id": code,
            "name": _rule_name(info.title) or code,
            "shortDescription": {"text": info.title},
            "fullDescription": {"text": info.explanation},
            "defaultConfiguration": {"level": level[info.severity]},
            # no helpUri: `migc explain CODE` is the documentation, and it ships with the tool
        }
        if info.fix:
            rule["help"] = {"text": info.fix}
        rules.append(rule)
    results = []
    for d in _sorted(diagnostics):
        result: dict[str, Any] = {
            "ruleId": d.code,
            "ruleIndex": index.get(d.code, -1),
            "level": level[d.severity],
            "message": {"text": d.message + (f" Hint: {d.hint}" if d.hint else "")},
        }
        if result["ruleIndex"] < 0:
            del result["ruleIndex"]
        if d.file:
            physical: dict[str, Any] = {"artifactLocation": {"uri": d.file, "uriBaseId": "%SRCROOT%"}}
            if d.line > 0:
                region: dict[str, Any] = {"startLine": d.line}
                if d.col > 0:
                    region["startColumn"] = d.col
                physical["region"] = region
            location: dict[str, Any] = {"physicalLocation": physical}
            if d.path:
                location["logicalLocations"] = [{"fullyQualifiedName": d.path, "kind": "object"}]
            result["locations"] = [location]
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "migc",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {
                    "%SRCROOT%": {"description": {"text": "The working directory migc ran in."}}
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def format_sarif(diagnostics: Sequence[Diagnostic]) -> str:
    text = json.dumps(sarif_log(diagnostics), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    return text + "\n"


_FORMATTERS = {"text": format_text, "json": format_json, "github": format_github, "sarif": format_sarif}


def render(diagnostics: Sequence[Diagnostic], fmt: str) -> str:
    """The diagnostics in ``fmt``; text with no diagnostics is the empty string."""
    return _FORMATTERS[fmt](diagnostics)


def _counts(diagnostics: Iterable[Diagnostic]) -> dict[Severity, int]:
    counts = {s: 0 for s in Severity}
    for d in diagnostics:
        counts[d.severity] += 1
    return counts


def summary(diagnostics: Sequence[Diagnostic], *, files: int | None = None, what: str = "policy") -> str:
    """One line: ``migc: 2 errors, 1 warning in 4 files`` or ``migc: policy OK (4 files)``."""
    counts = _counts(diagnostics)
    parts = []
    for sev, word in ((Severity.ERROR, "error"), (Severity.WARNING, "warning"), (Severity.NOTE, "note")):
        n = counts[sev]
        if n:
            parts.append(f"{n} {word}{'' if n == 1 else 's'}")
    where = "" if files is None else f" in {files} file{'' if files == 1 else 's'}"
    if not parts:
        return f"migc: {what} OK{where}"
    return f"migc: {', '.join(parts)}{where}"


def emit(
    diagnostics: Sequence[Diagnostic],
    fmt: str,
    *,
    out: TextIO,
    err: TextIO,
    files: int | None = None,
    what: str = "policy",
    always: bool = False,
) -> None:
    """Print the diagnostics (stdout) and the summary line (stderr).

    Text output with no diagnostics prints nothing to stdout; machine formats always print a
    document (an empty list / an empty SARIF run) so consumers never parse an empty file.
    """
    body = render(diagnostics, fmt)
    if body and (diagnostics or fmt != "text" or always):
        out.write(body)
    err.write(summary(diagnostics, files=files, what=what) + "\n")
