"""Hostile traces, Prometheus answers and NVML answers (issue 24): a coded diagnostic, never exit 70,
never a run without end or an allocation sized by a claimed count.
"""

from __future__ import annotations

import copy
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakenvml
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler import discover
from compiler.cli import main
from compiler.commands.discover import command as discover_command
from compiler.exitcodes import ExitCode
from compiler.observe.prometheus import PrometheusError, instance_usage, query
from compiler.simulate.trace import MAX_POD_GPUS, MAX_TRACE_SECONDS, TraceError, read_trace

HEAD = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
    "scheduled_time\n"
)
GOOD = "p0,1000,1024,1,500,,LS,Running,10,110,20\n"


def trace(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "t.csv"
    path.write_text(HEAD + GOOD + "".join(rows))
    return path


# --- traces -------------------------------------------------------------------------------------------

BAD_TIMES = ["inf", "-inf", "nan", "-1e300", "1e300", "-1", str(MAX_TRACE_SECONDS * 10), "9" * 5000, "0x10"]


@pytest.mark.parametrize("value", BAD_TIMES)
@pytest.mark.parametrize("column", ["creation_time", "deletion_time", "scheduled_time"])
def test_trace_times_must_be_finite_and_in_range(tmp_path: Path, value: str, column: str) -> None:
    fields = {"creation_time": "10", "deletion_time": "110", "scheduled_time": "20"}
    fields[column] = value
    prefix = "p1,1000,1024,1,500,,LS,Running,"
    cells = [fields["creation_time"], fields["deletion_time"], fields["scheduled_time"]]
    row = prefix + ",".join(cells) + "\n"
    with pytest.raises(TraceError) as info:
        read_trace(trace(tmp_path, row))
    d = info.value.diagnostic
    assert d.code == "MIGC425" and d.line == 3
    # the column (1-based) is the first character of the bad field on that line
    i = ["creation_time", "deletion_time", "scheduled_time"].index(column)
    assert d.col == len(prefix) + sum(len(c) + 1 for c in cells[:i]) + 1
    assert column in d.message


@pytest.mark.parametrize(
    ("field", "value"),
    [("num_gpu", "1e9"), ("num_gpu", str(MAX_POD_GPUS + 1)), ("gpu_milli", "1001"), ("num_gpu", "²")],
)
def test_trace_counts_are_bounded(tmp_path: Path, field: str, value: str) -> None:
    values = {"num_gpu": "1", "gpu_milli": "500"}
    values[field] = value
    row = f"p1,1000,1024,{values['num_gpu']},{values['gpu_milli']},,LS,Running,10,110,20\n"
    with pytest.raises(TraceError) as info:
        read_trace(trace(tmp_path, row))
    assert info.value.diagnostic.code == "MIGC425" and field in info.value.diagnostic.message


def test_simulate_cli_reports_an_infinite_deletion_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = trace(tmp_path, "p1,1000,1024,1,500,,LS,Running,10,inf,20\n")
    rc = main(["simulate", "--trace", str(path), "--gpu-product", "NVIDIA-A100-SXM4-80GB", "--nodes", "1"])
    err = capsys.readouterr().err
    assert rc == ExitCode.INVALID and "MIGC425" in err and ":3:" in err


@given(st.lists(st.text(alphabet='0123456789.-+eEinfa,x" ', max_size=20), min_size=11, max_size=11))
@settings(max_examples=200, deadline=None)
def test_any_trace_row_reads_or_is_refused(cells: list[str]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.csv"
        path.write_text(HEAD + ",".join(c.replace(",", "") for c in cells) + "\n")
        try:
            tr = read_trace(path)
        except TraceError as exc:
            assert exc.diagnostic.code in ("MIGC425",)
            return
        for p in tr.pods:
            assert 0 <= p.arrival <= MAX_TRACE_SECONDS and 0 <= p.duration <= MAX_TRACE_SECONDS
            assert 1 <= p.num_gpu <= MAX_POD_GPUS


# --- Prometheus: a total deadline -----------------------------------------------------------------


@pytest.fixture()
def trickling_server() -> Iterator[str]:
    """An HTTP server that sends its answer one byte every 0.2 s (each read well within any timeout)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    stop = threading.Event()

    def serve() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            with conn:
                conn.recv(65536)
                answer = (
                    b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n"
                    + b'{"status":"success"}' * 20
                )
                for byte in answer:
                    if stop.is_set():
                        break
                    try:
                        conn.sendall(bytes([byte]))
                    except OSError:
                        break
                    time.sleep(0.2)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    stop.set()
    t.join(2)
    srv.close()


def test_prometheus_that_trickles_is_cut_at_the_deadline(trickling_server: str) -> None:
    with pytest.raises(PrometheusError, match=r"no complete answer .* within 0.5s"):
        query(trickling_server, "up", 0.5)
    usage, diags = instance_usage(trickling_server, 0.5)
    assert usage == () and [d.code for d in diags] == ["MIGC404"] and "within" in diags[0].message


# --- NVML answers (discover) ---------------------------------------------------------------------------


def run_discover(monkeypatch: pytest.MonkeyPatch, capture: dict[str, Any], *args: str) -> Any:
    monkeypatch.setattr(discover, "load_nvml", fakenvml.fake_loader(fakenvml.FakeNvml(capture)))
    return CliRunner().invoke(discover_command, list(args) or ["--compare"], catch_exceptions=False)


@pytest.mark.parametrize(
    ("where", "key", "value"),
    [
        ("gpu", "memoryTotalBytes", 0),
        ("gpu", "memoryTotalBytes", -1),
        ("profile", "instanceCount", 10**9),
        ("profile", "instanceCount", -1),
        ("profile", "sliceCount", 0),
        ("profile", "memorySizeMB", 0),
        ("profile", "multiprocessorCount", 10**9),
    ],
)
def test_discover_refuses_impossible_nvml_answers(
    monkeypatch: pytest.MonkeyPatch, where: str, key: str, value: int
) -> None:
    capture = copy.deepcopy(fakenvml.load_capture("h100-80gb"))
    target = capture["gpus"][0] if where == "gpu" else capture["gpus"][0]["profiles"][0]
    target[key] = value
    for args in (("--compare",), ("--format", "json")):
        result = run_discover(monkeypatch, capture, *args)
        assert result.exit_code == ExitCode.INVALID, result.output
        assert "MIGC909" in result.output and key in result.output


def test_discover_refuses_a_placement_count_beyond_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    capture = copy.deepcopy(fakenvml.load_capture("h100-80gb"))
    capture["gpus"][0]["profiles"][0]["placements"] = [[i % 7, 1] for i in range(1000)]
    result = run_discover(monkeypatch, capture)
    assert result.exit_code == ExitCode.INVALID and "placement count" in result.output


def test_discover_strips_control_sequences_from_nvml_names(monkeypatch: pytest.MonkeyPatch) -> None:
    capture = copy.deepcopy(fakenvml.load_capture("h100-80gb"))
    capture["gpus"][0]["name"] = "NVIDIA H100\x1b]0;pwned\x07 80GB HBM3"
    result = run_discover(monkeypatch, capture, "--format", "json")
    assert "\x1b" not in result.output and "\x07" not in result.output
