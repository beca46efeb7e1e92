"""The positioned, bounded loader: positions, YAML 1.2 scalars, refusals (each as a MIGC0xx diagnostic)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler import load
from compiler.load import LoadedDocument, expand_paths, json_path, load_bytes, load_paths, load_text


def _one(text: str) -> LoadedDocument:
    docs, diags = load_text(text, "f.yaml")
    assert diags == []
    assert len(docs) == 1
    return docs[0]


def _codes(text: str | bytes) -> list[tuple[str, int, int]]:
    if isinstance(text, bytes):
        _, diags = load_bytes(text, "f.yaml")
    else:
        _, diags = load_text(text, "f.yaml")
    return [(d.code, d.line, d.col) for d in diags]


def test_positions_of_values_and_keys_are_one_based() -> None:
    doc = _one("spec:\n  clusters:\n    - name: east\n      nodePools: []\n")
    assert doc.position(("spec", "clusters", 0, "name")) == (3, 13)
    assert doc.position(("spec", "clusters", 0, "name"), key=True) == (3, 7)
    assert doc.position(("spec", "clusters", 0)) == (3, 7)
    # a path that does not exist falls back to its nearest existing ancestor
    assert doc.position(("spec", "clusters", 0, "missing", 3)) == (3, 7)


def test_yaml_12_scalars_no_norway_problem() -> None:
    doc = _one("a: yes\nb: on\nc: 0o17\nd: 1_000\ne: 2024-01-01\nf: ~\ng: 1.5\nh: true\ni: '1'\n")
    assert doc.data == {
        "a": "yes",
        "b": "on",
        "c": 15,
        "d": 1000,
        "e": "2024-01-01",
        "f": None,
        "g": 1.5,
        "h": True,
        "i": "1",
    }


def test_multiple_documents_and_empty_ones_between_separators() -> None:
    docs, diags = load_text("a: 1\n---\n---\nb: 2\n", "f.yaml")
    assert diags == []
    assert [d.data for d in docs] == [{"a": 1}, {"b": 2}]
    assert [d.index for d in docs] == [0, 2]


def test_merge_keys_and_aliases_expand() -> None:
    doc = _one("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\n")
    assert doc.data["d"] == {"x": 1, "y": 3}


def test_utf8_bom_is_accepted() -> None:
    docs, diags = load_bytes("\ufeffa: é\n".encode(), "f.yaml")
    assert diags == [] and docs[0].data == {"a": "é"}


def test_duplicate_keys_are_reported_at_the_second_key() -> None:
    assert _codes("a: 1\nb:\n  c: 1\n  c: 2\n") == [("MIGC006", 4, 3)]


def test_bad_utf8_points_at_the_byte() -> None:
    assert _codes(b"a: 1\nb: caf\xe9\n") == [("MIGC003", 2, 7)]


def test_tab_indentation() -> None:
    assert _codes("a:\n\tb: 1\n") == [("MIGC004", 2, 1)]


def test_python_tags_are_never_constructed() -> None:
    # os.system would run at construction time; composing never constructs, so nothing runs
    docs, diags = load_text("a: !!python/object/apply:os.system ['exit 3']\n", "f.yaml")
    assert [(d.code, d.line, d.col) for d in diags] == [("MIGC007", 1, 4)]
    assert docs[0].data == {"a": None}


def test_billion_laughs_is_refused_by_counting_not_expanding() -> None:
    text = "l0: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"l{i}: &{chr(97 + i)} [{', '.join(['*' + chr(96 + i)] * 9)}]\n" for i in range(1, 9)
    )
    docs, diags = load_text(text, "f.yaml")
    assert docs == []
    assert [d.code for d in diags] == ["MIGC009"]
    assert str(load.MAX_ALIAS_NODES) in diags[0].message


def test_recursive_alias_is_refused() -> None:
    assert [c for c, _, _ in _codes("a: &x [1, *x]\n")] == ["MIGC009"]


def test_deep_nesting_is_refused_before_composing() -> None:
    assert [c for c, _, _ in _codes("a: " + "[" * 3000 + "]" * 3000 + "\n")] == ["MIGC008"]


def test_nesting_at_the_limit_is_fine() -> None:
    depth = load.MAX_DEPTH - 1  # plus the top-level mapping
    doc = _one("a: " + "[" * depth + "]" * depth + "\n")
    assert isinstance(doc.data["a"], list)


def test_too_many_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load, "MAX_DOCUMENTS", 3)
    assert [c for c, _, _ in _codes("a: 1\n---\nb: 1\n---\nc: 1\n---\nd: 1\n")] == ["MIGC010"]


def test_file_too_large_is_refused_without_parsing() -> None:
    raw = b"a: " + b"x" * load.MAX_FILE_BYTES + b"\n"
    assert _codes(raw) == [("MIGC002", 0, 0)]


def test_large_file_on_disk_is_refused_from_its_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load, "MAX_FILE_BYTES", 10)
    (tmp_path / "big.yaml").write_text("a: 12345678901234567890\n")
    docs, diags = load_paths([tmp_path / "big.yaml"])
    assert docs == [] and [d.code for d in diags] == ["MIGC002"]


@pytest.mark.parametrize(
    ("text", "code", "line", "col"),
    [
        ("a: 'abc\nb: 2\n", "MIGC005", 1, 4),  # unclosed quote: where it opened
        ("a: [1, 2\nb: 3\n", "MIGC005", 2, 2),
        ("a: *nope\n", "MIGC005", 1, 4),
        ("? [a]\n: 1\n", "MIGC014", 1, 3),
        ("", "MIGC012", 1, 1),
        ("# only a comment\n", "MIGC012", 1, 1),
    ],
)
def test_malformed_yaml_is_a_positioned_diagnostic(text: str, code: str, line: int, col: int) -> None:
    assert _codes(text) == [(code, line, col)]


def test_expand_paths_sorts_dedupes_and_skips_hidden(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / ".git").mkdir()
    for name in ("b/z.yml", "a.yaml", "notes.txt", ".git/x.yaml"):
        (tmp_path / name).write_text("a: 1\n")
    files, diags = expand_paths([tmp_path, tmp_path / "a.yaml"])
    assert diags == []
    assert [f.name for f in files] == ["a.yaml", "z.yml"]


def test_missing_path_and_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    _, diags = load_paths([tmp_path / "nope.yaml", tmp_path / "empty"])
    assert sorted(d.code for d in diags) == ["MIGC001", "MIGC013"]


def test_unreadable_file_is_a_diagnostic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "a.yaml"
    target.write_text("a: 1\n")

    def deny(*_args: object, **_kwargs: object) -> object:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(load, "read_bounded", deny)  # the tests run as root: chmod would not deny
    docs, diags = load_paths([target])
    assert docs == [] and [d.code for d in diags] == ["MIGC001"]
    assert "Permission denied" in diags[0].message


def test_json_path() -> None:
    assert json_path(()) == "$"
    expected = "$.spec.clusters[0].nodePools[1].name"
    assert json_path(("spec", "clusters", 0, "nodePools", 1, "name")) == expected
    assert json_path(("spec", "profiles", "1g.10gb")) == "$.spec.profiles['1g.10gb']"


def test_registry_texts_state_the_real_limits() -> None:
    from compiler.diagnostics import registry

    codes = registry()
    assert str(load.MAX_ALIAS_NODES) in codes["MIGC009"].explanation.replace(",", "")
    assert str(load.MAX_DEPTH) in codes["MIGC008"].explanation
    assert str(load.MAX_DOCUMENTS) in codes["MIGC010"].explanation
    assert f"{load.MAX_FILE_BYTES // (1024 * 1024)} MiB" in codes["MIGC002"].explanation
