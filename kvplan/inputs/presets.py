"""Presets as data: ``configs/models/*.toml`` and ``configs/hardware/*.toml``.

Files are read with the stdlib ``tomllib`` and validated by strict pydantic models
(unknown keys are rejected; an error names the file and the key).  The preset
folders ship inside the wheel as ``kvplan/configs`` (see pyproject.toml); in a
source checkout the top-level ``configs/`` folder is used.

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
"""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from kvplan.errors import InputError
from kvplan.inputs.config_keys import CONFIG_KEYS  # the [config] allow-list, data of its own

if TYPE_CHECKING:  # the constrained types are bound by _adapter() when pydantic validates
    from typing import Annotated

    from annotated_types import Gt
    from pydantic import TypeAdapter, ValidationError

    PositiveInt = Annotated[int, Gt(0)]
    PositiveFloat = Annotated[float, Gt(0)]

QUANTIZATIONS = (
    "bf16", "fp16", "fp32", "fp8", "mxfp4", "nvfp4", "int4", "int8", "mixed",
)
Quantization = Literal["bf16", "fp16", "fp32", "fp8", "mxfp4", "nvfp4", "int4", "int8", "mixed"]

# The preset types are stdlib dataclasses that pydantic validates strictly (``__pydantic_config__``:
# unknown keys rejected, constraints from the annotations).  pydantic is imported only to validate a
# file that is not in the validated cache (:func:`_cached`), so ``kvplan fit`` usually never loads it.
_STRICT = {"extra": "forbid"}


@dataclass(eq=False, repr=False)
class WeightsInfo:
    __pydantic_config__ = _STRICT
    checkpoint_bytes: PositiveInt | None = None
    params: PositiveInt | None = None
    quantization: Quantization = "bf16"
    source: str = ""
    notes: str = ""


@dataclass(eq=False, repr=False)
class Variant:
    __pydantic_config__ = _STRICT
    id: str
    quantization: Quantization
    checkpoint_bytes: PositiveInt | None = None
    source: str = ""
    notes: str = ""


@dataclass(eq=False, repr=False)
class ModelPreset:
    __pydantic_config__ = _STRICT
    id: str
    source: str
    config: dict[str, Any]
    aliases: list[str] = field(default_factory=list)
    notes: str = ""
    weights: WeightsInfo = field(default_factory=WeightsInfo)
    variants: list[Variant] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelPreset:
        """Rebuild from an already-validated dict (the cache)."""
        return cls(**{**d, "weights": WeightsInfo(**d.get("weights", {})),
                      "variants": [Variant(**v) for v in d.get("variants", [])]})


@dataclass(eq=False, repr=False)
class HardwarePreset:
    __pydantic_config__ = _STRICT
    id: str
    name: str
    memory_mib: PositiveInt
    source: str
    aliases: list[str] = field(default_factory=list)
    vendor: Literal["nvidia", "amd", "intel", "other"] = "nvidia"
    cuda_total_bytes: PositiveInt | None = None
    marketing: str = ""
    bandwidth_gbps: PositiveFloat | None = None
    interconnect: Literal["nvlink", "pcie", "xgmi", "nvlink-c2c", "other"] = "pcie"
    interconnect_gbps: PositiveFloat | None = None
    sm: str = ""
    fp8: bool = False
    fp4: bool = False
    notes: str = ""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HardwarePreset:
        return cls(**d)

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


def configs_dir() -> Path:
    """The preset folder: ``$KVPLAN_CONFIGS``, the wheel's ``kvplan/configs``, or the checkout's ``configs``."""
    env = os.environ.get("KVPLAN_CONFIGS")
    if env:
        return Path(env)
    pkg = Path(__file__).resolve().parent.parent  # kvplan/
    for cand in (pkg / "configs", pkg.parent / "configs"):
        if (cand / "models").is_dir():
            return cand
    raise InputError("preset folder not found", field="configs", hint="reinstall kvplan or set KVPLAN_CONFIGS")


def _fmt_validation(path: Path, err: ValidationError) -> str:
    e = err.errors()[0]
    loc = ".".join(str(p) for p in e["loc"])
    kind = e["type"]
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):
        return f"{path.name}: unknown key '{loc}'"
    if kind == "missing":
        return f"{path.name}: missing key '{loc}'"
    return f"{path.name}: key '{loc}': {e['msg']}"


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib  # only on a cache miss

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path.name}: not valid TOML ({exc})", field="preset") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})", field="preset") from None


_Preset = TypeVar("_Preset", ModelPreset, HardwarePreset)


_ADAPTERS: dict[type, Any] = {}  # preset type -> its pydantic TypeAdapter, built on first use


def _adapter(cls: type[_Preset]) -> TypeAdapter[_Preset]:
    """pydantic's validator for a preset type.  The annotations are strings (``from __future__ import
    annotations``); the constrained names they use are bound here, so that importing this module costs
    neither pydantic nor annotated_types."""
    adapter: TypeAdapter[_Preset] | None = _ADAPTERS.get(cls)
    if adapter is None:
        from typing import Annotated

        from annotated_types import Gt
        from pydantic import TypeAdapter

        globals().setdefault("PositiveInt", Annotated[int, Gt(0)])
        globals().setdefault("PositiveFloat", Annotated[float, Gt(0)])
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter


def _validate(cls: type[_Preset], path: Path, data: dict[str, Any]) -> _Preset:
    from pydantic import ValidationError

    if not isinstance(data, dict):
        raise InputError(f"{path.name}: a preset must be a TOML table", field="preset")
    try:
        obj = _adapter(cls).validate_python(data)
    except ValidationError as exc:
        raise InputError(_fmt_validation(path, exc), field="preset", hint="fix the preset file") from None
    if isinstance(obj, ModelPreset):
        unknown = sorted(set(obj.config) - CONFIG_KEYS)
        if unknown:
            raise InputError(f"{path.name}: unknown key 'config.{unknown[0]}'", field="preset",
                             hint="use Hugging Face config.json field names")
    return obj


def _cached(cls: type[_Preset], path: Path) -> _Preset:
    """Load a preset file, validated by pydantic once per file content.

    The validated form is kept as JSON by :mod:`kvplan.cache`, keyed by the file's name, size and mtime (and
    kvplan's version); KVPLAN_NO_CACHE=1 turns it off.
    """
    from kvplan import cache

    try:
        st = path.stat()
    except OSError:
        st = None
    key = f"{path.stem}-{st.st_size}-{st.st_mtime_ns}" if st else None
    ident = f"{cls.__name__}:{path}"
    if key:
        data = cache.load("presets", key, ident)
        if data is not None:
            try:
                return cls.from_dict(data)
            except (TypeError, KeyError, AttributeError):  # a cache entry of another shape: validate again
                pass
    obj = _validate(cls, path, _read_toml(path))
    if key:
        cache.store("presets", key, ident, dataclasses.asdict(obj))
    return obj


def load_model_file(path: Path, *, use_cache: bool = True) -> ModelPreset:
    return _cached(ModelPreset, path) if use_cache else _validate(ModelPreset, path, _read_toml(path))


def load_hardware_file(path: Path, *, use_cache: bool = True) -> HardwarePreset:
    return _cached(HardwarePreset, path) if use_cache else _validate(HardwarePreset, path, _read_toml(path))


@functools.cache
def all_models() -> tuple[ModelPreset, ...]:
    return tuple(load_model_file(p) for p in sorted((configs_dir() / "models").glob("*.toml")))


@functools.cache
def all_gpus() -> tuple[HardwarePreset, ...]:
    return tuple(load_hardware_file(p) for p in sorted((configs_dir() / "hardware").glob("*.toml")))


def model_file_for(model_id: str) -> Path:
    """The preset file a Hugging Face id would have: ``configs/models/<org>--<name>.toml``."""
    return configs_dir() / "models" / (model_id.replace("/", "--") + ".toml")
