"""The flag registry: every deployment field declared once.

One :class:`Flag` per field of :class:`kvplan.deployment.Deployment` says everything the rest of kvplan needs to
know about it: its CLI names (the first long name is the one kvplan's messages use unless ``label`` says
otherwise), its value kind, its help text, the engines that read it, whether ``kvplan sweep`` takes it as an
axis and ``kvplan solve`` accepts it, how each engine's launch command spells it, and whether a plan file
(``kvplan check``) may set it.  The consumers build their tables from :data:`FLAGS`:

* ``kvplan.cli``: the typer options of ``fit``, ``sweep`` and ``solve`` (``kvplan.cli.options``);
* ``kvplan.inputs.launch``: the SGLang and vLLM launch-command maps (mapped, read by dedicated rules, or
  reported "not modelled");
* ``kvplan.planning.check``: the plan-file keys and their types;
* ``kvplan.planning.sweep``: the sweep axes (group axes resolve one ``fit`` each; numeric axes are vectorised).

tests/test_flags.py fails when any of them, or ``Deployment`` itself, drifts from the registry.

Kinds (how a value is read on the command line and in a plan file):

========  ============================================================  ==========================
kind      CLI value                                                     example
========  ============================================================  ==========================
int       a whole number (typer/click ``INT``)                          ``--tp 8``
float     a number (typer/click ``FLOAT``)                              ``--mem-fraction-static 0.8``
size      a SIZE string, :func:`kvplan.units.parse_size`                ``--free-memory 78.81GiB``
count     a token count, :func:`kvplan.units.parse_count`               ``--context-length 128k``
bool      a switch                                                      ``--enable-dp-attention``
str       one word                                                      ``--kv-cache-dtype fp8_e4m3``
list      a comma-separated list kept as text (never a sweep axis)      ``--pp-layer-partition 30,31``
========  ============================================================  ==========================

Launch values (:attr:`Spelling.value`, read by ``kvplan.inputs.launch``): ``text`` (as written), ``int`` (>= 1),
``int>=0``, ``int>=2``, ``int|-1`` (>= 1, or -1 = disabled), ``fraction`` (0 < x <= 1), ``float`` (finite),
``switch`` (the flag alone), ``human`` (vLLM's human-readable integer, >= 1: vllm/utils/argparse_utils.py
``human_readable_int``, v0.33.0), ``choice`` (one of the engine's choices for that flag).

The module holds plain read-only objects and tuples only (no pydantic, no dataclass decorator): ``import
kvplan.flags`` costs well under a millisecond (``kvplan fit`` start-up is a feature, docs/performance.md).
"""

from __future__ import annotations

SGLANG = "sglang"
VLLM = "vllm"
ENGINES = (SGLANG, VLLM)
BOTH = ENGINES

KINDS = ("int", "float", "size", "count", "bool", "str", "list")
#: bool flags whose "not given" (None: the engine's own default) differs from off: the CLI offers ``--x/--no-x``, a
#: plan file keeps ``false`` apart from a missing key, a launch command's ``--no-x`` is read
TRISTATE: frozenset[str] = frozenset({"enable_prefix_caching"})
LAUNCH_VALUES = ("text", "int", "int>=0", "int>=2", "int|-1", "fraction", "float", "switch", "human", "choice")
SWEEP_GROUP = "group"  # resolved by one fit() per combination
SWEEP_NUMERIC = "numeric"  # vectorised inside a group (budget -> tokens -> request cap -> concurrency)


class _Entry:
    """Read-only slots: the registry's entries are plain objects, not ``@dataclass`` ones, because the dataclass
    decorator costs about a millisecond per class at import and ``kvplan fit`` imports this module on every start."""

    __slots__: tuple[str, ...] = ()

    def _set(self, values: dict[str, object]) -> None:
        for k, v in values.items():
            object.__setattr__(self, k, v)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


class Spelling(_Entry):
    """How one engine's launch command says a field.

    ``flag`` is the engine's own flag as its parser declares it (or, without leading dashes, the environment
    variable it reads); ``value`` says how the launch reader converts it (see the module docstring).
    ``modelled=False``: the engine flag changes its memory plan but kvplan plans without it; the launch reader
    then notes ``FLAG is not modelled: NOTE``.  ``special``: read by the hand-written rules of
    ``kvplan.inputs.launch`` (DP attention, CUDA-graph phases, vLLM's --max-model-len ...), together with the
    engine flags in ``also``.
    """

    __slots__ = ("also", "flag", "modelled", "note", "special", "value")
    flag: str
    value: str
    modelled: bool
    special: bool
    also: tuple[str, ...]
    note: str

    def __init__(
        self,
        flag: str,
        value: str = "text",
        *,
        modelled: bool = True,
        special: bool = False,
        also: tuple[str, ...] = (),
        note: str = "",
    ) -> None:
        self._set(dict(flag=flag, value=value, modelled=modelled, special=special, also=also, note=note))

    @property
    def flags(self) -> tuple[str, ...]:
        return (self.flag, *self.also)


def _not_modelled(flag: str, note: str, *also: str) -> Spelling:
    return Spelling(flag, modelled=False, note=note, also=also)


def _special(flag: str, *also: str) -> Spelling:
    return Spelling(flag, special=True, also=also)


class Flag(_Entry):
    """One deployment field: its CLI ``names``, ``kind``, ``help``, the ``engines`` that read it, ``sweep`` (None,
    "group" or "numeric"), ``solve`` (``kvplan solve`` takes it), its ``sglang`` / ``vllm`` launch
    :class:`Spelling` (None: the engine has no flag for it), ``plan`` (a plan-file key), ``label`` (the name
    messages use when it is not the first long name), ``metavar``, ``choices`` and the help texts of sweep and
    solve when they differ.  ``unplanned``: engines of ``engines`` whose memory plan (``kvplan fit``) does not model
    the flag although another part of kvplan reads it for them (vLLM's draft under ``--speculative-*``: only the
    speed model reads it); ``kvplan fit`` lists it in ``ignored_flags`` there."""

    __slots__ = (
        "choices",
        "engines",
        "field",
        "help",
        "kind",
        "label",
        "metavar",
        "names",
        "plan",
        "sglang",
        "solve",
        "solve_help",
        "sweep",
        "sweep_help",
        "unplanned",
        "vllm",
    )
    field: str
    names: tuple[str, ...]
    kind: str
    help: str
    engines: tuple[str, ...]
    sweep: str | None
    solve: bool
    sglang: Spelling | None
    vllm: Spelling | None
    plan: bool
    label: str
    metavar: str
    choices: tuple[str, ...]
    sweep_help: str
    solve_help: str
    unplanned: tuple[str, ...]

    def __init__(
        self,
        field: str,
        names: tuple[str, ...],
        kind: str,
        help: str,
        *,
        engines: tuple[str, ...] = BOTH,
        sweep: str | None = SWEEP_GROUP,
        solve: bool = True,
        sglang: Spelling | None = None,
        vllm: Spelling | None = None,
        plan: bool = True,
        label: str = "",
        metavar: str = "",
        choices: tuple[str, ...] = (),
        sweep_help: str = "",
        solve_help: str = "",
        unplanned: tuple[str, ...] = (),
    ) -> None:
        self._set(
            dict(
                field=field,
                names=names,
                kind=kind,
                help=help,
                engines=engines,
                sweep=sweep,
                solve=solve,
                sglang=sglang,
                vllm=vllm,
                plan=plan,
                label=label,
                metavar=metavar,
                choices=choices,
                sweep_help=sweep_help,
                solve_help=solve_help,
                unplanned=unplanned,
            )
        )

    @property
    def flag(self) -> str:
        """The name kvplan's own messages use (``label``, else the first long name)."""
        return self.label or next(n for n in self.names if n.startswith("--"))

    @property
    def plan_key(self) -> str | None:
        """The key of this field in a plan file (``kvplan check``), or None."""
        return self.field if self.plan else None

    def spelling(self, engine: str) -> Spelling | None:
        return self.sglang if engine == SGLANG else self.vllm if engine == VLLM else None


_S, _V = SGLANG, VLLM

FLAGS: tuple[Flag, ...] = (
    Flag(
        "model",
        ("-m", "--model"),
        "str",
        "Preset id (HF id such as deepseek-ai/DeepSeek-V3), alias, or a config.json / model folder. "
        "Default: the DeepSeek-V4.1-Flash deployment.",
        sglang=Spelling("--model-path"),
        vllm=Spelling("--model"),
        sweep_help="Model preset(s), comma-separated.",
        solve_help="Model preset.",
    ),
    Flag(
        "gpu",
        ("-g", "--gpu"),
        "str",
        "GPU preset id or the name nvidia-smi / rocm-smi prints. Default: rtx-pro-6000-maxq.",
        sweep_help="GPU preset(s), e.g. h100-sxm,h200-sxm,b200.",
        solve_help="GPU preset.",
    ),
    Flag(
        "engine",
        ("--engine",),
        "str",
        "sglang | vllm (or 'sglang,vllm' side by side). Default: sglang.",
        choices=ENGINES,
        sweep_help="sglang, vllm or sglang,vllm.",
        solve_help="sglang | vllm. Default: sglang.",
    ),
    Flag("num_gpus", ("--num-gpus",), "int", "GPUs in the deployment (default tp x pp x dp).", solve=False),
    Flag(
        "gpu_memory",
        ("--gpu-memory",),
        "size",
        "Device total override (CUDA-visible), e.g. 79.19GiB.",
        sweep_help="Device total override(s) (SIZE).",
    ),
    Flag(
        "engine_version",
        ("--engine-version",),
        "str",
        "Engine version whose rules apply (default: the newest modelled).",
    ),
    Flag(
        "tp",
        ("--tp-size", "--tensor-parallel-size", "--tp"),
        "int",
        "Tensor parallel size.",
        label="--tp",
        sglang=Spelling("--tp-size", "int"),
        vllm=Spelling("--tensor-parallel-size", "int"),
        sweep_help="Tensor parallel sizes, e.g. 1,2,4,8 or 1:8:x2.",
        solve_help="Fix the TP size (gpus: otherwise searched).",
    ),
    Flag(
        "pp",
        ("--pp-size", "--pipeline-parallel-size", "--pp"),
        "int",
        "Pipeline parallel size.",
        label="--pp",
        sglang=Spelling("--pp-size", "int"),
        vllm=Spelling("--pipeline-parallel-size", "int"),
        sweep_help="Pipeline parallel sizes.",
    ),
    Flag(
        "dp",
        ("--dp-size", "--data-parallel-size", "--dp"),
        "int",
        "Data parallel size.",
        label="--dp",
        sglang=_special("--dp-size", "--attn-dp-size"),
        vllm=Spelling("--data-parallel-size", "int"),
        sweep_help="Data parallel sizes.",
        solve_help="Fix the DP size (gpus: otherwise searched).",
    ),
    Flag(
        "ep",
        ("--ep-size", "--expert-parallel-size", "--ep"),
        "int",
        "Expert parallel size (weights only).",
        label="--ep",
        sglang=Spelling("--ep-size", "int"),
        vllm=_special("--enable-expert-parallel"),
        sweep_help="Expert parallel sizes.",
    ),
    Flag(
        "dcp_size",
        ("--dcp-size",),
        "int",
        "SGLang decode context parallel size (rows split across the group).",
        engines=(_S,),
        sglang=Spelling("--dcp-size", "int"),
        vllm=_not_modelled("--decode-context-parallel-size", "decode context parallelism is not modelled"),
    ),
    Flag(
        "pp_layer_partition",
        ("--pp-layer-partition",),
        "list",
        "Layers per PP stage, e.g. 30,31 (SGLANG_PP_LAYER_PARTITION).",
        engines=(_S,),
        sweep=None,
    ),
    Flag(
        "enable_dp_attention",
        ("--enable-dp-attention",),
        "bool",
        "SGLang DP attention: dp attention ranks inside the TP group.",
        engines=(_S,),
        sweep=None,
        sglang=_special("--enable-dp-attention"),
        sweep_help="SGLang DP attention.",
        solve_help="SGLang DP attention.",
    ),
    Flag(
        "mem_fraction_static",
        ("--mem-fraction-static",),
        "float",
        "SGLang: fraction of the free memory at start for weights + KV (default: SGLang's heuristic).",
        engines=(_S,),
        sweep=SWEEP_NUMERIC,
        sglang=Spelling("--mem-fraction-static", "fraction"),
        sweep_help="e.g. 0.70:0.95:0.05 (inclusive).",
        solve_help="SGLang memory fraction.",
    ),
    Flag(
        "gpu_memory_utilization",
        ("--gpu-memory-utilization",),
        "float",
        "vLLM: fraction of the device total.",
        engines=(_V,),
        sweep=SWEEP_NUMERIC,
        vllm=Spelling("--gpu-memory-utilization", "fraction"),
        sweep_help="vLLM: fractions of the device total.",
        solve_help="vLLM memory fraction.",
    ),
    Flag(
        "kv_cache_dtype",
        ("--kv-cache-dtype",),
        "str",
        "auto | bf16 | fp16 | fp8_e4m3 | fp8_e5m2 | ...",
        sglang=Spelling("--kv-cache-dtype", "choice"),
        vllm=Spelling("--kv-cache-dtype"),
        sweep_help="e.g. bf16,fp8_e4m3.",
    ),
    Flag(
        "quantization",
        ("--quantization",),
        "str",
        "The engine's --quantization (fp8, w8a8_fp8, awq, gptq, mxfp4, modelopt_fp4, ...): weights quantized at load; "
        "the plan and the speed model use the format it implies (fp8, int8, int4, mxfp4, nvfp4).",
        sweep=None,
        solve=False,
    ),
    Flag(
        "context_length",
        ("--context-length", "--max-model-len"),
        "count",
        "Context length in tokens (131072, 128k, 1m). Default: the model's.",
        metavar="INT",
        sweep=SWEEP_NUMERIC,
        sglang=Spelling("--context-length", "int>=2"),
        vllm=_special("--max-model-len"),
        sweep_help="e.g. 32k,128k,1m or 4k:1m:x2.",
        solve_help="Target context (context: the upper bound).",
    ),
    Flag(
        "allow_long_context",
        ("--allow-long-context",),
        "bool",
        "Plan a --context-length above the model's maximum, as the engine allows it with "
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 / VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (also read from the "
        "environment and from a launch command's env prefix); without it such a context does not fit.",
        sweep=None,
        sglang=_special("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"),
        vllm=_special("VLLM_ALLOW_LONG_MAX_MODEL_LEN"),
        sweep_help="Allow a context above the model's maximum.",
        solve_help="Allow a context above the model's maximum.",
    ),
    Flag(
        "max_running_requests",
        ("--max-running-requests", "--max-num-seqs"),
        "int",
        "Request cap the engine applies (more requests wait); never the target (see --requests).",
        sweep=SWEEP_NUMERIC,
        sglang=Spelling("--max-running-requests", "int"),
        vllm=Spelling("--max-num-seqs", "int"),
        sweep_help="Request caps.",
        solve_help="Request cap.",
    ),
    Flag(
        "page_size",
        ("--page-size", "--block-size"),
        "int",
        "KV page / block size in tokens.",
        sglang=Spelling("--page-size", "int"),
        vllm=Spelling("--block-size", "int"),
        sweep_help="Page sizes in tokens.",
    ),
    Flag(
        "chunked_prefill_size",
        ("--chunked-prefill-size", "--max-num-batched-tokens"),
        "int",
        "Chunked prefill size (-1 disables).",
        sglang=Spelling("--chunked-prefill-size", "int|-1"),
        vllm=Spelling("--max-num-batched-tokens", "human"),
        sweep_help="Chunked prefill sizes.",
    ),
    Flag(
        "max_total_tokens",
        ("--max-total-tokens",),
        "count",
        "SGLang cap on the pool in tokens.",
        metavar="INT",
        engines=(_S,),
        sweep=SWEEP_NUMERIC,
        sglang=Spelling("--max-total-tokens", "int"),
        sweep_help="SGLang caps on the pool.",
    ),
    Flag(
        "kv_cache_memory_bytes",
        ("--kv-cache-memory-bytes",),
        "size",
        "vLLM: KV memory per GPU, replacing the whole budget.",
        engines=(_V,),
        vllm=Spelling("--kv-cache-memory-bytes", "human"),
    ),
    Flag(
        "free_memory",
        ("--free-memory",),
        "size",
        "Measured free memory per GPU at start, before weights (SGLang 'Load weight begin. avail mem=').",
        sweep_help="Measured free memory per GPU (SIZE).",
        solve_help="Measured free memory per GPU.",
    ),
    Flag(
        "weight_memory",
        ("--weight-memory",),
        "size",
        "Measured per-GPU weight load (SGLang 'mem usage=', vLLM 'Model loading took').",
        sweep_help="Measured weights per GPU (SIZE).",
        solve_help="Measured weights per GPU.",
    ),
    Flag(
        "activation_memory", ("--activation-memory",), "size", "vLLM: measured peak activation memory.", engines=(_V,)
    ),
    Flag("non_torch_memory", ("--non-torch-memory",), "size", "vLLM: measured non-torch memory.", engines=(_V,)),
    Flag("cuda_graph_memory", ("--cuda-graph-memory",), "size", "vLLM: measured CUDA-graph memory.", engines=(_V,)),
    Flag(
        "target_requests",
        ("--requests",),
        "int",
        "Target: requests that must run at once, of the full context (or of --input-len + --output-len tokens); "
        "default 1. --check exits 3 when it is not met.",
        sweep=SWEEP_NUMERIC,
        plan=False,
        sweep_help="Target requests at once (default 1).",
        solve_help="Target requests at once (default 1), of the full context or of the workload.",
    ),
    Flag(
        "input_len",
        ("--input-len",),
        "count",
        "Workload: prompt tokens per request; with --output-len, how many such requests run at once "
        "(workload_concurrency).",
        metavar="INT",
        sweep=SWEEP_NUMERIC,
        sweep_help="Workload prompt tokens per request, e.g. 1k,8k.",
        solve_help="Workload prompt tokens per request.",
    ),
    Flag(
        "output_len",
        ("--output-len",),
        "count",
        "Workload: generated tokens per request (default 0; needs --input-len).",
        metavar="INT",
        sweep=SWEEP_NUMERIC,
        sweep_help="Workload output tokens per request.",
        solve_help="Workload output tokens per request.",
    ),
    Flag(
        "attention_backend",
        ("--attention-backend",),
        "str",
        "Engine attention backend (affects page size / DSA and DeepSeek-V4 layouts).",
        sglang=Spelling("--attention-backend", "choice"),
        vllm=Spelling("--attention-backend"),
        sweep_help="Attention backend(s).",
    ),
    Flag(
        "dsv4_attn_backend",
        ("--dsv4-attn-backend",),
        "str",
        "SGLang DeepSeek-V4: auto | flashmla | flashmla_mega | trtllm (picks the KV row layout).",
        engines=(_S,),
        sglang=Spelling("--dsv4-attn-backend", "choice"),
    ),
    Flag(
        "disable_radix_cache",
        ("--disable-radix-cache",),
        "bool",
        "SGLang: radix cache off.",
        engines=(_S,),
        sweep=None,
        sglang=Spelling("--disable-radix-cache", "switch"),
    ),
    Flag(
        "disable_overlap_schedule",
        ("--disable-overlap-schedule",),
        "bool",
        "SGLang: overlap scheduler off.",
        engines=(_S,),
        sweep=None,
        sglang=Spelling("--disable-overlap-schedule", "switch"),
    ),
    Flag(
        "disable_cuda_graph",
        ("--disable-cuda-graph",),
        "bool",
        "SGLang: CUDA graphs off.",
        engines=(_S,),
        sweep=None,
        sglang=_special(
            "--disable-cuda-graph",
            "--disable-decode-cuda-graph",
            "--disable-prefill-cuda-graph",
            "--cuda-graph-backend-decode",
            "--cuda-graph-backend-prefill",
        ),
    ),
    Flag(
        "enforce_eager",
        ("--enforce-eager",),
        "bool",
        "vLLM: no CUDA graphs.",
        engines=(_V,),
        sweep=None,
        vllm=_special("--enforce-eager", "--no-enforce-eager"),
    ),
    Flag(
        "enable_prefix_caching",
        ("--enable-prefix-caching",),
        "bool",
        "vLLM: prefix caching on (a launch command's --no-enable-prefix-caching or a plan file's false turns it "
        "off); not given: the release's default (on for hybrid models from 0.28). Sets the Mamba cache mode.",
        engines=(_V,),
        sweep=None,
        vllm=_special("--enable-prefix-caching", "--no-enable-prefix-caching"),
    ),
    Flag(
        "swa_full_tokens_ratio",
        ("--swa-full-tokens-ratio",),
        "float",
        "SGLang hybrid SWA: SWA tokens per full token.",
        engines=(_S,),
        sglang=Spelling("--swa-full-tokens-ratio", "fraction"),
    ),
    Flag(
        "mamba_full_memory_ratio",
        ("--mamba-full-memory-ratio",),
        "float",
        "SGLang Mamba hybrids: state : KV memory ratio (default 0.9).",
        engines=(_S,),
        sglang=Spelling("--mamba-full-memory-ratio", "float"),
    ),
    Flag(
        "max_mamba_cache_size",
        ("--max-mamba-cache-size",),
        "int",
        "SGLang Mamba hybrids: state slots per DP rank.",
        engines=(_S,),
        sglang=Spelling("--max-mamba-cache-size", "int"),
    ),
    Flag(
        "mamba_ssm_dtype",
        ("--mamba-ssm-dtype",),
        "str",
        "SGLang Mamba hybrids: SSM state dtype (default fp32).",
        engines=(_S,),
        sglang=Spelling("--mamba-ssm-dtype"),
        vllm=_not_modelled("--mamba-ssm-cache-dtype", "the Mamba state dtype is vLLM's default", "--mamba-cache-dtype"),
    ),
    Flag(
        "speculative_algorithm",
        ("--speculative-algorithm",),
        "str",
        "EAGLE | EAGLE3 | NEXTN | STANDALONE | NGRAM | DFLASH | DSPARK | UNO | FROZEN_KV_MTP (vLLM: MTP).",
        sglang=Spelling("--speculative-algorithm"),
        vllm=_special("--speculative-config", "--spec-method"),
        sweep_help="EAGLE, MTP, ...",
        unplanned=(_V,),
    ),
    Flag(
        "speculative_num_draft_tokens",
        ("--speculative-num-draft-tokens",),
        "int",
        "Draft tokens per step.",
        sglang=Spelling("--speculative-num-draft-tokens", "int>=0"),
        vllm=_special("--speculative-config", "--spec-tokens"),
        unplanned=(_V,),
    ),
    Flag(
        "speculative_dspark_block_size",
        ("--speculative-dspark-block-size",),
        "int",
        "SGLang DSPARK: draft block size (num_draft_tokens = block + 1; default: the checkpoint's "
        "dspark_block_size, else 7).",
        engines=(_S,),
        sglang=Spelling("--speculative-dspark-block-size", "int"),
        sweep_help="DSPARK block sizes, e.g. 5,6,7.",
        solve_help="DSPARK block size.",
    ),
    Flag(
        "moe_dense_tp_size",
        ("--moe-dense-tp-size",),
        "int",
        "SGLang: TP size of the dense MLP layers (1 = replicated on every rank; default: the TP size).",
        engines=(_S,),
        sglang=Spelling("--moe-dense-tp-size", "int"),
    ),
    Flag(
        "enable_dp_lm_head",
        ("--enable-dp-lm-head",),
        "bool",
        "SGLang with DP attention: lm_head split inside each attention-DP group instead of over the TP group.",
        engines=(_S,),
        sweep=None,
        sglang=Spelling("--enable-dp-lm-head", "switch"),
    ),
    Flag(
        "engram_on_host",
        ("--engram-on-host",),
        "bool",
        "DeepSeek-V4.1: engram tables in host memory (SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE=1).",
        engines=(_S,),
        sweep=None,
        sglang=_special("SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE"),
        sweep_help="DeepSeek-V4.1: engram tables in host memory.",
    ),
    # speed knobs (kvplan speed, issue 22): read by the step model only, not by the memory plan (a launch command's
    # spelling of them stays "not modelled" in kvplan.inputs.launch, so they carry no launch spelling here)
    Flag(
        "speculative_num_steps",
        ("--speculative-num-steps",),
        "int",
        "Speed: draft forwards per speculative step (default: --speculative-num-draft-tokens - 1, else 3).",
        sweep=None,
        solve=False,
        plan=False,
    ),
    Flag(
        "speculative_eagle_topk",
        ("--speculative-eagle-topk",),
        "int",
        "Speed: EAGLE draft branches per step (the model runs the chain, topk 1).",
        sweep=None,
        solve=False,
        plan=False,
    ),
    Flag(
        "moe_runner_backend",
        ("--moe-runner-backend",),
        "str",
        "Speed: the MoE kernel backend (flashinfer_mxfp4, marlin, triton, ...): recorded in the assumptions.",
        sweep=None,
        solve=False,
        plan=False,
    ),
    Flag(
        "interconnect",
        ("--interconnect",),
        "str",
        "vLLM: the link between the ranks (network = one GPU per node: no custom all-reduce); default the GPU's.",
        engines=(_V,),
        choices=("nvlink", "nvlink-c2c", "pcie", "xgmi", "network"),
        sweep=None,
        solve=False,
    ),
    Flag(
        "vllm_sampler",
        ("--vllm-sampler",),
        "str",
        "vLLM: the V1 sampler path, pytorch (default) or flashinfer (FlashInfer installed: a smaller sampler peak).",
        engines=(_V,),
        choices=("pytorch", "flashinfer"),
        sweep=None,
        solve=False,
    ),
    # text-only serving of a multimodal checkpoint: vLLM builds no vision tower (kvplan.engines.vllm.planner
    # text_only_reason; vllm/model_executor/models/interfaces.py _mark_tower_model, v0.18.0 - v0.34.0)
    Flag(
        "language_model_only",
        ("--language-model-only",),
        "bool",
        "vLLM: serve the text model only (vLLM 0.18+): no vision tower is built, so its weights are not counted.",
        engines=(_V,),
        sweep=None,
        vllm=_special("--language-model-only", "--no-language-model-only"),
    ),
    Flag(
        "limit_mm_per_prompt",
        ("--limit-mm-per-prompt",),
        "str",
        'vLLM: items per prompt by modality, as vLLM takes it (\'{"image": 0, "video": 0}\'); zero for every '
        "modality the vision tower serves builds no tower (vLLM 0.18+), so its weights are not counted.",
        metavar="JSON",
        engines=(_V,),
        sweep=None,
        vllm=_special("--limit-mm-per-prompt"),
    ),
)

BY_FIELD: dict[str, Flag] = {f.field: f for f in FLAGS}
BY_NAME: dict[str, Flag] = {n: f for f in FLAGS for n in (*f.names, f.flag)}


def flag(field: str) -> Flag:
    """The registry entry of one Deployment field (KeyError for a name that is not one: a bug, not bad input)."""
    return BY_FIELD[field]


def sweep_axes() -> tuple[Flag, ...]:
    """The fields ``kvplan sweep`` takes as axes, in registry order (group and numeric)."""
    return tuple(f for f in FLAGS if f.sweep is not None)


def plan_keys() -> tuple[Flag, ...]:
    """The fields a plan file may set (``kvplan check``), in registry order."""
    return tuple(f for f in FLAGS if f.plan)
