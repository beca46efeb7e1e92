"""Escaping for every output medium: the one place text read from a cluster is made safe to show.

Names, labels, annotations and resource names come from a cluster (or a snapshot of one) and can
hold anything a client with patch rights wrote. Before such text reaches a medium it goes through
the helper for that medium, and nowhere else:

* :func:`html_text` — HTML text and attribute values (``status --html``);
* :func:`markdown_cell` — one cell or list item of GitHub-flavoured markdown (``recommend -o
  markdown``, the pull-request body); :func:`bound_markdown` keeps a whole body under the forge's
  limit;
* :func:`terminal` — text for a terminal (stdout and stderr of every text format).

Each is total (any ``str`` in, no exception) and idempotent where the medium allows it.
"""

from __future__ import annotations

import html
import re
import unicodedata

# ECMA-48 control sequences, longest form first: CSI (ESC [ or the C1 byte U+009B), OSC/DCS/SOS/PM/
# APC strings (ESC ] P X ^ _ or their C1 forms, ended by BEL or ST), then any other two-byte escape.
_ESCAPE_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
# Characters that reorder or hide text (Trojan Source, CVE-2021-42574) or break lines.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_KEEP = frozenset("\n\t")
_SUSPECT = re.compile(r"[^\x20-\x7e]")  # only these need a look (most output is printable ASCII)


def _visible(ch: str) -> str:
    """A character no medium may carry raw, written so a reader sees it: ``U+202E``."""
    return f"U+{ord(ch):04X}"


def _unsafe(ch: str) -> bool:
    if ch in BIDI_CONTROLS:
        return True
    cat = unicodedata.category(ch)
    return cat in ("Cc", "Cs", "Zl", "Zp") or (cat == "Cf" and ch not in "\u200b\u200c\u200d\u2060")


def terminal(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with every terminal control sequence removed and other control characters shown as
    ``U+XXXX`` (C0 and C1 controls, DEL, bidi overrides, line and paragraph separators).

    Newlines and tabs stay when ``keep_newlines`` (a multi-line message), else they too are shown.
    """
    if text.isascii() and text.isprintable():  # the common case: nothing to do
        return text
    text = _ESCAPE_SEQUENCE.sub("", text)
    keep = _KEEP if keep_newlines else frozenset()

    def shown(m: re.Match[str]) -> str:
        ch = m.group()
        return _visible(ch) if ch not in keep and _unsafe(ch) else ch

    return _SUSPECT.sub(shown, text)


def html_text(value: object) -> str:
    """``value`` as HTML text or a double-quoted attribute value: ``& < > " '`` as entities, control
    and bidi characters shown as ``U+XXXX`` (a page never carries a raw control character)."""
    return html.escape(terminal(str(value), keep_newlines=False), quote=True)


MARKDOWN_CELL_LIMIT = 300  # characters of one escaped value; longer ones end in "…"
GITHUB_BODY_LIMIT = 65536  # characters GitHub accepts in a pull-request or issue body

_MD_ENTITIES = {
    "|": "&#124;",  # a raw or backslash-escaped pipe splits a table cell; an entity does not
    "`": "&#96;",  # a code span would swallow the cells after it
    "[": "&#91;",  # links and images
    "]": "&#93;",
    "\\": "&#92;",  # a backslash would escape whatever follows it
    "*": "&#42;",  # emphasis that runs into the next cell
    "_": "&#95;",
    "~": "&#126;",
}
# raw HTML and autolinks start with "<" and a letter, "/", "!" or "?" (CommonMark 0.31 §6.6, §6.5):
# <img onerror>, <details>, <!-- a comment that hides the rest -->; "<=" stays as it is
_TAG_OPEN = re.compile(r"<(?=[A-Za-z/!?])")
_ZWSP = "\u200b"  # breaks @mentions, #references and autolinks without changing what a reader sees
_AUTOLINK = re.compile(r"(?i)(www)\.|(:)(//)")


def markdown_cell(value: object, limit: int = MARKDOWN_CELL_LIMIT) -> str:
    """``value`` as literal text inside one GitHub-flavoured markdown table cell or list item.

    Markup characters become entities (no emphasis, code span, link, image, raw HTML or cell split);
    ``@`` and ``#`` are followed by a zero-width space (no mention, team ping or cross-reference) and
    so are ``www.`` and ``://`` (no autolink); newlines, controls and bidi overrides are shown as
    ``U+XXXX``; at most ``limit`` characters of ``value`` are kept (then ``…``).
    """
    text = terminal(str(value), keep_newlines=False)
    if len(text) > limit:
        text = text[: max(0, limit - 1)] + "…"
    text = text.replace("@", "@" + _ZWSP).replace("#", "#" + _ZWSP)  # before the entities add "#"
    text = _TAG_OPEN.sub("&lt;", text)  # before the entities add "&"… none of them holds "<"
    text = "".join(_MD_ENTITIES.get(c, c) for c in text)
    return _AUTOLINK.sub(lambda m: f"{m.group(1)}{_ZWSP}." if m.group(1) else f":{_ZWSP}//", text)


def bound_markdown(body: str, limit: int = GITHUB_BODY_LIMIT) -> str:
    """``body`` unchanged when it has at most ``limit`` characters, else cut at a line boundary with a
    last line saying how much was left out (the result has at most ``limit`` characters)."""
    if len(body) <= limit:
        return body
    lines = body.splitlines(keepends=True)
    kept: list[str] = []
    size = 0
    reserve = 200  # the closing note
    for i, line in enumerate(lines):
        if size + len(line) > limit - reserve:
            rest = len(lines) - i
            note = (
                f"\n… {rest} more line(s) left out: the body is limited to {limit:,} characters "
                "(`migc recommend -o json` prints everything).\n"
            )
            return "".join(kept) + note
        kept.append(line)
        size += len(line)
    return "".join(kept)
