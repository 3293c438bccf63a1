"""vLLM's dummy-sampler peak from 0.18: the Triton top-k / top-p sampler (session 7, the two L40S misses).

From 0.17 ``apply_top_k_top_p`` (``vllm/v1/sample/ops/topk_topp_sampler.py``, read in the 0.17.0, 0.18.0, 0.19.0,
0.21.0, 0.24.0, 0.26.0, 0.28.0 and 0.29.0 wheels; absent in 0.16.0) sends batches of 8 rows or more to
``topk_topp_triton.py`` ``apply_top_k_top_p_triton``, which masks the fp32 logits in place; the sort, its int64
indices, the cumsum, the mask and the scatter of the older path are gone, and ``Sampler.apply_temperature`` divides in
place.  What stays alive on the vocabulary: bf16 logits 2 + fp32 logits 4 + softmax 4 + ``random_sample``'s
exponential noise 4 = 14 B per (row x vocab).  The planner prices 39 B (``SAMPLER_BYTES_PER_LOGIT``, the sort path
of 0.16 and earlier) for every V1 release.  The release rows' change and the
term-by-term tests of the two L40S logs wait for the terms docs/accuracy.md names; the tests here check the logs
themselves: what each leaves for activation + non-torch, against both per-logit figures.
"""

from __future__ import annotations

import pytest

from kvplan.hfconfig.normalize import flatten_config
from kvplan.units import GiB, MiB
from scripts.accuracy_report import LOGS, inputs_for, load_cases

ROWS = 256  # min(max_num_batched_tokens 2,048, max_num_seqs 256): the vllm serve defaults below 70 GiB


def _cold(log_id: str):
    """(log facts, recovered cold deployment, cold plan, its memory slices by name), as scripts/accuracy_report.py
    builds the case."""
    from kvplan.inputs.logs import read_log_file
    from kvplan.planning.calibrate import fit_recovered, recover_deployment

    facts = read_log_file(LOGS / f"{log_id}.log")
    model, gpu, over, _src = inputs_for(log_id, load_cases())
    rec = recover_deployment(facts, model=model, gpu=gpu, overrides=over, mode="cold")
    res = fit_recovered(rec.deployment)
    return facts, rec, res, {s.name: s.bytes for s in res.memory}


#: 0.18 / 0.19 logs that print their weights and their available KV memory (no graph term in those releases):
#: requested - weights - available is what activation + non-torch took
ROOM_LOGS = (
    "vllm-tokenkaki-qwen3-8b-a100-40gb-0191",  # 35.45 - 15.27 - 19.36 = 0.82 GiB; 39 B: 1.41, 14 B: 0.51 + 0.125
    "vllm-myoceane-gptoss20b-a100-u065",  # 51.51 - 13.72 - 36.56 = 1.23 GiB; 39 B: 1.87, 14 B: 0.67 + 0.125
    "vllm-myoceane-gemma4-26b-a4b-a100-eager",  # 71.33 - 48.50 - 21.50 = 1.33 GiB; 39 B: 2.44, 14 B: 0.88 + 0.125
    "vllm-modal-qwen35-9b-l40s-fp8kv-0180",  # 39.98 - 17.66 - 20.27 = 2.05 GiB; 39 B: 2.31, 14 B: 0.83 + 0.125
)


@pytest.mark.parametrize("log_id", ROOM_LOGS)
def test_0_18_and_0_19_logs_leave_less_than_the_sort_path_and_more_than_the_triton_path(log_id):
    """The room each log leaves for activation + non-torch is below the 39-B sampler alone (so that figure cannot be
    the release's) and above 14 B + the 128 MiB of workspaces (256 rows x the model's vocabulary)."""
    facts, rec, res, _sl = _cold(log_id)
    assert res.engine_version.startswith(("0.18", "0.19"))
    vocab = int(flatten_config(rec.model_spec.config, engine="vllm")["vocab_size"])
    room = res.free_bytes - facts.model_loading_bytes - facts.available_kv_cache_bytes
    assert ROWS * vocab * 14 + 128 * MiB < room < ROWS * vocab * 39, (round(room / GiB, 2), vocab)
