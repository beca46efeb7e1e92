"""compiler/commands/simulate.py: what the command checks before it replays (durations, options of
the other mode, the GPU product, the trace, the policy) and a replay of a four-pod trace of which
two are replayed. The simulation itself is compiler/simulate's (tests/test_simulate.py)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from compiler.commands.simulate import _duration, command

HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
)
# openb columns: two GPU pods that ran, one pod without GPU, one that never ran (no scheduled_time)
ROWS = (
    "p0,1000,1024,1,1000,,LS,Running,0,3600,0\n"
    "p1,1000,1024,1,250,,LS,Running,60,1800,60\n"
    "cpu,1000,1024,0,0,,LS,Running,0,3600,0\n"
    "never,1000,1024,1,500,,LS,Pending,0,3600,\n"
)
A100 = ["--gpu-product", "NVIDIA-A100-SXM4-80GB", "--nodes", "1"]


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(command, list(args), standalone_mode=False)
    if isinstance(result.exception, click.ClickException):
        return result.exception.exit_code, result.stdout, result.stderr + result.exception.format_message()
    assert result.exception is None, result.exception
    return int(result.return_value), result.stdout, result.stderr


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text(HEADER + ROWS)
    return path


def test_durations_are_read_or_a_bad_parameter_naming_the_flag() -> None:
    assert _duration(None, "--max-wait") is None
    assert _duration("15m", "--max-wait") == 900
    assert _duration("1h30m", "--demand-window") == 5400
    with pytest.raises(click.BadParameter, match="'soon' is not a duration such as 15m") as exc:
        _duration("soon", "--max-wait")
    assert exc.value.param_hint == "--max-wait"


def test_a_replay_of_a_tiny_trace_counts_its_pods(trace: Path) -> None:
    rc, stdout, err = _run("--trace", str(trace), *A100, "--baseline", "static-optimal", "-o", "json")
    assert rc == 0 and "simulated 1 baseline(s)" in err
    run = json.loads(stdout)
    # the pod without a GPU and the one that never ran are not replayed
    assert (run["trace"], run["pods"], run["gpuModel"], run["nodes"]) == ("trace.csv", 2, "A100-SXM4-80GB", 1)
    assert [r["baseline"] for r in run["results"]] == ["static-optimal"]


def test_fill_refuses_options_that_only_a_replay_has(trace: Path) -> None:
    rc, _, err = _run(
        "--mode", "fill", "--trace", str(trace), *A100, "--baseline", "naive", "--max-wait", "5m"
    )
    assert rc == 2 and "--baseline, --max-wait: only for --mode replay" in err


def test_a_product_without_mig_or_unknown_is_migc426(trace: Path) -> None:
    for product in ("NVIDIA-L4", "NVIDIA-NOPE"):
        rc, stdout, err = _run("--trace", str(trace), "--gpu-product", product, "--nodes", "1")
        assert rc == 1 and stdout == "" and "MIGC426" in err and "NVIDIA-A100-SXM4-80GB" in err


def test_an_unreadable_trace_a_bad_policy_or_a_bad_duration_is_refused(tmp_path: Path, trace: Path) -> None:
    rc, _, err = _run("--trace", str(tmp_path / "missing.csv"), *A100)
    assert rc == 1 and "MIGC425" in err
    broken = tmp_path / "policy"
    broken.mkdir()
    (broken / "p.yaml").write_text("apiVersion: migc.dev/v1alpha1\nkind: PartitionPolicy\nspec: {mode: 3}\n")
    rc, _, err = _run("--trace", str(trace), *A100, "--policy", str(broken))
    assert rc == 1 and "error" in err
    rc, _, err = _run("--trace", str(trace), *A100, "--operator-retry", "often")
    assert rc == 2 and "'often' is not a duration" in err
