"""Positioned, bounded YAML loading: files → :class:`LoadedDocument` (plain data + line/col of every node).

Why not ``yaml.safe_load``: we need the position of every node to point diagnostics at the exact
line and column, duplicate keys must be errors (PyYAML silently keeps the last one), and hostile
input (billion laughs, 10 000-deep nesting, python tags) must be refused quickly instead of expanded.

How: ruamel.yaml (YAML 1.2, so ``yes``/``no``/``on`` stay strings) *composes* the node graph,
which keeps aliases as shared references and never runs a constructor, so no python tag can ever
be instantiated. Nesting depth is bounded while composing (and, for flow brackets, by a linear
textual scan first: the scanner's look-ahead over unclosed brackets is quadratic). Converting
nodes to plain data is our own walk that counts every node it visits, aliases included, and
stops past a limit: a billion-laughs file costs a few thousand steps before it is refused.

Every problem is a ``MIGC0xx`` diagnostic; nothing here raises on bad input.

Fast path: ruamel is pure Python and dominates load time on large policies (about 2.5 s for a
500-file, 80 000-GPU policy). So each file is first parsed by PyYAML's libyaml-based C parser
(events only: nothing is constructed) and converted by :func:`_fast_load`, which resolves plain
scalars with ruamel's own YAML 1.2 resolver and constructor, so the data is the same. It handles
only clean files: at the first thing that could make a diagnostic or a difference (any libyaml
error, tag, anchor, alias, directive, merge key, complex or duplicate key, tab, CR or exotic line
break, deep nesting, too many nodes or documents, a scalar ruamel would refuse) it declines and the
ruamel path above runs unchanged, so every diagnostic is the ruamel path's. ``load_text(...,
fast=False)`` takes the ruamel path only (to compare or debug); the fast path is skipped when PyYAML
was built without libyaml.
"""

from __future__ import annotations

import errno
import functools
import io
import os
import re
import stat
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

try:
    import yaml as _pyyaml
    from yaml import CSafeLoader as _CLoader
except ImportError:  # pragma: no cover - PyYAML without libyaml: the fast path is simply skipped
    _pyyaml = None  # type: ignore[assignment]
    _CLoader = None  # type: ignore[assignment,misc]

from compiler.diagnostics import Diagnostic, make
from compiler.fsio import ReadRefused, link_problem, not_regular, read_bounded

MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64
MAX_DOCUMENTS = 1000
MAX_NODES = 1_000_000  # per file; bounded by the file size anyway, kept as a second fence
MAX_ALIAS_NODES = 10_000  # nodes reached again through aliases, per file: the billion-laughs fence
MAX_FILES = 10_000

YAML_SUFFIXES = (".yaml", ".yml")

PathKey = tuple[str | int, ...]

_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {_TAG + t for t in ("str", "int", "float", "bool", "null", "timestamp")}
_MAP_TAGS = {_TAG + "map"}
_SEQ_TAGS = {_TAG + "seq"}
_MERGE_TAG = _TAG + "merge"


def json_path(path: Iterable[str | int]) -> str:
    """``('spec', 'clusters', 0, 'name')`` → ``$.spec.clusters[0].name``; odd keys are quoted."""
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.replace("_", "a").replace("-", "a").isalnum():
            out += f".{part}"
        else:
            escaped = part.replace("\\", "\\\\").replace("'", "\\'")
            out += f"['{escaped}']"
    return out


@dataclass(frozen=True)
class LoadedDocument:
    """One YAML document of a policy file, as plain JSON-like data plus where each node was written.

    ``positions[path]`` is the 1-based (line, col) of the *value* at ``path``; ``key_positions[path]``
    that of the mapping key that introduced it (same as the value for sequence items). The empty
    path is the document root.
    """

    file: str
    index: int  # 0-based position of the document in its file
    data: Any
    positions: Mapping[PathKey, tuple[int, int]] = field(repr=False)
    key_positions: Mapping[PathKey, tuple[int, int]] = field(repr=False)

    def position(self, path: Sequence[str | int], *, key: bool = False) -> tuple[int, int]:
        """Line/col of the node at ``path``, or of its nearest ancestor that exists."""
        table = self.key_positions if key else self.positions
        parts = tuple(path)
        while parts:
            if parts in table:
                return table[parts]
            parts = parts[:-1]
        return self.positions.get((), (1, 1))

    def at(
        self,
        code: str,
        message: str,
        path: Sequence[str | int] = (),
        *,
        key: bool = False,
        hint: str = "",
    ) -> Diagnostic:
        """A diagnostic located at ``path`` of this document."""
        line, col = self.position(path, key=key)
        return make(code, message, file=self.file, line=line, col=col, path=json_path(path), hint=hint)


class _Abort(Exception):
    """Internal: stop converting this file and report ``diagnostic``."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def display_path(path: Path) -> str:
    """Paths as the user would type them: relative to the working directory when under it, POSIX slashes."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        rel = str(path)
    shown = rel if not rel.startswith("..") else str(path)
    return Path(shown).as_posix()


def expand_paths(paths: Sequence[str | os.PathLike[str]]) -> tuple[list[Path], list[Diagnostic]]:
    """Files named directly plus ``*.yaml``/``*.yml`` under named directories (recursively, sorted).

    The result is de-duplicated and sorted so the order of command-line arguments never changes output.
    Nothing is skipped silently: a named path that exists but is neither a regular file nor a
    directory (a FIFO, a device) is MIGC015; inside a directory, a ``*.yaml``/``*.yml`` entry that
    is a FIFO, device or socket is MIGC015, and a symbolic link loop or a dangling link is MIGC017.
    Symbolic links to files are followed (the file is then read like any other); links to
    directories are not descended into.
    """
    found: set[Path] = set()
    diags: list[Diagnostic] = []
    for raw in paths:
        p = Path(raw)
        shown = display_path(p)
        try:
            mode = os.stat(p).st_mode
        except OSError as exc:
            link = link_problem(str(p), exc)
            if link is not None:
                diags.append(link)
            elif isinstance(exc, FileNotFoundError):
                diags.append(make("MIGC001", f"{shown}: no such file or directory", file=shown))
            else:
                diags.append(make("MIGC001", f"cannot read {shown}: {exc.strerror or exc}", file=shown))
            continue
        if stat.S_ISDIR(mode):
            hits, problems = _walk_policy_dir(p)
            diags.extend(problems)
            if not hits and not problems:
                diags.append(
                    make(
                        "MIGC013",
                        f"directory {shown} contains no *.yaml or *.yml files",
                        file=shown,
                    )
                )
            found.update(hits)
        elif stat.S_ISREG(mode):
            found.add(p)
        else:
            diags.append(not_regular(shown, mode, "a policy file"))
    if len(found) > MAX_FILES:
        diags.append(make("MIGC002", f"{len(found)} policy files given; the limit is {MAX_FILES}"))
        return [], diags
    return sorted(found, key=lambda q: display_path(q)), diags


def _walk_policy_dir(root: Path) -> tuple[list[Path], list[Diagnostic]]:
    """Regular ``*.yaml``/``*.yml`` files below ``root`` (dot-folders skipped) and what could not be used."""
    hits: list[Path] = []
    problems: list[Diagnostic] = []
    stack = [root]
    while stack:
        here = stack.pop()
        try:
            entries = sorted(os.scandir(here), key=lambda e: e.name)
        except OSError as exc:
            shown = display_path(here)
            problems.append(make("MIGC001", f"cannot read {shown}: {exc.strerror or exc}", file=shown))
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            policy_file = path.suffix in YAML_SUFFIXES
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(path)
                    continue
                mode = os.stat(path).st_mode
            except OSError as exc:
                link = link_problem(str(path), exc)
                if link is not None and (policy_file or exc.errno == errno.ELOOP):
                    problems.append(link)
                continue
            if stat.S_ISREG(mode):
                if policy_file:
                    hits.append(path)
            elif policy_file and not stat.S_ISDIR(mode):
                problems.append(not_regular(display_path(path), mode, "a policy file"))
    return hits, problems


def load_paths(paths: Sequence[str | os.PathLike[str]]) -> tuple[list[LoadedDocument], list[Diagnostic]]:
    """Load every policy file named (directories searched); all documents plus all load diagnostics.

    Each file is read with :func:`compiler.fsio.read_bounded` (a regular file, at most
    ``MAX_FILE_BYTES``), so a path swapped for a FIFO or ``/dev/zero`` is refused, not read.
    """
    files, diags = expand_paths(paths)
    docs: list[LoadedDocument] = []
    for f in files:
        shown = display_path(f)
        try:
            raw = read_bounded(f, MAX_FILE_BYTES, what="a policy file", shown=shown)
        except ReadRefused as exc:
            refused = exc.diagnostic
            if refused.code == "MIGC016":
                size = f.stat().st_size if f.is_file() else MAX_FILE_BYTES + 1
                refused = _too_big(shown, size)
            diags.append(refused)
            continue
        except OSError as exc:
            diags.append(make("MIGC001", f"cannot read {shown}: {exc.strerror or exc}", file=shown))
            continue
        more_docs, more_diags = load_bytes(raw, shown)
        docs.extend(more_docs)
        diags.extend(more_diags)
    return docs, diags


def _too_big(file: str, size: int) -> Diagnostic:
    return make(
        "MIGC002",
        f"file is {size} bytes; policy files are limited to {MAX_FILE_BYTES} bytes",
        file=file,
    )


def load_bytes(raw: bytes, file: str) -> tuple[list[LoadedDocument], list[Diagnostic]]:
    """Decode (strict UTF-8, optional BOM) and load one file's content."""
    if len(raw) > MAX_FILE_BYTES:
        return [], [_too_big(file, len(raw))]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start
        line = raw.count(b"\n", 0, start) + 1
        col = start - (raw.rfind(b"\n", 0, start) + 1) + 1
        return [], [
            make(
                "MIGC003",
                f"file is not valid UTF-8: byte 0x{raw[start]:02x} at offset {start} cannot be decoded",
                file=file,
                line=line,
                col=col,
            )
        ]
    return load_text(text, file)


def load_text(text: str, file: str, *, fast: bool = True) -> tuple[list[LoadedDocument], list[Diagnostic]]:
    """Load one file's text: all its non-empty documents, or the diagnostics that prevented it.

    ``fast=False`` skips the libyaml fast path (the result is the same; see the module docstring)."""
    if not text.strip():
        return [], [make("MIGC012", "file is empty: it contains no YAML documents", file=file, line=1, col=1)]
    flow = _flow_depth_exceeded(text)
    if flow is not None:
        return [], [_too_deep(file, *flow)]
    if fast and _CLoader is not None:
        loaded = _fast_load(text, file)
        if loaded is not None:
            return loaded, []
    # typ="safe": the round-trip parser's comment bookkeeping makes it several times slower, and
    # comments are not needed here (positions are kept by every parser).
    yaml = YAML(typ="safe", pure=True)
    yaml.max_depth = MAX_DEPTH  # newer ruamel stops composing there; older ones hit the RecursionError guard
    docs: list[LoadedDocument] = []
    diags: list[Diagnostic] = []
    nodes: list[Node] = []
    try:
        with warnings.catch_warnings():
            # ruamel warns (on stderr) about legal-but-odd input such as a reused anchor name; the
            # CLI's output is diagnostics only, and the later anchor wins exactly as YAML specifies
            warnings.simplefilter("ignore")
            for node in yaml.compose_all(io.StringIO(text)):
                nodes.append(node)
                if len(nodes) > MAX_DOCUMENTS:
                    line, col = _mark(node.start_mark)
                    message = f"more than {MAX_DOCUMENTS} YAML documents in one file"
                    return [], [make("MIGC010", message, file=file, line=line, col=col)]
    except YAMLError as exc:
        if type(exc).__name__ == "MaxDepthExceededError":
            return [], [_too_deep(file, *_mark(getattr(exc, "problem_mark", None)))]
        return [], [_syntax_diagnostic(exc, text, file)]
    except RecursionError:
        return [], [_too_deep(file, 1, 1)]
    budget = _Budget(file)
    for index, node in enumerate(nodes):
        if isinstance(node, ScalarNode) and _tag(node) == _TAG + "null" and node.value in ("", "~", "null"):
            continue  # an empty document between two "---" separators
        conv = _Converter(file, budget)
        try:
            data = conv.convert(node, ())
        except _Abort as abort:
            diags.append(abort.diagnostic)
            return [], diags  # past a hard limit, the rest of the file is not trustworthy either
        diags.extend(conv.diagnostics)
        docs.append(
            LoadedDocument(
                file=file, index=index, data=data, positions=conv.positions, key_positions=conv.key_positions
            )
        )
    if not docs and not diags:
        diags.append(make("MIGC012", "file contains only empty YAML documents", file=file, line=1, col=1))
    return docs, diags


def _too_deep(file: str, line: int, col: int) -> Diagnostic:
    return make("MIGC008", f"nesting deeper than {MAX_DEPTH} levels", file=file, line=line, col=col)


def _flow_depth_exceeded(text: str) -> tuple[int, int] | None:
    """Where brackets nest deeper than the limit, by a linear textual scan.

    ruamel's scanner looks ahead through every unclosed flow bracket before it emits a single
    event (and keeps a candidate "simple key" per level), so ``[[[[...`` costs quadratic time
    before the event-based check below sees anything. Brackets inside quoted strings are counted
    too; 64 of them unclosed is not a policy file.
    """
    depth = 0
    for match in _BRACKETS.finditer(text):
        if match.group() in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                start = match.start()
                return text.count("\n", 0, start) + 1, start - (text.rfind("\n", 0, start) + 1) + 1
        elif depth:
            depth -= 1
    return None


_BRACKETS = re.compile(r"[\[\]{}]")


def _mark(mark: Any) -> tuple[int, int]:
    if mark is None:
        return 1, 1
    return int(mark.line) + 1, int(mark.column) + 1


def _syntax_diagnostic(exc: YAMLError, text: str, file: str) -> Diagnostic:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if "end of stream" in str(getattr(exc, "problem", "")) and getattr(exc, "context_mark", None) is not None:
        # an unclosed quote or bracket: where it was opened helps, the end of the file does not
        mark = exc.context_mark  # type: ignore[attr-defined]
    line, col = _mark(mark)
    problem = str(getattr(exc, "problem", "") or "") if isinstance(exc, MarkedYAMLError) else str(exc)
    context = str(getattr(exc, "context", "") or "") if isinstance(exc, MarkedYAMLError) else ""
    lines = text.splitlines()
    # A tab where indentation is expected is the classic YAML mistake: say so instead of the scanner's words.
    tab_line = _first_tab_indent(lines, line)
    if tab_line is not None or "'\\t'" in problem:
        tl, tc = tab_line if tab_line is not None else (line, col)
        return make(
            "MIGC004",
            "tab character where YAML allows only spaces (indentation must be spaces)",
            file=file,
            line=tl,
            col=tc,
        )
    message = problem or "invalid YAML"
    if context:
        message = f"{message} ({context})"
    return make("MIGC005", f"YAML syntax error: {message}", file=file, line=line, col=col)


def _first_tab_indent(lines: list[str], error_line: int) -> tuple[int, int] | None:
    """The first line at or before the error whose indentation contains a tab, if any."""
    for number in range(min(error_line, len(lines)), 0, -1):
        text = lines[number - 1]
        indent = text[: len(text) - len(text.lstrip(" \t"))]
        if "\t" in indent and text.strip():
            return number, indent.index("\t") + 1
        if number < error_line - 1:
            break
    return None


def _tag(node: Node) -> str:
    tag = node.tag
    return str(getattr(tag, "value", tag))


@dataclass
class _Budget:
    """Nodes visited in one file, aliases expanded: the billion-laughs guard."""

    file: str
    visited: int = 0
    via_alias: int = 0
    seen: set[int] = field(default_factory=set)


class _Converter:
    """Node graph → plain data, recording positions and reporting duplicate keys and foreign tags."""

    def __init__(self, file: str, budget: _Budget) -> None:
        self.file = file
        self.budget = budget
        self.positions: dict[PathKey, tuple[int, int]] = {}
        self.key_positions: dict[PathKey, tuple[int, int]] = {}
        self.diagnostics: list[Diagnostic] = []
        self._active: set[int] = set()  # nodes being converted: re-entering one is a recursive alias
        self._safe = YAML(typ="safe", pure=True).constructor

    def _diag(self, code: str, message: str, node: Node, path: PathKey) -> Diagnostic:
        line, col = _mark(node.start_mark)
        return make(code, message, file=self.file, line=line, col=col, path=json_path(path))

    def convert(self, node: Node, path: PathKey) -> Any:
        self.budget.visited += 1
        if self.budget.visited > MAX_NODES:
            raise _Abort(
                self._diag(
                    "MIGC009",
                    f"more than {MAX_NODES} YAML nodes in one file; refused",
                    node,
                    path,
                )
            )
        if id(node) in self.budget.seen:
            self.budget.via_alias += 1
            if self.budget.via_alias > MAX_ALIAS_NODES:
                raise _Abort(
                    self._diag(
                        "MIGC009",
                        f"YAML aliases expand to more than {MAX_ALIAS_NODES} nodes (an alias bomb?); refused",
                        node,
                        path,
                    )
                )
        else:
            self.budget.seen.add(id(node))
        if path not in self.positions:
            self.positions[path] = _mark(node.start_mark)
        if id(node) in self._active:
            raise _Abort(self._diag("MIGC009", "recursive YAML alias: a node contains itself", node, path))
        tag = _tag(node)
        if isinstance(node, ScalarNode):
            return self._scalar(node, tag, path)
        self._active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                if tag not in _SEQ_TAGS:
                    self.diagnostics.append(self._unsupported(node, tag, path))
                    return None
                return [self._item(child, (*path, i)) for i, child in enumerate(node.value)]
            if isinstance(node, MappingNode):
                if tag not in _MAP_TAGS:
                    self.diagnostics.append(self._unsupported(node, tag, path))
                    return None
                return self._mapping(node, path)
        finally:
            self._active.discard(id(node))
        raise _Abort(self._diag("MIGC005", "unsupported YAML node", node, path))  # pragma: no cover

    def _item(self, child: Node, path: PathKey) -> Any:
        self.key_positions.setdefault(path, _mark(child.start_mark))
        return self.convert(child, path)

    def _mapping(self, node: MappingNode, path: PathKey) -> dict[str, Any]:
        out: dict[str, Any] = {}
        merged: list[tuple[str, Any]] = []
        for key_node, value_node in node.value:
            if _tag(key_node) == _MERGE_TAG:
                merged.extend(self._merge_sources(value_node, path))
                continue
            if not isinstance(key_node, ScalarNode):
                self.diagnostics.append(
                    self._diag("MIGC014", "mapping keys must be plain scalars, not lists or mappings",
                               key_node, path)
                )
                continue
            key = str(key_node.value)
            child = (*path, key)
            if key in out:
                first = self.key_positions.get(child, (0, 0))
                self.diagnostics.append(
                    self._diag(
                        "MIGC006",
                        f"duplicate key '{key}' (first defined at line {first[0]}); "
                        "YAML would silently keep only one of them",
                        key_node,
                        child,
                    )
                )
                continue
            self.key_positions[child] = _mark(key_node.start_mark)
            out[key] = self.convert(value_node, child)
        for key, value in merged:  # explicit keys win over merged ones, as YAML's merge key specifies
            out.setdefault(key, value)
        return out

    def _merge_sources(self, value: Node, path: PathKey) -> list[tuple[str, Any]]:
        sources = value.value if isinstance(value, SequenceNode) else [value]
        pairs: list[tuple[str, Any]] = []
        for src in sources:
            if not isinstance(src, MappingNode):
                self.diagnostics.append(
                    self._diag("MIGC005", "YAML syntax error: '<<' merge needs a mapping", src, path)
                )
                continue
            data = self.convert(src, path)
            if isinstance(data, dict):
                pairs.extend(data.items())
        return pairs

    def _unsupported(self, node: Node, tag: str, path: PathKey) -> Diagnostic:
        shown = tag.replace(_TAG, "!!")
        return self._diag(
            "MIGC007",
            f"YAML tag {shown} is not allowed; policy files hold plain data (strings, numbers, lists, maps)",
            node,
            path,
        )

    def _scalar(self, node: ScalarNode, tag: str, path: PathKey) -> Any:
        if tag not in _SCALAR_TAGS:
            self.diagnostics.append(self._unsupported(node, tag, path))
            return None
        if tag == _TAG + "str" or tag == _TAG + "timestamp":
            # Timestamps stay text: no field of the policy language is a date, and datetimes are not JSON.
            return str(node.value)
        try:
            value = self._safe.construct_object(node, deep=True)
        except (YAMLError, ValueError, TypeError, OverflowError):
            self.diagnostics.append(
                self._diag("MIGC005", f"YAML syntax error: cannot read scalar {node.value!r}", node, path)
            )
            return None
        if isinstance(value, float) and value != value:  # NaN: no JSON equivalent, compares unequal to itself
            return str(node.value)
        return value


# ---------------------------------------------------------------------------------------------------
# Fast path: libyaml events → LoadedDocument, declining (None) whenever the ruamel path could differ.

_FAST_MAX_DEPTH = MAX_DEPTH // 2  # policies nest ~8 deep; anything near the limit gets ruamel's exact check
# Line breaks libyaml and ruamel may count differently, BOMs inside the text, and tabs (ruamel's tab
# diagnostics depend on where they are): any of these sends the whole file to the ruamel path.
_FAST_REFUSED_CHARS = ("\t", "\r", "\x85", "\u2028", "\u2029", "\ufeff")
_DECLINE = object()
# YAML 1.2's block scalar header (indicator, optional indentation and chomping, then only a comment)
_BLOCK_HEADER = re.compile(r"[|>](?:[1-9][+-]?|[+-][1-9]?)?(?: +#.*| *)$")


@functools.lru_cache(maxsize=1)
def _ruamel_scalar_tools() -> tuple[Any, Any]:
    """ruamel's own YAML 1.2 resolver and safe constructor, as the ruamel path uses them."""
    yaml = YAML(typ="safe", pure=True)
    return yaml.resolver, YAML(typ="safe", pure=True).constructor


@functools.lru_cache(maxsize=65536)
def _plain_scalar(value: str) -> tuple[str, Any]:
    """(resolved tag, data) of a plain scalar exactly as the ruamel path converts it, or ``_DECLINE``
    as data where the ruamel path would report a diagnostic. Cached: policies repeat the same words."""
    resolver, constructor = _ruamel_scalar_tools()
    tag = str(resolver.resolve(ScalarNode, value, (True, False)))
    if tag not in _SCALAR_TAGS:
        return tag, _DECLINE
    if tag == _TAG + "str" or tag == _TAG + "timestamp":
        return tag, value
    node = ScalarNode(tag, value, None, None)
    try:
        data = constructor.construct_object(node, deep=True)
    except (YAMLError, ValueError, TypeError, OverflowError):
        return tag, _DECLINE
    finally:
        constructor.constructed_objects.pop(node, None)  # the constructor memoises per node; keep it small
    if isinstance(data, float) and data != data:
        return tag, value
    return tag, data


@dataclass
class _Frame:
    data: dict[str, Any] | list[Any]
    path: PathKey
    key: str | None = None
    key_mark: tuple[int, int] = (0, 0)


class _FastDecline(Exception):
    """The fast path met something where the ruamel path could differ: the ruamel path loads the file."""


class _FastBuilder:
    """Builds the documents of one stream from libyaml's events, raising :class:`_FastDecline` instead."""

    def __init__(self, text: str, file: str) -> None:
        self.text = text
        self.file = file
        self.lines: list[str] | None = None
        self.docs: list[LoadedDocument] = []
        self.stack: list[_Frame] = []
        self.positions: dict[PathKey, tuple[int, int]] = {}
        self.key_positions: dict[PathKey, tuple[int, int]] = {}
        self.root: Any = None
        self.skip_root = False
        self.index = -1
        self.nodes = 0

    def start_document(self, event: Any) -> None:
        if event.version is not None or event.tags:
            raise _FastDecline  # %YAML / %TAG directives change resolution: ruamel's business
        self.index += 1
        if self.index >= MAX_DOCUMENTS:
            raise _FastDecline
        self.positions, self.key_positions, self.root, self.skip_root = {}, {}, None, False

    def end_document(self) -> None:
        if not self.skip_root:
            self.docs.append(
                LoadedDocument(
                    file=self.file,
                    index=self.index,
                    data=self.root,
                    positions=self.positions,
                    key_positions=self.key_positions,
                )
            )

    def node(self, event: Any, is_scalar: bool, is_mapping: bool) -> None:
        """One scalar, sequence start or mapping start event."""
        if event.anchor is not None or event.tag is not None:
            raise _FastDecline
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _FastDecline
        if self.stack and is_scalar and event.value == "" and event.implicit[0]:
            # an empty node (``key:``): ruamel and libyaml place it at different marks
            raise _FastDecline
        start = event.start_mark
        mark = (start.line + 1, start.column + 1)
        path = self._place(event, is_scalar, mark)
        if path is None:
            return  # it was a mapping key
        self.positions[path] = mark
        if is_scalar:
            self._attach(self._scalar(event))
            return
        collection: dict[str, Any] | list[Any] = {} if is_mapping else []
        self._attach(collection)
        if len(self.stack) >= _FAST_MAX_DEPTH:
            raise _FastDecline
        self.stack.append(_Frame(collection, path))

    def end_collection(self) -> None:
        self.stack.pop()

    def _place(self, event: Any, is_scalar: bool, mark: tuple[int, int]) -> PathKey | None:
        """The path of this node and its key position, or None where it is a mapping key (then stored)."""
        if not self.stack:
            return ()
        top = self.stack[-1]
        path: PathKey
        if isinstance(top.data, dict):
            if top.key is None:  # this node is a key
                if not is_scalar or event.value == "<<" or event.value in top.data:
                    raise _FastDecline
                top.key, top.key_mark = event.value, mark
                return None
            path = (*top.path, top.key)
            self.key_positions[path] = top.key_mark
        else:
            path = (*top.path, len(top.data))
            self.key_positions[path] = mark
        return path

    def _scalar(self, event: Any) -> Any:
        """The value of a scalar event as the ruamel path converts it."""
        plain, quoted = event.implicit
        if plain:
            tag, value = _plain_scalar(event.value)
            if value is _DECLINE:
                raise _FastDecline
            if not self.stack and tag == _TAG + "null" and event.value in ("", "~", "null"):
                self.skip_root = True  # an empty document, skipped as the ruamel path does
            return value
        if not quoted:
            raise _FastDecline
        if event.style in ("|", ">"):
            if not self.stack:
                raise _FastDecline  # a document that is one block scalar: libyaml ends it early
            if self.lines is None:
                self.lines = self.text.split("\n")
            start = event.start_mark
            if not _BLOCK_HEADER.match(self.lines[start.line], start.column):
                raise _FastDecline  # libyaml accepts headers such as ``|#`` that ruamel refuses
        return event.value

    def _attach(self, value: Any) -> None:
        """Put ``value`` under the open collection (or make it the document's root)."""
        if not self.stack:
            self.root = value
            return
        top = self.stack[-1]
        if isinstance(top.data, dict):
            assert top.key is not None
            top.data[top.key] = value
            top.key = None
        else:
            top.data.append(value)


def _fast_load(text: str, file: str) -> list[LoadedDocument] | None:
    """The documents of ``text`` parsed by libyaml, or None to let the ruamel path decide."""
    if _pyyaml is None or any(ch in text for ch in _FAST_REFUSED_CHARS):
        return None
    if text.startswith(("%", "...")) or "\n%" in text or "\n..." in text:
        # directives (maybe one libyaml ignores) and document end markers (libyaml accepts ``...``
        # twice in a row, ruamel does not): rare in policies, so ruamel decides what they mean
        return None
    ev = _pyyaml.events
    scalar_event, seq_start, map_start = ev.ScalarEvent, ev.SequenceStartEvent, ev.MappingStartEvent
    collection_end = (ev.SequenceEndEvent, ev.MappingEndEvent)
    stream_marks = (ev.StreamStartEvent, ev.StreamEndEvent)
    builder = _FastBuilder(text, file)
    event: Any  # PyYAML's stubs type events as the base class; the attributes read depend on the kind
    try:
        for event in _pyyaml.parse(text, Loader=_CLoader):
            kind = type(event)
            if kind is scalar_event or kind is seq_start or kind is map_start:
                builder.node(event, kind is scalar_event, kind is map_start)
            elif kind in collection_end:
                builder.end_collection()
            elif kind is ev.DocumentStartEvent:
                builder.start_document(event)
            elif kind is ev.DocumentEndEvent:
                builder.end_document()
            elif kind not in stream_marks:
                return None  # an alias (or anything new): the ruamel path bounds and reports those
    except (_pyyaml.YAMLError, _FastDecline):
        return None
    return builder.docs or None
