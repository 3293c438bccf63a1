"""The hardware presets' ``[perf]`` table (issue 22 item 2): the strict schema and its sources rule, the
memory cap of a user GPU preset (issue 26), and the shipped figures themselves.

The figures come from the vendor documents each preset's ``[perf.sources]`` names; these tests check the schema,
the dense-vs-sparse bookkeeping (sparse figures halved, boost clocks named) and cross-figure consistency that a
wrong copy would break (FP8 >= BF16, PCIe rate from generation and lanes, NVLink rate by generation, the three
RTX PRO 6000 editions ordered by their power limits), not each number against its datasheet.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest

from kvplan.errors import InputError
from kvplan.inputs import presets
from kvplan.inputs.presets import PERF_SOURCE_GROUPS, PERF_SOURCED, HardwarePreset, PerfFigures
from kvplan.units import MAX_BYTES, MiB
from tests.cli_run import run_kvplan

SHIPPED = {e.preset.id: e.preset for e in presets.gpu_entries() if e.origin == "shipped"}
DEV_SET = (
    "rtx-pro-6000-maxq",
    "rtx-pro-6000-server",
    "rtx-pro-6000-ws",
    "h100-sxm",
    "h200-sxm",
    "b200",
    "b300",
    "gb200",
    "gb300",
    "mi300x",
)
TFLOPS = ("tflops_bf16", "tflops_fp16", "tflops_fp8", "tflops_fp4", "tflops_int8")


def _perf(g: HardwarePreset) -> PerfFigures:
    assert g.perf is not None, g.id
    return g.perf


BASE = """\
id = "test-gpu"
name = "Test GPU"
memory_mib = 81559
source = "test"
"""


def _load(tmp_path: Path, text: str) -> HardwarePreset:
    p = tmp_path / "test-gpu.toml"
    p.write_text(text)
    return presets.load_hardware_file(p, use_cache=False)


# ------------------------------------------------------------------------------------------------ the schema


def test_a_figure_with_its_own_source_loads(tmp_path):
    g = _load(tmp_path, BASE + '[perf]\nmemory_bandwidth_gbs = 3350\n[perf.sources]\nmemory_bandwidth_gbs = "ds"\n')
    assert g.perf is not None and _perf(g).memory_bandwidth_gbs == 3350.0
    assert _perf(g).source_of("memory_bandwidth_gbs") == "ds"


def test_a_group_key_sources_every_figure_of_its_group(tmp_path):
    g = _load(
        tmp_path,
        BASE + "[perf]\ntflops_bf16 = 989.4\ntflops_fp8 = 1978.9\npcie_gen = 5\npcie_lanes = 16\nlink_gbs = 64\n"
        'p2p = true\n[perf.sources]\ntflops = "datasheet, halved"\nlink = "PCI-SIG"\n',
    )
    assert g.perf is not None
    assert _perf(g).source_of("tflops_fp8") == "datasheet, halved"
    assert _perf(g).source_of("pcie_lanes") == _perf(g).source_of("p2p") == "PCI-SIG"
    assert _perf(g).source_of("power_w") is None


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ("tflops_bf16 = 989.4\n", "perf.tflops_bf16 has no source"),
        ('tflops_bf16 = 989.4\n[perf.sources]\nlink = "x"\n', "perf.tflops_bf16 has no source"),
        ("p2p = false\n", "perf.p2p has no source"),
        ("pcie_gen = 5\n", "perf.pcie_gen has no source"),
        ('link_gbs = 64\n[perf.sources]\nlinks = "x"\n', "perf.sources key 'links'"),
        ('power_w = 300\n[perf.sources]\npower_w = "  "\n', "perf.sources.power_w is empty"),
    ],
)
def test_the_sources_rule_is_one_line_exit_2(tmp_path, table, needle):
    with pytest.raises(InputError) as exc:
        _load(tmp_path, BASE + "[perf]\n" + table)
    assert needle in str(exc.value) and "\n" not in str(exc.value)
    assert exc.value.exit_code == 2


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ("tflops_bf16 = -1\n", "key 'perf.tflops_bf16'"),
        ("memory_bandwidth_gbs = 0\n", "key 'perf.memory_bandwidth_gbs'"),
        ("pcie_lanes = -16\n", "key 'perf.pcie_lanes'"),
        ("tflops_fp6 = 1\n", "unknown key 'perf.tflops_fp6'"),
        ('arch = "volta"\n', "key 'perf.arch'"),
        ('link = "ethernet"\n', "key 'perf.link'"),
        ('clock = "turbo"\n', "key 'perf.clock'"),
    ],
)
def test_bad_values_and_unknown_keys_are_refused(tmp_path, table, needle):
    with pytest.raises(InputError) as exc:
        _load(tmp_path, BASE + "[perf]\n" + table)
    assert needle in str(exc.value)


def test_every_sourced_figure_is_a_field_and_every_group_member_too():
    names = {f.name for f in dataclasses.fields(PerfFigures)}
    assert set(PERF_SOURCED) <= names
    assert all(set(m) <= set(PERF_SOURCED) for m in PERF_SOURCE_GROUPS.values())
    assert not set(PERF_SOURCE_GROUPS) & set(PERF_SOURCED)  # a group key never shadows a sourced figure


def test_perf_init_takes_exactly_the_fields():
    """PerfFigures follows the file's written-out-__init__ pattern (tests/test_startup_imports.py checks the
    others): the parameters are the fields in order with their defaults; ``sources`` defaults to a new dict."""
    params = list(inspect.signature(PerfFigures.__init__).parameters.values())[1:]
    fields = dataclasses.fields(PerfFigures)
    assert [p.name for p in params] == [f.name for f in fields]
    for p, f in zip(params, fields, strict=True):
        assert p.default == (None if f.default_factory is not dataclasses.MISSING else f.default), f.name
    a, b = PerfFigures(), PerfFigures()
    assert a.sources == {} and a.sources is not b.sources


def test_a_preset_with_perf_survives_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(tmp_path / "cache"))
    p = tmp_path / "test-gpu.toml"
    p.write_text(BASE + '[perf]\ntflops_bf16 = 989.4\nlink = "nvlink"\n[perf.sources]\ntflops = "ds"\n')
    first = presets.load_hardware_file(p)
    again = presets.load_hardware_file(p)  # from the validated cache: HardwarePreset.from_dict
    assert isinstance(again.perf, PerfFigures)
    assert vars(again.perf) == vars(first.perf)
    assert presets.load_hardware_file(tmp_path / "test-gpu.toml").perf.source_of("tflops_bf16") == "ds"


def test_from_dict_without_perf_is_none():
    d = dataclasses.asdict(SHIPPED["h100-sxm"])
    d.pop("perf")
    assert HardwarePreset.from_dict(d).perf is None


# --------------------------------------------------------------------------- the memory cap (issue 26)


def test_memory_mib_is_capped_at_the_gpu_memory_cap(tmp_path):
    cap = MAX_BYTES // MiB  # what --gpu-memory accepts at most (kvplan.units.parse_size)
    assert _load(tmp_path, BASE.replace("81559", str(cap))).memory_mib == cap
    with pytest.raises(InputError) as exc:
        _load(tmp_path, BASE.replace("81559", str(cap + 1)))
    assert "key 'memory_mib'" in str(exc.value)


def test_cuda_total_bytes_is_capped_too(tmp_path):
    with pytest.raises(InputError) as exc:
        _load(tmp_path, BASE + f"cuda_total_bytes = {MAX_BYTES + 1}\n")
    assert "key 'cuda_total_bytes'" in str(exc.value)


def test_a_huge_user_gpu_preset_is_exit_2(user_dir):
    (user_dir / "hardware" / "huge.toml").write_text(
        BASE.replace('"test-gpu"', '"huge"').replace("81559", str(2 * 10**13))
    )
    proc = run_kvplan(
        ["fit", "-m", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "huge"],
        env={"KVPLAN_PRESETS": str(user_dir)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    assert "memory_mib" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) <= 2


# --------------------------------------------------------------------------------------- shipped figures


def test_every_shipped_preset_has_a_perf_table():
    assert len(SHIPPED) >= 63
    assert [g.id for g in SHIPPED.values() if g.perf is None] == []
    assert [g.id for g in SHIPPED.values() if _perf(g).arch is None] == []


@pytest.mark.parametrize("gid", DEV_SET)
def test_dev_set_gpus_have_what_the_speed_model_needs(gid):
    g = SHIPPED[gid]
    p = _perf(g)
    for name in ("tflops_bf16", "tflops_fp8", "memory_bandwidth_gbs", "link", "link_gbs", "power_w", "clock"):
        assert p.figure(name) is not None, f"{gid}: {name}"
    if g.fp4:  # FP4 tensor cores (Blackwell): their dense FP4 rate too
        assert p.tflops_fp4 is not None, gid
    assert p.link in ("nvlink", "pcie", "xgmi")
    if p.link == "pcie":
        assert (p.pcie_gen, p.pcie_lanes) == (5, 16) and p.p2p is not None


@pytest.mark.parametrize("gid", sorted(SHIPPED))
def test_figures_are_consistent(gid):
    g = SHIPPED[gid]
    p = _perf(g)
    if p.tflops_bf16 and p.tflops_fp8:
        assert p.tflops_fp8 >= p.tflops_bf16
    if p.tflops_fp8 and p.tflops_fp4:
        assert p.tflops_fp4 >= p.tflops_fp8
    if p.tflops_bf16 and p.tflops_fp16:
        assert p.tflops_fp16 == p.tflops_bf16  # no catalogued GPU runs them at different rates
    if any(p.figure(t) for t in TFLOPS):
        assert p.clock is not None  # a peak names its clock
    if g.vendor in ("nvidia", "amd") and g.sm:  # the top-level format flags agree where they are sourced
        assert not p.tflops_fp8 or g.fp8, gid
        assert not p.tflops_fp4 or g.fp4, gid
    if p.link == "pcie" and p.link_gbs is not None:
        assert p.link_gbs == p.pcie_lanes * 2 ** (p.pcie_gen - 3)  # ~1, 2, 4 GB/s per lane and direction
        assert p.link_generation == f"PCIe {p.pcie_gen}.0"
    if p.link == "nvlink":
        ok = {"NVLink 3": {300.0, 200.0}, "NVLink 4": {450.0, 300.0, 200.0}, "NVLink 5": {900.0}}
        gen = next(k for k in ok if p.link_generation.startswith(k))
        assert p.link_gbs in ok[gen], gid
    if p.link in ("nvlink", "xgmi", "nvlink-c2c"):
        assert p.link_gbs <= 900
    for name in ("tflops_bf16", "memory_bandwidth_gbs", "link_gbs", "power_w"):
        if p.figure(name) is None:  # a figure left out is said so, for the user who needs it
            assert p.notes.strip(), f"{gid}: {name} missing and perf.notes silent"


# (arch) -> plausible dense BF16 (or FP16) TFLOPS range of one GPU / GCD / card of that generation
BF16_RANGE = {
    "turing": (60, 70),
    "ampere": (70, 320),
    "ada": (70, 370),
    "hopper": (750, 1000),
    "blackwell": (80, 2600),
    "blackwell-ultra": (2200, 2600),
    "cdna2": (150, 200),
    "cdna3": (1300, 1310),
    "cdna4": (2200, 2600),
    "rdna3": (100, 130),
    "gaudi2": (400, 450),
    "gaudi3": (1800, 1900),
}


@pytest.mark.parametrize("gid", sorted(SHIPPED))
def test_figures_are_in_plausible_ranges(gid):
    p = _perf(SHIPPED[gid])
    dense = p.tflops_bf16 or p.tflops_fp16
    if dense:
        lo, hi = BF16_RANGE[p.arch]
        assert lo <= dense <= hi, f"{gid}: {dense} TFLOPS for {p.arch}"
    if p.memory_bandwidth_gbs:
        assert 250 <= p.memory_bandwidth_gbs <= 8000
    if p.power_w:
        assert 70 <= p.power_w <= 1400


def test_h100_sxm_is_the_datasheet_sparse_figure_halved():
    p = _perf(SHIPPED["h100-sxm"])
    assert p.tflops_bf16 == 989.4 and abs(2 * p.tflops_bf16 - 1979) < 0.5  # datasheet: 1,979 with sparsity
    assert abs(2 * p.tflops_fp8 - 3958) < 0.5
    assert "sparsity" in p.source_of("tflops_bf16") and "halved" in p.source_of("tflops_bf16")
    assert (p.memory_bandwidth_gbs, p.power_w, p.link_gbs) == (3350, 700, 450)


def test_rtx_pro_6000_editions_differ_only_where_the_vendor_says():
    maxq, ws, se = (_perf(SHIPPED[i]) for i in ("rtx-pro-6000-maxq", "rtx-pro-6000-ws", "rtx-pro-6000-server"))
    assert (maxq.power_w, ws.power_w, se.power_w) == (300, 600, 600)
    # same GB202, peaks scale with the boost clock each vendor document states: 2,280 / 2,617 / 2,430 MHz
    for t in TFLOPS:
        assert maxq.figure(t) < se.figure(t) < ws.figure(t)
        assert abs(maxq.figure(t) / ws.figure(t) - 2280 / 2617) < 0.002
        assert abs(se.figure(t) / ws.figure(t) - 2430 / 2617) < 0.002
    assert ws.tflops_fp4 == 4 * ws.tflops_bf16  # full-rate FP32 accumulate on the pro cards
    assert maxq.memory_bandwidth_gbs == ws.memory_bandwidth_gbs == 1792 and se.memory_bandwidth_gbs == 1597
    assert all(e.link == "pcie" and e.link_gbs == 64 and e.p2p for e in (maxq, ws, se))


def test_geforce_figures_are_fp32_accumulate_and_p2p_off():
    for gid in ("rtx-4090", "rtx-4080", "rtx-4080-super", "rtx-4070-ti-super", "rtx-5090", "rtx-5080", "rtx-5070-ti"):
        p = _perf(SHIPPED[gid])
        assert p.p2p is False, gid
        assert p.tflops_int8 == pytest.approx(4 * p.tflops_bf16, rel=0.01), gid  # FP16-accumulate rate = 2x
        assert p.tflops_fp8 == pytest.approx(2 * p.tflops_bf16, rel=0.01), gid
        assert "FP32 accumulate" in p.notes


def test_sparse_figures_are_marked_in_their_source():
    """Every preset whose vendor prints sparse tensor figures says it halved them (Turing, CDNA 2 and Gaudi have
    no sparsity; AMD CDNA 3/4 and the B300/GB300 FP4 row print dense figures that are used as printed)."""
    for g in SHIPPED.values():
        src = _perf(g).source_of("tflops_bf16") or ""
        if (
            g.vendor == "nvidia"
            and _perf(g).arch in ("ampere", "ada", "hopper", "blackwell", "blackwell-ultra")
            and src
        ):
            assert any(w in src for w in ("halved", "dense", "Dense")), g.id
