"""compiler/plan/svg.py: one well-formed picture per changed node, slices where the GPU puts them."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from test_render_support import BALANCED, WHOLE

from compiler.catalog import load_catalog
from compiler.plan.data import NodeChange
from compiler.plan.svg import svg_files, svg_name, to_svg
from unit.compiler.plan.plans import two_node_change

NS = "{http://www.w3.org/2000/svg}"


def _texts(svg: str) -> list[str]:
    return [t.text or "" for t in ET.fromstring(svg).iter(f"{NS}text")]


def _titles(svg: str) -> list[str]:
    return [t.text or "" for t in ET.fromstring(svg).iter(f"{NS}title")]


def test_each_gpu_is_a_row_and_changed_gpus_are_marked() -> None:
    change = NodeChange("east", "a100", "n1", "A100-SXM4-80GB", (WHOLE, WHOLE), (BALANCED, WHOLE), (0,), "r")
    svg = to_svg(change, load_catalog().get("A100-SXM4-80GB"))
    texts = _texts(svg)
    assert "GPU 0 *" in texts and "GPU 1" in texts and "GPU 1 *" not in texts
    assert texts.count("whole GPU") == 3  # before: both GPUs; after: GPU 1
    assert texts[-3:] == ["3g.40gb", "2g.20gb", "1g.10gb"]  # legend, largest first


def test_instances_sit_at_slices_the_gpu_allows() -> None:
    change = NodeChange("east", "a100", "n1", "A100-SXM4-80GB", None, (BALANCED,), (0,), "new")
    titles = _titles(to_svg(change, load_catalog().get("A100-SXM4-80GB")))
    assert titles[0] == "east/n1: MIG layout before and after"
    placed = sorted(titles[1:])
    assert len(placed) == 4  # 2x 1g.10gb + 2g.20gb + 3g.40gb
    size = {"1g.10gb": 1, "2g.20gb": 2, "3g.40gb": 4}  # memory slices of each on an A100-80GB
    at = [(name, int(start)) for name, start in (t.split(" at slice ") for t in placed)]
    slices = [s for name, start in at for s in range(start, start + size[name])]
    assert sorted(slices) == list(range(8))  # the four instances fill the 8 slices without overlap
    starts = dict(at)
    assert starts["3g.40gb"] in (0, 4)  # A100-80GB: a 3g instance starts at memory slice 0 or 4
    assert starts["2g.20gb"] in (0, 2, 4)
    assert "not deployed" in _texts(to_svg(change, None))  # no catalog model: still drawn


def test_names_are_escaped() -> None:
    change = NodeChange("a&b", "p<1>", "n1", "X", None, (WHOLE,), (0,), "new")
    svg = to_svg(change, None)
    ET.fromstring(svg)  # well-formed despite the markup characters
    assert "n1 (p<1>, X)" in _texts(svg)


def test_svg_files_names_one_file_per_changed_node() -> None:
    plan = two_node_change()
    files = svg_files(plan, load_catalog())
    assert sorted(files) == ["east-a100-01.svg", "east-a100-02.svg"]
    assert svg_name(plan.changes[0]) == "east-a100-01.svg"
    assert all(text.startswith("<svg ") and text.endswith("</svg>\n") for text in files.values())
