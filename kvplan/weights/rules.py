"""What each engine does differently when it loads weights, as data: one :class:`WeightRules` per engine.

The weights layer sits below the engines, so it cannot ask an engine object; the engine objects
(:mod:`kvplan.engines.registry`) point at these rows instead (``Engine.weights``), and the weight walk looks a row up
by the engine's name once (:func:`weight_rules`) and reads its fields, never the name.

=========================  ===============================================  ============================================
field                      SGLang (v0.5.23)                                 vLLM (v0.25-0.34)
=========================  ===============================================  ============================================
dp_attention               ``--enable-dp-attention``: attn_tp = tp / dp     none: DP replicates the model per rank
dp_lm_head, moe_dense_tp   ``--enable-dp-lm-head``, ``--moe-dense-tp-size``  none
per_model_layout           the model file's layout (``ModelLayout``)        every group over tp, MoE over tp x dp
ernie_moe_one_based        ``(i - start) % interval``, start default L      ``(i + 1) % interval``, start default 0
                           (models/ernie4.py)                               (models/ernie45_moe.py)
mtp_draft_layers           1: the first NextN layer (deepseek_nextn.py)     None: every MTP layer of the checkpoint
dsv41_vision_tower         its own DeepSeek-V4.1 vision tower builder       the generic vision tower
fp8_wo_a_needs_128_blocks  DeepSeek-V4 ``wo_a`` in bf16 for an fp8          fp8 as stored
                           checkpoint of other than 128x128 blocks
mxfp4_moe_backend          no backend choice modelled                       gpt-oss MXFP4 experts: the backend picked
                                                                            by GPU (:mod:`kvplan.weights.kernels`)
allocator_reserve_on       every GPU: ``mem usage`` is free before - free   ROCm only: ``Model loading took`` is
                           after, after ``empty_cache`` (utils/common.py    total - free (platforms/rocm.py, v0.11.0);
                           ``get_available_gpu_memory``, v0.5.8)            on CUDA torch's allocated bytes
wna16_moe_index_on         ROCm: the compressed-tensors WNA16 MoE keeps     none (not read)
                           its act-order buffers (Triton path, v0.5.9;
                           :func:`kvplan.weights.kernels.wna16_moe_index_bytes`)
=========================  ===============================================  ============================================
"""

from __future__ import annotations

from typing import Literal

from kvplan.errors import InputError


class VisionRules:
    """How one engine builds the vision towers of :mod:`kvplan.weights.vision` where the two engines differ
    (read in vLLM v0.21.0 and SGLang v0.5.15 ``models/``; each builder's docstring names its file):

    * ``pos_vocab_split``: the Qwen3-VL and SigLIP position tables are VocabParallel over TP (SGLang), not replicated;
    * ``gemma4_tp_first_stage``: Gemma-4's tower is TP-split and on the first pipeline stage only (SGLang), not the
      replicated transformers module on every stage (vLLM);
    * ``moonvit_mlp_replicated``: Kimi's MoonViT MLP and projector are not split (SGLang);
    * ``pixtral_projector_replicated``: the Pixtral / Mistral-3 projector is not split (SGLang);
    * ``llama4_tower_built``: Llama-4's tower is built by default (vLLM; SGLang only with ``--enable-multimodal``).

    A plain read-only class with slots, as :class:`WeightRules`.
    Example: ``SGLANG_WEIGHTS.vision.llama4_tower_built is False``."""

    __slots__ = (
        "gemma4_tp_first_stage",
        "llama4_tower_built",
        "moonvit_mlp_replicated",
        "pixtral_projector_replicated",
        "pos_vocab_split",
    )

    def __init__(
        self,
        *,
        pos_vocab_split: bool,
        gemma4_tp_first_stage: bool,
        moonvit_mlp_replicated: bool,
        pixtral_projector_replicated: bool,
        llama4_tower_built: bool,
    ) -> None:
        self.pos_vocab_split = pos_vocab_split
        self.gemma4_tp_first_stage = gemma4_tp_first_stage
        self.moonvit_mlp_replicated = moonvit_mlp_replicated
        self.pixtral_projector_replicated = pixtral_projector_replicated
        self.llama4_tower_built = llama4_tower_built

    def __setattr__(self, name: str, value: object) -> None:
        if hasattr(self, name):
            raise AttributeError(f"VisionRules.{name} is read-only")
        object.__setattr__(self, name, value)


class WeightRules:
    """One engine's weight-loading rules (the module table); read-only after construction.

    (A plain class with slots: the dataclass decorator generates and compiles code at every import, and ``kvplan fit``
    imports this module.)
    """

    __slots__ = (
        "allocator_reserve_on",
        "divides_tp",
        "dp_attention",
        "dp_lm_head",
        "dsv41_vision_tower",
        "ernie_moe_one_based",
        "fp8_wo_a_needs_128_blocks",
        "gemma4_ple_projection_tp",
        "moe_dense_tp",
        "mtp_draft_layers",
        "mxfp4_moe_backend",
        "name",
        "per_model_layout",
        "vision",
        "wna16_moe_index_on",
    )

    def __init__(
        self,
        *,
        name: Literal["sglang", "vllm"],  # the ``--engine`` name (kvplan.hfconfig.normalize flattens by it)
        dp_attention: bool,  # --enable-dp-attention splits the attention group
        dp_lm_head: bool,  # --enable-dp-lm-head puts lm_head on attention TP
        moe_dense_tp: bool,  # --moe-dense-tp-size exists
        divides_tp: tuple[str, ...],  # sizes that must divide tp
        per_model_layout: bool,  # group sizes follow the model file's layout (else every group over tp)
        ernie_moe_one_based: bool,  # ERNIE-4.5 MoE layers by (i + 1) % interval, start default 0
        mtp_draft_layers: int | None,  # MTP layers an EAGLE/NextN draft loads (None: all of them)
        dsv41_vision_tower: bool,  # the DeepSeek-V4.1 vision tower is built by its own rule
        fp8_wo_a_needs_128_blocks: bool,  # DeepSeek-V4 wo_a stays fp8 only for 128x128 fp8 blocks
        mxfp4_moe_backend: bool,  # gpt-oss MXFP4 experts take the padding of the backend picked on the GPU
        allocator_reserve_on: tuple[str, ...] = (),  # GPU vendors ("*": all) where the load is device-level
        wna16_moe_index_on: tuple[str, ...] = (),  # GPU vendors where the WNA16 MoE keeps its act-order buffers
        gemma4_ple_projection_tp: bool = False,  # Gemma-4's per-layer-input projection is column-split over TP
        vision: VisionRules,  # how the engine builds the vision towers
    ) -> None:
        self.name = name
        self.dp_attention = dp_attention
        self.dp_lm_head = dp_lm_head
        self.moe_dense_tp = moe_dense_tp
        self.divides_tp = divides_tp
        self.per_model_layout = per_model_layout
        self.ernie_moe_one_based = ernie_moe_one_based
        self.mtp_draft_layers = mtp_draft_layers
        self.dsv41_vision_tower = dsv41_vision_tower
        self.fp8_wo_a_needs_128_blocks = fp8_wo_a_needs_128_blocks
        self.mxfp4_moe_backend = mxfp4_moe_backend
        self.allocator_reserve_on = allocator_reserve_on
        self.wna16_moe_index_on = wna16_moe_index_on
        self.gemma4_ple_projection_tp = gemma4_ple_projection_tp
        self.vision = vision

    def __setattr__(self, name: str, value: object) -> None:
        if hasattr(self, name):
            raise AttributeError(f"WeightRules.{name} is read-only")
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"WeightRules({self.name!r})"


SGLANG_WEIGHTS = WeightRules(
    name="sglang",
    dp_attention=True,
    dp_lm_head=True,
    moe_dense_tp=True,
    divides_tp=("attn_dp_size", "ep_size"),
    per_model_layout=True,
    ernie_moe_one_based=False,
    mtp_draft_layers=1,
    dsv41_vision_tower=True,
    fp8_wo_a_needs_128_blocks=True,
    mxfp4_moe_backend=False,
    allocator_reserve_on=("*",),
    wna16_moe_index_on=("amd",),
    vision=VisionRules(
        pos_vocab_split=True,
        gemma4_tp_first_stage=True,
        moonvit_mlp_replicated=True,
        pixtral_projector_replicated=True,
        llama4_tower_built=False,
    ),
)

VLLM_WEIGHTS = WeightRules(
    name="vllm",
    dp_attention=False,
    dp_lm_head=False,
    moe_dense_tp=False,
    divides_tp=(),
    per_model_layout=False,
    ernie_moe_one_based=True,
    mtp_draft_layers=None,
    dsv41_vision_tower=False,
    fp8_wo_a_needs_128_blocks=False,
    mxfp4_moe_backend=True,
    allocator_reserve_on=("amd",),
    gemma4_ple_projection_tp=True,
    vision=VisionRules(
        pos_vocab_split=False,
        gemma4_tp_first_stage=False,
        moonvit_mlp_replicated=False,
        pixtral_projector_replicated=False,
        llama4_tower_built=True,
    ),
)

#: every engine's row by name
WEIGHT_RULES: dict[str, WeightRules] = {r.name: r for r in (SGLANG_WEIGHTS, VLLM_WEIGHTS)}


def weight_rules(engine: str | WeightRules | None, *, strict: bool = False) -> WeightRules:
    """The row of ``engine`` (a name or a row).  An unknown name reads as SGLang's, as the weight walk always did;
    ``strict`` makes it an InputError naming ``engine`` instead.

    Example: ``weight_rules("vllm").mtp_draft_layers is None``; ``weight_rules("other").name == "sglang"``.
    """
    if isinstance(engine, WeightRules):
        return engine
    hit = WEIGHT_RULES.get(engine) if isinstance(engine, str) else None
    if hit is not None:
        return hit
    if strict:
        raise InputError(f"engine must be sglang or vllm, not {engine!r}", field="engine")
    return SGLANG_WEIGHTS
