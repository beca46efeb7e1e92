"""compiler/status/html.py: the static console -- no script or fetch, every value escaped, each GPU
a box of slots coloured by tenant, warnings where a reader must look."""

from __future__ import annotations

from dataclasses import replace
from html.parser import HTMLParser

from compiler.status.html import FREE, NO_TENANT_COLOUR, PALETTE, tenant_colours, to_html
from compiler.status.model import GpuView, Slot
from unit.compiler.status.test_report import MIG, NODE, STATUS

HOSTILE = '<script>alert("x")</script>'


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(page)
    return parser.tags


def _gpu(*slots: Slot, known: bool = True) -> GpuView:
    return GpuView(index=0, mig_enabled=True, slots=slots, known=known)


def _with_gpus(*gpus: GpuView) -> str:
    return to_html(replace(STATUS, nodes=(replace(NODE, gpus=gpus),)))


def test_the_page_fetches_and_runs_nothing() -> None:
    page = to_html(STATUS)
    tags = _tags(page)
    assert not [t for t, _ in tags if t in ("script", "link", "img", "iframe")]
    (csp,) = [a for t, a in tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp["content"] == "default-src 'none'; style-src 'unsafe-inline'"
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</body></html>\n")


def test_slots_carry_their_tenant_pod_and_usage_as_attributes() -> None:
    held = Slot(
        MIG, 0.0, 1 / 7, 1 / 7, tenant="search", pod="search/bert-0", engine_active=0.5, memory_used_mib=900
    )
    free = Slot(MIG, 1 / 7, 1 / 7, 1 / 7)
    uncovered = Slot("", 6 / 7, 1 / 8, 0.0)
    slots = [
        a for t, a in _tags(_with_gpus(_gpu(held, free, uncovered))) if t == "div" and "data-resource" in a
    ]
    assert [s["class"] for s in slots] == ["slot", "slot free", "slot free"]
    assert slots[0]["data-tenant"] == "search" and slots[0]["data-pod"] == "search/bert-0"
    assert slots[0]["data-engine-active"] == "0.5000" and slots[0]["data-memory-used-mib"] == "900"
    assert slots[0]["title"] == (
        "a100-01 GPU 0: 1g.10gb — tenant search, pod search/bert-0, engine active 50%, memory used 900 MiB"
    )
    assert slots[1]["title"] == "a100-01 GPU 0: 1g.10gb free" and f"background:{FREE}" in (
        slots[1]["style"] or ""
    )
    assert slots[2]["title"] == "a100-01 GPU 0: memory slice no MIG instance covers"
    assert (slots[0]["style"] or "").startswith("left:0.0000%;width:14.2857%;")


def test_every_value_is_escaped() -> None:
    page = _with_gpus(_gpu(Slot(MIG, 0.0, 1.0, 1.0, tenant="search", pod=HOSTILE)))
    assert HOSTILE not in page
    (slot,) = [a for t, a in _tags(page) if t == "div" and "data-resource" in a]
    assert slot["data-pod"] == HOSTILE  # the attribute reads back as the value itself
    assert "script" not in [t for t, _ in _tags(page)]


def test_an_unknown_layout_says_so_instead_of_drawing_slots() -> None:
    page = _with_gpus(_gpu(known=False))
    assert '<div class="unknown">layout of migc-a100-7x1g unknown</div>' in page


def test_tenants_get_palette_colours_in_order_and_podless_tenants_grey() -> None:
    stray = Slot(MIG, 0.0, 0.5, 0.5, tenant="-", pod="kube-system/x")
    other = Slot(MIG, 0.5, 0.5, 0.5, tenant="vision", pod="vision/y")
    status = replace(STATUS, nodes=(replace(NODE, gpus=(_gpu(stray, other),)),))
    colours = tenant_colours(status)
    assert list(colours) == ["search", "-", "vision"]  # the policy's tenants first, then as seen
    assert colours["search"] == PALETTE[0] and colours["-"] == NO_TENANT_COLOUR
    assert colours["vision"] in PALETTE and colours["vision"] != colours["search"]


def test_rollouts_drift_late_pods_and_missing_nodes_are_flagged() -> None:
    page = to_html(STATUS)
    assert '<span class="warn">Draining</span>' in page
    assert '<span class="warn">drift: carries migc-a100-7x1g, assigned migc-a100-balanced</span>' in page
    assert '<td><span class="warn">3h05m</span></td>' in page  # pending 3h05m, max wait 15m
    assert "<p>Not found in the cluster: a100-02</p>" in page
    assert "Pending GPU pods (1)" in page
