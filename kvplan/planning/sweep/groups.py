"""A sweep group: one combination of the group axes, resolved by one ``fit`` of a representative point; the
engine's vector state (SGLang's pool registry, vLLM's :mod:`kvplan.planning.sweep.vllm`) or the per-point path.

Part of :mod:`kvplan.planning.sweep` (see its docstring for the whole design).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kvplan.deployment import Deployment
from kvplan.engines.registry import PoolCount, engine
from kvplan.errors import InputError
from kvplan.family import Family


@dataclass
class Group:
    """One combination of the group axes: what ``fit`` resolved once for it."""

    dep: Deployment  # group fields set; numeric fields as the user gave them (axes: None)
    labels: dict[str, Any]  # model, gpu, engine, num_gpus, tp, pp, dp, ep, kv_cache_dtype, page_size
    method: str = "vector"  # "vector" | "point" | "invalid"
    error: str = ""
    family: str = ""
    cell: int = 0
    free: int = 0
    after: int = 0
    mm: int = 0
    page: int = 1
    attn_dp: int = 1
    dp: int = 1
    note: str = ""
    # the verdict's group-level facts (kvplan.planning.verdict): the same for every point of the group
    engine: str = "sglang"
    weights: int = 0  # per-GPU weight load
    dtype_refusal: str | None = None
    context_limit: int | None = None  # the longest context the engine accepts (None: no check)
    context_given: bool = False  # a --context-length is set (an axis or the base), so the engine checks it
    allow_long_context: bool = False
    family_cap: int | None = None  # SGLang's family default request cap (DeepSeek-V4: 256)
    model: Any = None  # the ModelSpec
    rules: Any = None  # the SGLang rule set of the deployment's release (releases.rules_for)
    context_refusals: dict[int, str | None] = field(default_factory=dict)  # context -> the engine's refusal
    vector: Any = None  # an engine's per-group vector state (kvplan.planning.sweep_vllm, SGLang's pools)
    kv_cell: float = 0.0  # the representative fit's kv_bytes_per_token
    requested: int | None = None  # SGLang: the request cap in force without an axis (the user's or a default)
    swa_terms: Any = None  # SGLang hybrid SWA: the workload's SWA-pool terms (kvplan.planning.workload)


def _context_refusal(g: Group, ctx: int) -> str | None:
    """:func:`kvplan.engines.support.context_refusal` for one of the group's contexts (remembered per context)."""
    if ctx not in g.context_refusals:
        from kvplan.engines import support

        g.context_refusals[ctx] = support.context_refusal(
            engine=g.engine,
            model=g.model,
            context_length=ctx if g.context_given else None,
            allowed=g.allow_long_context,
        )
    return g.context_refusals[ctx]


def _invalid_group(dep: Deployment, rep: Deployment, exc: InputError) -> Group:
    eff = rep.with_defaults()
    tp, pp, dp = eff.tp or 1, eff.pp or 1, eff.dp or 1
    labels = {
        "model": eff.model,
        "gpu": eff.gpu,
        "engine": eff.engine,
        "num_gpus": eff.num_gpus or tp * pp * (1 if eff.enable_dp_attention else dp),
        "tp": tp,
        "pp": pp,
        "dp": dp,
        "ep": eff.ep or 1,
        "kv_cache_dtype": eff.kv_cache_dtype or "auto",
        "page_size": eff.page_size,
    }
    return Group(dep=dep, labels=labels, method="invalid", error=exc.one_line())


def _verdict_facts(g: Group, rep: Deployment, res: Any) -> None:
    """The group-level verdict facts of a vectorised group, read as ``kvplan.planning.verdict.apply`` reads them."""
    import os

    from kvplan.engines import support
    from kvplan.engines.backends import AttentionBackend
    from kvplan.planning.plan import gpu_for
    from kvplan.planning.verdict import long_context_allowed

    eff = rep.with_defaults()
    gpu, _ = gpu_for(eff)
    g.engine = res.engine
    g.weights = res.weight_bytes
    g.dtype_refusal = support.kv_dtype_refusal(
        engine=res.engine,
        kv_dtype=res.kv_cache_dtype,
        arch=support.arch_of(gpu),
        attention=support.attention_kind(g.model),
        attention_backend=AttentionBackend.parse(eff.attention_backend),
        deepseek_family=support.deepseek_family(g.model),
    )
    g.context_limit = support.model_max_context(engine=res.engine, model=g.model)[0]
    g.allow_long_context = long_context_allowed(eff, res.engine, os.environ)[0]
    g.family_cap = support.family_request_cap(engine=res.engine, family=res.family, engine_version=eff.engine_version)


def _fit_group(dep: Deployment, first: Mapping[str, Any]) -> tuple[Group, Any]:
    """Run ``fit`` on the representative point; classify the group (vector: the engine's vector state in
    ``g.vector``; point: one ``fit`` per point)."""
    from kvplan.engines.sglang.pools import capturing_contexts
    from kvplan.planning.plan import fit

    rep = replace(dep, **first)
    try:
        with capturing_contexts() as contexts:
            res = fit(rep, raise_refusals=True)  # an engine refusal: the rows' error, not a planned base
    except InputError as exc:
        return _invalid_group(dep, rep, exc), None
    labels = {
        "model": res.model,
        "gpu": res.gpu,
        "engine": res.engine,
        "num_gpus": res.num_gpus,
        "tp": res.tp,
        "pp": res.pp,
        "dp": res.dp,
        "ep": res.ep,
        "kv_cache_dtype": res.kv_cache_dtype,
        "page_size": res.page_size,
    }
    g = Group(dep=dep, labels=labels, family=res.family, engine=res.engine)
    g.kv_cell = float(res.kv_bytes_per_token)
    pool = engine(res.engine).pool_count
    if pool is PoolCount.BLOCKS:
        vllm = _vllm_module()
        if vllm is None or not vllm.prepare_group(g, rep, res):
            g.vector, g.method = None, "point"
        return g, res
    if pool is not PoolCount.TOKENS or len(contexts) != 1:
        g.method = "point"
        return g, res
    _sglang_group(g, rep, res, contexts[0])
    return g, res


def _blocks(g: Group) -> bool:
    """The group's engine counts its KV pool in blocks of KV cache groups (the vector path of
    :mod:`kvplan.planning.sweep_vllm`), not in tokens."""
    return engine(g.engine).pool_count is PoolCount.BLOCKS


def _vllm_module() -> Any:
    """:mod:`kvplan.planning.sweep.vllm` (vLLM's vector path), imported only for a vLLM group; None without it."""
    try:
        import kvplan.planning.sweep.vllm as vllm_path
    except ImportError:  # pragma: no cover - the module ships with kvplan
        return None
    return vllm_path


def _sglang_group(g: Group, rep: Deployment, res: Any, ctx: Any) -> None:
    """An SGLang group's scalars and its family's vector state (the pool registry,
    ``kvplan.engines.sglang.pools.SWEEP_VECTORS``); ``method = "point"`` when the family has none for it."""
    from kvplan.engines.sglang.pools import vector_group
    from kvplan.engines.sglang.releases import rules_for
    from kvplan.planning.workload import sglang_swa_terms

    fam = Family(res.family)
    g.vector = vector_group(fam, ctx, cell=res.kv_bytes_per_token)
    if g.vector is None:
        g.method = "point"
        return
    model = ctx.model  # the spec the group's fit planned (res.model is a display name: a path's is not resolvable)
    g.model = model
    g.rules = rules_for(rep.engine_version)
    g.cell = int(res.kv_bytes_per_token) if float(res.kv_bytes_per_token).is_integer() else 0
    g.free = res.free_bytes
    g.after = res.free_bytes - res.weight_bytes
    g.mm = g.rules.multimodal_reserve_bytes(
        is_multimodal=g.rules.counts_multimodal(
            architecture=model.architecture, has_vision_tower=model.has_vision_tower
        )
    )
    g.page = res.page_size
    g.attn_dp = res.attn_dp
    g.dp = res.dp
    g.requested = ctx.max_running_requests
    g.swa_terms = sglang_swa_terms(res=res, dep=rep.with_defaults(), model=model) if fam == Family.HYBRID_SWA else None
    _verdict_facts(g, rep, res)


#: points of a group's numeric grid tried as its representative when the first one is refused
REPRESENTATIVE_TRIES = 8


def _representative(
    dep: Deployment, inner_num: Sequence[str], values: Mapping[str, list]
) -> tuple[Group, Any, dict[str, Any]]:
    """The group resolved at its first numeric point; when ``fit`` refuses that point (a budget too small for the
    family's pools, ...), at up to :data:`REPRESENTATIVE_TRIES` points spread over the grid (the last included), so
    the rows that plan are planned and only the refused ones carry an error.  A group no tried point plans is
    invalid (every row carries the first point's error)."""
    first = {f: values[f][0] for f in inner_num}
    refused = _CHEAP.refusal(dep, first, values)
    if refused is not None:  # the engine refuses the group whatever its numeric point: no fit, no retries
        return _invalid_group(dep, replace(dep, **first), refused), None, first
    g, res = _fit_group(dep, first)
    if g.method != "invalid" or not inner_num:
        return g, res, first
    shape = [len(values[f]) for f in inner_num]
    total = math.prod(shape)
    for k in sorted(
        {total - 1 - (total - 1) * t // REPRESENTATIVE_TRIES for t in range(REPRESENTATIVE_TRIES)} - {0}, reverse=True
    ):
        coords, rest = [], k
        for size in reversed(shape):
            coords.append(rest % size)
            rest //= size
        point = {f: values[f][c] for f, c in zip(inner_num, reversed(coords), strict=True)}
        g2, res2 = _fit_group(dep, point)
        if g2.method != "invalid":
            return g2, res2, point
    return g, res, first


# ------------------------------------------------------------------------------------------------
# Cheap checks: a group the engine refuses whatever its numeric point, found before any planning
# ------------------------------------------------------------------------------------------------


def head_split_refusal(*, engine_name: str, heads: Any, tp: int, attn_dp: int) -> InputError | None:
    """The engine's refusal of a TP size that does not split the attention heads, or None.

    SGLang (sgl-project/sglang v0.5.23, every attention layer, e.g. python/sglang/srt/models/llama.py, asserts
    ``total_num_heads % attn_tp_size == 0``; attn-TP = tp / dp under DP attention): the check of
    ``kvplan.engines.sglang.planner._parallelism``.  vLLM (vllm-project/vllm v0.33.0 vllm/config/model.py
    ``ModelConfig.verify_with_parallel_config``: ``total_num_attention_heads % tensor_parallel_size``): the check of
    ``kvplan.engines.vllm.planner._check_inputs``.  The words are the planners' (a sweep's rows carry ``fit``'s error;
    :class:`_CheapChecks` confirms them against one ``fit`` per model / engine / release before trusting them).
    Example: ``head_split_refusal(engine_name="sglang", heads=128, tp=3, attn_dp=1)`` -> "128 attention heads cannot
    be split over attention-TP 3"; ``tp=8`` -> None.
    """
    if not isinstance(heads, int) or isinstance(heads, bool) or heads <= 0 or tp < 1 or attn_dp < 1:
        return None
    from kvplan.engines.registry import engine

    return engine(engine_name).head_split_refusal(heads=heads, tp=tp, attn_dp=attn_dp)


class _CheapChecks:
    """Group refusals found without planning, for one sweep at a time (the sweep is known by its ``values`` dict,
    held here so that its identity cannot be reused while it is remembered).

    Per group: ``validate`` of the representative point and the head split (:func:`head_split_refusal`) from the
    model spec, resolved once per model per sweep.  What ``fit`` would check first (the release, the architecture,
    the GPU) depends on the model, engine, release and GPU only: the first group the cheap check refuses in each such
    class is planned by ``fit`` too, and the cheap check is trusted for that class only when both give the same
    line.  A refused group then costs microseconds instead of one ``fit`` (~1 ms) and up to
    ``REPRESENTATIVE_TRIES`` more (tests/test_hardening_sweep.py counts the calls).
    """

    def __init__(self) -> None:
        self.values: Mapping[str, list] | None = None
        self.models: dict[str, Any] = {}
        self.trusted: dict[tuple, bool] = {}

    def _start(self, values: Mapping[str, list]) -> None:
        if self.values is not values:
            self.values, self.models, self.trusted = values, {}, {}

    def refusal(self, dep: Deployment, first: Mapping[str, Any], values: Mapping[str, list]) -> InputError | None:
        from kvplan.deployment import validate

        self._start(values)
        rep = replace(dep, **first).with_defaults()
        from kvplan.engines.registry import engine_names

        if rep.engine not in engine_names() or not rep.model or (rep.dcp_size or 1) > 1:
            return None
        try:
            validate(rep)
            model = self._model(rep.model)
        except InputError:
            return None  # fit says it, in its own order
        heads = self._heads(model, rep.engine)
        tp, dp = rep.tp or 1, rep.dp or 1
        exc = head_split_refusal(
            engine_name=rep.engine, heads=heads, tp=tp, attn_dp=dp if rep.enable_dp_attention else 1
        )
        if exc is None:
            return None
        key = (rep.engine, rep.engine_version, rep.model, rep.gpu, rep.gpu_memory, rep.free_memory)
        if key not in self.trusted:
            self.trusted[key] = _fit_error(replace(dep, **first)) == exc.one_line()
        return exc if self.trusted[key] else None

    def _model(self, text: str) -> Any:
        if text not in self.models:
            from kvplan.inputs.resolve import resolve_model

            self.models[text] = resolve_model(text)
        return self.models[text]

    @staticmethod
    def _heads(model: Any, engine_name: str) -> Any:
        from kvplan.engines.registry import engine

        return engine(engine_name).attention_heads(model.config)


def _fit_error(dep: Deployment) -> str | None:
    """``fit``'s one-line error for ``dep`` (None when it plans)."""
    from kvplan.planning.plan import fit

    try:
        fit(dep)
    except InputError as exc:
        return exc.one_line()
    return None


_CHEAP = _CheapChecks()
