"""Read one measured serving point from a benchmark's result file: :func:`read_bench`.

Formats (detected from the keys; a JSON-lines file's last non-empty line is the run read):

* SGLang ``bench_serving`` (``python -m sglang.bench_serving`` / ``sglang.benchmark.serving``, v0.5.23
  ``sglang/benchmark/serving.py``, ``benchmark()``'s ``result`` dict appended as one JSON line to
  ``--output-file``): ``completed``, ``total_input_tokens``, ``total_output_tokens``, ``max_concurrency``,
  ``input_throughput``, ``output_throughput``, ``median_ttft_ms``, ``median_tpot_ms`` (``mean_*`` when no median);
* SGLang ``bench_one_batch`` (v0.5.23 ``sglang/benchmark/one_batch.py``, ``latency_test_run_once()``'s
  ``measurement_results`` appended to ``--result-filename``): ``batch_size``, ``input_len``, ``output_len``,
  ``prefill_throughput``, ``median_decode_latency``;
* ``vllm bench serve --save-result`` (v0.34.0 ``vllm/benchmarks/serve.py``, ``benchmark()``'s ``result`` dict plus
  the run's arguments in ``main()``'s ``result_json``, written with ``json.dump``): ``completed``,
  ``total_input_tokens``, ``total_output_tokens``, ``max_concurrency``, ``num_prompts``, ``duration``,
  ``output_throughput``, ``total_token_throughput``, ``median_ttft_ms``, ``median_tpot_ms``;
* a hand-entered point, TOML (docs/choosing.md)::

      [workload]
      input_len = 32768
      output_len = 1
      concurrency = 1      # optional, default 1
      [measured]            # any of the kvplan speed keys below
      prefill_tokens_per_s = 7196

Measured values become kvplan speed keys (docs/speed.md): ``prefill_tokens_per_s`` (only for a run of one request:
its prompt tokens / the run's duration, the way the dev set records a cold prefill), ``ttft_s``, ``tpot_s`` (only
when requests produce more than one token), ``output_tokens_per_s``, ``total_tokens_per_s``.

Bounded like every reader of kvplan.inputs: at most :data:`MAX_BENCH_BYTES`; a truncated, oversized or
unrecognised file is an :class:`~kvplan.errors.InputError` (exit 2, one line naming ``RESULT``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kvplan.errors import InputError, echo
from kvplan.inputs.read import PATH_CHARS, decode_utf8, read_bytes

#: a bench_serving file with ``--output-details`` holds every generated text: 16 MiB is ample for one run
MAX_BENCH_BYTES = 16 * 2**20
FIELD = "RESULT"
#: the measured keys a point may carry (kvplan speed's JSON keys)
MEASURED_KEYS = ("prefill_tokens_per_s", "ttft_s", "tpot_s", "output_tokens_per_s", "total_tokens_per_s")


@dataclass(frozen=True)
class BenchPoint:
    """One measured run: its workload and the measured kvplan speed keys."""

    source: str  # "sglang bench_serving" | "sglang bench_one_batch" | "vllm bench serve" | "toml"
    input_len: int
    output_len: int
    concurrency: int
    num_prompts: int | None
    measured: dict[str, float]


def _num(doc: dict[str, Any], key: str, where: str) -> float | None:
    v = doc.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise InputError(f"{where}: '{key}' is not a non-negative number ({echo(repr(v), 40)})", field=FIELD)
    return float(v)


def _need(doc: dict[str, Any], key: str, where: str) -> float:
    v = _num(doc, key, where)
    if v is None:
        raise InputError(f"{where}: no '{key}' (not a complete benchmark result)", field=FIELD)
    return v


def _count(v: float | None, key: str, where: str) -> int:
    if v is None or v < 1 or v > 1 << 24:
        raise InputError(f"{where}: '{key}' must be between 1 and 16,777,216", field=FIELD)
    return round(v)


def _ms(doc: dict[str, Any], name: str, where: str) -> float | None:
    v = _num(doc, f"median_{name}_ms", where)
    if v is None:
        v = _num(doc, f"mean_{name}_ms", where)
    return None if v is None else v / 1000.0


def _serving(doc: dict[str, Any], where: str, source: str) -> BenchPoint:
    """SGLang bench_serving and vllm bench serve: the same metric names (both derive from vLLM's benchmark)."""
    done = _count(_need(doc, "completed", where), "completed", where)
    inp = _need(doc, "total_input_tokens", where) / done
    out = (_num(doc, "total_output_tokens", where) or 0.0) / done
    mc = _num(doc, "max_concurrency", where)
    conc = min(_count(mc, "max_concurrency", where), done) if mc is not None else done
    prompts = _num(doc, "num_prompts", where)
    measured: dict[str, float] = {}
    ttft = _ms(doc, "ttft", where)
    if ttft:
        measured["ttft_s"] = ttft
    tpot = _ms(doc, "tpot", where)
    if tpot and out > 1.5:
        measured["tpot_s"] = tpot
    duration = _num(doc, "duration", where)
    if done == 1 and duration:
        measured["prefill_tokens_per_s"] = inp / duration if out <= 1.5 else inp / (ttft or duration)
    ot = _num(doc, "output_throughput", where)
    if ot and done > 1:
        measured["output_tokens_per_s"] = ot
    tt = _num(doc, "total_throughput", where) or _num(doc, "total_token_throughput", where)
    if tt and done > 1:
        measured["total_tokens_per_s"] = tt
    if not measured:
        raise InputError(f"{where}: no measured TTFT, TPOT or throughput", field=FIELD)
    return BenchPoint(
        source=source,
        input_len=max(round(inp), 1),
        output_len=max(round(out), 1),
        concurrency=conc,
        num_prompts=int(prompts) if prompts else done,
        measured=measured,
    )


def _one_batch(doc: dict[str, Any], where: str) -> BenchPoint:
    bs = _count(_need(doc, "batch_size", where), "batch_size", where)
    inp = _count(_need(doc, "input_len", where), "input_len", where)
    out = _count(_need(doc, "output_len", where), "output_len", where)
    measured: dict[str, float] = {}
    pt = _num(doc, "prefill_throughput", where)
    if pt and bs == 1:
        measured["prefill_tokens_per_s"] = pt
    dl = _num(doc, "median_decode_latency", where)
    if dl:
        measured["tpot_s"] = dl
    if not measured:
        raise InputError(f"{where}: no prefill_throughput (batch 1) or median_decode_latency", field=FIELD)
    return BenchPoint("sglang bench_one_batch", inp, out, bs, None, measured)


def _toml(text: str, where: str) -> BenchPoint:
    import tomllib

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{where}: not TOML ({exc})", field=FIELD) from None
    wl, meas = doc.get("workload"), doc.get("measured")
    if not isinstance(wl, dict) or not isinstance(meas, dict):
        raise InputError(f"{where}: needs a [workload] and a [measured] table", field=FIELD, hint="docs/choosing.md")
    unknown = sorted(set(meas) - set(MEASURED_KEYS))
    if unknown:
        raise InputError(
            f"{where}: [measured] has unknown key '{echo(unknown[0], 40)}'",
            field=FIELD,
            hint="one of " + ", ".join(MEASURED_KEYS),
        )
    measured = {k: _need(meas, k, where) for k in meas}
    if not measured or not all(measured.values()):
        raise InputError(f"{where}: [measured] needs a positive value", field=FIELD)
    inp = _count(_need(wl, "input_len", where), "input_len", where)
    out = _count(_need(wl, "output_len", where), "output_len", where)
    conc = _count(_num(wl, "concurrency", where) or 1.0, "concurrency", where)
    return BenchPoint("toml", inp, out, conc, None, measured)


def _loads(text: str, where: str) -> Any:
    """JSON with ``Infinity`` / ``NaN`` read as null: bench_serving writes ``"request_rate": Infinity`` for its
    default rate (``json.dumps`` of ``float("inf")``), so the strict :func:`kvplan.inputs.read.parse_json` would
    refuse every default run."""
    import json

    try:
        return json.loads(text, parse_constant=lambda _c: None)
    except (ValueError, RecursionError) as exc:
        raise InputError(
            f"{where}: not a complete JSON result ({str(exc)[:80]})", field=FIELD, hint="the file may be truncated"
        ) from None


def read_bench(path: str) -> BenchPoint:
    """The measured point of a benchmark result file (formats in the module docstring)."""
    data = read_bytes(path, field=FIELD, what="a benchmark result", max_bytes=MAX_BENCH_BYTES)
    where = echo(path, PATH_CHARS)
    text = decode_utf8(data, field=FIELD, where=where)
    if path.endswith(".toml"):
        return _toml(text, where)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise InputError(f"{where}: empty", field=FIELD)
    body = text if text.lstrip().startswith("{") and len(lines) > 1 and not lines[-1].lstrip().startswith("{") else None
    doc = _loads(body if body is not None else lines[-1], where)
    if not isinstance(doc, dict):
        raise InputError(f"{where}: not a benchmark result (a JSON object)", field=FIELD)
    if "prefill_throughput" in doc or "median_decode_latency" in doc:
        return _one_batch(doc, where)
    if "input_throughput" in doc:
        return _serving(doc, where, "sglang bench_serving")
    if "total_token_throughput" in doc or "endpoint_type" in doc:
        return _serving(doc, where, "vllm bench serve")
    raise InputError(
        f"{where}: not a bench_serving, bench_one_batch or vllm bench serve result",
        field=FIELD,
        hint="or write a TOML point (docs/choosing.md)",
    )
