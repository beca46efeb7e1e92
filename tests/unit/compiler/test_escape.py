"""compiler/escape.py: text read from a cluster made safe for a terminal, an HTML page and markdown."""

from __future__ import annotations

import pytest

from compiler.escape import (
    BIDI_CONTROLS,
    bound_markdown,
    html_text,
    markdown_cell,
    terminal,
)

ZWSP = "\u200b"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[31mred\x1b[0m", "red"),  # CSI colour codes are removed, the text stays
        ("\x1b]0;owned\x07pod", "pod"),  # an OSC window-title string ended by BEL
        ("\x1b]8;;http://x\x1b\\link", "link"),  # an OSC 8 hyperlink ended by ST
        ("\x9b2Jx", "x"),  # the C1 form of CSI (clear screen)
        ("a\x00b\x7fc", "aU+0000bU+007Fc"),  # NUL and DEL are shown, not passed through
        ("admin\u202e\u2066", "adminU+202EU+2066"),  # bidi overrides (Trojan Source)
        ("line\u2028sep", "lineU+2028sep"),
        ("café 東京 \u200bzw", "café 東京 \u200bzw"),  # printable non-ASCII and a ZWSP are kept
    ],
)
def test_terminal_strips_sequences_and_shows_controls(raw: str, shown: str) -> None:
    assert terminal(raw) == shown
    assert terminal(shown) == shown  # idempotent: escaping twice changes nothing more


def test_terminal_keeps_newlines_and_tabs_only_when_asked() -> None:
    assert terminal("a\nb\tc") == "a\nb\tc"
    assert terminal("a\nb\tc", keep_newlines=False) == "aU+000AbU+0009c"
    assert terminal("a\rb") == "aU+000Db"  # a carriage return could overwrite the line: always shown


def test_every_bidi_control_is_shown_in_every_medium() -> None:
    for ch in BIDI_CONTROLS:
        code = f"U+{ord(ch):04X}"
        assert terminal(f"x{ch}y") == f"x{code}y"
        assert html_text(f"x{ch}y") == f"x{code}y"
        assert markdown_cell(f"x{ch}y") == f"x{code}y"


def test_html_text_escapes_markup_and_quotes_and_controls() -> None:
    assert html_text('<img src=x onerror="a">&\'') == ("&lt;img src=x onerror=&quot;a&quot;&gt;&amp;&#x27;")
    assert html_text("two\nlines") == "twoU+000Alines"  # no raw control character in a page
    assert html_text(42) == "42"  # any value, written with str()


def test_markdown_cell_neutralises_markup_mentions_and_autolinks() -> None:
    assert markdown_cell("a|b") == "a&#124;b"  # no cell split; the entity's "#" gets no ZWSP
    assert markdown_cell("`x` *y* _z_ ~w~ [l](u) \\") == (
        "&#96;x&#96; &#42;y&#42; &#95;z&#95; &#126;w&#126; &#91;l&#93;(u) &#92;"
    )
    assert markdown_cell("@team #12") == f"@{ZWSP}team #{ZWSP}12"
    assert markdown_cell("<img onerror=x> <!-- a <= b") == "&lt;img onerror=x> &lt;!-- a <= b"
    assert markdown_cell("see http://e.com or WWW.e.com") == f"see http:{ZWSP}//e.com or WWW{ZWSP}.e.com"
    assert markdown_cell("two\nlines") == "twoU+000Alines"  # a newline would end the table row


def test_markdown_cell_cuts_long_values_to_the_limit() -> None:
    assert markdown_cell("abcdef", limit=4) == "abc…"
    assert markdown_cell("abcd", limit=4) == "abcd"
    assert len(markdown_cell("x" * 1000)) == 300  # the default limit, "…" included


def test_bound_markdown_cuts_at_a_line_and_says_how_much_is_left_out() -> None:
    short = "| a |\n| b |\n"
    assert bound_markdown(short, limit=len(short)) == short
    lines = [f"line {i:04d}\n" for i in range(500)]  # 10 characters each, 5,000 in all
    body = "".join(lines)
    cut = bound_markdown(body, limit=1000)
    assert len(cut) <= 1000
    kept, note = cut.split("\n…", 1)
    kept_lines = kept.splitlines(keepends=True)
    assert kept_lines == lines[: len(kept_lines)]  # whole lines from the start, nothing altered
    # 200 characters are reserved for the note: 80 lines of 10 fit in the remaining 800
    assert len(kept_lines) == 80
    assert note.startswith(" 420 more line(s) left out") and "1,000 characters" in note
