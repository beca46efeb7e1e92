"""GPU facts the decision tree needs beyond the MIG catalog: CUDA compute capability per model.

MPS with per-client limits (``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``, pinned-memory limits) needs
Volta (7.0) or newer (CUDA MPS documentation, "Volta MPS"). Values from NVIDIA's CUDA GPUs table
(developer.nvidia.com/cuda-gpus). ``tests/test_advise.py`` checks every catalog model is listed.
MIG capability is not here: it comes from the catalog (``GpuModel.mig_capable``).
"""

from __future__ import annotations

COMPUTE_CAPABILITY: dict[str, tuple[int, int]] = {
    "A100-SXM4-40GB": (8, 0),
    "A100-SXM4-80GB": (8, 0),
    "A30-24GB": (8, 0),
    "B200-180GB": (10, 0),
    "GH200-144GB": (9, 0),
    "GH200-96GB": (9, 0),
    "H100-80GB": (9, 0),
    "H100-NVL-94GB": (9, 0),
    "H200-141GB": (9, 0),
    "L4": (8, 9),
    "L40S": (8, 9),
    "RTX-4090": (8, 9),
    "T4": (7, 5),
}

VOLTA = (7, 0)


def supports_mps(model: str) -> bool:
    """Whether the model runs MPS with per-client limits; unknown models are assumed not to."""
    cc = COMPUTE_CAPABILITY.get(model)
    return cc is not None and cc >= VOLTA
