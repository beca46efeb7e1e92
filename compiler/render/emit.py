"""Deterministic YAML and JSON emitters for everything ``migc compile`` writes.

Byte-identical output is part of the output contract (reviewers diff ``output/`` in pull requests,
``migc compile --check`` compares bytes), so every setting that could vary is fixed here once:
PyYAML's safe dumper, insertion order kept (the builders put keys in canonical Kubernetes order:
``apiVersion, kind, metadata, spec/data``), two-space indent, no line wrapping, block style, LF
line endings and one trailing newline. Multi-line strings (embedded config files) are emitted as
literal blocks so the ConfigMaps stay readable in a diff.

Speed: PyYAML's pure-Python emitter was most of the render time of a large fleet (1.44 s of 2.3 s
at 80,000 GPUs), so documents go through libyaml (PyYAML's ``CSafeDumper``, same representers)
when PyYAML was built with it. The two emitters differ on a few inputs, found by a differential
property test (tests/unit/compiler/render/test_emit.py): a key that is empty, multi-line, 128 characters or
longer or otherwise not a plain simple key (PyYAML writes ``? key``), U+0085 and characters beyond
the BMP (libyaml escapes them), and a ``|+`` block that makes libyaml close the document with
``...``. Such documents take the pure-Python emitter, so the bytes never depend on which emitter
ran.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    """Safe dumper that never emits anchors/aliases: repeated sub-objects are written out in full."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


class FlowList(list[Any]):
    """A list written inline (``[0, 1, 2]``): short scalar lists read better that way in configs."""


def _represent_flow_list(dumper: yaml.SafeDumper, value: FlowList) -> yaml.SequenceNode:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", list(value), flow_style=True)


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


def _represent_dict(dumper: yaml.SafeDumper, value: Mapping[Any, Any]) -> yaml.MappingNode:
    # Keys keep the builder's order: canonical Kubernetes order is not alphabetical.
    return dumper.represent_mapping("tag:yaml.org,2002:map", list(value.items()))


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(dict, _represent_dict)
_Dumper.add_representer(FlowList, _represent_flow_list)

_CSafeDumper: type[Any] | None = getattr(yaml, "CSafeDumper", None)
_FastDumper: type[Any] | None = None
if _CSafeDumper is not None:

    class _LibyamlDumper(_CSafeDumper):  # type: ignore[misc, valid-type]
        """libyaml's emitter with the representers of ``_Dumper``."""

        def ignore_aliases(self, data: Any) -> bool:
            return True

    _LibyamlDumper.add_representer(str, _represent_str)
    _LibyamlDumper.add_representer(dict, _represent_dict)
    _LibyamlDumper.add_representer(FlowList, _represent_flow_list)
    _FastDumper = _LibyamlDumper

# Keys both emitters write as the same plain or quoted simple key.
_SIMPLE_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/+\-]{0,126}")
# Characters libyaml escapes where PyYAML writes them (NEL and every non-BMP character).
_EMITTERS_DIFFER = re.compile("[\x85\U00010000-\U0010ffff]")


def _libyaml_safe(data: Any) -> bool:
    """Whether libyaml writes ``data`` byte for byte as PyYAML's pure-Python emitter does."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _EMITTERS_DIFFER.search(item):
                return False
        elif isinstance(item, dict):
            for key, value in item.items():
                if not isinstance(key, str) or not _SIMPLE_KEY.fullmatch(key):
                    return False
                stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return True


_OPTIONS: dict[str, Any] = {
    "default_flow_style": False,
    "allow_unicode": True,
    "sort_keys": False,
    "indent": 2,
    "width": 4096,
    "line_break": "\n",
    "explicit_start": False,
}


def dump_yaml(data: Any) -> str:
    """One YAML document (a mapping), no ``---`` marker, ending in exactly one newline."""
    if _FastDumper is not None and isinstance(data, dict) and _libyaml_safe(data):
        text: str = yaml.dump(data, Dumper=_FastDumper, **_OPTIONS)
        if not text.endswith("\n...\n"):
            return text.rstrip("\n") + "\n"
    return dump_yaml_pure(data)


def dump_yaml_pure(data: Any) -> str:
    """``dump_yaml`` through PyYAML's pure-Python emitter: the reference the fast path matches, and
    the path for documents libyaml would write differently."""
    text: str = yaml.dump(data, Dumper=_Dumper, **_OPTIONS)
    return text.rstrip("\n") + "\n"


def dump_json(data: Any) -> str:
    """Canonical, human-readable JSON: sorted keys, two-space indent, trailing newline.

    The bytes are ``json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)``
    plus a newline. ``json`` runs its pure-Python encoder whenever ``indent`` is set (its C encoder
    writes compact JSON only), which took 0.3 s for the 10,000-node assignment of an 80k-GPU fleet;
    the writer below builds the same text with each string through ``json``'s own C string encoder,
    and hands anything beyond str-keyed objects, arrays, strings, finite numbers, booleans and null
    back to ``json.dumps`` (tests/test_render_emit_json.py holds the two equal).
    """
    try:
        out: list[str] = []
        _indented(data, "\n", out)
        return "".join(out) + "\n"
    except (_Unusual, RecursionError):
        return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


class _Unusual(Exception):
    """A value the fast JSON writer leaves to ``json.dumps`` (which formats or refuses it)."""


_encode_str = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) uses for strings


def _indented(value: Any, newline: str, out: list[str]) -> None:
    """Append ``value`` as ``json.dumps(indent=2, sort_keys=True)`` writes it at the depth whose
    line break and indentation is ``newline``."""
    if isinstance(value, str):
        out.append(_encode_str(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise _Unusual  # json.dumps refuses it (allow_nan=False)
        out.append(float.__repr__(value))
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = newline + "  "
        sep = "{" + inner
        for key in value:
            if not isinstance(key, str):
                raise _Unusual  # json converts (or refuses) other keys
        for key, item in sorted(value.items()):
            out.append(sep + _encode_str(key) + ": ")
            _indented(item, inner, out)
            sep = "," + inner
        out.append(newline + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        sep = "[" + inner
        for item in value:
            out.append(sep)
            _indented(item, inner, out)
            sep = "," + inner
        out.append(newline + "]")
    else:
        raise _Unusual


def canonical_json(data: Any) -> str:
    """The compact canonical form that content hashes are taken over."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def header(version: str, source_label: str) -> str:
    """The generated-file banner; follows Go's ``Code generated ... DO NOT EDIT.`` convention."""
    return (
        f"# Code generated by migc {version} from {source_label}. DO NOT EDIT.\n"
        '# Edit the policy and run "migc compile" to regenerate.\n'
    )
