"""A fake ``pynvml`` module that replays a saved capture (``tests/fixtures/nvml/*.capture.yaml``).

It speaks the real bindings' calling conventions (ctypes structs from pynvml itself, ``byref``
counts, NVML error classes raised by return code), so ``compiler.discover`` runs the same code
against it as against a GPU. Anything that could change a GPU -- any ``nvml*`` name with a mutating
verb -- raises :class:`MutatingCallError`, and any function the fake does not implement raises
``AttributeError``, so an unexpected call cannot pass silently. Every call is logged in ``calls``.
"""

from __future__ import annotations

import ctypes
import re
import types
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the pynvml shim's deprecation warning
    import pynvml

REAL = pynvml  # the real bindings, for tests that list what they export
FIXTURES = Path(__file__).parent / "fixtures" / "nvml"

# Verbs of NVML functions that change device state. Matched against any nvml* name.
MUTATING = re.compile(
    r"Set|Create|Destroy|Reset|Clear|Enable|Disable|Register|Unregister|Modify|Write|Commit|Freeze|"
    r"Inject|Apply|Stop|Start|Kill|Remove|Delete|Evict|Flush|Discover|Restore|Update"
)

NVML_ERROR_INVALID_ARGUMENT = pynvml.NVML_ERROR_INVALID_ARGUMENT
NVML_ERROR_NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED
NVML_ERROR_NO_PERMISSION = pynvml.NVML_ERROR_NO_PERMISSION
NVML_ERROR_DRIVER_NOT_LOADED = pynvml.NVML_ERROR_DRIVER_NOT_LOADED
NVML_ERROR_LIBRARY_NOT_FOUND = pynvml.NVML_ERROR_LIBRARY_NOT_FOUND
NVML_ERROR_FUNCTION_NOT_FOUND = pynvml.NVML_ERROR_FUNCTION_NOT_FOUND
NVML_ERROR_INSUFFICIENT_SIZE = pynvml.NVML_ERROR_INSUFFICIENT_SIZE
NVML_ERROR_UNKNOWN = pynvml.NVML_ERROR_UNKNOWN


class MutatingCallError(AssertionError):
    """discover tried to reach an NVML function that changes the GPU."""


def load_capture(name: str) -> dict[str, Any]:
    """A fixture by file stem, e.g. ``h100-80gb`` for ``h100-80gb.capture.yaml``."""
    loaded: dict[str, Any] = yaml.safe_load((FIXTURES / f"{name}.capture.yaml").read_text(encoding="utf-8"))
    return loaded


def non_mig_gpu(
    index: int, name: str = "NVIDIA L4", pci: str = "0x27B810DE", mib: int = 23034
) -> dict[str, Any]:
    """A GPU that answers "not supported" to the MIG mode query (L4-like)."""
    return {
        "index": index,
        "name": name,
        "pciDeviceId": pci,
        "memoryTotalBytes": mib * 1024 * 1024,
        "migMode": None,
        "maxMigDeviceCount": None,
        "profiles": [],
        "instances": None,
    }


class _Device:
    def __init__(self, index: int) -> None:
        self.index = index


def _raise(code: int) -> None:
    raise pynvml.NVMLError(code)


class FakeNvml(types.ModuleType):
    """Replays ``capture`` (the ``capture_to_dict`` layout).

    ``errors`` maps a function name to the NVML return code it fails with (``nvmlInit`` included).
    ``hide_profiles_when_disabled`` mimics older drivers (R535) that list no GPU-instance profiles
    while MIG is disabled.
    """

    def __init__(
        self,
        capture: Mapping[str, Any],
        *,
        errors: Mapping[str, int] | None = None,
        hide_profiles_when_disabled: bool = False,
    ) -> None:
        super().__init__("fakenvml")
        self._capture = capture
        self._gpus: list[Mapping[str, Any]] = list(capture["gpus"])
        self._errors = dict(errors or {})
        self._hide = hide_profiles_when_disabled
        self._initialised = 0
        self._instances: dict[int, Mapping[str, Any]] = {}
        self._keepalive: list[Any] = []
        self.calls: list[str] = []
        # What the real module exports and discover may read: error classes, constants, struct types.
        for name in dir(pynvml):
            if name.startswith(("NVMLError", "NVML_")) or name in (
                "c_nvmlGpuInstancePlacement_t",
                "c_nvmlGpuInstance_t",
            ):
                setattr(self, name, getattr(pynvml, name))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("nvml") and MUTATING.search(name):
            raise MutatingCallError(f"discover reached the mutating NVML function {name}")
        raise AttributeError(f"the fake NVML does not implement {name}")

    # --- plumbing ---------------------------------------------------------------------------------

    def _enter(self, name: str) -> None:
        self.calls.append(name)
        if name in self._errors:
            _raise(self._errors[name])
        if name not in ("nvmlInit", "nvmlShutdown") and self._initialised <= 0:
            _raise(pynvml.NVML_ERROR_UNINITIALIZED)

    def _gpu(self, device: Any) -> Mapping[str, Any]:
        assert isinstance(device, _Device), f"not a device handle: {device!r}"
        return self._gpus[device.index]

    # --- the read-only API discover uses ---------------------------------------------------------------

    def nvmlInit(self) -> None:
        self._enter("nvmlInit")
        self._initialised += 1

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown")
        self._initialised -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        self._enter("nvmlSystemGetDriverVersion")
        return str(self._capture["driverVersion"])

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount")
        return len(self._gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> _Device:
        self._enter("nvmlDeviceGetHandleByIndex")
        if not 0 <= index < len(self._gpus):
            _raise(NVML_ERROR_INVALID_ARGUMENT)
        return _Device(index)

    def nvmlDeviceGetName(self, device: Any) -> str:
        self._enter("nvmlDeviceGetName")
        return str(self._gpu(device)["name"])

    def nvmlDeviceGetPciInfo(self, device: Any) -> Any:
        self._enter("nvmlDeviceGetPciInfo")
        info = pynvml.nvmlPciInfo_t()
        info.pciDeviceId = int(str(self._gpu(device)["pciDeviceId"]), 16)
        return info

    def nvmlDeviceGetMemoryInfo(self, device: Any) -> Any:
        self._enter("nvmlDeviceGetMemoryInfo")
        memory = pynvml.c_nvmlMemory_t()
        memory.total = int(self._gpu(device)["memoryTotalBytes"])
        return memory

    def nvmlDeviceGetMigMode(self, device: Any) -> list[int]:
        self._enter("nvmlDeviceGetMigMode")
        mode = self._gpu(device)["migMode"]
        if mode is None:
            _raise(NVML_ERROR_NOT_SUPPORTED)
        return [int(mode["current"]), int(mode["pending"])]

    def nvmlDeviceGetMaxMigDeviceCount(self, device: Any) -> int:
        self._enter("nvmlDeviceGetMaxMigDeviceCount")
        value = self._gpu(device)["maxMigDeviceCount"]
        if value is None:
            _raise(NVML_ERROR_NOT_SUPPORTED)
        return int(value)

    def _profiles(self, gpu: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        mode = gpu["migMode"]
        if mode is None or (self._hide and int(mode["current"]) == 0):
            return []
        return list(gpu["profiles"])

    def nvmlDeviceGetGpuInstanceProfileInfo(self, device: Any, profile: int, version: int = 2) -> Any:
        self._enter("nvmlDeviceGetGpuInstanceProfileInfo")
        gpu = self._gpu(device)
        if gpu["migMode"] is None:
            _raise(NVML_ERROR_NOT_SUPPORTED)
        if not 0 <= profile < pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT:
            _raise(NVML_ERROR_INVALID_ARGUMENT)
        profiles = gpu["profiles"]
        # A driver without the v2 struct has no names: it lacks nvmlDeviceGetGpuInstanceProfileInfoV.
        has_v2 = bool(profiles) and all(p.get("name") for p in profiles)
        if version == 2 and not has_v2:
            _raise(NVML_ERROR_FUNCTION_NOT_FOUND)
        row = next((p for p in self._profiles(gpu) if int(p["index"]) == profile), None)
        if row is None:
            _raise(NVML_ERROR_NOT_SUPPORTED)
        assert row is not None
        info: Any
        if version == 2:
            info = pynvml.c_nvmlGpuInstanceProfileInfo_v2_t()
            info.name = str(row["name"]).encode()
        else:
            info = pynvml.c_nvmlGpuInstanceProfileInfo_t()
        info.id = int(row["id"])
        info.sliceCount = int(row["sliceCount"])
        info.instanceCount = int(row["instanceCount"])
        info.multiprocessorCount = int(row["multiprocessorCount"])
        info.memorySizeMB = int(row["memorySizeMB"])
        return info

    def nvmlDeviceGetGpuInstanceProfileInfoV(self, device: Any, profile: int, version: int = 2) -> Any:
        return self.nvmlDeviceGetGpuInstanceProfileInfo(device, profile, version)

    def _row_by_id(self, gpu: Mapping[str, Any], profile_id: int) -> Mapping[str, Any]:
        row: Mapping[str, Any] | None = next((p for p in gpu["profiles"] if int(p["id"]) == profile_id), None)
        if row is None:
            _raise(NVML_ERROR_INVALID_ARGUMENT)
        assert row is not None
        return row

    def nvmlDeviceGetGpuInstancePossiblePlacements(
        self, device: Any, profile_id: int, placements: Any, count_ref: Any
    ) -> int:
        self._enter("nvmlDeviceGetGpuInstancePossiblePlacements")
        rows = self._row_by_id(self._gpu(device), profile_id)["placements"]
        count = count_ref._obj  # ctypes.byref(c_uint) as the real bindings pass it through
        if placements is None:
            count.value = len(rows)
            return 0
        if len(placements) < len(rows):
            _raise(NVML_ERROR_INSUFFICIENT_SIZE)
        for i, (start, size) in enumerate(rows):
            placements[i].start = int(start)
            placements[i].size = int(size)
        count.value = len(rows)
        return 0

    def nvmlDeviceGetGpuInstances(self, device: Any, profile_id: int, buffer: Any, count_ref: Any) -> int:
        self._enter("nvmlDeviceGetGpuInstances")
        gpu = self._gpu(device)
        if gpu["migMode"] is None or int(gpu["migMode"]["current"]) != 1:
            _raise(NVML_ERROR_NOT_SUPPORTED)
        self._row_by_id(gpu, profile_id)
        rows = [i for i in (gpu["instances"] or []) if int(i["profileId"]) == profile_id]
        if len(buffer) < len(rows):
            _raise(NVML_ERROR_INSUFFICIENT_SIZE)
        for i, row in enumerate(rows):
            opaque = pynvml.struct_c_nvmlGpuInstance_t()
            self._keepalive.append(opaque)
            self._instances[ctypes.addressof(opaque)] = row
            buffer[i] = ctypes.pointer(opaque)
        count_ref._obj.value = len(rows)
        return 0

    def nvmlGpuInstanceGetInfo(self, handle: Any) -> Any:
        self._enter("nvmlGpuInstanceGetInfo")
        row = self._instances.get(ctypes.addressof(handle.contents))
        if row is None:
            _raise(NVML_ERROR_INVALID_ARGUMENT)
        assert row is not None
        info = pynvml.c_nvmlGpuInstanceInfo_t()
        info.id = int(row["id"])
        info.profileId = int(row["profileId"])
        info.placement.start = int(row["start"])
        info.placement.size = int(row["size"])
        return info


def fake_loader(nvml: FakeNvml) -> Callable[[], FakeNvml]:
    """A replacement for ``compiler.discover.load_nvml`` that hands out ``nvml``."""
    return lambda: nvml
