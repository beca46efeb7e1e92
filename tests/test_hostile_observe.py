"""Hostile cluster data (issue 24): what pods and nodes say is bounded and validated at the edge.

Anyone with patch rights on a pod or a node writes what `migc status` and `migc recommend` read.
Every class of value below once crashed a command (exit 70), allocated per unit of a claimed
quantity, or reached demand and state under a name no profile has. Each test runs the parser or
the whole command on such a value and checks the documented outcome: a MIGC402 warning naming
the object, the value left out, the rest shown.
"""

from __future__ import annotations

import copy
import datetime as dt
import html.parser
import json
from dataclasses import fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import statusfleet as sf
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.cli import main
from compiler.escape import terminal
from compiler.observe.parse import (
    MAX_GPUS_PER_NODE,
    MAX_NODE_INSTANCES,
    MAX_POD_INSTANCES,
    parse_node,
    parse_objects,
    parse_pod,
    parse_time,
)
from compiler.observe.quantity import parse_count
from compiler.status import to_html, to_text
from compiler.status.model import FleetStatus

ROOT = Path(__file__).resolve().parents[1]
NOW = dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.UTC)

# Quantities that once crashed `_count` (str.isdigit accepts "²"; int() refuses 5,000 digits) or
# allocated one list entry per claimed unit.
HOSTILE_QUANTITIES = ["²", "9" * 5000, "9" * 22, "1e9", "1e300", "-1", "0.5", "1e-3", "NaN", "inf", "1Ei"]


def gpu_pod(
    quantity: Any, resource: str = "nvidia.com/mig-1g.10gb", node: str | None = None
) -> dict[str, Any]:
    p = sf.pod("p", "search", resource, node=node)
    p["spec"]["containers"][0]["resources"]["limits"][resource] = quantity
    return p


@pytest.mark.parametrize(
    ("value", "limit", "expected"),
    [
        ("1", 10, 1),
        ("2k", 5000, 2000),
        ("1e3", 5000, 1000),
        ("2Ki", 5000, 2048),
        (" 7 ", 10, 7),
        ("0", 10, 0),
        (3, 10, 3),
        (3.0, 10, 3),
        ("1.5k", 5000, 1500),
        ("1500m", 5, 1),  # apimachinery: 1500m is 1.5 → not whole
    ],
)
def test_kubernetes_quantities_are_parsed(value: Any, limit: int, expected: int) -> None:
    n, why = parse_count(value, limit)
    if value == "1500m":
        assert n is None and "whole" in why
    else:
        assert (n, why) == (expected, "")


@pytest.mark.parametrize("value", [*HOSTILE_QUANTITIES, True, None, [], {}, float("nan"), 10**30])
def test_hostile_quantities_are_refused_with_a_reason(value: Any) -> None:
    n, why = parse_count(value, MAX_POD_INSTANCES)
    assert n is None and why


@given(st.text(max_size=80) | st.integers() | st.floats(allow_nan=True, allow_infinity=True))
@settings(max_examples=300, deadline=None)
def test_parse_count_is_total_and_bounded(value: Any) -> None:
    n, why = parse_count(value, 4096)
    assert (n is None) == bool(why)
    assert n is None or 0 <= n <= 4096


@pytest.mark.parametrize("quantity", HOSTILE_QUANTITIES)
def test_a_running_pods_hostile_quantity_is_a_warning_not_a_crash(quantity: str) -> None:
    pod, diags = parse_pod(gpu_pod(quantity, node="n1"), NOW, "snap.json")
    assert pod is None  # its only GPU request is unusable
    assert [d.code for d in diags] == ["MIGC402"]
    assert "pod search/p" in diags[0].message and len(diags[0].message) < 400


def test_a_claim_beyond_the_pod_bound_is_left_out() -> None:
    pod, diags = parse_pod(gpu_pod(str(MAX_POD_INSTANCES + 1)), NOW)
    assert pod is None and f"{MAX_POD_INSTANCES:,}" in diags[0].message
    pod, diags = parse_pod(gpu_pod(str(MAX_POD_INSTANCES)), NOW)
    assert pod is not None and pod.requests == (("nvidia.com/mig-1g.10gb", MAX_POD_INSTANCES),) and not diags


def test_containers_that_sum_past_the_bound_are_left_out() -> None:
    p = gpu_pod(str(MAX_POD_INSTANCES))
    p["spec"]["containers"].append(copy.deepcopy(p["spec"]["containers"][0]))
    pod, diags = parse_pod(p, NOW)
    assert pod is None and "in all" in diags[0].message


def test_an_unknown_mig_resource_is_reported_once_with_the_pod() -> None:
    items = [gpu_pod("1", "nvidia.com/mig-foo") for _ in range(1)]
    items += [
        {**gpu_pod("1", "nvidia.com/mig-foo"), "metadata": {"name": f"q{i}", "namespace": "search"}}
        for i in range(3)
    ]
    _, pods, diags, _ = parse_objects([(o, "snap.json") for o in items], NOW)
    assert pods == ()  # nothing reaches demand or state
    assert [d.code for d in diags] == ["MIGC402"]
    assert "'nvidia.com/mig-foo'" in diags[0].message and "pod search/p" in diags[0].message
    assert "3 more" in diags[0].message


def test_a_known_profile_next_to_an_unknown_one_still_counts() -> None:
    p = gpu_pod("2")
    p["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-students.foo"] = "1"
    _, pods, diags, _ = parse_objects([(p, "")], NOW)
    assert pods[0].requests == (("nvidia.com/mig-1g.10gb", 2),)
    assert len(diags) == 1 and "mig-students.foo" in diags[0].message


def node_with(
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    allocatable: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": "n1", "labels": labels or {}, "annotations": annotations or {}},
        "status": {"allocatable": allocatable or {}},
    }


@pytest.mark.parametrize("value", ["1e7", "1e22", "9" * 5000, "²", "-3", str(MAX_GPUS_PER_NODE + 1)])
def test_gpu_count_label_is_bounded(value: str) -> None:
    node, diags = parse_node(node_with(labels={"nvidia.com/gpu.count": value}))
    assert node is not None and node.gpu_count is None
    assert [d.code for d in diags] == ["MIGC402"] and "nvidia.com/gpu.count" in diags[0].message


@pytest.mark.parametrize("value", ["²", "9" * 5000, "9" * 22, "1e300"])
def test_attempts_annotation_and_allocatable_are_bounded(value: str) -> None:
    node, diags = parse_node(
        node_with(annotations={"migc.dev/attempts": value}, allocatable={"nvidia.com/mig-1g.10gb": value})
    )
    assert node is not None and node.rollout.attempts == 0 and node.allocatable == ()
    assert len(diags) == 2 and all(d.code == "MIGC402" for d in diags)


def test_allocatable_bound() -> None:
    node, _ = parse_node(node_with(allocatable={"nvidia.com/gpu": str(MAX_NODE_INSTANCES)}))
    assert node is not None and node.allocatable == (("nvidia.com/gpu", MAX_NODE_INSTANCES),)
    node, diags = parse_node(node_with(allocatable={"nvidia.com/gpu": str(MAX_NODE_INSTANCES + 1)}))
    assert node is not None and node.allocatable == () and diags


@pytest.mark.parametrize(
    "value",
    [
        "2026-13-45T25:61:61Z",
        "0000-01-01T00:00:00Z",
        "9999-12-31T23:59:59-23:59",
        "2026-12-01",
        "yesterday",
        "2026-12-01T06:00:00",
        "+2026-12-01T06:00:00Z",
        "2026-12-01T06:00:00Z" + "0" * 5000,
    ],
)
def test_timestamps_are_strict_and_bounded(value: str) -> None:
    assert parse_time(value) is None
    p = sf.pod("p", "search", "nvidia.com/mig-1g.10gb", created=value)
    pod, diags = parse_pod(p, NOW)
    assert pod is not None and pod.created is None and pod.pending_seconds is None
    assert [d.code for d in diags] == ["MIGC402"]


def test_good_timestamps_still_parse() -> None:
    assert parse_time("2026-12-01T06:00:00Z") == NOW
    assert parse_time("2026-12-01T07:00:00.5+01:00") == NOW + dt.timedelta(seconds=0.5)


@given(st.text(max_size=40))
@settings(max_examples=300, deadline=None)
def test_parse_time_is_total(value: str) -> None:
    t = parse_time(value)
    assert t is None or t.tzinfo is not None


# --- status, end to end -------------------------------------------------------------------------


@pytest.fixture()
def at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


class Run:
    def __init__(self, rc: int, stdout: str, stderr: str) -> None:
        self.exit_code, self.stdout, self.stderr = rc, stdout, stderr
        self.output = stdout + stderr


def run_status(
    tmp_path: Path, cluster: dict[str, Any], capsys: pytest.CaptureFixture[str], *args: str
) -> Run:
    snap = sf.write_snapshot(tmp_path / "snap.json", cluster)
    rc = main(sf.status_argv("--snapshot", str(snap), *args))
    out, err = capsys.readouterr()
    return Run(rc, out, err)


@pytest.mark.usefixtures("at_repo_root")
@pytest.mark.parametrize("quantity", ["1e9", "1e11", "²", "9" * 5000])
def test_status_survives_a_pod_claiming_a_billion_instances(
    tmp_path: Path, quantity: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = sf.fleet()
    node = sorted(sf.node_names(sf.prod_assignment()))[0]
    cluster["items"].append(gpu_pod(quantity, node=node))
    result = run_status(tmp_path, cluster, capsys, "-o", "json")
    assert result.exit_code == 0, result.output
    assert "MIGC402" in result.stderr and "pod search/p" in result.stderr


@pytest.mark.usefixtures("at_repo_root")
def test_status_survives_a_huge_gpu_count_on_an_unknown_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = sf.fleet()
    node = cluster["items"][0]
    node["metadata"]["labels"]["nvidia.com/mig.config"] = "hand-made"
    node["metadata"]["labels"]["nvidia.com/gpu.count"] = "1e22"
    result = run_status(tmp_path, cluster, capsys, "-o", "json")
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    shown = next(n for n in body["nodes"] if n["name"] == node["metadata"]["name"])
    assert len(shown["gpus"]) <= MAX_GPUS_PER_NODE


OSC_TITLE = "\x1b]0;pwned\x07"
CSI_RED = "\x1b[31m"


@pytest.mark.usefixtures("at_repo_root")
def test_status_text_strips_osc_and_every_control_sequence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = sf.fleet()
    node = cluster["items"][0]
    node["metadata"]["annotations"].update(
        {"migc.dev/phase": "Failed", "migc.dev/last-error": f"bad{OSC_TITLE}{CSI_RED}\u202eevil\x9b2J\x07"}
    )
    cluster["items"].append(sf.pod(f"late{OSC_TITLE}", "search", "nvidia.com/mig-1g.10gb"))
    result = run_status(tmp_path, cluster, capsys)
    assert result.exit_code == 0, result.output
    for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert raw not in result.stdout and raw not in result.stderr
    assert "pwned" not in result.stdout  # the title text goes with its sequence
    assert "U+202E" in result.stdout  # a bidi override is shown, not obeyed


@given(st.text(max_size=60))
@settings(max_examples=300, deadline=None)
def test_terminal_output_never_carries_a_control_character(text: str) -> None:
    out = terminal(text)
    assert all(c in "\n\t" or (ord(c) >= 0x20 and not 0x7F <= ord(c) <= 0x9F) for c in out)
    assert not any(c in out for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029")


# --- HTML: every field of the page with a payload -------------------------------------------------

PAYLOAD = '"\'><x-inject a="1"><meta http-equiv="refresh" content="0;url=//e.vil">\x1b]0;t\x07\u202e&'


def poison(value: Any) -> Any:
    """``value`` with every string (at any depth, keys of Counts included) prefixed with PAYLOAD."""
    if isinstance(value, str):
        return PAYLOAD + value
    if isinstance(value, tuple):
        return tuple(poison(v) for v in value)
    if is_dataclass(value) and not isinstance(value, type):
        return replace(value, **{f.name: poison(getattr(value, f.name)) for f in fields(value)})
    return value


class Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(name for name, _ in attrs)


@pytest.mark.usefixtures("at_repo_root")
def test_html_escapes_every_field(tmp_path: Path) -> None:
    from test_status import status as build

    from compiler.pipeline.compiled import compile_policy

    result = compile_policy(["examples/prod"], ROOT / "output")
    cluster = sf.fleet()
    cluster["items"].append(
        sf.pod("late", "search", "nvidia.com/mig-1g.10gb", annotations={"migc.dev/max-wait-time": "1m"})
    )
    clean: FleetStatus = build(result, cluster)
    # a tenant above its guarantee, a node mid-rollout and drifting: every optional part is drawn
    t0 = replace(clean.tenants[0], above_guarantee=("nvidia.com/mig-1g.10gb",), starved=("nvidia.com/gpu",))
    n0 = replace(clean.nodes[0], phase="Draining", drift=("x",), last_error="e")
    clean = replace(
        clean,
        tenants=(t0, *clean.tenants[1:]),
        nodes=(n0, *clean.nodes[1:]),
        missing_nodes=("m",),
        unmanaged_nodes=("u",),
    )
    page_clean = to_html(clean)
    page = to_html(poison(clean))
    assert "<x-inject" not in page and 'http-equiv="refresh" content="0;url' not in page
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in page
    clean_tags, tags = Tags(), Tags()
    clean_tags.feed(page_clean)
    tags.feed(page)
    # no payload became markup: the same kinds of element and attribute, one <meta> per page part
    assert set(tags.tags) == set(clean_tags.tags) and "x-inject" not in tags.tags
    assert tags.tags.count("meta") == clean_tags.tags.count("meta") == 2
    assert set(tags.attrs) == set(clean_tags.attrs)
    assert page.count("&lt;x-inject") >= 10  # the payload is shown as text, many times over
    assert to_text(poison(clean)).count("\x1b") == 0


@pytest.mark.usefixtures("at_repo_root")
def test_html_page_follows_the_umask_and_keeps_an_existing_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os
    import stat

    page = tmp_path / "page.html"
    old = os.umask(0o022)
    try:
        assert run_status(tmp_path, sf.fleet(), capsys, "--html", str(page)).exit_code == 0
        assert stat.S_IMODE(page.stat().st_mode) == 0o644  # not mkstemp's 0600
        os.chmod(page, 0o600)  # the user's choice is kept on the next write
        assert run_status(tmp_path, sf.fleet(), capsys, "--html", str(page)).exit_code == 0
        assert stat.S_IMODE(page.stat().st_mode) == 0o600
        os.umask(0o077)
        page.unlink()
        assert run_status(tmp_path, sf.fleet(), capsys, "--html", str(page)).exit_code == 0
        assert stat.S_IMODE(page.stat().st_mode) == 0o600
    finally:
        os.umask(old)


def test_all_pods_together_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("compiler.observe.parse.MAX_OBSERVED_INSTANCES", 2500)
    items = [
        ({**gpu_pod("1000"), "metadata": {"name": f"p{i}", "namespace": "search"}}, "") for i in range(4)
    ]
    _, pods, diags, _ = parse_objects(items, NOW)
    assert [p.name for p in pods] == ["p0", "p1"]  # namespace/name order: deterministic
    assert [d.code for d in diags] == ["MIGC402"] and "2 GPU pod(s) left out" in diags[0].message


@pytest.mark.parametrize(
    "name", ["late\x1b]0;pwned\x07", "a\nb", "<img src=x>", "UPPER", "x" * 254, "-a", "a..b", "", "\u202eabc"]
)
def test_names_that_no_api_server_admits_are_skipped(name: str) -> None:
    p = gpu_pod("1")
    p["metadata"]["name"] = name
    pod, diags = parse_pod(p, NOW)
    assert pod is None and [d.code for d in diags] == ["MIGC402"] and "\n" not in diags[0].message
    p = gpu_pod("1")
    p["metadata"]["namespace"] = name if name else "a.b"  # a dot is no namespace either
    assert parse_pod(p, NOW)[0] is None
    node, diags = parse_node(node_with() | {"metadata": {"name": name}})
    assert node is None and [d.code for d in diags] == ["MIGC402"]
    p = gpu_pod("1", node=name or "a b")
    assert parse_pod(p, NOW)[0] is None


def test_real_names_are_kept() -> None:
    p = gpu_pod("1", node="ip-10-0-0-1.ec2.internal")
    p["metadata"]["name"] = "trainer-7f9c4-x2x.v1"
    pod, diags = parse_pod(p, NOW)
    assert pod is not None and not diags


def test_an_endless_list_from_a_live_api_server_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from compiler.observe import ObserveError, read

    monkeypatch.setattr(read, "MAX_SNAPSHOT_BYTES", 10_000)
    pages = {"n": 0}

    class Page:
        data = json.dumps(
            {"items": [{"metadata": {"name": "x"}}], "metadata": {"continue": "again"}}
        ).encode()

    def endless(**kwargs: Any) -> Page:
        pages["n"] += 1
        return Page()

    with pytest.raises(ObserveError) as info:
        read._list_all(endless, "Pod", 1.0)
    assert info.value.diagnostic.code == "MIGC403" and pages["n"] < 10_000
