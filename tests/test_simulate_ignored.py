"""`migc simulate` says which trace columns it does not model (issue 22 item 5: ``gpu_spec``,
``cpu_milli`` and ``memory_mib`` were dropped without a word — a trace differing only in ``gpu_spec``
gave byte-identical results and nothing told the reader why)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compiler.cli import main
from compiler.exitcodes import ExitCode
from compiler.simulate.trace import ignored_note, read_trace

HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
)
# rows shaped like openb_pod_list_gpuspec10.csv (a gpu_spec names the models a pod may run on)
ROWS = """p0,12000,16384,1,1000,,LS,Running,0,600,0
p1,6000,0,1,460,V100M16|V100M32,LS,Running,10,900,10
p2,0,2048,2,1000,A10,BE,Running,20,700,20
p3,8000,30000,0,0,T4,BE,Running,30,800,30
p4,8000,30000,1,200,P100,BE,Pending,40,,
"""


def test_the_reader_counts_replayed_pods_per_ignored_column(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(HEADER + ROWS)
    trace = read_trace(path)
    assert [p.name for p in trace.pods] == ["p0", "p1", "p2"]
    # skipped pods (p3 has no GPU, p4 never ran) are not counted; "" and "0" are no value
    assert dict(trace.ignored) == {"gpu_spec": 2, "cpu_milli": 2, "memory_mib": 2}
    note = ignored_note(trace.ignored)
    assert note.startswith("not modelled: gpu_spec on 2 pods (the fleet has one GPU model)")
    assert "cpu_milli on 2 pods" in note and "memory_mib on 2 pods" in note


def test_a_trace_without_those_columns_notes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("name,num_gpu,gpu_milli,qos,creation_time,deletion_time,scheduled_time\nq,1,500,LS,0,60,0\n")
    trace = read_trace(path)
    assert trace.ignored == () and ignored_note(trace.ignored) == ""


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_report_names_what_was_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    path = tmp_path / "t.csv"
    path.write_text(HEADER + ROWS)
    args = ["simulate", "--trace", str(path), "--gpu-product", "NVIDIA-A100-SXM4-80GB", "--nodes", "1"]
    assert main([*args, "--baseline", "naive", "-o", fmt]) == ExitCode.OK
    out = capsys.readouterr().out
    if fmt == "json":
        assert json.loads(out)["ignoredColumns"] == {"gpu_spec": 2, "cpu_milli": 2, "memory_mib": 2}
    else:
        assert out.splitlines()[1].startswith("not modelled: gpu_spec on 2 pods")
