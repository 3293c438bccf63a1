"""Engine-neutral partition rules, named by engine: which layers each pipeline stage holds.

Both engines split ``L`` layers over ``pp`` stages as evenly as possible but put the remainder in different
stages; every layer below (geometry per stage, weights per stage, pools per stage) reads these functions.
"""

from __future__ import annotations

from kvplan.errors import InputError


def sglang_pp_layer_ranges(*, num_layers: int, pp_size: int, partition: str | None = None) -> list[tuple[int, int]]:
    """``[start, end)`` layers of each pipeline stage.

    Default: ``base = L // pp``, ``rem = L % pp``; the *last* ``rem`` stages get one extra layer.
    ``partition`` = the ``SGLANG_PP_LAYER_PARTITION`` value, comma-separated layer counts that must
    have ``pp`` entries summing to ``L`` (ignored when pp == 1). Examples: 61 over 2 ->
    [(0, 30), (30, 61)]; 61 over 3 -> [(0, 20), (20, 40), (40, 61)]. Each stage sizes its own pool;
    the pool token count is the MIN over stages.

    Source: sgl-project/sglang python/sglang/srt/distributed/utils.py ``get_pp_indices``, v0.5.23.
    """
    if pp_size <= 0:
        raise InputError(f"pp_size must be positive, got {pp_size}", field="--pp-size")
    if num_layers < 0:
        raise InputError(f"num_layers must be >= 0, got {num_layers}", field="num_layers")
    if pp_size == 1:
        return [(0, num_layers)]
    if pp_size > num_layers:
        raise InputError(
            f"--pp-size {pp_size} exceeds the model's {num_layers} layers: a pipeline stage would hold no layer",
            field="--pp-size",
            hint=f"use --pp-size {num_layers} or less",
        )
    if partition is not None:
        try:
            parts = [int(x) for x in partition.split(",")]
        except ValueError as err:
            raise InputError(
                f"invalid partition string {partition!r}",
                field="SGLANG_PP_LAYER_PARTITION",
                hint="comma-separated layer counts, e.g. 30,31",
            ) from err
        if len(parts) != pp_size:
            raise InputError(f"{len(parts)} partitions for pp_size {pp_size}", field="SGLANG_PP_LAYER_PARTITION")
        if sum(parts) != num_layers:
            raise InputError(
                f"partition sums to {sum(parts)}, model has {num_layers} layers",
                field="SGLANG_PP_LAYER_PARTITION",
            )
        out, start = [], 0
        for n in parts:
            out.append((start, start + n))
            start += n
        return out
    base, rem = divmod(num_layers, pp_size)
    out = []
    for rank in range(pp_size):
        if rank >= pp_size - rem:
            start = rank * (base + 1) - (pp_size - rem)
            out.append((start, start + base + 1))
        else:
            out.append((rank * base, rank * base + base))
    return out


def vllm_pp_layer_ranges(*, num_layers: int, pp_size: int) -> list[tuple[int, int]]:
    """``[start, end)`` layers of each pipeline stage in vLLM: ``L // pp`` each, the remainder given one layer at a
    time to the stages just before the last one.  Example: 61 layers over 4 -> [15, 15, 16, 15] layers.

    Source: vllm-project/vllm vllm/distributed/utils.py ``get_pp_indices``, v0.33.0.
    """
    if pp_size < 1:
        raise InputError("pp_size must be >= 1", field="pp_size")
    base, rem = divmod(num_layers, pp_size)
    parts = [base] * pp_size
    for k in range(2, rem + 2):
        parts[-k] += 1
    out, s = [], 0
    for p in parts:
        out.append((s, s + p))
        s += p
    return out


def pp_layer_ranges(
    num_layers: int, pp_size: int, *, engine: str = "sglang", partition: str | None = None
) -> list[tuple[int, int]]:
    """[start, end) layer range of each pipeline stage, by the engine's own rule.

    SGLang: L // pp each, the last ``L % pp`` stages one more (``partition`` = SGLANG_PP_LAYER_PARTITION);
    vLLM: the remainder goes to the stages just before the last one.  Example: 61 layers, pp 4 -> SGLang
    [15, 15, 15, 16], vLLM [15, 15, 16, 15].
    """
    if pp_size < 1:
        raise InputError("pp_size must be >= 1", field="pp_size")
    if engine == "vllm":
        return vllm_pp_layer_ranges(num_layers=num_layers, pp_size=pp_size)
    return sglang_pp_layer_ranges(num_layers=num_layers, pp_size=pp_size, partition=partition)
