"""Plausibility of the memory figures a start-up log prints, checked per rank before they become LogFacts.

A log is measured input: its numbers feed a measured-mode plan (free memory before weights ``P``, free memory after
weights ``A``, the weight load ``U`` = ``P - A``), so an impossible figure must not be planned.  Two kinds of rule:

* **refused** (:class:`~kvplan.errors.InputError`, exit 2, naming the log line by number and text, truncated):
  figures no engine can print -- free memory before weights ``P <= 0``; a negative free memory, weight load, pool
  or device size; free memory after loading weights above the free memory before (``A > P + RES``, which would
  make the weights negative); free memory above the device total the log shows (``P > total + RES``); vLLM's
  model loading or free memory at start-up above its total GPU memory;
* **warned** (a line in the verdict's warnings; the engine itself goes on): figures that feed no measured input
  but contradict the ones that do -- ``Memory pool end`` avail above the ``Load weight end`` avail, a KV pool
  larger than the memory that was free after the weights, a ``mem usage`` that is not ``begin - end`` avail, and a
  figure larger than the device memory of every catalogued GPU (checked with or without ``--gpu``).

``RES`` = 0.01 GiB: each figure is printed with two decimals (+-0.005 GiB), so a difference of two figures is known
to +-0.01 GiB.  Each rule compares the figures of one rank (the rank tag of the line prefix).  vLLM's ``Available
KV cache memory`` may be negative (vLLM prints it, then refuses to start: kvplan predicts that error), so it is only
bounded above.

Engine sources: SGLang ``python/sglang/srt/model_executor/model_runner.py`` ``load_model`` (``before_avail_memory -
after_avail_memory`` is the printed ``mem usage``), ``python/sglang/srt/utils/common.py``
``get_available_gpu_memory`` (``torch.cuda.mem_get_info()[0]`` / 2**30: never negative, never above the total),
v0.5.8; vLLM ``vllm/v1/worker/gpu_worker.py`` ``determine_available_memory``, v0.11.0.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvplan.errors import InputError, echo
from kvplan.inputs.logs.collect import Collector, PerRank
from kvplan.inputs.logs.text import GIB

RES = GIB // 100 + 2**16  # two printed figures of two decimals each: +-0.01 GiB (+ float rounding)
LINE_CHARS = 160  # characters of a log line quoted in a message

# key -> what the figure is (in messages); a size that can be neither negative nor MAX_BYTES or more.
_SIZES = {
    "free_before_weights": "free memory before loading weights",
    "free_after_weights": "free memory after loading weights",
    "weight_load": "weight load (mem usage)",
    "free_after_pool": "free memory after the KV pool",
    "post_free_after_pool": "free memory after the resized KV pool",
    "free_after_graph": "free memory after CUDA graph capture",
    "sched_available_gpu_mem": "available GPU memory at ready",
    "k_bytes": "K cache size",
    "v_bytes": "V cache size",
    "kv_bytes": "KV cache size",
    "vl_total": "total GPU memory",
    "v0prof_total_gpu_memory": "total GPU memory",
    "vl_free_startup": "free memory on start-up",
    "vl_loading": "model loading memory",
    "vl_usage_weight": "model weights memory",
    "vlprof_weights": "model weights memory",
    "vl_usage_peak_activation": "peak activation memory",
    "vlprof_peak_activation": "peak activation memory",
    "vl_usage_non_torch": "non-torch memory",
    "vlprof_non_torch": "non-torch memory",
    "v0prof_non_torch_memory": "non-torch memory",
}
_POSITIVE = ("free_before_weights", "vl_total", "v0prof_total_gpu_memory")
# vLLM figures bounded by the total GPU memory of the same rank
_VL_TOTALS = ("vl_total", "v0prof_total_gpu_memory")
_VL_UNDER_TOTAL = (
    "vl_free_startup",
    "vl_loading",
    "vl_usage_weight",
    "vlprof_weights",
    "vl_avail_kv",
    "vlprof_kv",
    "v0prof_kv_cache_size",
)


def line_ref(text: str, at: int) -> str:
    """``line N ('<text>')`` of the line starting at offset ``at`` (text cut to LINE_CHARS); '' when unknown.

    Example: ``line_ref("a\\nLoad weight begin. avail mem=-21.63 GB\\n", 2)`` -> ``"line 2 ('Load weight begin.
    avail mem=-21.63 GB')"``.
    """
    if at < 0 or at > len(text):
        return ""
    end = text.find("\n", at, at + 4 * LINE_CHARS)
    line = text[at : end if end >= 0 else at + 4 * LINE_CHARS].strip()
    return f"line {text.count(chr(10), 0, at) + 1:,} ('{echo(line, LINE_CHARS)}')"


def _gib(n: int) -> str:
    return f"{n / GIB:,.2f} GiB"


def _ranks(c: Collector, key: str) -> Iterator[tuple[str, int, int]]:
    """(rank, value, line offset) of every rank that printed ``key`` (integer figures only)."""
    pr: PerRank | None = c.per.get(key)
    if pr is None:
        return
    for rank, v in pr.by_rank.items():
        if isinstance(v, int) and not isinstance(v, bool):
            yield rank, v, pr.at_rank.get(rank, -1)


def _value(c: Collector, key: str, rank: str) -> tuple[int, int] | None:
    """(value, line offset) of ``key`` on ``rank``, or None."""
    pr = c.per.get(key)
    if pr is None or rank not in pr.by_rank or not isinstance(pr.by_rank[rank], int):
        return None
    return pr.by_rank[rank], pr.at_rank.get(rank, -1)


def _refuse(c: Collector, at: int, what: str) -> InputError:
    ref = line_ref(c.text, at)
    return InputError(
        f"{ref + ': ' if ref else ''}{what}",
        field="LOG",
        hint="is this the unedited start-up log of one run? fix or cut the line, or give the value as a flag",
    )


def _key_of(key: str) -> str:
    """``label:SWA:k_bytes`` / ``va_k_bytes`` / ``post_kv_bytes`` -> the base key (``k_bytes`` ...)."""
    if key.startswith("label:"):
        return key.rsplit(":", 1)[-1]
    for prefix in ("va_", "post_"):
        if key.startswith(prefix) and key[len(prefix) :] in _SIZES and key != "post_free_after_pool":
            return key[len(prefix) :]
    return key


def _check_sizes(c: Collector) -> None:
    """Every size figure: not negative (``P`` and totals: positive).  A garbled figure clamped to MAX_BYTES by the
    reader is kept here (LogFacts holds it) and refused where it would be planned
    (:func:`kvplan.planning.calibrate.recover_deployment`)."""
    for key in c.per:
        base = _key_of(key)
        what = _SIZES.get(base)
        if what is None:
            continue
        for _rank, v, at in _ranks(c, key):
            if v < 0 or (v == 0 and base in _POSITIVE):
                raise _refuse(
                    c, at, f"the {what} is {_gib(v)}; it must be {'positive' if base in _POSITIVE else 'zero or more'}"
                )


def _check_sglang(c: Collector) -> None:
    """Per rank: A <= P (refused), P and A <= the device total (refused); pool lines vs A (warned)."""
    total = c.gpu_total
    for rank, p, at_p in _ranks(c, "free_before_weights"):
        if total is not None and p > total + RES:
            raise _refuse(
                c,
                at_p,
                f"the free memory before loading weights ({_gib(p)}) is more than the device "
                f"total the log shows ({_gib(total)})",
            )
        after = _value(c, "free_after_weights", rank)
        if after is not None and after[0] > p + RES:
            begin = line_ref(c.text, at_p)
            raise _refuse(
                c,
                after[1],
                f"the free memory after loading weights ({_gib(after[0])}) is more than "
                f"before ({_gib(p)}{', ' + begin if begin else ''}): the weights would "
                f"weigh {_gib(p - after[0])}",
            )
        usage = _value(c, "weight_load", rank)
        if after is not None and usage is not None and abs(usage[0] - (p - after[0])) > 2 * RES:
            c.warnings.append(
                f"implausible log: {line_ref(c.text, usage[1])}: mem usage {_gib(usage[0])} is not "
                f"'Load weight begin' - 'end' avail ({_gib(p - after[0])})"
            )
    for rank, a, at_a in _ranks(c, "free_after_weights"):
        if total is not None and a > total + RES:
            raise _refuse(
                c,
                at_a,
                f"the free memory after loading weights ({_gib(a)}) is more than the device "
                f"total the log shows ({_gib(total)})",
            )
        end = _value(c, "free_after_pool", rank)
        if end is not None and end[0] > a + RES:
            c.warnings.append(
                f"implausible log: {line_ref(c.text, end[1])}: 'Memory pool end' avail "
                f"({_gib(end[0])}) is more than the free memory after loading weights ({_gib(a)}); "
                f"the measured figures may come from different runs"
            )
        kv = _value(c, "kv_bytes", rank)
        k, v = _value(c, "k_bytes", rank), _value(c, "v_bytes", rank)
        if kv is None and k is not None and v is not None:
            kv = (k[0] + v[0], k[1])
        if kv is not None and kv[0] > a + 2 * RES:
            c.warnings.append(
                f"implausible log: {line_ref(c.text, kv[1])}: a KV pool of {_gib(kv[0])} is more "
                f"than the free memory after loading weights ({_gib(a)})"
            )


def _check_vllm(c: Collector) -> None:
    """Per rank: model loading, free memory at start-up and the KV memory <= the total GPU memory (refused)."""
    for tkey in _VL_TOTALS:
        for rank, total, _at in _ranks(c, tkey):
            for key in _VL_UNDER_TOTAL:
                got = _value(c, key, rank)
                if got is not None and got[0] > total + RES:
                    raise _refuse(
                        c,
                        got[1],
                        f"the {_SIZES.get(key, 'KV cache memory')} ({_gib(got[0])}) is more "
                        f"than the total GPU memory ({_gib(total)})",
                    )


#: figures up to this size are never compared with the catalogue (every catalogue GPU list holds a larger device;
#: tests/test_hardening_logs_types.py checks it), so a plausible log never loads the hardware presets
CATALOGUE_FLOOR = 64 * GIB


def largest_catalogued_gpu() -> tuple[str, int] | None:
    """(id, device total) of the largest GPU preset kvplan knows (shipped and user presets), None when they cannot
    be read (a broken user preset is reported where it is used, not here).

    The device total is the planners' one rule (:func:`kvplan.inputs.presets.device.device_total`): the CUDA-visible
    total the engines' logs print as the GPU's total memory, recorded or estimated from nvidia-smi's MiB less the
    driver reservation.  Example: the shipped catalogue -> ("mi350x", 309,220,868,096) (a recorded HIP total).
    """
    from kvplan.inputs import presets
    from kvplan.inputs.presets.device import device_total

    try:
        gpus = presets.all_gpus()
    except InputError:
        return None
    best = max(((device_total(g)[0], g.id) for g in gpus), key=lambda t: t[0], default=None)
    return None if best is None else (best[1], best[0])


def _check_catalogue(c: Collector) -> None:
    """Warned: the largest memory figure of the log (free memory, totals, pools: :data:`_SIZES`) above the device
    memory of every catalogued GPU (+ RES), whether or not ``--gpu`` was given: no known device could print it."""
    top: tuple[int, str, int] | None = None
    for key in c.per:
        base = _key_of(key)
        if base not in _SIZES:
            continue
        for _rank, v, at in _ranks(c, key):
            if v > CATALOGUE_FLOOR and (top is None or v > top[0]):
                top = (v, base, at)
    if top is None:
        return
    largest = largest_catalogued_gpu()
    if largest is not None and top[0] > largest[1] + RES:
        v, base, at = top
        c.warnings.append(
            f"implausible log: {line_ref(c.text, at)}: the {_SIZES[base]} ({_gib(v)}) is more than the largest "
            f"catalogued GPU holds ({largest[0]}, {_gib(largest[1])}); give --gpu, or check the log"
        )


def check(c: Collector) -> None:
    """Refuse (InputError) or warn (``c.warnings``, prefixed ``implausible log:``) per the module docstring."""
    _check_sizes(c)
    _check_sglang(c)
    _check_vllm(c)
    _check_catalogue(c)
