"""The launch-command tables of :mod:`kvplan.inputs.launch`: each engine's flag aliases (spellings its parser maps
to one flag) and its flags that are no kvplan field but change the memory plan, with the note each one gets.  Data
only; :mod:`kvplan.inputs.launch` reads it (split from it to keep that module under 1,000 lines)."""

from __future__ import annotations

SG_ALIASES = {
    "--model": "--model-path",
    "--tensor-parallel-size": "--tp-size",
    "--pipeline-parallel-size": "--pp-size",
    "--data-parallel-size": "--dp-size",
    "--attention-data-parallel-size": "--attn-dp-size",
    "--expert-parallel-size": "--ep-size",
    "--ep": "--ep-size",
}
# SGLang flags that are no kvplan field but change its memory plan (a note each; kvplan.flags holds the fields').
SG_UNMODELLED = {
    "--quantization": "weights are estimated from the checkpoint's own quantization",
    "--modelopt-quant": "weights are estimated from the checkpoint's own quantization",
    "--json-model-override-args": "the model config is read without these overrides",
    "--cuda-graph-max-bs": "the mem_fraction_static heuristic uses SGLang's default CUDA-graph batch size",
    "--cuda-graph-max-bs-decode": "the mem_fraction_static heuristic uses SGLang's default CUDA-graph batch size",
    "--cuda-graph-max-bs-prefill": "the mem_fraction_static heuristic uses SGLang's default prefill CUDA-graph sizes",
    "--cuda-graph-config": "CUDA-graph settings are taken from the simple flags only",
    "--speculative-num-steps": "only --speculative-algorithm / --speculative-num-draft-tokens are used",
    "--speculative-eagle-topk": "only --speculative-algorithm / --speculative-num-draft-tokens are used",
    "--speculative-draft-model-path": "the draft model's weights and KV are not added",
    "--speculative-draft-kv-cache-dtype": "the draft KV dtype is not modelled",
    "--decode-attention-backend": "kvplan picks layouts from --attention-backend only",
    "--prefill-attention-backend": "kvplan picks layouts from --attention-backend only",
    "--attn-cp-size": "attention context parallelism is not modelled",
    "--moe-dp-size": "MoE data parallelism is not modelled",
    "--max-prefill-tokens": "not used by the KV pool arithmetic",
    "--enable-hierarchical-cache": "the host-memory (HiCache) tier is not modelled; the GPU pool is",
    "--hicache-ratio": "the host-memory (HiCache) tier is not modelled",
    "--hicache-size": "the host-memory (HiCache) tier is not modelled",
    "--disable-hybrid-swa-memory": "hybrid SWA pools are planned as SGLang's default (hybrid on)",
    "--cpu-offload-gb": "weight offload to CPU is not modelled (weights count in full)",
    "--enable-memory-saver": "not modelled",
    "--load-format": "weights are estimated from the checkpoint",
    "--config": "the YAML config file is not read: pass its flags on the command line",
    "--enable-multimodal": (
        "Llama-4's vision tower is then built, which kvplan does not count (it plans SGLang's default: no tower for "
        "Llama4ForConditionalGeneration, configs/model_config.py, v0.5.23)"
    ),
    "--language-only": "the vision tower is still built (the loader skips only its weights): kvplan counts it",
    "--language-model-only": (
        "SGLang 0.5.23 accepts it only for ServerArgs.LANGUAGE_MODEL_ONLY_ARCHITECTURES (DeepseekV4ForCausalLM, "
        "MuseGlimmer, Cosmos3) and refuses to start for other models; kvplan plans the model as given"
    ),
}

VL_ALIASES = {
    "-tp": "--tensor-parallel-size",
    "-pp": "--pipeline-parallel-size",
    "-dp": "--data-parallel-size",
    "-ep": "--enable-expert-parallel",
    "--device-memory-utilization": "--gpu-memory-utilization",
    "-sc": "--speculative-config",
    "-q": "--quantization",
    "-cc": "--compilation-config",
    "-dcp": "--decode-context-parallel-size",
    "-pcp": "--prefill-context-parallel-size",
    "--no-enable-expert-parallel": "--enable-expert-parallel",
}
# vLLM flags that are no kvplan field but change its memory plan (a note each; kvplan.flags holds the fields').
VL_UNMODELLED = {
    "--quantization": "weights are estimated from the checkpoint's own quantization",
    "--num-gpu-blocks-override": "vLLM then uses this block count instead of the profiled budget",
    "--cpu-offload-gb": "weight offload to CPU is not modelled (weights count in full)",
    "--kv-offloading-size": "the CPU KV tier is not modelled; the GPU pool is",
    "--hf-overrides": "the model config is read without these overrides",
    "--compilation-config": "CUDA-graph capture sizes are vLLM's defaults",
    "--optimization-level": "CUDA-graph capture follows --enforce-eager only",
    "--max-cudagraph-capture-size": "CUDA-graph capture sizes are vLLM's defaults",
    "--cudagraph-capture-sizes": "CUDA-graph capture sizes are vLLM's defaults",
    "--prefill-context-parallel-size": "prefill context parallelism is not modelled",
    "--kv-cache-dtype-skip-layers": "every layer uses --kv-cache-dtype",
    "--mamba-block-size": "the Mamba block size is vLLM's default",
    "--skip-mm-profiling": "multimodal profiling is not modelled",
    "--load-format": "weights are estimated from the checkpoint",
    "--config": "the YAML config file is not read: pass its flags on the command line",
}

ALIASES = {"sglang": SG_ALIASES, "vllm": VL_ALIASES}
LOCAL_UNMODELLED = {"sglang": SG_UNMODELLED, "vllm": VL_UNMODELLED}
