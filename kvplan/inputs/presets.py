"""Presets as data: ``configs/models/*.toml`` and ``configs/hardware/*.toml``.

Files are read with the stdlib ``tomllib`` and validated by strict pydantic models
(unknown keys are rejected; an error names the file and the key).  The preset
folders ship inside the wheel as ``kvplan/configs`` (see pyproject.toml); in a
source checkout the top-level ``configs/`` folder is used.

User presets (docs/presets.md "Your own presets"): the same files in ``models/`` and ``hardware/`` of each folder
of ``$KVPLAN_PRESETS`` (several folders separated by ``os.pathsep``; set but empty = no user presets), else of
``$XDG_CONFIG_HOME/kvplan`` (default ``~/.config/kvplan``).  They are validated exactly like the shipped ones;
a user preset with the id of a shipped one replaces it (the listing says so: :func:`model_entries`), and an
earlier folder wins over a later one.  :func:`add_user_model` writes one from a local config.json
(``kvplan models add``).

Model preset file (one per Hugging Face id; file name = id with ``/`` -> ``--``)::

    id = "meta-llama/Llama-3.1-8B-Instruct"     # the HF id (preset id)
    aliases = ["llama-3.1-8b", "meta-llama/Meta-Llama-3.1-8B-Instruct"]
    source = "where [config] was copied from"
    notes = "free text"                            # optional

    [weights]                                      # optional
    checkpoint_bytes = 16_060_522_496              # B, safetensors total_size; source below
    quantization = "bf16"                          # see QUANTIZATIONS
    source = "..."

    [config]                                       # HF config.json fields, verbatim
    architectures = ["LlamaForCausalLM"]
    num_hidden_layers = 32
    ...

    [[variants]]                                   # published re-uploads sharing the geometry
    id = "meta-llama/Llama-3.1-8B-Instruct-FP8"
    quantization = "fp8"
    checkpoint_bytes = 9_000_000_000               # optional
    source = "..."

Hardware preset file::

    id = "h100-sxm"
    name = "NVIDIA H100 80GB HBM3"                 # as nvidia-smi prints it
    aliases = ["H100 SXM 80GB", "h100"]
    vendor = "nvidia"
    memory_mib = 81559                             # MiB, nvidia-smi memory.total; source
    cuda_total_bytes = 85_520_809_984              # B, torch.cuda.mem_get_info()[1]; optional
    marketing = "80 GB HBM3"
    bandwidth_gbps = 3350                          # GB/s
    interconnect = "nvlink"                        # nvlink | pcie | xgmi | nvlink-c2c
    interconnect_gbps = 450                        # GB/s per direction
    sm = "9.0"                                     # CUDA compute capability, or gfx target on AMD
    fp8 = true
    fp4 = false
    source = "..."

    [perf]                                         # optional: what a speed model needs (PerfFigures)
    arch = "hopper"
    form = "sxm"
    tflops_bf16 = 989.4                            # dense TFLOPS (a sparse figure halved), at `clock`
    tflops_fp8 = 1978.9
    clock = "boost"
    memory_bandwidth_gbs = 3350                    # GB/s
    power_w = 700                                  # W, board power limit
    link = "nvlink"
    link_generation = "NVLink 4"
    link_gbs = 450                                 # GB/s per direction per GPU
    p2p = true
    [perf.sources]                                 # every figure present: its field name or a group key
    tflops = "..."
    memory_bandwidth_gbs = "..."
"""

from __future__ import annotations

import dataclasses
import functools
import os
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from kvplan.errors import InputError, echo
from kvplan.inputs.config_keys import CONFIG_KEYS  # the [config] allow-list, data of its own

if TYPE_CHECKING:  # the constrained types are bound by _adapter() when pydantic validates
    from typing import Annotated

    from annotated_types import Gt
    from pydantic import TypeAdapter, ValidationError

    from kvplan.family import Family

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
        """What CUDA reports as the device total (``torch.cuda.mem_get_info()[1]``)."""
        return self.cuda_total_bytes or self.memory_mib * 2**20

    @property
    def sm_major(self) -> int | None:
        try:
            return int(self.sm.split(".")[0])
        except ValueError:
            return None


# ------------------------------------------------------------------------------------------ where they live

Origin = Literal["shipped", "user"]

#: a preset file (shipped or user) larger than this is refused unread (the largest shipped preset is 12 kB)
MAX_PRESET_BYTES = 2**20
MAX_USER_PRESET_BYTES = MAX_PRESET_BYTES  # the name of earlier releases
#: tables / arrays nest at most this deep in a preset file (the deepest shipped one: 9 levels)
MAX_PRESET_DEPTH = 32


@functools.cache
def _packaged_configs() -> Path | None:
    pkg = Path(__file__).resolve().parent.parent  # kvplan/
    for cand in (pkg / "configs", pkg.parent / "configs"):
        if (cand / "models").is_dir():
            return cand
    return None


def configs_dir() -> Path:
    """The shipped preset folder: ``$KVPLAN_CONFIGS``, the wheel's ``kvplan/configs``, or the checkout's ``configs``."""
    env = os.environ.get("KVPLAN_CONFIGS")
    if env:
        return Path(env)
    found = _packaged_configs()
    if found is None:
        raise InputError("preset folder not found", field="configs", hint="reinstall kvplan or set KVPLAN_CONFIGS")
    return found


def user_dirs() -> tuple[Path, ...]:
    """The user preset folders, in the order they win (each may hold ``models/`` and ``hardware/``).

    ``$KVPLAN_PRESETS`` when it is set: its folders separated by ``os.pathsep`` (``:`` on Linux and macOS, ``;`` on
    Windows), empty entries skipped, so a set but empty ``KVPLAN_PRESETS`` turns user presets off.  Else
    ``$XDG_CONFIG_HOME/kvplan`` (a relative XDG_CONFIG_HOME is ignored, as the XDG base-directory spec says), else
    ``~/.config/kvplan``.

    Example: ``KVPLAN_PRESETS=/team/kvplan:~/kvplan`` -> ``(Path('/team/kvplan'), Path('/home/me/kvplan'))``.
    """
    env = os.environ.get("KVPLAN_PRESETS")
    if env is not None:
        return tuple(Path(p).expanduser() for p in env.split(os.pathsep) if p.strip())
    xdg = os.environ.get("XDG_CONFIG_HOME") or ""
    base = Path(xdg) if os.path.isabs(xdg) else Path(os.path.expanduser("~")) / ".config"
    return (base / "kvplan",)


def user_models_dir() -> Path:
    """Where ``kvplan models add`` writes: ``models/`` of the first user folder (:func:`user_dirs`)."""
    dirs = user_dirs()
    if not dirs:
        raise InputError(
            "user presets are turned off (KVPLAN_PRESETS is set but empty)",
            field="KVPLAN_PRESETS",
            hint="set it to a folder, or unset it to use ~/.config/kvplan",
        )
    return dirs[0] / "models"


def _is_shipped(path: Path) -> bool:
    try:
        return path.parent.parent == configs_dir()
    except InputError:  # no shipped folder at all: nothing is shipped
        return False


# -------------------------------------------------------------------------------------------- reading


def _fmt_validation(label: str, err: ValidationError) -> str:
    e = err.errors()[0]
    loc = ".".join(str(p) for p in e["loc"])
    kind = e["type"]
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):
        return f"{label}: unknown key '{loc}'"
    if kind == "missing":
        return f"{label}: missing key '{loc}'"
    return f"{label}: key '{loc}': {e['msg']}"


def _read_preset_bytes(path: Path) -> bytes:
    """A preset file's bytes through the one bounded reader (:func:`kvplan.inputs.read.read_bytes`): a regular file
    of at most :data:`MAX_PRESET_BYTES` (a FIFO, a device or a folder named ``*.toml`` is refused unread, never
    read until it ends); InputError naming the file otherwise."""
    from kvplan.inputs.read import read_bytes

    return read_bytes(path, field="preset", what="a preset", max_bytes=MAX_PRESET_BYTES)


def _deeper_than(doc: Any, max_depth: int) -> bool:
    """True when ``doc`` nests tables / arrays more than ``max_depth`` levels (iterative: a TOML header
    ``[a.a.a...]`` builds any depth without recursion, and Python's recursive helpers must never see it)."""
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        obj, depth = stack.pop()
        items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, list) else None
        if items is None:
            continue
        if depth > max_depth:
            return True
        stack.extend((v, depth + 1) for v in items if isinstance(v, (dict, list)))
    return False


def _parse_toml(label: str, raw: bytes) -> dict[str, Any]:
    """A preset file's TOML document, every number checked (:func:`kvplan.units.check_numbers`: no integer of more
    than MAX_INT_DIGITS digits, no inf / nan) and at most :data:`MAX_PRESET_DEPTH` levels deep; InputError naming
    ``label`` (the file) otherwise.  tomllib raises a plain ValueError (not TOMLDecodeError) for an integer over
    Python's 4,300-digit limit, and RecursionError for arrays nested about 1,000 deep: both are bad input."""
    import tomllib  # only on a cache miss

    from kvplan.units import MAX_INT_DIGITS, check_numbers

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{label}: not UTF-8 text (byte 0x{raw[exc.start : exc.start + 1].hex()} at offset {exc.start:,})",
            field="preset",
        ) from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{label}: not valid TOML ({echo(exc, 200)})", field="preset") from None
    except ValueError:  # int() of more than 4,300 digits
        raise InputError(
            f"{label}: holds an integer of more than {MAX_INT_DIGITS} digits",
            field="preset",
            hint="no size, count or setting needs that many digits",
        ) from None
    except RecursionError:
        raise InputError(
            f"{label}: arrays or tables nested more than {MAX_PRESET_DEPTH} levels deep", field="preset"
        ) from None
    if _deeper_than(doc, MAX_PRESET_DEPTH):
        raise InputError(f"{label}: arrays or tables nested more than {MAX_PRESET_DEPTH} levels deep", field="preset")
    check_numbers(doc, field="preset", where=label)
    return doc


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


def _validate(cls: type[_Preset], label: str, data: dict[str, Any]) -> _Preset:
    """``data`` as a ``cls`` (strict: unknown keys rejected); InputError names ``label`` (the file) and the key."""
    from pydantic import ValidationError

    if not isinstance(data, dict):
        raise InputError(f"{label}: a preset must be a TOML table", field="preset")
    try:
        obj = _adapter(cls).validate_python(data)
    except ValidationError as exc:
        raise InputError(_fmt_validation(label, exc), field="preset", hint="fix the preset file") from None
    if isinstance(obj, ModelPreset):
        unknown = sorted(set(obj.config) - CONFIG_KEYS)
        if unknown:
            raise InputError(
                f"{label}: unknown key 'config.{unknown[0]}'",
                field="preset",
                hint="use Hugging Face config.json field names",
            )
    return obj


def _from_cache(cls: type[_Preset], key: str, ident: str) -> _Preset | None:
    from kvplan import cache

    data = cache.load("presets", key, ident)
    if data is not None:
        try:
            return cls.from_dict(data)
        except (TypeError, KeyError, AttributeError):  # a cache entry of another shape: validate again
            pass
    return None


def _cached(cls: type[_Preset], path: Path) -> _Preset:
    """Load a preset file, validated by pydantic once per file content.

    The validated form is kept as JSON by :mod:`kvplan.cache` (which also checks kvplan's version and the entry's
    own checksum); KVPLAN_NO_CACHE=1 turns it off.  Every file, shipped or the user's, is read (bounded) on each
    load: the entry is keyed by the file's path and its ident holds a checksum of the file's bytes, so any edit in
    place -- even one of the same size and mtime -- is a miss that validates again and rewrites the entry.

    Formula: ``key = <stem>-<crc32(absolute path)>``; ``ident = <type>:<absolute path>:<cache.digest(bytes)>``.
    """
    from kvplan import cache

    label = path.name if _is_shipped(path) else str(path)
    raw = _read_preset_bytes(path)
    where = str(path.absolute())
    key = f"{'shipped' if label == path.name else 'user'}-{path.stem[:80]}-{zlib.crc32(where.encode()):08x}"
    ident = f"{cls.__name__}:{where}:{cache.digest(raw)}:{len(raw)}"
    hit = _from_cache(cls, key, ident)
    if hit is not None:
        return hit
    obj = _validate(cls, label, _parse_toml(label, raw))
    cache.store("presets", key, ident, dataclasses.asdict(obj))
    return obj


def _load(cls: type[_Preset], path: Path, *, use_cache: bool) -> _Preset:
    if use_cache:
        return _cached(cls, path)
    label = path.name if _is_shipped(path) else str(path)
    return _validate(cls, label, _parse_toml(label, _read_preset_bytes(path)))


def load_model_file(path: Path, *, use_cache: bool = True) -> ModelPreset:
    """One model preset file, validated (errors name the file: its name if shipped, its path otherwise)."""
    return _load(ModelPreset, path, use_cache=use_cache)


def load_hardware_file(path: Path, *, use_cache: bool = True) -> HardwarePreset:
    """One hardware preset file, validated (errors name the file: its name if shipped, its path otherwise)."""
    return _load(HardwarePreset, path, use_cache=use_cache)


# ------------------------------------------------------------------------------------------- listings


class PresetEntry(Generic[_Preset]):
    """A loaded preset and where it came from: what ``kvplan models`` / ``kvplan gpus`` show (a plain class: nothing
    copies or compares it, and a dataclass would cost every start its generated code)."""

    __slots__ = ("origin", "path", "preset", "shadows")

    def __init__(self, preset: _Preset, origin: Origin, path: Path, shadows: Path | None = None) -> None:
        self.preset: _Preset = preset
        self.origin: Origin = origin
        self.path = path
        self.shadows = shadows  # the shipped file with the same id, which this user preset replaces

    @property
    def id(self) -> str:
        return self.preset.id


def _toml_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.toml"))


def _user_entries(
    cls: type[_Preset], kind: str, users: tuple[Path, ...], shipped: dict[str, Path]
) -> list[PresetEntry[_Preset]]:
    """The user presets of ``kind`` (models / hardware): folder order, then file name; an earlier folder wins an id,
    and one id in two files of the same folder is an error (naming both files)."""
    out: list[PresetEntry[_Preset]] = []
    taken: set[str] = set()
    for folder in users:
        here: dict[str, Path] = {}
        for path in _toml_files(folder / kind):
            obj = _cached(cls, path)
            if obj.id in here:
                raise InputError(
                    f"{path}: id '{obj.id}' is also the id of {here[obj.id]}",
                    field="preset",
                    hint="keep one file per id",
                )
            here[obj.id] = path
            if obj.id not in taken:
                out.append(PresetEntry(obj, "user", path, shipped.get(obj.id)))
        taken.update(here)
    return out


def _entries(
    cls: type[_Preset], kind: str, shipped_dir: Path, users: tuple[Path, ...]
) -> tuple[PresetEntry[_Preset], ...]:
    shipped: list[PresetEntry[_Preset]] = [
        PresetEntry(_cached(cls, p), "shipped", p) for p in _toml_files(shipped_dir / kind)
    ]
    user: list[PresetEntry[_Preset]] = _user_entries(cls, kind, users, {e.preset.id: e.path for e in shipped})
    replaced: set[str] = {e.preset.id for e in user}
    return tuple(user + [e for e in shipped if e.preset.id not in replaced])


@functools.cache
def _model_entries(shipped_dir: Path, users: tuple[Path, ...]) -> tuple[PresetEntry[ModelPreset], ...]:
    return _entries(ModelPreset, "models", shipped_dir, users)


@functools.cache
def _gpu_entries(shipped_dir: Path, users: tuple[Path, ...]) -> tuple[PresetEntry[HardwarePreset], ...]:
    return _entries(HardwarePreset, "hardware", shipped_dir, users)


def model_entries() -> tuple[PresetEntry[ModelPreset], ...]:
    """Every model preset with its origin: the user's first (folder order, then file name), then the shipped ones
    (file name order) whose id no user preset takes.  Loaded once per process and preset folders."""
    return _model_entries(configs_dir(), user_dirs())


def gpu_entries() -> tuple[PresetEntry[HardwarePreset], ...]:
    """Every hardware preset with its origin, in the order of :func:`model_entries`."""
    return _gpu_entries(configs_dir(), user_dirs())


def all_models() -> tuple[ModelPreset, ...]:
    """The model presets kvplan resolves names against (user presets first, so their ids and aliases win)."""
    return tuple(e.preset for e in model_entries())


def all_gpus() -> tuple[HardwarePreset, ...]:
    """The hardware presets kvplan resolves ``--gpu`` against (user presets first)."""
    return tuple(e.preset for e in gpu_entries())


def clear_caches() -> None:
    """Forget the presets loaded in this process (the on-disk validated cache stays): after writing a file."""
    _model_entries.cache_clear()
    _gpu_entries.cache_clear()


def preset_origin(preset: ModelPreset | HardwarePreset) -> Origin:
    """``"user"`` or ``"shipped"`` for a preset of :func:`all_models` / :func:`all_gpus` (by identity, else by id:
    the preset that id resolves to)."""
    entries: tuple[PresetEntry[Any], ...] = model_entries() if isinstance(preset, ModelPreset) else gpu_entries()
    for e in entries:
        if e.preset is preset:
            return e.origin
    return next((e.origin for e in entries if e.id == preset.id), "shipped")


def model_file_for(model_id: str) -> Path:
    """The preset file that holds ``model_id``: a user file if one does (``<org>--<name>.toml`` in a user folder's
    ``models/``, else any user model file with that id: a user file wins, as in :func:`model_entries`), else the
    shipped ``configs/models/<org>--<name>.toml`` (which need not exist).  Only user files are read here."""
    name = model_id.replace("/", "--") + ".toml"
    users = user_dirs()
    for folder in users:
        cand = folder / "models" / name
        if os.path.isfile(cand):  # False (never an error) for a name too long for the file system or holding NUL
            return cand
    for folder in users:
        for path in _toml_files(folder / "models"):
            if _cached(ModelPreset, path).id == model_id:
                return path
    return configs_dir() / "models" / name


def gpu_file_for(gpu_id: str) -> Path:
    """The preset file named for hardware id ``gpu_id`` (``<id>.toml``): a user folder's first, else the shipped one
    (which need not exist).  A fast path for ``--gpu ID``: resolving a name or alias reads every GPU preset."""
    name = gpu_id + ".toml"
    for folder in user_dirs():
        cand = folder / "hardware" / name
        if os.path.isfile(cand):
            return cand
    return configs_dir() / "hardware" / name


# -------------------------------------------------------------------------------------------- filters


def model_family(preset: ModelPreset) -> Family:
    """The KV family of a model preset, as planning detects it (:func:`kvplan.hfconfig.detect.detect_family`)."""
    from kvplan.hfconfig.detect import detect_family
    from kvplan.hfconfig.normalize import flatten_config

    return detect_family(flatten_config(preset.config))


def parse_family(text: str) -> Family:
    """``--family`` text -> Family (``"MLA"``, ``"hybrid-swa"`` and ``"hybrid_swa"`` all read); InputError else."""
    from kvplan.family import Family, family_or_none

    fam = family_or_none(text.strip().lower().replace("-", "_"))
    if fam is None:
        raise InputError(f"unknown family '{echo(text)}'", field="--family", hint="use one of " + ", ".join(Family))
    return fam


def _matches(needle: str, names: Iterable[str]) -> bool:
    return any(needle in n.lower() for n in names)


def model_matches(preset: ModelPreset, *, family: Family | None = None, search: str | None = None) -> bool:
    """True when the preset is of ``family`` (if given) and ``search`` (if given) is a case-insensitive substring of
    its id, an alias or a published variant's id.

    Example: ``search="fp8"`` keeps ``Qwen/Qwen3-32B`` (variant ``Qwen/Qwen3-32B-FP8``); ``family=Family.MLA`` keeps
    DeepSeek-V3 and drops Llama.
    """
    if family is not None and model_family(preset) != family:
        return False
    if search and search.strip():
        return _matches(search.strip().lower(), [preset.id, *preset.aliases, *(v.id for v in preset.variants)])
    return True


def gpu_matches(preset: HardwarePreset, *, search: str | None = None) -> bool:
    """True when ``search`` (if given) is a case-insensitive substring of the GPU's id, name or an alias."""
    if search and search.strip():
        return _matches(search.strip().lower(), [preset.id, preset.name, *preset.aliases])
    return True


def filter_models(
    models: Iterable[ModelPreset] | None = None, *, family: Family | str | None = None, search: str | None = None
) -> tuple[ModelPreset, ...]:
    """The model presets (default :func:`all_models`) that :func:`model_matches`; ``family`` may be CLI text."""
    fam = parse_family(family) if isinstance(family, str) else family
    return tuple(m for m in (all_models() if models is None else models) if model_matches(m, family=fam, search=search))


def filter_gpus(
    gpus: Iterable[HardwarePreset] | None = None, *, search: str | None = None
) -> tuple[HardwarePreset, ...]:
    """The hardware presets (default :func:`all_gpus`) that :func:`gpu_matches`."""
    return tuple(g for g in (all_gpus() if gpus is None else gpus) if gpu_matches(g, search=search))


# ---------------------------------------------------------------------------------- kvplan models add


class AddedModel:
    """What :func:`add_user_model` wrote (a plain class, as :class:`PresetEntry`)."""

    __slots__ = ("id", "path", "shadows")

    def __init__(self, *, path: Path, id: str, shadows: Path | None = None) -> None:
        self.path = path  # the new preset file
        self.id = id
        self.shadows = shadows  # the shipped preset file with the same id, which the new file now replaces


def _model_source(config: Path) -> tuple[Path, Path]:
    """(folder, config.json path) of ``config`` (a config.json or a model folder)."""
    p = config.expanduser()
    return (p, p / "config.json") if p.is_dir() else (p.parent, p)


def _default_id(raw_config: Any, folder: Path) -> str | None:
    """The id a config names itself by: ``_name_or_path``, else a Hugging Face cache folder's
    ``models--ORG--NAME`` (``.../models--Qwen--Qwen3-8B/snapshots/<rev>/config.json`` -> ``Qwen/Qwen3-8B``)."""
    name = raw_config.get("_name_or_path") if isinstance(raw_config, dict) else None
    if isinstance(name, str) and name.strip():
        return name.strip()
    for part in reversed(folder.absolute().parts):
        if part.startswith("models--") and part.count("--") == 2:
            return part[len("models--") :].replace("--", "/")
    return None


def _checked_id(model_id: str | None, default: str | None) -> str:
    from kvplan.inputs.hub import is_hub_id

    mid = (model_id or "").strip() or default
    if mid is None:
        raise InputError("config.json names no model id (_name_or_path)", field="--id", hint="pass --id ORG/NAME")
    if not is_hub_id(mid):
        where = "--id" if model_id else "config.json _name_or_path"
        raise InputError(
            f"{where} '{echo(mid)}' is not a Hugging Face id ORG/NAME", field="--id", hint="pass --id ORG/NAME"
        )
    return mid


def _checked_aliases(aliases: Sequence[str]) -> list[str]:
    out: list[str] = []
    for a in aliases:
        name = a.strip()
        if not name or any(ch in name for ch in "\n\r\t"):
            raise InputError(f"alias '{echo(a)}' must be a non-empty name on one line", field="--alias")
        if name not in out:
            out.append(name)
    return out


def _spec_of(config: Path) -> Any:
    """The ModelSpec of a local config.json / model folder (kvplan.inputs.resolve's readers), errors re-labelled
    for ``models add`` (they name the config field; the flag is the CONFIG argument, not --model)."""
    from kvplan.inputs.resolve import spec_from_path

    p = config.expanduser()
    if not p.exists():
        raise InputError(
            f"no such file or folder: {echo(config, 160)}", field="CONFIG", hint="give a config.json or a model folder"
        )
    try:
        return spec_from_path(p)
    except InputError as exc:
        raise InputError(str(exc), field="CONFIG", hint=exc.hint) from None


def _write_checked(target: Path, text: str, *, force: bool = False) -> None:
    """Write ``text`` to ``target`` via a temporary file in the same folder that is loaded back and validated first
    (so a file that does not load never lands); InputError naming ``target`` when it does not load.  The file lands
    atomically (:func:`kvplan.inputs.preset_writer.install_preset`): without ``force`` an existing target, even one
    a concurrent writer just made, is an InputError "exists"."""
    from kvplan.hfconfig.spec import spec_from_config
    from kvplan.inputs.preset_writer import install_preset

    tmp = target.with_name(f".{target.name[:200]}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(
            f"cannot write {target} ({exc.strerror or exc})",
            field="models add",
            hint="check the folder's permissions or set KVPLAN_PRESETS",
        ) from None
    try:
        preset = _validate(ModelPreset, str(target), _parse_toml(str(target), _read_preset_bytes(tmp)))
        spec_from_config(preset.config, model_id=preset.id, source=str(target))  # plannable geometry
        install_preset(tmp, target, force=force)
    finally:
        tmp.unlink(missing_ok=True)


def add_user_model(
    config: Path,
    *,
    model_id: str | None = None,
    aliases: Sequence[str] = (),
    quantization: str | None = None,
    source: str | None = None,
    force: bool = False,
) -> AddedModel:
    """Write a user model preset from a local config.json (or a model folder holding one, with the optional
    ``model.safetensors.index.json`` and ``hf_quant_config.json`` :func:`kvplan.inputs.resolve.spec_from_path` reads).

    The file is ``<user models folder>/<org>--<name>.toml`` (:func:`user_models_dir`), its text made by
    :func:`kvplan.inputs.preset_writer.preset_toml`; it is loaded back and validated before it replaces anything.
    ``model_id`` defaults to the config's ``_name_or_path`` when that is an ``ORG/NAME`` id; ``quantization`` to the
    format the config (or hf_quant_config.json) declares; ``source`` to the config.json's absolute path.  An
    existing user file is replaced only with ``force``.  Every refusal is an InputError (exit 2) naming the field.

    Example: ``add_user_model(Path("llama/config.json"), model_id="me/llama-ft")`` writes
    ``~/.config/kvplan/models/me--llama-ft.toml`` and ``kvplan fit -m me/llama-ft`` plans it offline.
    """
    from kvplan.inputs.preset_writer import preset_file_name

    folder, _ = _model_source(Path(config))
    spec = _spec_of(Path(config))
    mid = _checked_id(model_id, _default_id(spec.raw_config, folder))
    quant = (quantization or "").strip().lower() or spec.quantization
    if quant not in QUANTIZATIONS:
        raise InputError(
            f"quantization '{echo(quant)}' must be one of {', '.join(QUANTIZATIONS)}", field="--quantization"
        )
    target = user_models_dir() / preset_file_name(mid)
    if target.exists() and not force:
        raise InputError(f"{target} exists", field="--force", hint="pass --force to overwrite it")
    _write_checked(
        target,
        _user_preset_text(
            Path(config),
            spec,
            model_id=mid,
            quantization=quant,
            given_quantization=bool(quantization),
            aliases=aliases,
            source=source,
        ),
        force=force,
    )
    clear_caches()
    shipped = configs_dir() / "models" / target.name
    return AddedModel(path=target, id=mid, shadows=shipped if shipped.is_file() else None)


def _user_preset_text(
    config: Path,
    spec: Any,
    *,
    model_id: str,
    quantization: str,
    given_quantization: bool,
    aliases: Sequence[str],
    source: str | None,
) -> str:
    """The preset text of ``kvplan models add`` (:func:`kvplan.inputs.preset_writer.preset_toml`): source the
    config.json's absolute path unless given, checkpoint size from the folder's safetensors index when read."""
    from kvplan.inputs.preset_writer import preset_toml

    folder, cfg_path = _model_source(config)
    hq = folder / "hf_quant_config.json"
    if given_quantization:
        weights_source: str | None = f"given with --quantization {quantization}"
    else:
        weights_source = f"{hq.name} and config.json in {folder.absolute()} -> {quantization}" if hq.is_file() else None
    return preset_toml(
        spec.raw_config,
        model_id=model_id,
        source=(source or "").strip() or f"local config.json {cfg_path.absolute()}",
        config_ref="local copy named in source",
        quantization=quantization,
        aliases=_checked_aliases(aliases),
        notes="Written by `kvplan models add` from a local config.json.",
        weights_source=weights_source,
        checkpoint_bytes=spec.checkpoint_bytes,
        checkpoint_source=f"metadata.total_size of model.safetensors.index.json in {folder.absolute()}",
    )
