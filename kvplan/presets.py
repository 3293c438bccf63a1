"""Presets as data: ``configs/models/*.toml`` and ``configs/hardware/*.toml``.

Files are read with the stdlib ``tomllib`` and validated by strict pydantic models
(unknown keys are rejected; an error names the file and the key).  The preset
folders ship inside the wheel as ``kvplan/configs`` (see pyproject.toml); in a
source checkout the top-level ``configs/`` folder is used.

Model preset file (one per Hugging Face id; file name = id with ``/`` -> ``--``)::

    id = "meta-llama/Llama-3.1-8B-Instruct"     # the HF id (preset id)
    aliases = ["llama-3.1-8b", "meta-llama/Meta-Llama-3.1-8B-Instruct"]
    source = "where [config] was copied from"
    notes = "free text"                            # optional

    [weights]                                      # optional
    checkpoint_bytes = 16_060_522_496              # B, safetensors total_size; source below
    quantization = "bf16"                          # see QUANTIZATIONS
    source = "..."

    [config]                                       # HF config.json fields, verbatim
    architectures = ["LlamaForCausalLM"]
    num_hidden_layers = 32
    ...

    [[variants]]                                   # published re-uploads sharing the geometry
    id = "meta-llama/Llama-3.1-8B-Instruct-FP8"
    quantization = "fp8"
    checkpoint_bytes = 9_000_000_000               # optional
    source = "..."

Hardware preset file::

    id = "h100-sxm"
    name = "NVIDIA H100 80GB HBM3"                 # as nvidia-smi prints it
    aliases = ["H100 SXM 80GB", "h100"]
    vendor = "nvidia"
    memory_mib = 81559                             # MiB, nvidia-smi memory.total; source
    cuda_total_bytes = 85_520_809_984              # B, torch.cuda.mem_get_info()[1]; optional
    marketing = "80 GB HBM3"
    bandwidth_gbps = 3350                          # GB/s
    interconnect = "nvlink"                        # nvlink | pcie | xgmi | nvlink-c2c
    interconnect_gbps = 450                        # GB/s per direction
    sm = "9.0"                                     # CUDA compute capability, or gfx target on AMD
    fp8 = true
    fp4 = false
    source = "..."
"""

from __future__ import annotations

import difflib
import functools
import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kvplan.errors import InputError

QUANTIZATIONS = (
    "bf16", "fp16", "fp32", "fp8", "mxfp4", "nvfp4", "int4", "int8", "mixed",
)

# Hugging Face config.json keys a preset's [config] table may hold (geometry and
# what the weight estimate needs).  Anything else is a typo and is rejected.
CONFIG_KEYS = frozenset(
    """
    architectures model_type num_hidden_layers hidden_size num_attention_heads
    num_key_value_heads head_dim v_head_dim max_position_embeddings rope_scaling rope_theta
    torch_dtype dtype quantization_config tie_word_embeddings vocab_size intermediate_size
    q_lora_rank kv_lora_rank qk_nope_head_dim qk_rope_head_dim index_head_dim index_n_heads
    index_topk compress_ratios o_lora_rank o_groups num_nextn_predict_layers
    kv_source_layer_ids index_source_layer_ids vision_n_layers engram_table_layers
    sliding_window layer_types sliding_window_pattern max_window_layers use_sliding_window
    attention_chunk_size full_attention_interval linear_num_key_heads linear_num_value_heads
    linear_key_head_dim linear_value_head_dim linear_conv_kernel_dim hybrid_override_pattern
    mamba_num_heads mamba_head_dim ssm_state_size n_groups conv_kernel expand mamba_d_state
    mamba_d_conv mamba_expand mamba_ssm_dtype attn_layer_period attn_layer_offset
    moe_intermediate_size n_routed_experts num_experts num_local_experts n_shared_experts
    num_experts_per_tok first_k_dense_replace expert_layer_period expert_layer_offset
    shared_expert_intermediate_size decoder_sparse_step mlp_only_layers moe_layer_freq
    kv_cache_quant_algo swa_num_key_value_heads swa_head_dim swa_v_head_dim
    swa_num_attention_heads hybrid_layer_pattern global_head_dim num_global_key_value_heads
    text_config vision_config attention_bias
    indexer_types index_topk_freq index_skip_topk_offset qk_head_dim rope_parameters
    """.split()
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WeightsInfo(_Strict):
    checkpoint_bytes: int | None = Field(default=None, gt=0)
    params: int | None = Field(default=None, gt=0)
    quantization: Literal[QUANTIZATIONS] = "bf16"  # type: ignore[valid-type]
    source: str = ""
    notes: str = ""


class Variant(_Strict):
    id: str
    quantization: Literal[QUANTIZATIONS]  # type: ignore[valid-type]
    checkpoint_bytes: int | None = Field(default=None, gt=0)
    source: str = ""
    notes: str = ""


class ModelPreset(_Strict):
    id: str
    aliases: list[str] = []
    source: str
    notes: str = ""
    weights: WeightsInfo = WeightsInfo()
    config: dict[str, Any]
    variants: list[Variant] = []


class HardwarePreset(_Strict):
    id: str
    name: str
    aliases: list[str] = []
    vendor: Literal["nvidia", "amd", "intel", "other"] = "nvidia"
    memory_mib: int = Field(gt=0)
    cuda_total_bytes: int | None = Field(default=None, gt=0)
    marketing: str = ""
    bandwidth_gbps: float | None = Field(default=None, gt=0)
    interconnect: Literal["nvlink", "pcie", "xgmi", "nvlink-c2c", "other"] = "pcie"
    interconnect_gbps: float | None = Field(default=None, gt=0)
    sm: str = ""
    fp8: bool = False
    fp4: bool = False
    source: str
    notes: str = ""

    @property
    def device_bytes(self) -> int:
        """What CUDA reports as the device total (``torch.cuda.mem_get_info()[1]``)."""
        return self.cuda_total_bytes or self.memory_mib * 2**20

    @property
    def sm_major(self) -> int | None:
        try:
            return int(self.sm.split(".")[0])
        except ValueError:
            return None


def configs_dir() -> Path:
    """The preset folder: ``$KVPLAN_CONFIGS``, the wheel's ``kvplan/configs``, or the checkout's ``configs``."""
    env = os.environ.get("KVPLAN_CONFIGS")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    for cand in (here / "configs", here.parent / "configs"):
        if (cand / "models").is_dir():
            return cand
    raise InputError("preset folder not found", field="configs", hint="reinstall kvplan or set KVPLAN_CONFIGS")


def _fmt_validation(path: Path, err: ValidationError) -> str:
    e = err.errors()[0]
    loc = ".".join(str(p) for p in e["loc"])
    kind = e["type"]
    if kind == "extra_forbidden":
        return f"{path.name}: unknown key '{loc}'"
    if kind == "missing":
        return f"{path.name}: missing key '{loc}'"
    return f"{path.name}: key '{loc}': {e['msg']}"


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path.name}: not valid TOML ({exc})", field="preset") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})", field="preset") from None


def load_model_file(path: Path) -> ModelPreset:
    data = _read_toml(path)
    try:
        preset = ModelPreset.model_validate(data)
    except ValidationError as exc:
        raise InputError(_fmt_validation(path, exc), field="preset", hint="fix the preset file") from None
    unknown = sorted(set(preset.config) - CONFIG_KEYS)
    if unknown:
        raise InputError(f"{path.name}: unknown key 'config.{unknown[0]}'", field="preset",
                         hint="use Hugging Face config.json field names")
    return preset


def load_hardware_file(path: Path) -> HardwarePreset:
    data = _read_toml(path)
    try:
        return HardwarePreset.model_validate(data)
    except ValidationError as exc:
        raise InputError(_fmt_validation(path, exc), field="preset", hint="fix the preset file") from None


def _norm(s: str) -> str:
    return "".join(ch for ch in s.lower() if ch.isalnum())


@functools.cache
def all_models() -> tuple[ModelPreset, ...]:
    return tuple(load_model_file(p) for p in sorted((configs_dir() / "models").glob("*.toml")))


@functools.cache
def all_gpus() -> tuple[HardwarePreset, ...]:
    return tuple(load_hardware_file(p) for p in sorted((configs_dir() / "hardware").glob("*.toml")))


def _model_file_for(model_id: str) -> Path:
    return configs_dir() / "models" / (model_id.replace("/", "--") + ".toml")
