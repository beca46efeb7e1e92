"""The catalog's data files are read with libyaml's safe loader where PyYAML has it
(compiler/catalog ``load_data``); it must build exactly what the pure-Python safe loader builds."""

from __future__ import annotations

from importlib import resources

import pytest
import yaml

from compiler import catalog

DATA = sorted(
    (
        item
        for item in resources.files("compiler.catalog").joinpath("data").iterdir()
        if item.name.endswith(".yaml")
    ),
    key=lambda item: item.name,
)


def test_the_catalog_has_data_files() -> None:
    assert len(DATA) >= 10


@pytest.mark.parametrize("item", DATA, ids=lambda item: item.name)
def test_c_loader_equals_pure_loader(item: object) -> None:
    text = item.read_text(encoding="utf-8")  # type: ignore[attr-defined]
    pure = yaml.load(text, Loader=yaml.SafeLoader)
    fast = catalog.load_data(text)
    assert fast == pure
    assert repr(fast) == repr(pure)  # same types too (int vs float, key order)


def test_the_fast_loader_is_libyaml_where_pyyaml_has_it() -> None:
    with_libyaml = bool(getattr(yaml, "__with_libyaml__", False))
    assert catalog._DataLoader is (yaml.CSafeLoader if with_libyaml else yaml.SafeLoader)


@pytest.mark.parametrize("item", DATA, ids=lambda item: item.name)
def test_every_shipped_file_passes_the_fast_schema_check(item: object) -> None:
    raw = catalog.load_data(item.read_text(encoding="utf-8"))  # type: ignore[attr-defined]
    assert catalog._schema_errors(raw) == []
    assert catalog._fast_valid(raw)


def test_a_broken_file_still_gets_jsonschemas_error() -> None:
    raw = catalog.load_data(DATA[0].read_text(encoding="utf-8"))
    raw["profiles"][0]["maxCount"] = "seven"
    assert not catalog._fast_valid(raw)
    with pytest.raises(catalog.CatalogError, match=r"profiles/0/maxCount: 'seven' is not of type 'integer'"):
        catalog.parse_model(raw, DATA[0].name)
