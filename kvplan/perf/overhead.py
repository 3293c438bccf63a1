"""What a benchmark's time to first token holds besides the GPU steps: the per-request host path, per engine.

A serving benchmark times TTFT on the client: SGLang 0.5.23 ``benchmark/serving.py`` (the ``request_func`` of each
backend) takes ``st = time.perf_counter()`` just before the POST and stops at the first streamed chunk that carries
output; vLLM's ``benchmarks/serve.py`` (``backend_request_func``) does the same around its POST.  Between the two:

SGLang (0.5.23): HTTP parse in the server process; ``managers/tokenizer_manager.py`` tokenizes the prompt text (the
random data set sends text) and sends the request over ZMQ to the scheduler; the scheduler's event loop receives it
(``scheduler_components/request_receiver.py``) and, prefill first, runs it in token-budgeted steps; the step that
completes the prompt samples the first token and streams it at once
(``scheduler_components/batch_result_processor.py`` ``process_batch_result_prefill`` ->
``output_streamer.stream_output``: "the first token at once"); the detokenizer process
(``managers/detokenizer_manager.py``) turns it into text and the tokenizer manager writes the SSE chunk.

vLLM (V1): the API server process tokenizes (``entrypoints/openai`` serving classes), ``AsyncLLM`` sends the request
to the engine core over ZMQ, the scheduler (``v1/core/sched/scheduler.py``) gives it token budget after the running
requests, the step that schedules the prompt's last token samples the first token, and the output processor
detokenizes it and the server streams it.

So TTFT = host path in + the prefill steps (the first token is sampled by the last of them) + host path out; the GPU
terms are :mod:`kvplan.perf.schedule`'s.  The host path is one fixed time per request here, the same for both
engines: the processes and hops are the same in kind (an HTTP server process, a tokenizer, two ZMQ hops, a
detokenizer), and no public measurement splits them per engine.  :data:`REQUEST_HOST_S` is the TTFT floor of the
smallest dev rows (gpt-oss-120b on 2x B200 under vLLM, 1,024-token prompts: 35.7 ms measured in all, of which the
model's GPU steps are ~23 ms, so the host path is at most ~13-20 ms; taken as 20 ms, the figure kvplan used before
this module).  Tokenizing an 8K-token prompt with a Rust fast tokenizer is a few milliseconds: inside that budget,
so no per-token term is added.

What this module does not hold, and why: the concurrency-1 Blackwell rows of DeepSeek-V4 (4x B200, 4x B300, V4-Pro on
8x B200) missed 66-112 ms that a per-request host cost cannot be: the hosts are x86 servers like the H100 / H200 rows'
(which missed 3-28 ms), and the miss grew with the model's routed-expert work per GPU (V4-Pro on TP8 1.6x V4-Flash on
TP4).  The model now runs the prefill's grouped expert GEMMs at the class's grouped-GEMM fraction
(:func:`kvplan.perf.efficiency.expert_compute`, 0.25 on nvlink-datacenter): the three rows are -9%, -12% and -5%.
GB300 (-67%) still misses ~320 ms that neither term explains (docs/speed.md, "TTFT: what is modelled").
"""

from __future__ import annotations

#: the per-request host path of one request (HTTP, tokenizer, two ZMQ hops, scheduler admission, detokenizer, the
#: first SSE chunk), seconds; the source and the bound are the module docstring's
REQUEST_HOST_S = 0.020

#: engines whose host path is described above
ENGINES = ("sglang", "vllm")


def request_overhead_s(*, engine: str) -> float:
    """Host time of one request's path to its first token outside the GPU steps: :data:`REQUEST_HOST_S` for each
    engine of :data:`ENGINES` (the module docstring lists the hops, engine by engine), and the same for any other
    engine (the hops are the same in kind).

    Example: ``request_overhead_s(engine="sglang")`` = 0.020 s; a 145 ms prefill and a 9.5 ms decode step give a
    concurrency-1 TTFT of 0.145 + 0.0095 + 0.020 = 0.1745 s.
    """
    del engine  # one figure for every engine (module docstring)
    return REQUEST_HOST_S
