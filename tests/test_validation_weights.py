"""Every shipped log's weight line ('Model loading took', 'Loading model weights took', SGLang 'mem usage=') against
kvplan's cold weight estimate for that engine, release, GPU and parallel layout: within 1 % (issue 25 item 3).

The deployment is the one cold mode plans for the log (scripts/accuracy_report.py ``inputs_for`` and
``recover_deployment(mode="cold")``), with the GPU preset of :data:`GPUS` where the case does not name one: the GPU
decides the kernel (gpt-oss MXFP4 on Marlin on an A100 pads hidden 2,880 -> 3,072 and the per-rank intermediate
720 -> 768: ``model_executor/layers/quantization/mxfp4.py`` ``Mxfp4MoEMethod.create_weights``, vLLM 0.10.1.1) and
the vendor decides whether vLLM's figure is device-level (ROCm; kvplan.weights.allocator).  Logs kvplan does not
estimate as loaded are listed in :data:`MISSES` with the reason and asserted to still miss (drop the entry when
fixed); logs whose deployment does not plan are in :data:`NOT_PLANNED`.
"""

from __future__ import annotations

import pytest

from kvplan.errors import InputError
from scripts.accuracy_report import LOGS, inputs_for, load_cases

GiB = 1 << 30
TOL = 0.01

#: the GPU preset of logs whose case does not resolve one (the fixtures name some GPUs in words only)
GPUS = {
    "gemma3-27b-mi300x-rocm": "mi300x",
    "qwen25-0.5b-4070tis-pd-prefill": "rtx-4070-ti-super",
}
#: logs whose weight line the cold estimate misses by more than 1 %, and why
MISSES = {
    "glm5-nvfp4-8x-rtxpro6000-tp8": "the log loads festr2/GLM-5-NVFP4-MTP, which public guides describe as "
    "lukealonso/GLM-5-NVFP4 (~410 GB, ModelOpt NVFP4) plus the MTP layer 78 restored in bf16 (~19 GB); neither "
    "checkpoint's quantization config nor its safetensors total_size is published, and the log does not say whether "
    "NEXTN (which loads layer 78) was on.  With nvidia/GLM-5.2-NVFP4's scheme and exclude list on GLM-5 "
    "(tests/validation/configs/glm5-nvfp4.config.json): 55.75 GiB without the MTP layer, 58.25 with it, vs 57.06",
    "deepseek-v3-kt-tp2-capped": "ktransformers keeps routed experts on the CPU (--kt-method AMXINT8); the issue's "
    "full command (kvcache-ai/ktransformers#1804) has --kt-num-gpu-experts 2, i.e. two fp8 experts per MoE layer on "
    "the GPU (SGLang layers/moe/kt_ep_wrapper.py KTEPWrapperMethod.create_weights), but cold mode has no input for "
    "GPU experts; priced by hand that way (fp8, moe_tp 2, 256-expert router kept) the estimate is about 13.7 GiB vs "
    "13.06, and the GPU (48 GB class: 46.86 GiB free before the load) and the sglang-kt build are not named",
    "vllm-6746-llama31-405b-fp8-8xh100-v0-workers": "the log loads /models/Meta-Llama-3.1-405B-Instruct-FP8 "
    "(fbgemm_fp8) under vLLM 0.5.3, so the case plans the preset's FP8 variant (scripts/accuracy_report.py "
    "ADDITIONAL): 47.78 vs 57.75 GiB with every linear layer in fp8.  The fbgemm_fp8 scheme is priced "
    "(kvplan.weights.quant: per-channel fp32 scales, modules_to_not_convert kept 16-bit), but no verbatim copy of the "
    "checkpoint's config.json (its modules_to_not_convert list) was found in a public repository; Meta's recipe "
    "(llama-models convert_to_fp8_quantized_model: attention, layers 0 and 125 in bf16) would give 56.77 GiB, -1.7 %",
}
#: logs with a weight line whose deployment cold mode cannot plan, and why
NOT_PLANNED = {
    "qwen3.8-27b-fp8-hybrid-gdn-h100-kt": "Qwen/Qwen3.8-27B-FP8 is not a preset (config not published)",
}


def _logged(path) -> int | None:
    from kvplan.inputs.logs import read_log_file

    try:
        facts = read_log_file(path)
    except InputError:
        return None
    if facts.model_loading_bytes or facts.weight_load_bytes:
        return facts.model_loading_bytes or facts.weight_load_bytes
    if facts.free_before_weights_bytes and facts.free_after_weights_bytes:  # SGLang before 'mem usage=' was printed
        return facts.free_before_weights_bytes - facts.free_after_weights_bytes
    return None


LOGGED = {p.stem: (p, w) for p in sorted(LOGS.glob("*.log")) if (w := _logged(p))}


def _estimate(log_id: str) -> int:
    """The cold plan's weight figure as the log's weight line reports it: where the engine measures the load at the
    device level, the tensors plus the caching allocator's reserve over them (``WeightEstimate.measured_bytes``;
    kvplan.weights.allocator).  SGLang's planner already plans that figure (its weight entry is ``measured_bytes``,
    kvplan/engines/sglang/planner.py); vLLM's planner plans the tensors (its budget on CUDA is torch's allocated
    peak), so for a device-level vLLM line (ROCm) the reserve is added here."""
    from kvplan.inputs.logs import read_log_file
    from kvplan.planning.calibrate import fit_recovered, recover_deployment
    from kvplan.weights.estimate import estimate_weight_bytes, flatten_config
    from kvplan.weights.rope import vllm_rope_cache_bytes

    path, _ = LOGGED[log_id]
    model, gpu, over, _src = inputs_for(log_id, load_cases())
    rec = recover_deployment(read_log_file(path), model=model, gpu=gpu or GPUS.get(log_id), overrides=over, mode="cold")
    dep, spec = rec.deployment, rec.model_spec
    vendor = str(getattr(rec.gpu_preset, "vendor", None) or "nvidia")
    reserve = estimate_weight_bytes(
        config=spec.config,
        quantization=spec.quantization,
        tp_size=dep.tp or 1,
        pp_size=dep.pp or 1,
        ep_size=dep.ep or 1,
        engine=dep.engine,
        gpu_vendor=vendor,
    ).allocator_reserve_bytes
    plan = fit_recovered(dep)
    planned = int(plan.weight_bytes)
    if dep.engine == "sglang":
        return planned
    # vLLM builds its rotary cos/sin caches on the GPU while it constructs the model, so its weight line counts
    # them (kvplan.weights.rope); added here until the vLLM planner plans them (its note names them)
    planned_rope = any("rotary cos/sin caches" in a for a in plan.assumptions)
    rope = 0 if planned_rope else vllm_rope_cache_bytes(config=flatten_config(spec.config))
    return planned + reserve + rope


def test_every_weight_log_is_checked():
    """The shipped logs that print a weight figure (a new log with one lands here, not silently outside)."""
    assert len(LOGGED) == 26
    assert set(MISSES) | set(NOT_PLANNED) <= set(LOGGED)


@pytest.mark.parametrize("log_id", sorted(LOGGED))
def test_weight_line_within_one_percent(log_id):
    logged = LOGGED[log_id][1]
    if log_id in NOT_PLANNED:
        with pytest.raises(InputError):
            _estimate(log_id)
        return
    est = _estimate(log_id)
    ok = abs(est - logged) <= TOL * logged
    if log_id in MISSES:
        assert not ok, f"now within 1 %: drop the MISSES entry ({est / GiB:.2f} vs {logged / GiB:.2f})"
        return
    assert ok, (round(est / GiB, 3), round(logged / GiB, 3))


def test_sglang_weight_line_counts_the_allocator_reserve():
    """qwen25-0.5b-4070tis-pd-prefill (SGLang 0.5.8): 'mem usage=0.98 GB' for 0.92 GiB of bf16 tensors; with the
    caching allocator's segment tails (kvplan.weights.allocator) the estimate is 0.98 GiB, the tensors alone -6 %."""
    est = _estimate("qwen25-0.5b-4070tis-pd-prefill")
    assert abs(est / GiB - 0.98) < 0.005
    assert est - 494_032_768 * 2 > 50 * 2**20  # the 494,032,768 tied parameters alone are 0.92 GiB
