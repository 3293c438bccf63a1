"""The GPU catalog (issue 14, hardware part): every shipped hardware preset loads, resolves by each of its
names, carries a source, and plans a small model under both engines.

The facts themselves (totals, names, capabilities) come from the sources each preset names; this file checks
that the catalog is usable and self-consistent, not the numbers' provenance (tests/test_presets.py compares
the presets with reference/hardware.json).

Not shipped (no sourced memory total): NVIDIA B100 (no nvidia-smi print, no reference entry), the 72 GB RTX PRO
5000 Blackwell, the Gaudi2 PCIe card (HL-288), RTX 4060 Ti / 5060 Ti (one device name for an 8 GB and a 16 GB
SKU, so a name cannot pick the total).  docs/presets.md lists them.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from kvplan.deployment import Deployment
from kvplan.engines.runtime import cuda_total_from_nvidia_smi
from kvplan.errors import InputError
from kvplan.inputs import presets
from kvplan.inputs.resolve import norm_name, resolve_gpu
from kvplan.planning.plan import fit

HW_DIR = presets.configs_dir() / "hardware"
FILES = sorted(HW_DIR.glob("*.toml"))
GPUS = presets.all_gpus()
IDS = [g.id for g in GPUS]

# Names issue 14 asks for, spelled the way people type them; each must resolve offline.
REQUIRED = {
    "A10": "a10",
    "A10G": "a10g",
    "A30": "a30",
    "A40": "a40",
    "A100 PCIe 40GB": "a100-pcie-40gb",
    "A100 SXM 40GB": "a100-sxm-40gb",
    "A100 PCIe 80GB": "a100-pcie-80gb",
    "A100 SXM 80GB": "a100-sxm-80gb",
    "A800 SXM 80GB": "a800-sxm-80gb",
    "A800 PCIe 80GB": "a800-pcie-80gb",
    "L4": "l4",
    "L20": "l20",
    "L40": "l40",
    "L40S": "l40s",
    "H100 PCIe": "h100-pcie",
    "H100 SXM 80GB": "h100-sxm",
    "H100 NVL": "h100-nvl",
    "H800": "h800",
    "H20": "h20",
    "H20-3e": "h20-3e",
    "H200 SXM 141GB": "h200-sxm",
    "H200 NVL": "h200-nvl",
    "GH200 96GB": "gh200-96gb",
    "GH200 144GB": "gh200-144gb",
    "B200": "b200",
    "B300": "b300",
    "GB200": "gb200",
    "GB300": "gb300",
    "GB10": "gb10",
    "DGX Spark": "gb10",
    "RTX 3090": "rtx-3090",
    "RTX 3090 Ti": "rtx-3090-ti",
    "RTX 4080": "rtx-4080",
    "RTX 4090": "rtx-4090",
    "RTX 5070 Ti": "rtx-5070-ti",
    "RTX 5080": "rtx-5080",
    "RTX 5090": "rtx-5090",
    "RTX A6000": "rtx-a6000",
    "RTX 6000 Ada": "rtx-6000-ada",
    "RTX PRO 4000 Blackwell": "rtx-pro-4000",
    "RTX PRO 4500 Blackwell": "rtx-pro-4500",
    "RTX PRO 5000 Blackwell": "rtx-pro-5000",
    "RTX PRO 6000 Blackwell": "rtx-pro-6000-ws",
    "RTX PRO 6000 Max-Q": "rtx-pro-6000-maxq",
    "RTX PRO 6000 SE": "rtx-pro-6000-server",
    "MI210": "mi210",
    "MI250": "mi250x",
    "MI250X": "mi250x",
    "MI300X": "mi300x",
    "MI308X": "mi308x",
    "MI325X": "mi325x",
    "MI350X": "mi350x",
    "MI355X": "mi355x",
    "Gaudi2": "gaudi2",
    "Gaudi3": "gaudi3",
    "Arc A770": "arc-a770",
    "Arc Pro B60": "arc-pro-b60",
    "Max 1550": "max-1550",
}

SMALL_MODEL = "Qwen/Qwen3-8B"  # the plan every GPU must take without an error
TINY_MODEL = "Qwen/Qwen3-0.6B"  # fits on every GPU of the catalog at a 4k context

# (gpu id, engine) -> a substring of the InputError that engine states for that GPU.  None today: every shipped
# GPU plans both models under both engines.
EXPECTED_INPUT_ERRORS: dict[tuple[str, str], str] = {}


def _names(g: presets.HardwarePreset) -> list[str]:
    return [g.id, g.name, *g.aliases]


# ------------------------------------------------------------------------------------------------- loading


def test_catalog_size():
    assert len(FILES) == len(GPUS) >= 50


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_preset_file_validates(path: Path):
    """Strict validation of the file itself (no cache): unknown keys, types and ranges."""
    g = presets.load_hardware_file(path, use_cache=False)
    assert g.id == path.stem
    assert g.memory_mib > 0 and g.name.strip()


# ------------------------------------------------------------------------------------------------- names


@pytest.mark.parametrize("gpu_id", IDS)
def test_resolves_by_every_name(gpu_id: str):
    g = next(x for x in GPUS if x.id == gpu_id)
    for n in _names(g):
        assert resolve_gpu(n).id == gpu_id, n
    assert resolve_gpu(g.name.upper()).id == gpu_id  # case-blind
    assert resolve_gpu(f"  {g.name}  ").id == gpu_id  # as pasted from a log


def test_no_two_presets_claim_a_name():
    owner: dict[str, str] = {}
    for g in GPUS:
        for key in {norm_name(n) for n in _names(g)}:
            assert key, g.id
            assert key not in owner, f"{key!r} is claimed by {owner.get(key)} and {g.id}"
            owner[key] = g.id


@pytest.mark.parametrize("typed", sorted(REQUIRED))
def test_issue14_names_resolve(typed: str):
    assert resolve_gpu(typed).id == REQUIRED[typed]


def test_unknown_gpu_is_an_input_error():
    with pytest.raises(InputError, match="unknown GPU"):
        resolve_gpu("NVIDIA B100")


# ------------------------------------------------------------------------------------------------- sources


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_preset_names_its_sources(path: Path):
    raw = path.read_text(encoding="utf-8")
    data = tomllib.loads(raw)
    assert len(data["source"].strip()) >= 20, path.name
    line = next(s for s in raw.splitlines() if s.startswith("memory_mib = "))
    comment = line.split("  # ", 1)[1] if "  # " in line else ""
    assert comment.startswith("MiB") and len(comment) >= 40, f"{path.name}: memory_mib needs a unit and a source"
    if "cuda_total_bytes" in data:
        cline = next(s for s in raw.splitlines() if s.startswith("cuda_total_bytes = "))
        assert "  # B" in cline, f"{path.name}: cuda_total_bytes needs a unit and a source"


# ------------------------------------------------------------------------------------------------- consistency


@pytest.mark.parametrize("gpu_id", IDS)
def test_facts_are_consistent(gpu_id: str):
    g = next(x for x in GPUS if x.id == gpu_id)
    if g.cuda_total_bytes is not None:  # the CUDA/HIP total never exceeds the smi total (floor to MiB aside)
        assert g.cuda_total_bytes < (g.memory_mib + 1) * 2**20, g.id
        assert g.cuda_total_bytes > g.memory_mib * 2**20 * 0.95, g.id
    assert not (g.fp4 and not g.fp8), "FP4 tensor cores come with FP8 on every sourced part"
    if g.vendor == "nvidia":
        assert g.sm == "" or re.fullmatch(r"\d{1,2}\.\d", g.sm), g.sm
    elif g.vendor == "amd":
        assert g.sm == "" or re.fullmatch(r"gfx[0-9a-f]+", g.sm), g.sm
        assert g.interconnect in ("xgmi", "pcie", "other")
    else:
        assert g.interconnect in ("pcie", "other")
    if g.sm_major is not None and g.vendor == "nvidia":
        if g.sm_major < 8 or g.sm in ("8.0", "8.6"):
            assert not g.fp8, g.id  # no FP8 tensor cores below sm89
        if g.sm_major in (10, 12):
            assert g.fp8 and g.fp4, g.id  # Blackwell


# ------------------------------------------------------------------------------------------------- planning


def _plan(model: str, gpu_id: str, engine: str, **kw):
    want = EXPECTED_INPUT_ERRORS.get((gpu_id, engine))
    if want is not None:
        with pytest.raises(InputError, match=re.escape(want)):
            fit(Deployment(model=model, gpu=gpu_id, engine=engine, **kw))
        return None
    return fit(Deployment(model=model, gpu=gpu_id, engine=engine, **kw))


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
@pytest.mark.parametrize("gpu_id", IDS)
def test_small_model_plans_on_every_gpu(gpu_id: str, engine: str):
    r = _plan(SMALL_MODEL, gpu_id, engine)
    if r is None:
        return
    g = next(x for x in GPUS if x.id == gpu_id)
    if engine == "vllm" and g.unified_free_bytes is not None and not r.starts:  # see test_tiny_model_fits_on_every_gpu
        r = _plan(SMALL_MODEL, gpu_id, engine, gpu_memory_utilization=0.8)
    assert r.gpu == g.name and r.engine == engine
    # the device total is the preset's CUDA total, else nvidia-smi's minus the driver reserve (runtime.py)
    assert r.device_bytes == (g.cuda_total_bytes or cuda_total_from_nvidia_smi(memory_mib=g.memory_mib))
    assert r.kv_pool_tokens >= 0 and r.kv_bytes_per_token > 0


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
@pytest.mark.parametrize("gpu_id", IDS)
def test_tiny_model_fits_on_every_gpu(gpu_id: str, engine: str):
    r = _plan(TINY_MODEL, gpu_id, engine, context_length=4096)
    if r is None:
        return
    g = next(x for x in GPUS if x.id == gpu_id)
    if engine == "vllm" and g.unified_free_bytes is not None and not r.starts:
        # a unified-memory GPU: vLLM's default utilization asks more than the host has free at start (an engine
        # refusal, issue 25 item 4); the utilization the refusal names starts
        assert any("--gpu-memory-utilization" in x for x in [*r.reasons, *r.advice]), (r.reasons, r.advice)
        r = _plan(TINY_MODEL, gpu_id, engine, context_length=4096, gpu_memory_utilization=0.8)
    assert r.fits, (gpu_id, engine, r.warnings)
    assert r.kv_pool_tokens >= 4096
