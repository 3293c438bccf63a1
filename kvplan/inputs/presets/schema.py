"""The preset schemas: the model and hardware preset types (stdlib dataclasses pydantic validates strictly), the
weight formats (:data:`QUANTIZATIONS`) and the validator of each type (:func:`_adapter`, built on first use).

The file formats are in :mod:`kvplan.inputs.presets`.  Example: ``_adapter(ModelPreset).validate_python(doc)``
returns a :class:`ModelPreset` or raises pydantic's ValidationError naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from kvplan.inputs.presets.device import device_total

if TYPE_CHECKING:  # the constrained types are bound by _adapter() when pydantic validates
    from typing import Annotated

    from annotated_types import Gt
    from pydantic import TypeAdapter

    PositiveInt = Annotated[int, Gt(0)]
    PositiveFloat = Annotated[float, Gt(0)]
    PresetMiB = Annotated[int, Gt(0)]  # <= MAX_BYTES // MiB at validation (kvplan.units, the --gpu-memory cap)
    PresetBytes = Annotated[int, Gt(0)]  # <= MAX_BYTES at validation


QUANTIZATIONS = (
    "bf16",
    "fp16",
    "fp32",
    "fp8",
    "mxfp4",
    "nvfp4",
    "int4",
    "int8",
    "mixed",
)
Quantization = Literal["bf16", "fp16", "fp32", "fp8", "mxfp4", "nvfp4", "int4", "int8", "mixed"]

# The preset types are stdlib dataclasses that pydantic validates strictly (``__pydantic_config__``:
# unknown keys rejected, constraints from the annotations).  pydantic is imported only to validate a
# file that is not in the validated cache (:func:`_cached`), so ``kvplan fit`` usually never loads it.
# Their ``__init__`` is written out (``init=False``: the decorator would generate and compile one at
# every import, on every ``kvplan fit``); tests/test_startup_imports.py checks that each takes exactly
# the fields, in order, with their defaults (a list or table field's default is None: a new empty one).
_STRICT = {"extra": "forbid"}


@dataclass(init=False, eq=False, repr=False)
class WeightsInfo:
    """A model preset's ``[weights]`` table: the checkpoint's size and format, and where they come from."""

    __pydantic_config__ = _STRICT
    checkpoint_bytes: PositiveInt | None = None
    params: PositiveInt | None = None
    quantization: Quantization = "bf16"
    source: str = ""
    notes: str = ""

    def __init__(
        self,
        checkpoint_bytes: PositiveInt | None = None,
        params: PositiveInt | None = None,
        quantization: Quantization = "bf16",
        source: str = "",
        notes: str = "",
    ) -> None:
        self.checkpoint_bytes = checkpoint_bytes
        self.params = params
        self.quantization = quantization
        self.source = source
        self.notes = notes


@dataclass(init=False, eq=False, repr=False)
class Variant:
    """A published re-upload sharing the model's geometry (``[[variants]]``)."""

    __pydantic_config__ = _STRICT
    id: str
    quantization: Quantization
    checkpoint_bytes: PositiveInt | None = None
    source: str = ""
    notes: str = ""

    def __init__(
        self,
        id: str,
        quantization: Quantization,
        checkpoint_bytes: PositiveInt | None = None,
        source: str = "",
        notes: str = "",
    ) -> None:
        self.id = id
        self.quantization = quantization
        self.checkpoint_bytes = checkpoint_bytes
        self.source = source
        self.notes = notes


@dataclass(init=False, eq=False, repr=False)
class ModelPreset:
    """A model preset file: the Hugging Face id, its aliases, the verbatim ``[config]``, weights and variants."""

    __pydantic_config__ = _STRICT
    id: str
    source: str
    config: dict[str, Any]
    aliases: list[str] = field(default_factory=list)
    notes: str = ""
    weights: WeightsInfo = field(default_factory=WeightsInfo)
    variants: list[Variant] = field(default_factory=list)

    def __init__(
        self,
        id: str,
        source: str,
        config: dict[str, Any],
        aliases: list[str] | None = None,
        notes: str = "",
        weights: WeightsInfo | None = None,
        variants: list[Variant] | None = None,
    ) -> None:
        self.id = id
        self.source = source
        self.config = config
        self.aliases = [] if aliases is None else aliases
        self.notes = notes
        self.weights = WeightsInfo() if weights is None else weights
        self.variants = [] if variants is None else variants

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelPreset:
        """Rebuild from an already-validated dict (the cache)."""
        return cls(
            **{
                **d,
                "weights": WeightsInfo(**d.get("weights", {})),
                "variants": [Variant(**v) for v in d.get("variants", [])],
            }
        )


GpuArch = Literal[
    "turing",
    "ampere",
    "ada",
    "hopper",
    "blackwell",
    "blackwell-ultra",
    "cdna2",
    "cdna3",
    "cdna4",
    "rdna3",
    "rdna4",
    "gaudi2",
    "gaudi3",
    "xe-hpc",
    "xe-hpg",
    "xe2",
]
GpuForm = Literal["sxm", "pcie", "superchip", "unified", "oam"]
PerfClock = Literal["boost", "base", "sustained"]
PerfLink = Literal["nvlink", "pcie", "xgmi", "nvlink-c2c", "none"]

#: the ``[perf]`` figures that need a ``[perf.sources]`` entry (every number, and ``p2p``)
PERF_SOURCED = (
    "tflops_bf16",
    "tflops_fp16",
    "tflops_fp8",
    "tflops_fp4",
    "tflops_int8",
    "memory_bandwidth_gbs",
    "power_w",
    "pcie_gen",
    "pcie_lanes",
    "link_gbs",
    "p2p",
)
#: group keys of ``[perf.sources]``: one entry that sources every figure of the group
PERF_SOURCE_GROUPS = {
    "tflops": ("tflops_bf16", "tflops_fp16", "tflops_fp8", "tflops_fp4", "tflops_int8"),
    "link": ("link_gbs", "pcie_gen", "pcie_lanes", "p2p"),
    "pcie": ("pcie_gen", "pcie_lanes"),
}


@dataclass(init=False, eq=False, repr=False)
class PerfFigures:
    """A hardware preset's ``[perf]`` table: the figures a speed model needs, each with its source.

    Units: ``tflops_*`` are dense (no 2:4 sparsity) TFLOPS (TOPS for int8) of the tensor cores at the clock named
    by ``clock``, with FP32 accumulate where the vendor distinguishes; ``memory_bandwidth_gbs`` GB/s (10^9 B/s);
    ``power_w`` the board power limit in W; ``link_gbs`` GB/s per direction per GPU over ``link`` (NVLink: the
    aggregate of the GPU's links; PCIe: the slot's rate); ``p2p`` whether GPU peer-to-peer over the link works
    with the stock driver.

    Sources rule: every figure of :data:`PERF_SOURCED` that is present has an entry in ``sources``, keyed by its
    field name or by a group key of :data:`PERF_SOURCE_GROUPS` (``tflops`` covers every ``tflops_*``; ``link``
    covers ``link_gbs``, ``pcie_gen``, ``pcie_lanes`` and ``p2p``; ``pcie`` covers ``pcie_gen`` and
    ``pcie_lanes``).  A key that is neither a figure nor a group, or an empty source, is refused too.  pydantic
    calls :meth:`__post_init__` after validating the fields; its ValueError becomes the loader's one-line error.

    Example: ``tflops_bf16 = 989.4`` with ``sources = {"tflops": "H100 datasheet: 1,979 sparse, halved"}`` loads;
    without ``sources`` it is refused ("perf.tflops_bf16 has no source ...").
    """

    __pydantic_config__ = _STRICT
    arch: GpuArch | None = None
    form: GpuForm | None = None
    tflops_bf16: PositiveFloat | None = None
    tflops_fp16: PositiveFloat | None = None
    tflops_fp8: PositiveFloat | None = None
    tflops_fp4: PositiveFloat | None = None
    tflops_int8: PositiveFloat | None = None
    clock: PerfClock | None = None
    memory_bandwidth_gbs: PositiveFloat | None = None
    power_w: PositiveFloat | None = None
    link: PerfLink | None = None
    link_generation: str | None = None
    pcie_gen: PositiveInt | None = None
    pcie_lanes: PositiveInt | None = None
    link_gbs: PositiveFloat | None = None
    p2p: bool | None = None
    sources: dict[str, str] = field(default_factory=dict)
    notes: str = ""

    def __init__(
        self,
        arch: GpuArch | None = None,
        form: GpuForm | None = None,
        tflops_bf16: PositiveFloat | None = None,
        tflops_fp16: PositiveFloat | None = None,
        tflops_fp8: PositiveFloat | None = None,
        tflops_fp4: PositiveFloat | None = None,
        tflops_int8: PositiveFloat | None = None,
        clock: PerfClock | None = None,
        memory_bandwidth_gbs: PositiveFloat | None = None,
        power_w: PositiveFloat | None = None,
        link: PerfLink | None = None,
        link_generation: str | None = None,
        pcie_gen: PositiveInt | None = None,
        pcie_lanes: PositiveInt | None = None,
        link_gbs: PositiveFloat | None = None,
        p2p: bool | None = None,
        sources: dict[str, str] | None = None,
        notes: str = "",
    ) -> None:
        self.arch = arch
        self.form = form
        self.tflops_bf16 = tflops_bf16
        self.tflops_fp16 = tflops_fp16
        self.tflops_fp8 = tflops_fp8
        self.tflops_fp4 = tflops_fp4
        self.tflops_int8 = tflops_int8
        self.clock = clock
        self.memory_bandwidth_gbs = memory_bandwidth_gbs
        self.power_w = power_w
        self.link = link
        self.link_generation = link_generation
        self.pcie_gen = pcie_gen
        self.pcie_lanes = pcie_lanes
        self.link_gbs = link_gbs
        self.p2p = p2p
        self.sources = {} if sources is None else sources
        self.notes = notes

    def __eq__(self, other: object) -> bool:
        """Equal figures (so a preset compares equal field by field after the cache rebuilds its table)."""
        return type(other) is PerfFigures and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __post_init__(self) -> None:
        """The sources rule (pydantic calls this after validating the fields; the written-out ``__init__`` and
        :meth:`HardwarePreset.from_dict` do not, so a cached preset is not checked twice)."""
        self.check_sources()

    def check_sources(self) -> None:
        """ValueError naming the first figure without a source, or the first ``sources`` key that is unknown."""
        for key, text in self.sources.items():
            if key not in PERF_SOURCED and key not in PERF_SOURCE_GROUPS:
                raise ValueError(
                    f"perf.sources key '{key}' is neither a figure nor a group ({', '.join(PERF_SOURCE_GROUPS)})"
                )
            if not text.strip():
                raise ValueError(f"perf.sources.{key} is empty: name the datasheet or page")
        for name in PERF_SOURCED:
            if getattr(self, name) is None or name in self.sources:
                continue
            groups = [g for g, members in PERF_SOURCE_GROUPS.items() if name in members]
            if not any(g in self.sources for g in groups):
                raise ValueError(
                    f"perf.{name} has no source: add perf.sources.{name}"
                    + (f" (or the group key {' / '.join(groups)})" if groups else "")
                )

    def figure(self, name: str) -> Any:
        """A figure by field name (None when the preset does not give it)."""
        return getattr(self, name) if name in self.__dataclass_fields__ else None

    def source_of(self, name: str) -> str | None:
        """The source text of figure ``name``: its own entry, else its group's (None when not sourced)."""
        if name in self.sources:
            return self.sources[name]
        return next((self.sources[g] for g, m in PERF_SOURCE_GROUPS.items() if name in m and g in self.sources), None)


@dataclass(init=False, eq=False, repr=False)
class HardwarePreset:
    """A hardware preset file: one GPU as nvidia-smi and CUDA report it, with its interconnect and formats."""

    __pydantic_config__ = _STRICT
    id: str
    name: str
    memory_mib: PresetMiB
    source: str
    aliases: list[str] = field(default_factory=list)
    vendor: Literal["nvidia", "amd", "intel", "other"] = "nvidia"
    cuda_total_bytes: PresetBytes | None = None
    unified_free_bytes: PresetBytes | None = None  # unified-memory GPU: what it reports free at boot (host-shared)
    marketing: str = ""
    bandwidth_gbps: PositiveFloat | None = None
    interconnect: Literal["nvlink", "pcie", "xgmi", "nvlink-c2c", "other"] = "pcie"
    interconnect_gbps: PositiveFloat | None = None
    sm: str = ""
    fp8: bool = False
    fp4: bool = False
    notes: str = ""
    perf: PerfFigures | None = None

    def __init__(
        self,
        id: str,
        name: str,
        memory_mib: PresetMiB,
        source: str,
        aliases: list[str] | None = None,
        vendor: Literal["nvidia", "amd", "intel", "other"] = "nvidia",
        cuda_total_bytes: PresetBytes | None = None,
        unified_free_bytes: PresetBytes | None = None,
        marketing: str = "",
        bandwidth_gbps: PositiveFloat | None = None,
        interconnect: Literal["nvlink", "pcie", "xgmi", "nvlink-c2c", "other"] = "pcie",
        interconnect_gbps: PositiveFloat | None = None,
        sm: str = "",
        fp8: bool = False,
        fp4: bool = False,
        notes: str = "",
        perf: PerfFigures | None = None,
    ) -> None:
        self.id = id
        self.name = name
        self.memory_mib = memory_mib
        self.source = source
        self.aliases = [] if aliases is None else aliases
        self.vendor = vendor
        self.cuda_total_bytes = cuda_total_bytes
        self.unified_free_bytes = unified_free_bytes
        self.marketing = marketing
        self.bandwidth_gbps = bandwidth_gbps
        self.interconnect = interconnect
        self.interconnect_gbps = interconnect_gbps
        self.sm = sm
        self.fp8 = fp8
        self.fp4 = fp4
        self.notes = notes
        self.perf = perf

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HardwarePreset:
        """Rebuild from an already-validated dict (the cache): ``perf`` as a :class:`PerfFigures` again."""
        perf = d.get("perf")
        return cls(**{**d, "perf": None if perf is None else PerfFigures(**perf)})

    @property
    def device_bytes(self) -> int:
        """The device total (``torch.cuda.mem_get_info()[1]``, recorded or estimated): the one rule,
        :func:`kvplan.inputs.presets.device.device_total`, which the planners and ``kvplan gpus`` use too."""
        return device_total(self)[0]

    @property
    def sm_major(self) -> int | None:
        try:
            return int(self.sm.split(".")[0])
        except ValueError:
            return None


_Preset = TypeVar("_Preset", ModelPreset, HardwarePreset)


_ADAPTERS: dict[type, Any] = {}  # preset type -> its pydantic TypeAdapter, built on first use


def _adapter(cls: type[_Preset]) -> TypeAdapter[_Preset]:
    """pydantic's validator for a preset type.  The annotations are strings (``from __future__ import
    annotations``); the constrained names they use are bound here, so that importing this module costs
    neither pydantic nor annotated_types."""
    adapter: TypeAdapter[_Preset] | None = _ADAPTERS.get(cls)
    if adapter is None:
        from typing import Annotated

        from annotated_types import Gt, Le
        from pydantic import TypeAdapter

        from kvplan.units import MAX_BYTES, MiB

        globals().setdefault("PositiveInt", Annotated[int, Gt(0)])
        globals().setdefault("PositiveFloat", Annotated[float, Gt(0)])
        # a user GPU preset under the cap of --gpu-memory (kvplan.units.parse_size: MAX_BYTES)
        globals().setdefault("PresetMiB", Annotated[int, Gt(0), Le(MAX_BYTES // MiB)])
        globals().setdefault("PresetBytes", Annotated[int, Gt(0), Le(MAX_BYTES)])
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter
