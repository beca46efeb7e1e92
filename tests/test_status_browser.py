"""The HTML console in a real browser: Debian's ``chromium`` in headless mode.

The page is rendered from a snapshot of the example fleet, then (1) screenshotted and checked not to
be blank (pixel variance of the decoded PNG), and (2) dumped as the DOM the browser built, where every
GPU of the fleet must be drawn and one GPU's hover data (``title`` and ``data-*``) must be right.
Skipped only when no chromium binary exists (CI installs it: see .ci/run).
"""

from __future__ import annotations

import html as htmllib
import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import statusfleet as sf

from compiler.cli import main

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = next(
    (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None
)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (apt-get install chromium)")


def chromium(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",  # CI runs as root in a container, where the sandbox cannot start
        "--disable-gpu",
        "--hide-scrollbars",
        f"--user-data-dir={tmp / 'profile'}",
        *args,
    ]
    env = {**os.environ, "HOME": str(tmp)}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, check=True)


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the unfiltered rows of an 8-bit RGB/RGBA non-interlaced PNG (PNG spec §9)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert header is not None
    width, height, depth, colour, _c, _f, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 0xFF
            elif f == 2:
                line[i] = (line[i] + b) & 0xFF
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line if bpp == 3 else bytes(v for j, v in enumerate(line) if j % 4 != 3)))
        prev = line
    return width, height, rows


class Gpus(HTMLParser):
    """Collects every div.gpu and the div.slot elements inside it from the browser's DOM dump."""

    def __init__(self) -> None:
        super().__init__()
        self.gpus: list[dict[str, Any]] = []
        self._depth = 0
        self._in: dict[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag != "div":
            return
        if self._in is not None:
            self._depth += 1
            if "slot" in a.get("class", "").split():
                self._in["slots"].append(a)
        elif a.get("class") == "gpu":
            self._in, self._depth = {**a, "slots": []}, 0

    def handle_endtag(self, tag: str) -> None:
        if tag != "div" or self._in is None:
            return
        if self._depth == 0:
            self.gpus.append(self._in)
            self._in = None
        else:
            self._depth -= 1


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("console")
    snap = sf.write_snapshot(tmp / "cluster.json")
    html = tmp / "status.html"
    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        rc = main(sf.status_argv("--snapshot", str(snap), "--html", str(html)))
    finally:
        os.chdir(cwd)
    assert rc == 0
    return html


def test_screenshot_is_not_blank(page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    chromium("--window-size=1280,900", f"--screenshot={shot}", page.as_uri(), tmp=tmp_path)
    width, height, rows = png_pixels(shot.read_bytes())
    assert (width, height) == (1280, 900)
    pixels = [r[i : i + 3] for r in rows[::4] for i in range(0, len(r), 12)]
    lum = [0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2] for p in pixels]
    mean = sum(lum) / len(lum)
    variance = sum((v - mean) ** 2 for v in lum) / len(lum)
    assert variance > 200, f"screenshot looks blank (luminance variance {variance:.1f})"
    # the tenant colours are on screen: at least one pixel of the first palette colour (#0072B2)
    assert any(abs(p[0] - 0x00) < 8 and abs(p[1] - 0x72) < 8 and abs(p[2] - 0xB2) < 8 for p in pixels)


def test_dom_draws_every_gpu_with_hover_data(page: Path, tmp_path: Path) -> None:
    dom = chromium("--dump-dom", page.as_uri(), tmp=tmp_path).stdout
    parser = Gpus()
    parser.feed(dom)
    doc = sf.prod_assignment()
    expected = {
        (node, i)
        for node, (_p, cfg, _l) in sf.node_names(doc).items()
        for i in range(len(doc["configs"][cfg]["devices"]))
    }
    drawn = {(g["data-node"], int(g["data-gpu"])) for g in parser.gpus}
    assert drawn == expected and len(parser.gpus) == len(expected) == 80
    # one GPU in detail: gpu-a100-use1-04 GPU 2 carries its config's instances; pods fill them in name order
    node, cfg = "gpu-a100-use1-04", sf.node_names(doc)["gpu-a100-use1-04"][1]
    device = doc["configs"][cfg]["devices"][2]
    gpu = next(g for g in parser.gpus if g["data-node"] == node and g["data-gpu"] == "2")
    assert gpu["data-mig"] == "true" and gpu["data-model"] == "A100-SXM4-80GB"
    instances = [s for s in gpu["slots"] if s["data-resource"]]
    want = sorted(
        "nvidia.com/mig-" + p.replace("+", ".") for p, n in device["profiles"].items() for _ in range(n)
    )
    assert sorted(s["data-resource"] for s in instances) == want
    for s in instances:
        if s["data-pod"]:
            ns = s["data-pod"].split("/")[0]
            tenant = {"search": "search", "fraud": "fraud-detection", "speech": "speech"}[ns]
            assert s["data-tenant"] == tenant
            profile = s["data-resource"].removeprefix("nvidia.com/mig-")
            assert s["title"] == f"{node} GPU 2: {profile} — tenant {tenant}, pod {s['data-pod']}"
        else:
            assert s["title"].endswith(" free") and s["data-tenant"] == ""


# Measures the laid-out page in the browser and writes what it found into the DOM, which
# --dump-dom then returns (issue 25, item 14): a slot whose label does not fit (cut to "1g."), a GPU
# index caption that covers another GPU box or a node heading.
MEASURE = """
<script>
addEventListener('load', () => {
  const boxes = [...document.querySelectorAll('.gpu, .node h3')].map(e => [e, e.getBoundingClientRect()]);
  const hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const out = [];
  for (const s of document.querySelectorAll('.slot')) {
    if (s.textContent && (s.scrollWidth > s.clientWidth || s.scrollHeight > s.clientHeight)) {
      out.push('clipped ' + s.textContent);
    }
  }
  for (const i of document.querySelectorAll('.gpu .idx')) {
    const r = i.getBoundingClientRect();
    for (const [e, b] of boxes) {
      if (e !== i.parentElement && hit(r, b)) {
        out.push('caption over ' + (e.dataset.node || e.textContent));
      }
    }
  }
  document.body.setAttribute('data-layout', JSON.stringify(out));
});
</script>
"""


def test_labels_fit_and_captions_overlap_nothing(page: Path, tmp_path: Path) -> None:
    html = page.read_text(encoding="utf-8")
    # the console's CSP allows no script; this measuring copy allows its one inline script
    csp = "default-src 'none'; style-src 'unsafe-inline'"
    html = html.replace(csp, "script-src 'unsafe-inline'; style-src 'unsafe-inline'")
    measured = tmp_path / "measured.html"
    measured.write_text(html.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dom = chromium(
        "--window-size=1280,900", "--virtual-time-budget=5000", "--dump-dom", measured.as_uri(), tmp=tmp_path
    ).stdout
    found = re.search(r'<body data-layout="([^"]*)"', dom)
    assert found is not None, "the measuring script did not run"
    problems = json.loads(htmllib.unescape(found.group(1)))
    assert problems == []
