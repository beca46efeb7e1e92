"""Any snapshot, any state: `status`, `recommend` and `advise` never exit 70 and never print a control
sequence (issue 24, "Done when"). Hypothesis builds cluster snapshots out of the values that once
broke them — hostile quantities, timestamps, names and annotations in every field the parser reads —
and runs the commands end to end on the lab example.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.cli import main
from compiler.exitcodes import ExitCode

pytestmark = pytest.mark.slow  # property tests over whole commands (~30 s); CI runs them

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "examples" / "lab"
DYNAMIC = (
    "apiVersion: migc.dev/v1alpha1\nkind: PartitionPolicy\nmetadata:\n  name: default\n"
    "spec:\n  mode: dynamic\n  stabilizationWindow: 10m\n"
)

NASTY_TEXT = st.sampled_from(
    [
        "\x1b]0;title\x07",
        "\x1b[2J",
        "\u202eevil",
        "<img src=x onerror=alert(1)>",
        "a|b",
        "@octocat",
        "x" * 300,
        "\x00",
        "\u0085",
        "",
    ]
) | st.text(max_size=12)
QUANTITY = st.sampled_from(
    ["1", "2", "²", "9" * 5000, "9" * 22, "1e9", "1e300", "-1", "0.5", "2Ki", "NaN"]
) | (st.integers(min_value=-(10**30), max_value=10**30))
TIME = st.sampled_from(
    ["2026-12-01T05:00:00Z", "2026-13-45T25:61:61Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "x", ""]
)
RESOURCE = st.sampled_from(
    [
        "nvidia.com/mig-1g.10gb",
        "nvidia.com/gpu",
        "nvidia.com/mig-foo",
        "nvidia.com/mig-3g.40gb.me",
        "nvidia.com/gpu.shared",
    ]
)
NAMESPACE = st.sampled_from(["course-dl101", "course-nlp202", "default"]) | NASTY_TEXT


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    resource = draw(RESOURCE)
    meta: dict[str, Any] = {
        "name": draw(st.sampled_from(["p"]) | NASTY_TEXT) + str(draw(st.integers(0, 99))),
        "namespace": draw(NAMESPACE),
        "creationTimestamp": draw(TIME),
        "annotations": {
            "migc.dev/max-wait-time": draw(st.sampled_from(["1m", "99999999999999999999d", "x", "0s"])),
            "migc.dev/profile-preference": draw(st.sampled_from(["1g.10gb", "foo", "," * 100])),
        },
    }
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"limits": {resource: draw(QUANTITY)}}}],
    }
    if draw(st.booleans()):
        spec["nodeName"] = "lab-dgx-a100-01"
    return {
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {
            "phase": draw(st.sampled_from(["Running", "Pending", "Unknown"])),
            "startTime": draw(TIME),
        },
    }


@st.composite
def nodes(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {
            "name": draw(st.sampled_from(["lab-dgx-a100-01", "n2"]) | NASTY_TEXT) or "n",
            "labels": {
                "nvidia.com/gpu.count": str(draw(QUANTITY)),
                "nvidia.com/mig.config": draw(st.sampled_from(["hand-made", "all-1g.10gb"]) | NASTY_TEXT),
            },
            "annotations": {
                "migc.dev/phase": draw(st.sampled_from(["Draining", "Failed", "Idle"]) | NASTY_TEXT),
                "migc.dev/phase-since": draw(TIME),
                "migc.dev/started-at": draw(TIME),
                "migc.dev/previous-config": "old",
                "migc.dev/attempts": str(draw(QUANTITY)),
                "migc.dev/last-error": draw(NASTY_TEXT),
            },
        },
        "status": {"allocatable": {draw(RESOURCE): draw(QUANTITY)}},
    }


SNAPSHOTS = st.builds(
    lambda ps, ns: {"kind": "List", "items": [*ns, *ps]},
    st.lists(pods(), max_size=6),
    st.lists(nodes(), max_size=2),
)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("hostile-lab")
    shutil.copytree(LAB, base / "pol")
    (base / "pol" / "partition.yaml").write_text(DYNAMIC)
    assert main(["compile", str(base / "pol"), "--out", str(base / "out")]) == 0
    return base


def check(rc: int, out: str, err: str) -> None:
    assert rc in (ExitCode.OK, ExitCode.INVALID, ExitCode.DRIFT), err
    assert "MIGC000" not in err and "Traceback" not in err
    for raw in ("\x1b", "\x07", "\x9b", "\u202e", "\x00"):
        assert raw not in err, err


@given(SNAPSHOTS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_status_never_crashes_on_any_snapshot(
    lab: Path, capsys: pytest.CaptureFixture[str], cluster: dict[str, Any]
) -> None:
    snap = lab / "snap-status.json"
    snap.write_text(json.dumps(cluster))
    for fmt in ("text", "json"):
        rc = main(
            [
                "status",
                str(lab / "pol"),
                "--against",
                str(lab / "out"),
                "--snapshot",
                str(snap),
                "-o",
                fmt,
                "--now",
                "2026-12-01T06:00:00Z",
                "--html",
                str(lab / "page.html"),
            ]
        )
        out, err = capsys.readouterr()
        check(rc, out, err)
        if fmt == "text":
            for raw in ("\x1b", "\x07", "\x9b", "\u202e", "\x00"):
                assert raw not in out
        page = (lab / "page.html").read_text() if rc == 0 else ""
        assert "<img" not in page and "\x1b" not in page


@given(SNAPSHOTS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_recommend_never_crashes_and_writes_a_state_it_reads_back(
    lab: Path, capsys: pytest.CaptureFixture[str], cluster: dict[str, Any]
) -> None:
    snap = lab / "snap-recommend.json"
    snap.write_text(json.dumps(cluster))
    state = lab / "state.yaml"
    state.unlink(missing_ok=True)
    for fmt in ("markdown", "text", "json"):
        rc = main(
            [
                "recommend",
                str(lab / "pol"),
                "--against",
                str(lab / "out"),
                "--snapshot",
                str(snap),
                "--state",
                str(state),
                "--dry-run",
                "-o",
                fmt,
                "--now",
                "2026-12-01T06:00:00Z",
            ]
        )
        out, err = capsys.readouterr()
        check(rc, out, err)
        if fmt == "markdown":
            assert "<img" not in out and "@octocat" not in out and len(out) <= 65536
    # a real run writes the state; the next run reads it back without calling it corrupt
    work = lab / "write"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(lab / "pol", work)
    argv = ["recommend", str(work), "--against", str(lab / "out"), "--snapshot", str(snap)]
    check(main([*argv, "--now", "2026-12-01T06:00:00Z"]), *capsys.readouterr())
    check(main([*argv, "--now", "2026-12-01T06:05:00Z"]), *capsys.readouterr())
    rc = main(["validate", str(work)])
    out, err = capsys.readouterr()
    assert rc == 0, out + err


@given(SNAPSHOTS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_advise_never_crashes_on_any_snapshot(
    lab: Path, capsys: pytest.CaptureFixture[str], cluster: dict[str, Any]
) -> None:
    snap = lab / "snap-advise.json"
    snap.write_text(json.dumps(cluster))
    rc = main(["advise", str(lab / "pol"), "--snapshot", str(snap), "--time-limit", "5"])
    check(rc, *capsys.readouterr())
