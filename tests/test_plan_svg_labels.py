"""Plan SVGs never cut an instance's name (``1g.10gb+me`` was drawn as ``.10gb+r`` in a 1-slice box):
every label fits its box at about 0.6 em per character, or is squeezed to it with ``textLength``,
and the lines of a box together spell the instance's name (issue 25, item 14)."""

from __future__ import annotations

import re
from pathlib import Path
from xml.etree import ElementTree

import pytest

from compiler.cli import main

ROOT = Path(__file__).resolve().parents[1]
NS = "{http://www.w3.org/2000/svg}"


def test_every_instance_label_fits_its_box(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svg = tmp_path / "svg"
    assert main(["plan", str(ROOT / "examples" / "prod"), "--from-scratch", "--svg", str(svg)]) == 0
    capsys.readouterr()
    checked = set()
    for path in sorted(svg.glob("*.svg")):
        root = ElementTree.parse(path).getroot()
        boxes = [r for r in root.iter(f"{NS}rect") if r.find(f"{NS}title") is not None]
        texts = [t for t in root.iter(f"{NS}text") if t.get("fill") == "#fff"]
        for box in boxes:
            name = box.findtext(f"{NS}title", "").split(" at slice ")[0]
            x, width = float(box.get("x", 0)), float(box.get("width", 0))
            inside = [t for t in texts if x <= float(t.get("x", 0)) <= x + width and abs(
                float(t.get("y", 0)) - float(box.get("y", 0)) - 9) <= 10]
            assert "".join(t.text or "" for t in inside) == name, (path.name, name)
            for t in inside:
                estimate = 0.6 * float(t.get("font-size", 11)) * len(t.text or "")
                assert estimate <= width - 2 or t.get("textLength"), (path.name, name, t.text)
            checked.add(name)
    assert "1g.10gb+me" in checked and "1g.10gb" in checked
    assert re.search(r"7g\.\d+gb", " ".join(checked))
