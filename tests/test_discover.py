"""`migc discover` against the fake NVML (tests/fakenvml.py) replaying documented captures."""

from __future__ import annotations

import copy
import ctypes.util
import json
import re
from pathlib import Path
from typing import Any

import fakenvml
import pytest
import yaml
from click.testing import CliRunner

from compiler import discover
from compiler.catalog import load_catalog, parse_model
from compiler.commands.discover import command

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTED = ["a100-sxm4-40gb", "a100-sxm4-80gb", "h100-80gb", "a30-24gb"]
CATALOG_KEY = {
    "a100-sxm4-40gb": "A100-SXM4-40GB",
    "a100-sxm4-80gb": "A100-SXM4-80GB",
    "h100-80gb": "H100-80GB",
    "a30-24gb": "A30-24GB",
}


def run_cli(monkeypatch: pytest.MonkeyPatch, nvml: Any, *args: str) -> Any:
    monkeypatch.setattr(discover, "load_nvml", fakenvml.fake_loader(nvml))
    return CliRunner().invoke(command, list(args), catch_exceptions=False)


def models_of(capture: dict[str, Any]) -> list[discover.DiscoveredModel]:
    cap, _ = discover.capture(fakenvml.FakeNvml(capture))
    models, _ = discover.models_from_capture(cap)
    return models


# --- every documented capture against the shipped catalog ------------------------------------------


@pytest.mark.parametrize("name", DOCUMENTED)
def test_documented_capture_yields_a_valid_entry_for_its_catalog_model(name: str) -> None:
    (model,) = models_of(fakenvml.load_capture(name))
    known = discover.find_in_catalog(model, load_catalog())
    assert known is not None and known.model == CATALOG_KEY[name]
    entry = discover.to_entry(model, known)
    parsed = parse_model(entry, name)  # the catalog's own loader accepts it
    assert parsed.model == CATALOG_KEY[name]
    assert [p.name for p in parsed.profiles] == [p.name for p in model.profiles]
    assert entry["verified"].startswith("captured by migc discover")


@pytest.mark.parametrize("name", ["a100-sxm4-40gb", "a100-sxm4-80gb", "h100-80gb"])
def test_compare_finds_no_difference_where_catalog_and_capture_agree(name: str) -> None:
    (model,) = models_of(fakenvml.load_capture(name))
    known = discover.find_in_catalog(model, load_catalog())
    assert discover.compare(model, known) == []


def test_a30_capture_predates_2g12gb_me_and_compare_says_exactly_that() -> None:
    # The public A30 capture ran on driver 450.80.02; 2g.12gb+me arrived with R525, so the catalog row
    # (id unknown, placements from a mock) is the one thing a real capture cannot confirm.
    (model,) = models_of(fakenvml.load_capture("a30-24gb"))
    diffs = discover.compare(model, discover.find_in_catalog(model, load_catalog()))
    assert [(d.code, d.path) for d in diffs] == [("MIGC920", "$.profiles[3]")]
    assert "2g.12gb+me is in the catalog but NVML does not list it" in diffs[0].message
    assert diffs[0].file == "compiler/catalog/data/a30-24gb.yaml"


def test_names_come_from_the_rule_when_the_driver_gives_none() -> None:
    capture = fakenvml.load_capture("a100-sxm4-80gb")
    assert all(p["name"] is None for p in capture["gpus"][0]["profiles"])
    (model,) = models_of(capture)
    assert [p.name for p in model.profiles] == [
        "1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb",
    ]  # fmt: skip
    assert not model.names_from_driver


def test_entry_fields_match_the_h100_capture() -> None:
    (model,) = models_of(fakenvml.load_capture("h100-80gb"))
    entry = discover.to_entry(model, discover.find_in_catalog(model, load_catalog()))
    assert (entry["computeSlices"], entry["memorySlices"], entry["memoryGB"]) == (7, 8, 80)
    assert entry["balanced"] == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    by_name = {p["name"]: p for p in entry["profiles"]}
    assert by_name["1g.20gb"] == {
        "name": "1g.20gb",
        "id": 15,
        "nvmlIndex": 9,
        "computeSlices": 1,
        "memorySlices": 2,
        "memoryGB": 20,
        "maxCount": 4,
        "placements": [0, 2, 4, 6],
        "verified": by_name["1g.20gb"]["verified"],
    }
    assert "0x233010DE" in entry["pciDeviceIds"] and "NVIDIA-H100-80GB-HBM3" in entry["gpuProducts"]


# --- planted mismatches ------------------------------------------------------------------------------


def _h100_with(**edits: Any) -> dict[str, Any]:
    capture = copy.deepcopy(fakenvml.load_capture("h100-80gb"))
    rows = {int(p["id"]): p for p in capture["gpus"][0]["profiles"]}
    for profile_id, change in edits.items():
        rows[int(profile_id.removeprefix("id"))].update(change)
    return capture


def test_compare_names_each_planted_difference() -> None:
    capture = _h100_with(id9={"placements": [[0, 4]], "instanceCount": 1}, id15={"id": 16})
    capture["gpus"][0]["instances"] = []
    (model,) = models_of(capture)
    diffs = discover.compare(model, discover.find_in_catalog(model, load_catalog()))
    messages = sorted(d.message for d in diffs)
    assert messages == [
        "H100-80GB: profile 1g.20gb id: catalog has 15, the GPU reports 16",
        "H100-80GB: profile 3g.40gb maxCount: catalog has 2, the GPU reports 1",
        "H100-80GB: profile 3g.40gb placements: catalog has [0, 4], the GPU reports [0]",
    ]
    assert {d.code for d in diffs} == {"MIGC920"}
    paths = {d.path for d in diffs}
    assert paths == {"$.profiles[2].id", "$.profiles[4].maxCount", "$.profiles[4].placements"}
    assert all(d.file == "compiler/catalog/data/h100-80gb.yaml" for d in diffs)
    # Each points at the field to edit in the data file.
    lines = (ROOT / "compiler/catalog/data/h100-80gb.yaml").read_text(encoding="utf-8").splitlines()
    for d in diffs:
        key = d.path.rsplit(".", 1)[1]
        assert d.line > 0 and lines[d.line - 1][d.col - 1 :].startswith(f"{key}:"), d
        profile = d.message.split()[2]
        assert f"name: {profile}," in lines[d.line - 1]


def test_compare_reports_a_profile_the_catalog_lacks_and_one_it_has_extra() -> None:
    capture = copy.deepcopy(fakenvml.load_capture("h100-80gb"))
    gpu = capture["gpus"][0]
    gpu["instances"] = []
    gpu["profiles"] = [p for p in gpu["profiles"] if p["id"] != 20]  # no 1g.10gb+me
    gpu["profiles"].append(
        {"index": 8, "id": 21, "name": "MIG 2g.20gb+me", "sliceCount": 2, "instanceCount": 1,
         "multiprocessorCount": 32, "memorySizeMB": 20096, "placements": [[0, 2], [2, 2], [4, 2]]}
    )  # fmt: skip
    (model,) = models_of(capture)
    diffs = discover.compare(model, discover.find_in_catalog(model, load_catalog()))
    messages = sorted(d.message for d in diffs)
    assert messages == [
        "H100-80GB: profile 1g.10gb+me is in the catalog but NVML does not list it",
        "H100-80GB: profile 2g.20gb+me (id 21) is listed by NVML but missing from the catalog",
    ]


def test_cli_compare_exits_3_on_a_planted_mismatch_and_0_when_equal(monkeypatch: pytest.MonkeyPatch) -> None:
    same = run_cli(monkeypatch, fakenvml.FakeNvml(fakenvml.load_capture("h100-80gb")), "--compare", "-q")
    assert same.exit_code == 0, same.stderr
    assert "the shipped catalog matches the GPU" in same.stderr

    planted = _h100_with(id0={"placements": [[0, 7]]})
    result = run_cli(monkeypatch, fakenvml.FakeNvml(planted), "--compare", "-q")
    assert result.exit_code == 3
    assert "MIGC920" in result.stderr
    assert "profile 7g.80gb memorySlices: catalog has 8, the GPU reports 7" in result.stderr
    where = r"compiler/catalog/data/h100-80gb\.yaml:\d+:\d+: MIGC920 warning: H100-80GB: "
    assert re.search(where, result.stderr)
    assert "1 difference(s) from the shipped catalog" in result.stderr
    assert result.stdout.count("model: H100-80GB") == 1  # the entry is still printed to fix the file with


def test_ignore_leaves_out_the_differences_warnings_but_not_the_exit_status(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--ignore MIGC920`` hides the per-field warnings (printed through the one collector, as in
    every command); the comparison still fails (exit 3) and says how many fields differ."""
    planted = _h100_with(id0={"placements": [[0, 7]]})
    result = run_cli(monkeypatch, fakenvml.FakeNvml(planted), "--compare", "-q", "--ignore", "MIGC920")
    assert result.exit_code == 3
    assert "MIGC920" not in result.stderr
    assert "1 difference(s) from the shipped catalog" in result.stderr


def test_unknown_model_is_reported_as_missing_from_the_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    capture = copy.deepcopy(fakenvml.load_capture("h100-80gb"))
    capture["gpus"][0].update(name="NVIDIA Future GPU 80GB", pciDeviceId="0x9999A0DE")
    result = run_cli(monkeypatch, fakenvml.FakeNvml(capture), "--compare", "-q")
    assert result.exit_code == 3
    assert "MIGC921" in result.stderr
    (doc,) = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert doc["model"] == "Future-GPU-80GB" and doc["pciDeviceIds"] == ["0x9999A0DE"]
    assert doc["gpuProducts"] == ["NVIDIA-Future-GPU-80GB"]


# --- read-only ------------------------------------------------------------------------------------------


def _nvml_identifiers(text: str) -> set[str]:
    return set(re.findall(r"\bnvml[A-Z]\w*", text))


def test_discover_never_calls_a_mutating_nvml_function(monkeypatch: pytest.MonkeyPatch) -> None:
    capture = fakenvml.load_capture("h100-80gb")
    capture = {**capture, "gpus": [*capture["gpus"], fakenvml.non_mig_gpu(1)]}
    nvml = fakenvml.FakeNvml(capture)
    for args in ([], ["--compare"], ["--format", "json"], ["--format", "capture"], ["--gpu", "0"]):
        result = run_cli(monkeypatch, nvml, *args)
        assert result.exit_code == 0, result.stderr
    assert nvml.calls, "the fake was not used"
    assert not [c for c in nvml.calls if fakenvml.MUTATING.search(c)]
    assert set(nvml.calls) <= {
        "nvmlInit", "nvmlShutdown", "nvmlSystemGetDriverVersion", "nvmlDeviceGetCount",
        "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetName", "nvmlDeviceGetPciInfo", "nvmlDeviceGetMemoryInfo",
        "nvmlDeviceGetMigMode", "nvmlDeviceGetMaxMigDeviceCount", "nvmlDeviceGetGpuInstanceProfileInfo",
        "nvmlDeviceGetGpuInstancePossiblePlacements", "nvmlDeviceGetGpuInstances", "nvmlGpuInstanceGetInfo",
    }  # fmt: skip
    assert "nvmlGpuInstanceGetInfo" in nvml.calls  # the MIG-enabled layout was really read
    assert nvml.calls.count("nvmlInit") == nvml.calls.count("nvmlShutdown")


def test_discover_source_names_no_mutating_nvml_function() -> None:
    source = (ROOT / "compiler" / "discover.py").read_text(encoding="utf-8")
    command_source = (ROOT / "compiler" / "commands" / "discover.py").read_text(encoding="utf-8")
    names = _nvml_identifiers(source) | _nvml_identifiers(command_source)
    assert "nvmlDeviceGetGpuInstancePossiblePlacements" in names  # the scan does see the calls
    assert sorted(n for n in names if fakenvml.MUTATING.search(n)) == []


def test_the_fake_refuses_every_mutating_function_the_real_bindings_have() -> None:
    nvml = fakenvml.FakeNvml(fakenvml.load_capture("h100-80gb"))
    mutating = sorted(n for n in dir(fakenvml.REAL) if n.startswith("nvml") and fakenvml.MUTATING.search(n))
    assert {"nvmlDeviceSetMigMode", "nvmlDeviceCreateGpuInstance", "nvmlGpuInstanceDestroy"} <= set(mutating)
    assert any("Reset" in n for n in mutating) and any("Clear" in n for n in mutating)
    for name in mutating:
        with pytest.raises(fakenvml.MutatingCallError):
            getattr(nvml, name)


# --- environment errors ------------------------------------------------------------------------------


def _libnvml_present() -> bool:
    return ctypes.util.find_library("nvidia-ml") is not None


@pytest.mark.skipif(_libnvml_present(), reason="this machine has an NVIDIA driver")
def test_real_bindings_without_a_driver_give_migc902_and_no_traceback() -> None:
    result = CliRunner().invoke(command, [], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "MIGC902 error: NVML library (libnvidia-ml.so.1) not found" in result.stderr
    assert "hint:" in result.stderr and "Traceback" not in result.stderr


def test_missing_bindings_give_migc901(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_pynvml(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "pynvml":
            raise ImportError("No module named 'pynvml'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pynvml)
    with pytest.raises(discover.DiscoverError) as caught:
        discover.load_nvml()
    assert caught.value.diagnostic.code == "MIGC901"


@pytest.mark.parametrize(
    ("errors", "code", "text"),
    [
        ({"nvmlInit": fakenvml.NVML_ERROR_DRIVER_NOT_LOADED}, "MIGC903", "Driver Not Loaded"),
        ({"nvmlInit": fakenvml.NVML_ERROR_LIBRARY_NOT_FOUND}, "MIGC902", "not found"),
        ({"nvmlInit": fakenvml.NVML_ERROR_NO_PERMISSION}, "MIGC904", "Insufficient Permissions"),
        (
            {"nvmlDeviceGetGpuInstancePossiblePlacements": fakenvml.NVML_ERROR_NO_PERMISSION},
            "MIGC904",
            "GPU 0: reading possible placements of profile id 19",
        ),
        ({"nvmlDeviceGetName": fakenvml.NVML_ERROR_UNKNOWN}, "MIGC908", "GPU 0: reading the name"),
        ({"nvmlDeviceGetMigMode": fakenvml.NVML_ERROR_FUNCTION_NOT_FOUND}, "MIGC908", "reading the MIG mode"),
    ],
)
def test_nvml_failures_become_coded_errors(
    monkeypatch: pytest.MonkeyPatch, errors: dict[str, int], code: str, text: str
) -> None:
    nvml = fakenvml.FakeNvml(fakenvml.load_capture("h100-80gb"), errors=errors)
    result = run_cli(monkeypatch, nvml, "--compare")
    assert result.exit_code == 1
    assert result.stdout == ""  # nothing partial
    assert f"{code} error:" in result.stderr and text in result.stderr
    assert "Traceback" not in result.stderr


def test_gpu_without_mig_support_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = fakenvml.FakeNvml({"driverVersion": "550.0", "gpus": [fakenvml.non_mig_gpu(0)]})
    result = run_cli(monkeypatch, nvml)
    assert result.exit_code == 1 and result.stdout == ""
    assert "MIGC906 error: no MIG-capable GPU found: GPU 0 (NVIDIA L4)" in result.stderr


def test_gpu_index_out_of_range(monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_cli(monkeypatch, fakenvml.FakeNvml(fakenvml.load_capture("a30-24gb")), "--gpu", "3")
    assert result.exit_code == 1
    assert "MIGC905 error: --gpu 3: NVML reports 1 GPU(s), indices 0..0" in result.stderr


def test_old_driver_with_mig_disabled_lists_no_profiles(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = fakenvml.FakeNvml(fakenvml.load_capture("a100-sxm4-40gb"), hide_profiles_when_disabled=True)
    result = run_cli(monkeypatch, nvml, "--diagnostics-format", "json")
    assert result.exit_code == 1
    payload = json.loads(result.stderr)
    (diag,) = payload["diagnostics"]
    assert payload["summary"]["errors"] == 1
    assert diag["code"] == "MIGC907" and "MIG is disabled" in diag["message"]
    assert "Enable MIG yourself" in diag["hint"]


def test_layout_unreadable_without_permission_is_only_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    errors = {"nvmlDeviceGetGpuInstances": fakenvml.NVML_ERROR_NO_PERMISSION}
    nvml = fakenvml.FakeNvml(fakenvml.load_capture("h100-80gb"), errors=errors)
    result = run_cli(monkeypatch, nvml, "--compare")
    assert result.exit_code == 0
    assert "MIGC913 warning" in result.stderr and "current layout: not readable" in result.stderr


# --- node shapes, layout, formats -----------------------------------------------------------------------


def _mixed_node() -> dict[str, Any]:
    a100 = fakenvml.load_capture("a100-sxm4-40gb")["gpus"][0]
    h100 = fakenvml.load_capture("h100-80gb")["gpus"][0]
    gpus = [
        {**h100, "index": 0},
        {**a100, "index": 1},
        fakenvml.non_mig_gpu(2),
        {**h100, "index": 3, "migMode": {"current": 0, "pending": 1}, "instances": None},
    ]
    return {"driverVersion": "550.54.15", "gpus": gpus}


def test_mixed_node_gives_one_document_per_model_and_the_layout_on_stderr(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = run_cli(monkeypatch, fakenvml.FakeNvml(_mixed_node()), "--compare")
    assert result.exit_code == 0, result.stderr
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert [d["model"] for d in docs] == ["H100-80GB", "A100-SXM4-40GB"]
    assert "driver 550.54.15" in docs[0]["verified"]
    err = result.stderr
    assert "GPU 0: NVIDIA H100 80GB HBM3 (0x233010DE), 81559 MiB, MIG enabled" in err
    assert "  GPU instance 4: 3g.40gb at 4:4" in err
    assert "  GPU instance 1: 1g.10gb at 0:1" in err
    assert "GPU 1: NVIDIA A100-SXM4-40GB (0x20B010DE), 40960 MiB, MIG disabled" in err
    assert "GPU 2: NVIDIA L4 (0x27B810DE), 23034 MiB, no MIG support" in err
    assert "MIGC910 warning: GPU 2 (NVIDIA L4) does not support MIG" in err
    assert "MIGC922 note: GPU 3: MIG mode is disabled with a change to enabled pending" in err


def test_gpu_option_reads_only_that_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = fakenvml.FakeNvml(_mixed_node())
    result = run_cli(monkeypatch, nvml, "--gpu", "1", "-q")
    assert result.exit_code == 0
    assert [d["model"] for d in yaml.safe_load_all(result.stdout) if d] == ["A100-SXM4-40GB"]
    assert nvml.calls.count("nvmlDeviceGetName") == 1
    assert result.stderr == ""


def test_json_and_yaml_carry_the_same_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    as_yaml = run_cli(monkeypatch, fakenvml.FakeNvml(_mixed_node()), "-q")
    as_json = run_cli(monkeypatch, fakenvml.FakeNvml(_mixed_node()), "-q", "--format", "json")
    assert [d for d in yaml.safe_load_all(as_yaml.stdout) if d] == json.loads(as_json.stdout)


def test_output_is_byte_identical_across_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    first = run_cli(monkeypatch, fakenvml.FakeNvml(_mixed_node()), "--compare")
    second = run_cli(monkeypatch, fakenvml.FakeNvml(_mixed_node()), "--compare")
    assert (first.stdout, first.stderr) == (second.stdout, second.stderr)


def test_capture_format_replays_to_the_same_capture(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in DOCUMENTED:
        original = fakenvml.load_capture(name)
        result = run_cli(monkeypatch, fakenvml.FakeNvml(original), "--format", "capture", "-q")
        assert result.exit_code == 0
        saved = yaml.safe_load(result.stdout)
        expected = {k: v for k, v in original.items() if k != "source"}
        assert saved == expected, name
        replayed = run_cli(monkeypatch, fakenvml.FakeNvml(saved), "--format", "capture", "-q")
        assert replayed.stdout == result.stdout


def test_gpus_of_one_model_that_disagree_are_flagged() -> None:
    h100 = fakenvml.load_capture("h100-80gb")["gpus"][0]
    odd = copy.deepcopy(h100)
    odd["index"] = 1
    odd["profiles"][0]["instanceCount"] = 6
    cap, _ = discover.capture(fakenvml.FakeNvml({"driverVersion": "x", "gpus": [h100, odd]}))
    models, notes = discover.models_from_capture(cap)
    assert len(models) == 1 and models[0].gpu_indices == (0, 1)
    assert [n.code for n in notes] == ["MIGC914"]


def test_profile_variants_the_catalog_cannot_express_are_left_out_with_a_warning() -> None:
    capture = copy.deepcopy(fakenvml.load_capture("h100-80gb"))
    capture["gpus"][0]["profiles"].append(
        {"index": 10, "id": 47, "name": "MIG 1g.10gb+gfx", "sliceCount": 1, "instanceCount": 4,
         "multiprocessorCount": 16, "memorySizeMB": 9984, "placements": [[0, 1], [1, 1]]}
    )  # fmt: skip
    cap, _ = discover.capture(fakenvml.FakeNvml(capture))
    models, notes = discover.models_from_capture(cap)
    assert "1g.10gb+gfx" not in [p.name for p in models[0].profiles]
    assert [n.code for n in notes] == ["MIGC911"]


def test_driver_name_wins_over_the_rule_and_a_disagreement_is_reported() -> None:
    capture = copy.deepcopy(fakenvml.load_capture("h100-80gb"))
    capture["gpus"][0]["profiles"][0]["name"] = "MIG 1g.11gb"
    cap, _ = discover.capture(fakenvml.FakeNvml(capture))
    models, notes = discover.models_from_capture(cap)
    assert "1g.11gb" in [p.name for p in models[0].profiles]
    assert [n.code for n in notes] == ["MIGC912"]
    assert "NVML names it 1g.11gb, the memory-size rule gives 1g.10gb" in notes[0].message


def test_inconsistent_placements_are_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    capture = _h100_with(id9={"placements": [[0, 4], [4, 3]]})
    result = run_cli(monkeypatch, fakenvml.FakeNvml(capture))
    assert result.exit_code == 1 and result.stdout == ""
    assert "MIGC909 error: GPU 0: profile 3g.40gb (id 9) has placements of sizes [3, 4]" in result.stderr


def test_every_9xx_code_used_is_registered() -> None:
    from compiler.diagnostics import registry

    used = set(re.findall(r'"(MIGC9\d\d)"', (ROOT / "compiler" / "discover.py").read_text(encoding="utf-8")))
    assert used and used <= set(registry())
