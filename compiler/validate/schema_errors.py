"""JSON-Schema errors → diagnostics at the line/col of the offending node, each with a specific code.

Unknown field → MIGC031 with a did-you-mean, bad name → MIGC109, wrong type → MIGC032, and so on;
unions (``need``, ``nodes``, ``maxUnavailable``) are answered from the branch the value meant.

Speed: most documents are valid, and finding that out is all a valid document needs. Where the
``jsonschema-rs`` wheel is installed (a dependency; Rust, draft 2020-12) it answers "valid?" first,
about 100x faster than walking the errors (0.56 s -> 0.005 s of CPU for the 2,001 documents of an
80,000-GPU policy); only a document it rejects, or cannot take, goes through ``jsonschema``'s
``iter_errors`` for the diagnostics. So every diagnostic still comes from ``jsonschema``, and the fast
path can only skip work on a document ``jsonschema`` accepts too: the two agree on every schema
keyword migc uses, and a differential property test
(tests/unit/compiler/validate/test_schema_errors.py) holds it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from compiler.diagnostics import Diagnostic
from compiler.load import LoadedDocument, json_path
from compiler.schemas import (
    DNS_LABEL_PATTERN,
    DURATION_PATTERN,
    LABEL_KEY_PATTERN,
    LABEL_VALUE_PATTERN,
    NODE_NAME_PATTERN,
    PERCENT_PATTERN,
    PROFILE_PATTERN,
    TIME_OF_DAY_PATTERN,
    kind_schemas,
)
from compiler.validate.common import (
    PathT,
    article,
    listing,
    pattern_matches,
    short,
    suggest,
    type_name,
    value_at,
)

if TYPE_CHECKING:  # jsonschema itself is imported only when a document needs its error walk
    import jsonschema
    from jsonschema.exceptions import ValidationError

_PATTERN_WORDS = {
    PERCENT_PATTERN: 'a percentage such as "25%"',
    TIME_OF_DAY_PATTERN: 'a time of day "HH:MM" (24 h)',
    PROFILE_PATTERN: "a MIG profile name such as 1g.10gb or 3g.40gb",
    "^1\\.[0-9]{1,2}$": 'a Kubernetes minor version such as "1.31"',
    LABEL_KEY_PATTERN: "a Kubernetes label key (an optional DNS prefix and '/', then letters, digits, "
    "'-', '_', '.')",
    LABEL_VALUE_PATTERN: "a Kubernetes label value (at most 63 letters, digits, '-', '_', '.', "
    "alphanumeric at both ends)",
}


def _pattern(
    validator: jsonschema.protocols.Validator, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    """jsonschema's ``pattern`` keyword with ECMA-262's ``$`` (the end of the string, not before a final
    newline); jsonschema itself uses ``re.search`` as is."""
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not pattern_matches(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@functools.cache
def _validators() -> dict[str, jsonschema.protocols.Validator]:
    """jsonschema validators per kind (with ECMA ``pattern``); built, and jsonschema imported (0.05 s),
    the first time a document is not accepted by the fast check."""
    import jsonschema

    extended = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        jsonschema.Draft202012Validator, {"pattern": _pattern}
    )
    return {kind: extended(schema) for kind, schema in kind_schemas().items()}


@functools.cache
def _fast_validators() -> dict[str, Any]:
    """jsonschema-rs validators per kind; empty where the package is not installed."""
    try:
        import jsonschema_rs
    except ImportError:  # a platform without its wheel: every document takes iter_errors
        return {}
    return {kind: jsonschema_rs.validator_for(schema) for kind, schema in kind_schemas().items()}


def fast_valid(kind: str, data: Any) -> bool:
    """Whether jsonschema-rs accepts ``data`` as a ``kind``; False when it is absent or cannot take
    the value (then ``jsonschema`` decides)."""
    validator = _fast_validators().get(kind)
    if validator is None:
        return False
    try:
        return bool(validator.is_valid(data))
    except (ValueError, TypeError, OverflowError, RecursionError):
        return False


def schema_diagnostics(doc: LoadedDocument, kind: str, profiles: Sequence[str]) -> list[Diagnostic]:
    if fast_valid(kind, doc.data):
        return []
    out: list[Diagnostic] = []
    errors = sorted(
        _validators()[kind].iter_errors(doc.data),
        key=lambda e: (json_path(e.absolute_path), str(e.validator), e.message),
    )
    for error in errors:
        out.extend(_translate(doc, error, profiles))
    return out


@dataclass(frozen=True)
class _SchemaError:
    """One jsonschema error with what every translation reads from it: the document, the path of the
    offending node, the keyword, the schema and value there, the keyword's bound."""

    doc: LoadedDocument
    error: ValidationError
    profiles: Sequence[str]
    path: PathT
    validator: str
    schema: dict[str, Any]
    instance: Any
    bound: Any

    @classmethod
    def of(cls, doc: LoadedDocument, error: ValidationError, profiles: Sequence[str]) -> _SchemaError:
        return cls(
            doc=doc,
            error=error,
            profiles=profiles,
            path=tuple(p for p in error.absolute_path if isinstance(p, str | int)),
            validator=str(error.validator),
            schema=error.schema if isinstance(error.schema, dict) else {},
            instance=error.instance,
            bound=error.validator_value,
        )

    @property
    def where(self) -> str:
        return json_path(self.path)


_Translation = Callable[[_SchemaError], "list[Diagnostic] | None"]
"""A keyword's translation; ``None``: none of its specific answers fits, the generic ones decide."""


def _missing_fields(e: _SchemaError) -> list[Diagnostic]:
    """MIGC030 per required field absent, at the mapping's key."""
    missing = [r for r in e.bound if isinstance(e.instance, dict) and r not in e.instance]
    return [
        e.doc.at("MIGC030", f"missing required field '{name}' in {e.where}", e.path, key=bool(e.path))
        for name in missing
    ]


def _unknown_fields(e: _SchemaError) -> list[Diagnostic] | None:
    """MIGC031 per unknown field, at its key, with a did-you-mean and the fields known there."""
    if not isinstance(e.instance, dict):
        return None
    known = set(e.schema.get("properties", {}))
    out = []
    for name in sorted(k for k in e.instance if k not in known):
        hint = suggest(name, known)
        out.append(
            e.doc.at(
                "MIGC031",
                f"unknown field '{name}' in {e.where}{hint}",
                (*e.path, name),
                key=True,
                hint=f"known fields here: {listing(known)}",
            )
        )
    return out


def _choice(e: _SchemaError) -> list[Diagnostic]:
    return _translate_choice(e.doc, e.error, e.path, e.profiles)


def _wrong_type(e: _SchemaError) -> list[Diagnostic]:
    """MIGC032, in the policy's words (mapping and list, not object and array)."""
    expected = e.bound
    words = " or ".join(expected) if isinstance(expected, list) else str(expected)
    words = words.replace("object", "mapping").replace("array", "list")
    return [
        e.doc.at(
            "MIGC032",
            f"{e.where} must be {article(words)}, not {article(type_name(e.instance))} ({short(e.instance)})",
            e.path,
        )
    ]


def _not_allowed(e: _SchemaError) -> list[Diagnostic]:
    """MIGC033 for ``enum`` and ``const``, with a did-you-mean among the allowed values."""
    allowed = e.bound if e.validator == "enum" else [e.bound]
    words = ", ".join(str(a) for a in allowed)
    hint = suggest(str(e.instance), [str(a) for a in allowed])
    return [e.doc.at("MIGC033", f"{e.where}: {short(e.instance)} is not one of: {words}{hint}", e.path)]


def _string_form(e: _SchemaError) -> list[Diagnostic] | None:
    """``pattern`` and the length bounds of a patterned string: a bad name (MIGC109, at the mapping
    key when the name is one), a bad duration (MIGC114), or MIGC034 saying what the pattern means.
    ``None`` for a length bound of another string (a range error, MIGC035)."""
    pattern = e.schema.get("pattern", "")
    instance, path = e.instance, e.path
    key_of = value_at(e.doc.data, path)
    on_key = isinstance(key_of, dict) and isinstance(instance, str) and instance in key_of
    at_path: PathT = (*path, str(instance)) if on_key else path
    if pattern == DNS_LABEL_PATTERN:
        return [
            e.doc.at(
                "MIGC109",
                f"{json_path(at_path)}: {short(instance)} is not a DNS-1123 label "
                "(lower-case letters, digits and '-', at most 63, starting and ending alphanumeric)",
                at_path,
                key=on_key,
            )
        ]
    if pattern == NODE_NAME_PATTERN:
        return [
            e.doc.at(
                "MIGC109",
                f"{json_path(at_path)}: {short(instance)} is not a valid node name "
                "(a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', at most 253)",
                at_path,
            )
        ]
    if pattern == DURATION_PATTERN:
        return [
            e.doc.at(
                "MIGC114",
                f"{e.where}: {short(instance)} is not a duration (write e.g. 30s, 10m, 1h30m, 2d)",
                path,
            )
        ]
    if e.validator != "pattern":
        return None
    words = _PATTERN_WORDS.get(pattern, f"a string matching {pattern}")
    if pattern == PROFILE_PATTERN:
        words += suggest(str(instance), e.profiles)
    return [
        e.doc.at("MIGC034", f"{json_path(at_path)}: {short(instance)} is not {words}", at_path, key=on_key)
    ]


_TRANSLATIONS: dict[str, _Translation] = {
    "required": _missing_fields,
    "additionalProperties": _unknown_fields,
    "oneOf": _choice,
    "anyOf": _choice,
    "type": _wrong_type,
    "enum": _not_allowed,
    "const": _not_allowed,
    "pattern": _string_form,
    "minLength": _string_form,
    "maxLength": _string_form,
}

_RANGE_KEYWORDS = frozenset(
    {
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minLength",
        "maxLength",
        "minProperties",
        "maxProperties",
    }
)
"""Bounds answered as MIGC035 in words (:func:`_rephrase`)."""


def _translate(doc: LoadedDocument, error: ValidationError, profiles: Sequence[str]) -> list[Diagnostic]:
    """The diagnostics of one schema error: the keyword's own translation, else MIGC035 for a bound,
    else MIGC039 with jsonschema's message."""
    e = _SchemaError.of(doc, error, profiles)
    translation = _TRANSLATIONS.get(e.validator)
    found = translation(e) if translation is not None else None
    if found is not None:
        return found
    if e.validator in _RANGE_KEYWORDS:
        return [doc.at("MIGC035", f"{e.where}: {_rephrase(error)}", e.path)]
    return [doc.at("MIGC039", f"{e.where}: {error.message}", e.path)]


def _rephrase(error: ValidationError) -> str:
    v = str(error.validator)
    bound = error.validator_value
    value = error.instance
    if v == "minimum":
        return f"{short(value)} is below the minimum {bound}"
    if v == "maximum":
        return f"{short(value)} is above the maximum {bound}"
    if v == "exclusiveMinimum":
        return f"{short(value)} must be greater than {bound}"
    if v == "exclusiveMaximum":
        return f"{short(value)} must be less than {bound}"
    if v == "minItems":
        return f"needs at least {bound} item(s)"
    if v == "maxItems":
        return f"allows at most {bound} item(s)"
    if v == "uniqueItems":
        return "items must be unique"
    if v == "minLength":
        return "must not be empty" if bound == 1 else f"must be at least {bound} characters"
    if v == "maxLength":
        return f"must be at most {bound} characters"
    if v == "minProperties":
        return f"needs at least {bound} entry(ies)"
    return error.message


def _relevant_branch(errors: Iterable[ValidationError]) -> list[ValidationError]:
    """Errors of the union branches whose *type* matched the value, when any did.

    ``maxUnavailable: ten`` fails the integer branch on its type and the percentage branch on its
    pattern; the pattern error is the one that helps. jsonschema's ``best_match`` alone would
    pick either, so branches that rejected the value's type are dropped first.
    """
    errors = list(errors)
    by_branch: dict[Any, list[ValidationError]] = {}
    for e in errors:
        branch = e.relative_schema_path[0] if e.relative_schema_path else None
        by_branch.setdefault(branch, []).append(e)
    typed = [
        errs
        for errs in by_branch.values()
        if not any(e.validator == "type" and not e.relative_path for e in errs)
    ]
    if len(typed) == 1:
        return typed[0]
    return errors


_NEED_KEYS = {
    "profile": "profile",
    "profiles": "profiles",
    "gpuMemoryGB": "gpuMemoryGB/computeSlices",
    "computeSlices": "gpuMemoryGB/computeSlices",
    "gpus": "gpus",
}


def _translate_choice(
    doc: LoadedDocument, error: ValidationError, path: PathT, profiles: Sequence[str]
) -> list[Diagnostic]:
    instance: Any = error.instance
    where = json_path(path)
    # Discriminator-style answers for the two unions of the language, whose branches differ by keys.
    if path and path[-1] == "need" and isinstance(instance, dict):
        forms = sorted({_NEED_KEYS[k] for k in instance if k in _NEED_KEYS})
        if len(forms) > 1:
            return [
                doc.at(
                    "MIGC036",
                    f"{where} mixes the forms {' and '.join(forms)}; use exactly one",
                    path,
                )
            ]
        if not forms:
            return [
                doc.at(
                    "MIGC036",
                    f"{where} must set one of: profile, profiles, gpuMemoryGB/computeSlices, gpus",
                    path,
                )
            ]
        return []  # the form's own field errors are reported where they are
    if path and path[-1] == "nodes" and isinstance(instance, dict):
        if "names" in instance and ("selector" in instance or "count" in instance):
            message = f"{where} lists names and also a selector/count; use one or the other"
        elif "selector" in instance and "count" not in instance:
            message = f"missing required field 'count' in {where} (required with a selector)"
            return [doc.at("MIGC030", message, path, key=True)]
        elif "count" in instance and "selector" not in instance:
            message = f"missing required field 'selector' in {where} (required with a count)"
            return [doc.at("MIGC030", message, path, key=True)]
        else:
            message = f"{where} needs either names, or a selector and a count"
        return [doc.at("MIGC039", message, path)]
    # Generic union (e.g. maxUnavailable: integer or percentage): the most relevant branch's error.
    if error.context:
        from jsonschema.exceptions import best_match

        best = best_match(_relevant_branch(error.context))
        if best is not None:
            return _translate(doc, best, profiles)
    return [doc.at("MIGC039", f"{where}: {error.message}", path)]
