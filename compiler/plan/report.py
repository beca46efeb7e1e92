"""The forms of a :class:`~compiler.plan.data.Plan` on stdout: one home per result.

``FORMATS`` maps each ``migc plan -o`` choice to the function that writes it (conftest's
``output.Get(format)``, check-jsonschema's ``reporter.py``): ``text`` for a terminal, ``markdown``
for the pull-request review (linking the ``--svg`` pictures), ``json`` for tools. Each takes the
plan and the :class:`View` the reader asked for; the writers themselves are :mod:`.text`,
:mod:`.markdown` and :mod:`.json`, which share :mod:`.formatting`. The SVG pictures are files
(``--svg DIR``, :mod:`.svg`), not a stdout format.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from compiler.plan.data import Plan
from compiler.plan.json import to_json
from compiler.plan.markdown import to_markdown
from compiler.plan.text import to_text


@dataclass(frozen=True)
class View:
    """How the reader asked to see the plan: every changed GPU (``--detail``) rather than identical
    nodes and GPUs grouped, and the ``--svg`` directory the markdown links its pictures from."""

    detail: bool = False
    svg_dir: str | None = None


def _text(plan: Plan, view: View) -> str:
    return to_text(plan, detail=view.detail)


def _markdown(plan: Plan, view: View) -> str:
    return to_markdown(plan, view.svg_dir, detail=view.detail)


def _json(plan: Plan, view: View) -> str:
    return to_json(plan)  # every change is listed: --detail changes nothing for a tool


Format = Callable[[Plan, View], str]
FORMATS: Mapping[str, Format] = {"text": _text, "markdown": _markdown, "json": _json}
