"""The libyaml fast path of the loader gives exactly what the ruamel path gives, or declines.

Every comparison loads the same text twice through :func:`load_text`, once with the fast path and once
with ``fast=False``, and compares documents (data with Python types and key order, value and key
positions) and diagnostics. ``_fast_load`` is called on its own only to know whether it handled the text.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler import load
from compiler.load import LoadedDocument, load_text

REPO = Path(__file__).resolve().parents[1]
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

pytestmark = pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML built without libyaml")


def _typed(value: Any) -> Any:
    """Data with types made explicit: ``1``, ``1.0`` and ``True`` compare equal in Python, not here."""
    if isinstance(value, dict):
        return ("dict", [(k, _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(v) for v in value])
    return (type(value).__name__, repr(value))


def _snapshot(doc: LoadedDocument) -> tuple[Any, ...]:
    return (
        doc.file,
        doc.index,
        _typed(doc.data),
        sorted(doc.positions.items(), key=repr),
        sorted(doc.key_positions.items(), key=repr),
    )


def _load(text: str, *, fast: bool) -> tuple[list[tuple[Any, ...]], list[Any]]:
    docs, diags = load_text(text, "f.yaml", fast=fast)
    return [_snapshot(d) for d in docs], diags


def _same(text: str) -> bool:
    """Assert both paths agree on ``text``; True when the fast path (not ruamel) produced the result."""
    slow_docs, slow_diags = _load(text, fast=False)
    fast_docs, fast_diags = _load(text, fast=True)
    assert fast_docs == slow_docs
    assert fast_diags == slow_diags
    # load_text refuses empty text and deep brackets before the fast path ever sees them
    reaches_fast = bool(text.strip()) and load._flow_depth_exceeded(text) is None
    handled = load._fast_load(text, "f.yaml") if reaches_fast else None
    if handled is not None:
        assert slow_diags == []
        assert [_snapshot(d) for d in handled] == slow_docs
    return handled is not None


def _yaml_files() -> Iterator[Path]:
    for root in (REPO / "examples", REPO / "tests" / "cases" / "valid", REPO / "tests" / "cases" / "invalid"):
        for path in sorted(root.rglob("*")):
            if path.suffix in (".yaml", ".yml") and path.is_file():
                yield path


def _text(path: Path) -> str | None:
    raw = path.read_bytes()
    if len(raw) > load.MAX_FILE_BYTES:
        return None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None  # refused before any parser runs


def test_fast_path_equals_ruamel_on_every_example_and_case_file() -> None:
    files = list(_yaml_files())
    assert len(files) > 50
    handled = {path for path in files if (text := _text(path)) is not None and _same(text)}
    examples = [path for path in files if path.is_relative_to(REPO / "examples")]
    # the fast path must really carry the ordinary files, not decline everything
    assert len(handled & set(examples)) >= len(examples) * 3 // 4


def test_fast_path_is_used_and_can_be_disabled() -> None:
    text = "a: yes\nb: 0o17\nc: [1, '2', .inf]\n"
    with mock.patch.object(load, "_fast_load", wraps=load._fast_load) as spy:
        load_text(text, "f.yaml")
        assert spy.call_count == 1
        load_text(text, "f.yaml", fast=False)
        assert spy.call_count == 1


@pytest.mark.parametrize(
    "text",
    [
        "a: yes\nb: no\nc: on\nd: off\ne: ~\nf: null\ng: Null\n",
        "a: 0o17\nb: 0x1F\nc: 010\nd: 1_000\ne: +1\nf: -0\ng: 0b11\n",
        "a: 1e3\nb: .inf\nc: -.inf\nd: .nan\ne: -.5\nf: 1.\ng: .NaN\n",
        "a: 2024-01-01\nb: 2001-12-14t21:59:43.10-05:00\nc: 12:30:00\nd: 1:20\n",
        "a: 'yes'\nb: \"0o17\"\nc: |\n  x\n  y\nd: >-\n  folded\n  text\n",
        "- a\n- - b\n  - c\n- {x: 1, y: [2, 3]}\n- \"\"\n",
        "a: 1\n---\n---\n~\n---\nnull\n---\nb: 2\n",
        "héllo: 日本\n'quoted key': 1\n\"0x10\": 2\n1: one\ntrue: t\n",
        "plain multi\n  line scalar\n",
        "a: b # comment\n# full line\nc:   d  \n",
    ],
)
def test_scalar_resolution_and_positions_match(text: str) -> None:
    assert _same(text)


@pytest.mark.parametrize(
    "text",
    [
        "a: &x 1\nb: *x\n",  # anchors and aliases
        "a:\nb: 1\n",  # empty values: ruamel and libyaml mark them differently
        "{a: }\n",
        "base: &b {x: 1}\nd:\n  <<: *b\n",  # merge key
        "a: !!str 1\n",  # explicit tag
        "a: !custom x\n",
        "!!python/object:os.system x\n",
        "a: 1\na: 2\n",  # duplicate key
        "1: a\n'1': b\n",  # duplicate key after str()
        "? [a]\n: b\n",  # complex key
        "a:\n\tb: 1\n",  # tab
        "a: 1\r\nb: 2\r\n",  # CR line breaks
        "%YAML 1.1\n---\na: yes\n",  # directive
        "a: =\n",  # value tag: ruamel reports it
        "a: <<\n",
        "a: [1, 2\n",  # syntax error
        "",
        "---\n---\n",
        "[" * 70 + "]" * 70 + "\n",
        "a: '" + "[" * 70 + "'\n",  # brackets in a string still hit the textual depth scan
        "- " * 40 + "x\n",  # deep nesting
        "\n".join(f"--- {i}" for i in range(load.MAX_DOCUMENTS + 1)) + "\n",
    ],
)
def test_fast_path_declines_unusual_input_and_results_stay_identical(text: str) -> None:
    assert not _same(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a":b}\n', "[a:b]\n", "{a:1}\n", "[a: b]\n", "--- a: b\n", "a: b\n... \n", "? a\n: b\n",
        'a: "x\\/y"\n', 'a: "\x7f"\n', "a: \x7f\n", "a: \x00\n", "a: \ufffe\n", "a: \U0001f600\n",
        "k" * 1030 + ": v\n", "a:    b\n   # c\n  d\n", "- >\n  a\n\n   b\n  c\n", "a: 'b\n\n  c'\n",
        "a: |2\n   x\n", "a: |#\n  x\n", "|#", "a: >-2 # c\n   x\n", "a: b: c\n", "a: - b\n", "-\n  a\n",
        "a: ---\n", "---\n...\n---\na: 1\n", "a\n...\n...", "a\n...\n", "|-\n---", "|\n#\n",
        "%FOO bar\n---\na: 1\n", "a: b\n%x\n",
    ],
)  # fmt: skip
def test_syntax_corners_agree(text: str) -> None:
    _same(text)


_SCALARS = [
    "yes", "no", "on", "off", "y", "n", "true", "True", "FALSE", "null", "Null", "NULL", "~", "",
    "0o7", "0o17", "0x1F", "0x_1F", "010", "0", "-0", "+1", "1_000", "1__0", "00", "0o", "0x", "0b101",
    "1e3", "1.5e-3", "1e", "e3", ".inf", "-.inf", "+.inf", ".NaN", ".nan", "-.5", ".5", "5.", "0.",
    "2024-01-01", "2001-12-14t21:59:43.10-05:00", "12:30:00", "1:20", "=", "<<", "a:b", "a: b", "a #b",
    "héllo", "日本", "nvidia.com/gpu", "3g.40gb", "#x", "- x", "? x", "x,y", "[x]", "{x}", "'", '"', "\\",
    "@x", "`x", "%x", "!x", "&x", "*x", "|", ">", "x  y", " x", "x ", "1g.10gb+me", "10%",
]  # fmt: skip


def _quote(value: str, style: str) -> str:
    if style == "single":
        return "'" + value.replace("'", "''") + "'"
    if style == "double":
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


_STYLES = ["plain", "plain", "single", "double"]
scalar_texts = st.tuples(st.sampled_from(_SCALARS), st.sampled_from(_STYLES)).map(lambda pair: _quote(*pair))


@st.composite
def block_node(draw: st.DrawFn, indent: int, depth: int) -> str:
    """A node rendered after ``key:`` or ``-``: a scalar on the same line, or a nested collection."""
    pad = " " * indent
    kinds = ["scalar", "scalar", "map", "seq", "flow", "literal"] if depth < 4 else ["scalar"]
    kind = draw(st.sampled_from(kinds))
    if kind == "scalar":
        return " " + draw(scalar_texts) + "\n"
    if kind == "literal":
        lines = draw(st.lists(st.sampled_from(_SCALARS), min_size=1, max_size=3))
        return " " + draw(st.sampled_from(["|", ">", "|-", ">+"])) + "\n" + "".join(
            f"{pad}  {line}\n" for line in lines
        )
    if kind == "flow":
        items = draw(st.lists(scalar_texts, max_size=4))
        if draw(st.booleans()):
            return " [" + ", ".join(items) + "]\n"
        return " {" + ", ".join(f"k{i}: {v}" for i, v in enumerate(items)) + "}\n"
    child_indent = indent + draw(st.sampled_from([2, 4]))
    cpad = " " * child_indent
    out = "\n"
    if kind == "map":
        keys = draw(st.lists(scalar_texts, min_size=1, max_size=4))
        for key in keys:
            out += f"{cpad}{key}:" + draw(block_node(child_indent, depth + 1))
    else:
        for _ in range(draw(st.integers(min_value=1, max_value=4))):
            out += f"{cpad}-" + draw(block_node(child_indent, depth + 1))
    return out


@st.composite
def documents(draw: st.DrawFn) -> str:
    out = ""
    for number in range(draw(st.integers(min_value=1, max_value=3))):
        if number or draw(st.booleans()):
            out += "---\n"
        keys = draw(st.lists(scalar_texts, min_size=1, max_size=5))
        for key in keys:
            out += f"{key}:" + draw(block_node(0, 0))
    return out


@pytest.mark.slow
@SETTINGS
@given(documents())
def test_generated_documents_load_identically(text: str) -> None:
    _same(text)


_ALPHABET = [
    *"ab1 :-\n#'\"[]{},|>&*!?%~.\\@`=+",
    *["\n  ", "\n- ", ": ", "0o7", "yes", "é", "---", "...", "|-", ">2", "\\x4", '\\"'],
    *["\x00", "\x7f", "\U0001f600"],
]


@SETTINGS
@given(st.lists(st.sampled_from(_ALPHABET), max_size=40).map("".join))
def test_random_yaml_like_text_loads_identically(text: str) -> None:
    _same(text)
