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

The package is split by concept (issue 21 item 6): :mod:`~kvplan.inputs.presets.schema` (the preset types and
their validator), :mod:`~kvplan.inputs.presets.files` (where presets live), :mod:`~kvplan.inputs.presets.loading`
(reading, validating and caching one file), :mod:`~kvplan.inputs.presets.lookup` (listings, ids, filters) and
:mod:`~kvplan.inputs.presets.add` (``kvplan models add``).  Every name is re-exported here, so
``from kvplan.inputs.presets import ModelPreset`` and ``presets._write_checked`` keep working.
"""

from __future__ import annotations

from kvplan.errors import InputError, echo  # noqa: F401  (names of the one-module presets.py, re-exported)
from kvplan.inputs.config_keys import CONFIG_KEYS  # noqa: F401
from kvplan.inputs.presets.add import (  # noqa: F401  (re-exported)
    AddedModel,
    _checked_aliases,
    _checked_id,
    _default_id,
    _model_source,
    _spec_of,
    _user_preset_text,
    _write_checked,
    add_user_model,
)
from kvplan.inputs.presets.files import (  # noqa: F401  (re-exported)
    MAX_PRESET_BYTES,
    MAX_PRESET_DEPTH,
    MAX_USER_PRESET_BYTES,
    Origin,
    _is_shipped,
    _packaged_configs,
    configs_dir,
    user_dirs,
    user_models_dir,
)
from kvplan.inputs.presets.loading import (  # noqa: F401  (re-exported)
    _cached,
    _deeper_than,
    _fmt_validation,
    _from_cache,
    _load,
    _parse_toml,
    _read_preset_bytes,
    _validate,
    load_hardware_file,
    load_model_file,
)
from kvplan.inputs.presets.lookup import (  # noqa: F401  (re-exported)
    PresetEntry,
    _entries,
    _gpu_entries,
    _matches,
    _model_entries,
    _toml_files,
    _user_entries,
    all_gpus,
    all_models,
    clear_caches,
    filter_gpus,
    filter_models,
    gpu_entries,
    gpu_file_for,
    gpu_matches,
    model_entries,
    model_family,
    model_file_for,
    model_matches,
    parse_family,
    preset_origin,
)
from kvplan.inputs.presets.schema import (  # noqa: F401  (re-exported)
    _ADAPTERS,
    _STRICT,
    PERF_SOURCE_GROUPS,
    PERF_SOURCED,
    QUANTIZATIONS,
    GpuArch,
    GpuForm,
    HardwarePreset,
    ModelPreset,
    PerfClock,
    PerfFigures,
    PerfLink,
    Quantization,
    Variant,
    WeightsInfo,
    _adapter,
    _Preset,
)
