"""Gemma-4 under vLLM: the attention backend each GPU class gets, and the KV block size it makes vLLM start from.

Gemma-4's sliding layers have ``head_dim`` 256 and its full layers ``global_head_dim`` 512.  From transformers 5.16
(the floor of vLLM 0.31 - 0.34) the text config is *heterogeneous* (``Gemma4TextConfig.__post_init__`` writes a
``per_layer_config`` with ``head_dim = global_head_dim`` for the full layers), so vLLM's whole-model
``ModelConfig.get_head_size()`` is the largest, 512 (``config/model_arch.py`` ``ModelArchitectureConfig.from_layers``
collapses a varying field with ``max``).  What vLLM then does, read in the 0.30.0, 0.31.0, 0.32.0, 0.33.0 and 0.34.0
wheels (``vllm-project/vllm``):

1. ``model_executor/models/config.py`` ``Gemma4Config.verify_and_update_config``: when FA4 is available
   (``vllm_flash_attn/flash_attn_interface.py`` ``_is_fa4_supported``: compute capability 9.x, 10.x or 11.x; ROCm
   has no vLLM FlashAttention build) it sets ``flash_attn_version`` 4 and leaves the backend to the priority list --
   except, from 0.31, on SM90 with an fp8 cache (``cache_dtype.startswith("fp8")``), where it keeps per-layer FA3
   (head 256) / FA4 (head 512).  Without FA4 it forces TRITON_ATTN.
2. ``platforms/cuda.py`` ``_get_backend_priorities``: SM10 FLASHINFER first, every other CUDA GPU FLASH_ATTN first;
   with a multimodal-prefix model (``use_bidirectional_attention == "vision"`` in the text config and multimodal
   inputs on, ``Gemma4ModelArchConfigConvertor.is_mm_prefix_lm``) the composites come first: TRITON_FLASHINFER on
   SM10, TRITON_FLASH_ATTN on SM90 (``v1/attention/backends/triton_flashinfer.py`` / ``triton_flash_attn.py``, both
   present in 0.30.0 - 0.34.0).  A backend that rejects the KV dtype is skipped (FLASH_ATTN has no ``fp8_e5m2``).
3. ``platforms/interface.py`` ``Platform.update_block_size_for_backend``: without ``--block-size`` the cache block is
   the backend's ``get_preferred_block_size(16)``: 16 for TRITON_ATTN / FLASHINFER (``MultipleOf(16)`` / 16-32-64);
   64 for TRITON_FLASHINFER (``kernel_block_sizes=(64,)``); for FLASH_ATTN
   (``v1/attention/backends/flash_attn.py``) 64 when ``_get_sm90_fa4_fp8_kv_block_size`` fires (SM90, ``fp8`` /
   ``fp8_e4m3``, head 512 on FA4: "The SM90 FP8-KV-dequant kernel uses a 64-token TMA tile/page"; 0.31+), else 16.
4. ``model_executor/layers/attention/attention.py`` ``Attention.get_kv_cache_spec``: a sliding layer takes the
   largest kernel block its backend runs within the cache block (``_largest_kernel_block_within``), so it starts at
   the cache block -- except where FLASH_ATTN runs FA4's head-256 kernel (SM10 / SM11, an unquantized cache, no
   multimodal prefix: ``_get_fa4_hd256_block_size``, ``FA4_HD256_PAGE_SIZE`` 128), whose only size is 128 (0.31+;
   0.30 asks the backend without the layer's spec, at head 512, so never).
5. The hybrid manager then unifies the pages (:mod:`kvplan.engines.vllm.grouping`): the smaller page's block grows.

Earlier releases (0.25.1 and 0.28.0 read): ``Gemma4Config`` reads ``head_dim`` / ``global_head_dim`` directly and
sets FA4 where it exists, TRITON_ATTN elsewhere; no composites, no 64-token rule, 16-token blocks.  The default-batch
raise for a multimodal prefix (:func:`mm_prefix_batch_floor`) is already in 0.25.1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from kvplan.engines.backends import AttentionBackend, VllmBackend
from kvplan.engines.vllm.releases import Version
from kvplan.engines.vllm.specs import ModelKV

#: first release whose ``Gemma4Config`` keeps per-layer FA3/FA4 on SM90 with an fp8 cache, and whose FlashAttention
#: backend asks for 64-token pages there (``use_per_layer_fa``, ``_get_sm90_fa4_fp8_kv_block_size``: absent in
#: 0.30.0, present in 0.31.0, 0.32.0, 0.33.0, 0.34.0); the same release first sizes a sliding layer by its own spec
#: (``get_supported_kernel_block_sizes(kv_cache_spec)``), which is what gives FA4's head-256 kernel its 128 pages
GEMMA4_SM90_FP8_PER_LAYER_FROM: Version = (0, 31, 0)
#: first release with the multimodal-prefix composites in the priority list (``use_mm_prefix`` in
#: ``_get_backend_priorities``: absent in 0.25.1 and 0.28.0, present in 0.30.0 - 0.34.0; 0.29 not read)
GEMMA4_MM_PREFIX_FROM: Version = (0, 30, 0)
#: first release whose ``Gemma4Config`` leaves an Intel XPU's backend to the XPU platform (absent in 0.31.0, present in
#: 0.32.0 - 0.34.0; before it TRITON_ATTN is forced there as on any GPU without FA4)
GEMMA4_XPU_PLATFORM_FROM: Version = (0, 32, 0)
#: first release read that raises a multimodal-prefix model's default batch to its largest item
#: (``_get_min_mm_batched_tokens``: present in 0.25.1, 0.28.0, 0.30.0 - 0.34.0; releases before 0.25 not read, and
#: vllm#39734's 0.19.1 log of gemma-4-31B-it prints concurrency that needs the plain 2,048 default)
GEMMA4_MM_BATCH_FLOOR_FROM: Version = (0, 25, 0)

#: Gemma-4's largest multimodal item in tokens: a video of 32 frames x (70 soft tokens + boi + eoi + ~6 timestamp
#: tokens) (``model_executor/models/gemma4_mm.py`` ``get_mm_max_tokens_per_item``, ``_VIDEO_MAX_FRAMES`` 32,
#: ``_VIDEO_MAX_SOFT_TOKENS`` 70, 0.25.1, 0.28.0, 0.30.0 - 0.34.0)
GEMMA4_VIDEO_ITEM_TOKENS = 32 * (70 + 2 + 6)

#: KV dtype words of an unquantized cache (``is_quantized_kv_cache`` is False for them)
_UNQUANTIZED = frozenset({"auto", "bfloat16", "float16", "half", "bf16", "fp16", "float32", "fp32"})
#: the fp8 words ``_get_sm90_fa4_fp8_kv_block_size`` reads as FP8 per tensor
_FP8_PER_TENSOR = frozenset({"fp8", "fp8_e4m3"})
#: the KV words each backend takes (``supported_kv_cache_dtypes`` of ``flash_attn.py``, ``flashinfer.py``,
#: ``triton_attn.py``, 0.34.0); kvplan's aliases of bf16 / fp16 count as unquantized
_KV_WORDS: Mapping[VllmBackend, frozenset[str]] = {
    VllmBackend.FLASH_ATTN: _UNQUANTIZED | {"fp8", "fp8_e4m3"},
    VllmBackend.FLASHINFER: _UNQUANTIZED | {"fp8", "fp8_e4m3", "fp8_e5m2", "nvfp4"},
    VllmBackend.TRITON_ATTN: _UNQUANTIZED
    | {"fp8", "fp8_e4m3", "fp8_e5m2", "int4_per_token_head", "int8_per_token_head", "fp8_per_token_head"},
}
#: the priority lists of ``_get_backend_priorities`` for a Gemma-4 layer (SM10, every other CUDA major)
_ORDER_SM10 = (VllmBackend.FLASHINFER, VllmBackend.FLASH_ATTN, VllmBackend.TRITON_ATTN)
_ORDER = (VllmBackend.FLASH_ATTN, VllmBackend.FLASHINFER, VllmBackend.TRITON_ATTN)
#: FA4's head-256 kernel page (``v1/attention/backends/fa_utils.py`` ``FA4_HD256_PAGE_SIZE``, 0.30.0 - 0.34.0)
FA4_HD256_PAGE = 128
#: the 64-token page of SM90's FA4 FP8-KV kernel and TRITON_FLASHINFER's one kernel block
SM90_FA4_FP8_PAGE = 64


@dataclass(frozen=True)
class Gemma4Attention:
    """The backend vLLM runs a Gemma-4 model on and the blocks it starts from (before page unification).

    ``block_size``: the cache block (``cache_config.block_size``) every full layer and, unless
    ``sliding_block_size`` is set, every sliding layer starts at; ``why``: the assumption line; ``full_backend``:
    the full layers' backend when it is not ``backend`` (the sliding layers'), else None."""

    backend: VllmBackend
    block_size: int
    why: str
    sliding_block_size: int | None = None
    full_backend: VllmBackend | None = None

    @property
    def label(self) -> str:
        """The backend as the assumption line names it: ``FLASH_ATTN``, or ``FLASH_ATTN + FLASHINFER`` when the full
        layers run another one."""
        return self.backend.value if self.full_backend is None else f"{self.backend} + {self.full_backend}"


def is_gemma4(cfg: Mapping[str, Any]) -> bool:
    """A Gemma-4-style config: a ``global_head_dim`` that differs from ``head_dim`` (what makes vLLM's model config
    heterogeneous).  Example: E4B (256 / 512) -> True; Gemma-3 (no ``global_head_dim``) -> False."""
    hd, ghd = cfg.get("head_dim"), cfg.get("global_head_dim")
    return isinstance(hd, int) and isinstance(ghd, int) and hd > 0 and ghd > 0 and hd != ghd


def mm_prefix(cfg: Mapping[str, Any]) -> bool:
    """Whether vLLM treats the model as a multimodal-prefix LM: ``use_bidirectional_attention`` "vision" in the
    (flattened) text config (``Gemma4ModelArchConfigConvertor.is_mm_prefix_lm``, 0.31.0 - 0.34.0), with multimodal
    inputs on (vLLM's default; ``--language-model-only`` turns it off from 0.30, and the vLLM planner then skips
    this check: kvplan.engines.vllm.planner; a zero ``--limit-mm-per-prompt`` keeps it in kvplan, since the processor
    also serves audio, which is not modelled), which a text-only class (``Gemma4ForCausalLM``) never has
    (``is_multimodal_model`` is False).
    Example: google/gemma-4-26B-A4B ("vision", ``Gemma4ForConditionalGeneration``) -> True; E4B (null) -> False."""
    archs = cfg.get("architectures")
    multimodal = not isinstance(archs, list) or any(str(a).endswith("ForConditionalGeneration") for a in archs)
    return multimodal and cfg.get("use_bidirectional_attention") == "vision"


def _flash_attn(sm: int, kv: str, version: Version, prefix: bool, why: str) -> Gemma4Attention:
    """FLASH_ATTN's blocks for Gemma-4 (head 512 on FA4, head 256 on FA3 or FA4) on SM ``sm``."""
    per_layer = version >= GEMMA4_SM90_FP8_PER_LAYER_FROM
    if sm == 9 and kv in _FP8_PER_TENSOR and per_layer:
        return Gemma4Attention(
            VllmBackend.FLASH_ATTN, SM90_FA4_FP8_PAGE, f"{why}; FA4's FP8 kernel reads 64-token pages"
        )
    hd256 = sm in (10, 11) and kv in _UNQUANTIZED and not prefix and per_layer
    if hd256:
        return Gemma4Attention(
            VllmBackend.FLASH_ATTN,
            16,
            f"{why}; FA4's head-256 kernel gives the sliding layers 128-token pages",
            FA4_HD256_PAGE,
        )
    return Gemma4Attention(VllmBackend.FLASH_ATTN, 16, why)


def _xpu(prefix: bool, version: Version) -> Gemma4Attention:
    """Intel XPU from 0.32: ``Gemma4Config`` leaves the backend to the XPU platform (``platforms/xpu.py``
    ``get_attn_backend_cls``): FLASH_ATTN, whose XPU kernels take multiples of 64 (``flash_attn.py``
    ``get_preferred_block_size``: ``max(16, 64)``); a multimodal prefix gets the Triton/FlashAttention composite
    from 0.33 (64 as well: ``MultipleOf(16)`` and ``MultipleOf(64)`` meet at 64), Triton in 0.32 (16)."""
    if not prefix:
        return Gemma4Attention(
            VllmBackend.FLASH_ATTN, 64, "Intel XPU: the XPU platform's FlashAttention, 64-token kernels"
        )
    if version >= (0, 33, 0):
        return Gemma4Attention(
            VllmBackend.TRITON_FLASH_ATTN, 64, "Intel XPU, multimodal prefix: the Triton/FlashAttention composite"
        )
    return Gemma4Attention(VllmBackend.TRITON_ATTN, 16, "Intel XPU, multimodal prefix: FlashAttention has none, Triton")


def _given_block(att: Gemma4Attention, given: int | None, sm: int) -> Gemma4Attention:
    """The backends when ``--block-size`` is not a multiple of a 64-token kernel: the selector gets the user's block
    (``v1/attention/selector.py``: ``user_specified_block_size``) and skips a backend that cannot run it
    ("--block-size %d precluded higher-priority backend(s)", ``platforms/cuda.py`` ``get_attn_backend_cls``).  SM90 +
    fp8: ``FlashAttentionBackend.supports_combination`` refuses head 512 ("SM90 d512 FP8 KV requires a block size
    divisible by 64"), so the full layers take FLASHINFER and the sliding ones keep FLASH_ATTN; a composite refuses
    every layer (its one kernel block is 64) and neither FLASHINFER (no multimodal prefix) nor FLASH_ATTN (FA4 does
    not resolve for these heads with a prefix; SM90 fp8 with a prefix "requires Triton") takes them: TRITON_ATTN.
    XPU's FlashAttention (``MultipleOf(64)``) with such a block is not modelled.  The block stays the given one.
    Example: H100, fp8, ``--block-size 16`` -> "FLASH_ATTN + FLASHINFER", 16."""
    if given is None or att.block_size != SM90_FA4_FP8_PAGE or given % SM90_FA4_FP8_PAGE == 0:
        return att
    why = f"--block-size {given} is not a multiple of {SM90_FA4_FP8_PAGE}"
    if att.backend == VllmBackend.FLASH_ATTN and sm == 9:
        return Gemma4Attention(
            VllmBackend.FLASH_ATTN,
            given,
            f"{att.why}; {why}: the 512-wide full layers run FLASHINFER",
            full_backend=VllmBackend.FLASHINFER,
        )
    if att.backend in (VllmBackend.TRITON_FLASHINFER, VllmBackend.TRITON_FLASH_ATTN):
        return Gemma4Attention(VllmBackend.TRITON_ATTN, given, f"{att.why}; {why}: every layer runs TRITON_ATTN")
    return Gemma4Attention(att.backend, given, f"{att.why}; {why}: not modelled")


def _by_platform(
    sm: int, kv: str, where: str, *, vendor: str, version: Version, prefix: bool, gpu_name: str | None
) -> Gemma4Attention:
    """The backend and blocks without ``--attention-backend`` (the rules of :func:`vllm_gemma4_attention`)."""
    engine_version = version
    if vendor == "intel" and gpu_name and (gpu_name.upper().startswith("HL-") or "GAUDI" in gpu_name.upper()):
        return Gemma4Attention(
            VllmBackend.TRITON_ATTN, 16, "Intel Gaudi: the vLLM-Gaudi plugin's layout is not modelled"
        )
    if vendor == "intel" and engine_version >= GEMMA4_XPU_PLATFORM_FROM:
        return _xpu(prefix, engine_version)
    if vendor != "nvidia" or sm not in (9, 10, 11):
        place = "this platform" if vendor != "nvidia" else where
        return Gemma4Attention(
            VllmBackend.TRITON_ATTN, 16, f"heterogeneous head sizes and no FA4 on {place}: TRITON_ATTN forced"
        )
    composites = prefix and engine_version >= GEMMA4_MM_PREFIX_FROM
    # a composite takes a cache both of its backends take
    causal = VllmBackend.FLASHINFER if sm == 10 else VllmBackend.FLASH_ATTN
    composites = composites and kv in _KV_WORDS[VllmBackend.TRITON_ATTN] and kv in _KV_WORDS[causal]
    if composites and sm == 10:
        return Gemma4Attention(
            VllmBackend.TRITON_FLASHINFER,
            SM90_FA4_FP8_PAGE,
            f"multimodal prefix on {where}: its one kernel block is 64 tokens",
        )
    order = _ORDER_SM10 if sm == 10 else _ORDER
    name = next((b for b in order if kv in _KV_WORDS[b]), VllmBackend.TRITON_ATTN)
    if name != VllmBackend.FLASH_ATTN:
        return Gemma4Attention(
            name, 16, f"FA4 available on {where}; {name} the first in its list that takes this KV cache"
        )
    per_layer = sm == 9 and kv.startswith("fp8") and engine_version >= GEMMA4_SM90_FP8_PER_LAYER_FROM
    why = f"{where} with fp8 KV: per-layer FA3 (256) / FA4 (512)" if per_layer else f"FA4 for every layer on {where}"
    att = _flash_attn(sm, kv, engine_version, prefix, why)
    if composites and sm == 9:
        return Gemma4Attention(VllmBackend.TRITON_FLASH_ATTN, att.block_size, f"multimodal prefix; {att.why}")
    return att


def vllm_gemma4_attention(
    *,
    sm_major: int | None,
    vendor: str = "nvidia",
    kv_cache_dtype: str = "auto",
    engine_version: Version = (0, 34, 0),
    requested: AttentionBackend | None = None,
    prefix: bool = False,
    gpu_name: str | None = None,
    block_size_given: int | None = None,
) -> Gemma4Attention:
    """The backend and starting blocks of a Gemma-4 model (the module docstring has the rules and sources).
    ``kv_cache_dtype``: the resolved ``--kv-cache-dtype`` word; ``prefix``: :func:`mm_prefix`; ``requested``: the
    ``--attention-backend`` flag; ``gpu_name`` tells an Intel XPU from a Gaudi; ``block_size_given``: ``--block-size``
    (:func:`_given_block`).  An unknown GPU (``sm_major`` None) is taken as SM90.

    Examples (0.34): A100 / L40S / RTX PRO 6000 (SM 8 / 8 / 12), MI300X -> TRITON_ATTN, 16; H100 bf16 -> FLASH_ATTN,
    16; H100 fp8 -> FLASH_ATTN, 64; H100 fp8_e5m2 -> FLASHINFER, 16; B200 -> FLASHINFER, 16; B200 with a
    multimodal prefix -> TRITON_FLASHINFER, 64; SM11 bf16 -> FLASH_ATTN, 16 with 128-token sliding layers; Intel
    Arc Pro B60 (0.32+) -> FLASH_ATTN, 64."""
    kv = kv_cache_dtype.strip().lower()
    sm = 9 if sm_major is None else sm_major
    where = "GPU unknown, SM90 assumed" if sm_major is None else f"SM{sm}x"
    if requested:
        name = VllmBackend.of_flag(requested)
        if name == VllmBackend.FLASH_ATTN and vendor == "nvidia":
            return _flash_attn(sm, kv, engine_version, prefix, "given (--attention-backend)")
        block = SM90_FA4_FP8_PAGE if name == VllmBackend.TRITON_FLASHINFER else 16
        return Gemma4Attention(name, block, "given (--attention-backend)")
    choice = _by_platform(sm, kv, where, vendor=vendor, version=engine_version, prefix=prefix, gpu_name=gpu_name)
    return _given_block(choice, block_size_given, sm)


@dataclass(frozen=True)
class Gemma4Layout:
    """What the planner takes from :func:`gemma4_layout`: the model with its sliding layers' own block (if any),
    the cache block to start from (None: ``--block-size`` was given, keep it), the assumption line, and the default
    ``max_num_batched_tokens`` floor of a multimodal prefix (None: none)."""

    model: ModelKV
    block_size: int | None
    assumption: str
    batch_floor: int | None = None


def mm_prefix_batch_floor(cfg: Mapping[str, Any], *, engine_version: Version) -> int | None:
    """The ``max_num_batched_tokens`` a multimodal-prefix Gemma-4 needs by default: one whole multimodal item must fit
    in a batch (chunked multimodal input is off for prefix LMs), so vLLM raises the default to the largest item
    (``engine/arg_utils.py`` ``_set_default_max_num_seqs_and_batched_tokens_args`` / ``_get_min_mm_batched_tokens``,
    "Raising max_num_batched_tokens from %d to %d", 0.25.1 - 0.34.0): a 32-frame video, 2,496 tokens, or an image's
    ``vision_config.default_output_length`` if larger.  Only the default moves; a given value stays.
    Example: 26B-A4B ("vision") on an L40S (default 2,048) -> 2,496; E4B (no prefix) -> None."""
    if not mm_prefix(cfg) or engine_version < GEMMA4_MM_BATCH_FLOOR_FROM:
        return None
    vision = cfg.get("vision_config")
    image = vision.get("default_output_length") if isinstance(vision, Mapping) else None
    return max(GEMMA4_VIDEO_ITEM_TOKENS, image if isinstance(image, int) else 0)


def raised_batch_default(
    *, default: int, max_num_seqs: int, max_model_len: int, floor: int | None
) -> tuple[int, str | None]:
    """(the default ``max_num_batched_tokens`` after :func:`mm_prefix_batch_floor`, the note or None): raised to the
    floor when below it, then capped at ``max_num_seqs x max_model_len`` as vLLM caps every default.
    Example: (2,048, 256, 32,768, 2,496) -> 2,496 with a note; (8,192, ...) -> 8,192, None."""
    if not floor or floor <= default:
        return default, None
    return min(floor, max_num_seqs * max_model_len), (
        f"raised from {default} to one {floor}-token video item (multimodal prefix, vLLM >= 0.25)"
    )


def gemma4_layout(
    model: ModelKV, *, attention: Gemma4Attention, block_size_given: int | None = None, batch_floor: int | None = None
) -> Gemma4Layout:
    """Apply :func:`vllm_gemma4_attention`'s choice to the specs: the sliding layers take their own block when the
    backend has one (they choose it whatever ``--block-size`` says: ``Attention.get_kv_cache_spec``, "SW chooses
    its own block_size, decoupled from the user's --block-size", 0.34.0); the cache block is the backend's unless
    ``--block-size`` is given.

    Example: E4B on SM11 bf16 -> sliding layers at 128 tokens, cache block 16 (the full layers' page 16 x 2 x
    1,024 x 2 = 65,536 B is then raised to the sliding page 128 x 2 x 512 x 2 = 262,144 B: a 64-token block)."""
    layers = model.layers
    if attention.sliding_block_size:
        layers = tuple(replace(x, block_size=attention.sliding_block_size) if x.kind == "swa" else x for x in layers)
    start = f"; cache block {attention.block_size}" if block_size_given is None else ""
    side = f", sliding layers {attention.sliding_block_size}" if attention.sliding_block_size else ""
    line = f"attention backend {attention.label} ({attention.why}){start}{side} before page unification"
    block = None if block_size_given is not None else attention.block_size
    return Gemma4Layout(replace(model, layers=layers), block, line, batch_floor)
