"""Every name the driver tools print for a catalogued GPU resolves to its preset (issue 25 item 4).

Each name below is spelled exactly as nvidia-smi / rocm-smi / hl-smi / torch printed it in a public output; the
comment says where it was seen ("hit N" = a public file found with the code-search index, as the presets' own
comments cite them).  Resolution is kvplan.inputs.resolve.resolve_gpu (case- and punctuation-blind match on a
preset's id, name or aliases), so the test also guards against two presets claiming one printed name.
"""

from __future__ import annotations

import pytest

from kvplan.inputs import presets
from kvplan.inputs.resolve import norm_name, resolve_gpu

PRINTED = {
    # ---- NVIDIA datacenter (nvidia-smi --query-gpu=name / the nvidia-smi table)
    "NVIDIA H100 80GB HBM3": "h100-sxm",  # NVIDIA/nccl issue #1264, wilicc/gpu-burn issue #114 (81559MiB @700W)
    "NVIDIA H100 PCIe": "h100-pcie",  # TensorRT-LLM test report 'GPU: NVIDIA H100 PCIe (81559 MiB)' (hit 59474166547)
    "NVIDIA H100 NVL": "h100-nvl",  # NVIDIA/gpu-admin-tools issue #4 ('69W / 400W | 0MiB / 95830MiB')
    "NVIDIA H200": "h200-sxm",  # nvidia-smi pastes, 143771MiB @700W (reference hardware.json 'H200 SXM 141GB')
    "NVIDIA H200 NVL": "h200-nvl",  # 'gpu: NVIDIA H200 NVL, compute capability 9.0, 143771 MiB' (hit 63133389773)
    "NVIDIA H800": "h800",  # 'dgx-09 / NVIDIA H800, 81559 MiB, 570.158.01' (hit 71303046155)
    "NVIDIA H20": "h20",  # '8 x NVIDIA H20, 97,871 MiB each' (hit 68652865563)
    "NVIDIA H20-3e": "h20-3e",  # nvidia-smi 'NVIDIA H20-3e, 143771 MiB, driver 570.133.20' (hit 65778504935)
    "NVIDIA GH200 480GB": "gh200-96gb",  # 'nvidia-smi reports NVIDIA GH200 480GB, 97871 MiB' (hit 63088167599)
    "NVIDIA GH200 120GB": "gh200-96gb",  # nvidia-smi CSV '0, NVIDIA GH200 120GB, ..., 97871 MiB' (hit 56775069589)
    "NVIDIA GH200": "gh200-96gb",  # bare product name (issue 25; CUDA target table, hit 71416487241)
    "NVIDIA GH200 144G HBM3e": "gh200-144gb",  # '0, NVIDIA GH200 144G HBM3e, 580.173.02, 146831 MiB' (hit 57699609541)
    "NVIDIA B200": "b200",  # NVIDIA/TensorRT-LLM issue #10278 (183359MiB @1000W)
    "NVIDIA B300 SXM6 AC": "b300",  # '8x NVIDIA B300 SXM6 AC (275 GB each)' (hit 59140501328); driver 580.95.05 (69752431478)
    "NVIDIA GB200": "gb200",  # aiconfigurator systems/gb200.yaml '# 189471MiB reported by nvidia-smi'
    "NVIDIA GB300": "gb300",  # nvidia-smi --query-gpu=name,compute_cap 'NVIDIA GB300, 10.3' (hit 54575140392)
    "NVIDIA GB10": "gb10",  # DGX Spark (unslothai/unsloth issue #6757; CUDA target table hit 71416487241)
    "NVIDIA A100-SXM4-80GB": "a100-sxm-80gb",  # 'NVIDIA A100-SXM4-80GB ... 72W / 400W | 71458MiB / 81920MiB' (53145194406)
    "NVIDIA A100-SXM-80GB": "a100-sxm-80gb",  # MLPerf accelerator_model_name (hit 28807206289); CSD3 node (5110973406)
    "NVIDIA A100-SXM4-40GB": "a100-sxm-40gb",  # bottlerocket-os/bottlerocket-core-kit PR #834 (40960MiB @400W)
    "NVIDIA A100-PCIE-40GB": "a100-pcie-40gb",  # 'NVIDIA A100-PCIE-40GB, GPU-..., 40960 MiB' (hit 71486469723)
    "NVIDIA A100 80GB PCIe": "a100-pcie-80gb",  # RunPod GPU type id 'NVIDIA A100 80GB PCIe' (hit 48093851053)
    "NVIDIA A800-SXM4-80GB": "a800-sxm-80gb",  # dexmal/dexbotic issue #41 (81920MiB)
    "NVIDIA A800 80GB PCIe": "a800-pcie-80gb",  # vllm-project/vllm issue #41519 (81920MiB @300W)
    "NVIDIA A10": "a10",  # 'NVIDIA A10 ... 150W | 0MiB / 23028MiB' (hit 31786522330)
    "NVIDIA A10G": "a10g",  # nvidia-smi query 'NVIDIA A10G, 23028 MiB, 595.91.07' (hit 71624822744)
    "NVIDIA A30": "a30",  # 'GPU: NVIDIA A30, 24576 MiB, 1215 MHz' (hit 887578529)
    "NVIDIA A40": "a40",  # nvidia-smi 'NVIDIA A40, 46068 MiB' (hit 67343171212)
    "NVIDIA L4": "l4",  # 'NVIDIA L4 ... 72W | 0MiB / 23034MiB' (hit 52405475144)
    "NVIDIA L20": "l20",  # nvidia-smi query '4, NVIDIA L20, GPU-..., 550.127.08, 46068' (hit 61549107579)
    "NVIDIA L40": "l40",  # 'NVIDIA L40, 46,068 MiB, compute capability 8.9, 300 W limit' (hit 70625482467)
    "NVIDIA L40S": "l40s",  # gpustack/gpustack issue #301 (46068MiB @350W)
    "Tesla T4": "t4",  # nvidia-smi query 'Tesla T4, 15360 MiB, 595.91.07' (hit 71624822744)
    # ---- NVIDIA workstation
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": "rtx-pro-6000-ws",  # MarcoPizeta/flash-next-rtxpro6000-bench HARDWARE.md
    "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition": "rtx-pro-6000-maxq",  # 'GPU 0 NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition mem=2/97887MiB'
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": "rtx-pro-6000-server",  # AWS g7e 'NVIDIA RTX PRO 6000 Blackwell Server Edition' (hit 57972070886)
    "NVIDIA RTX PRO 5000 Blackwell": "rtx-pro-5000",  # nvidia-smi 'NVIDIA RTX PRO 5000 Blackwell, 595.71.05, 48935 MiB' (61506984505)
    "NVIDIA RTX PRO 4500 Blackwell": "rtx-pro-4500",  # nvidia-smi query 'NVIDIA RTX PRO 4500 Blackwell, 12.0, 32623 MiB' (62534575066)
    "NVIDIA RTX PRO 4000 Blackwell": "rtx-pro-4000",  # 'GPU: NVIDIA RTX PRO 4000 Blackwell, 24,467 MiB VRAM' (hit 57390447362)
    "NVIDIA RTX 6000 Ada Generation": "rtx-6000-ada",  # 'one NVIDIA RTX 6000 Ada Generation, 49,140 MiB' (hit 55449404701)
    "NVIDIA RTX 5000 Ada Generation": "rtx-5000-ada",  # '2 x NVIDIA RTX 5000 Ada Generation, 32760 MiB' (hit 68519422180)
    "NVIDIA RTX 4000 Ada Generation": "rtx-4000-ada",  # nvidia-smi 'NVIDIA RTX 4000 Ada Generation' (hit 60512294958)
    "NVIDIA RTX A6000": "rtx-a6000",  # '8 x NVIDIA RTX A6000, 49,140 MiB each' (hit 57032706331)
    "NVIDIA RTX A5000": "rtx-a5000",  # '3 x NVIDIA RTX A5000, 24,564 MiB each' (hit 57463209181)
    "NVIDIA RTX A4000": "rtx-a4000",  # 'CUDA device 0, NVIDIA RTX A4000, 16376 MiB' (hit 57527529860)
    # ---- NVIDIA GeForce
    "NVIDIA GeForce RTX 5090": "rtx-5090",  # noonghunna/club-3090 issues #1107, #859 ('/ 575W | 29428MiB / 32607MiB')
    "NVIDIA GeForce RTX 5080": "rtx-5080",  # nvidia-smi '14134MiB / 16303MiB', '10W / 360W' (reference hardware.json 'RTX 5080')
    "NVIDIA GeForce RTX 5070 Ti": "rtx-5070-ti",  # nvidia-smi --query-gpu 'NVIDIA GeForce RTX 5070 Ti, GB203, ...' (68495898870)
    "NVIDIA GeForce RTX 4090": "rtx-4090",  # vllm-project/vllm issue #7553 ('23859MiB / 24564MiB')
    "NVIDIA GeForce RTX 4080 SUPER": "rtx-4080-super",  # 'NVIDIA GeForce RTX 4080 SUPER, 610.62, 16376 MiB' (68301274073)
    "NVIDIA GeForce RTX 4080": "rtx-4080",  # 'gpu: NVIDIA GeForce RTX 4080, 565.57.01, 16376 MiB' (hit 29481511031)
    "NVIDIA GeForce RTX 4070 Ti SUPER": "rtx-4070-ti-super",  # nvidia-smi --query-gpu=name,... (hit 61952127943)
    "NVIDIA GeForce RTX 3090 Ti": "rtx-3090-ti",  # 'NVIDIA GeForce RTX 3090 Ti, 550.163.01, 24564 MiB' (hit 54604722741)
    "NVIDIA GeForce RTX 3090": "rtx-3090",  # noonghunna/club-3090 issue #747
    # ---- AMD (rocm-smi --showproductname 'Card series', amd-smi MARKET_NAME, torch device name)
    "AMD Instinct MI300X": "mi300x",  # rocm-smi 'Card Series: AMD Instinct MI300X', model 0x74a1 (hit 60804802875)
    "AMD Instinct MI300X OAM": "mi300x",  # rocm-smi 'Card series: AMD Instinct MI300X OAM', SKU MI3SRIOV (hit 32864431932)
    "AMD Instinct MI300X VF": "mi300x",  # rocm-smi 'Card Series: AMD Instinct MI300X VF' (hit 58841677425)
    "AMD Instinct MI325X": "mi325x",  # rocm-smi 'Card series: AMD Instinct MI325X' parsed in a test (hit 57927559890)
    "AMD Instinct MI350X": "mi350x",  # HIP device name 'AMD Instinct MI350X' (hit 43760541213); rocm-smi test (57927559890)
    "AMD Instinct MI355X": "mi355x",  # gpu metadata 'AMD-Instinct-MI355X-288GB' / rocm-smi on MI355X hosts (hit 65900087870)
    "AMD Instinct MI308X": "mi308x",  # '8 x AMD Instinct MI308X (192 GB HBM per card)' (hit 55675637858)
    "AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2": "mi250x",  # rocm-smi product name, card model 0x7408 (hit 69016060398)
    "AMD Instinct MI210": "mi210",  # rocm-smi on card model 0x740f (hit 6898333140)
    "AMD Radeon RX 7900 XTX": "rx-7900-xtx",  # rocm-smi 'Card series: AMD Radeon RX 7900 XTX' parsed in a test (55770559185)
    # ---- Intel (xpu-smi / torch.xpu, hl-smi)
    "Intel(R) Data Center GPU Max 1550": "max-1550",  # torch.xpu get_device_properties (hit 2798370815)
    "Intel(R) Arc(TM) A770 Graphics": "arc-a770",  # torch.xpu 'total_memory=15473MB' (hit 13583294794)
    "Intel(R) Arc(tm) Pro B60 Graphics": "arc-pro-b60",  # Vulkan 'Intel(R) Arc(tm) Pro B60 Graphics (BMG G21)' (70249969171)
    "HL-225": "gaudi2",  # hl-smi '0MiB / 98304MiB' for HL-225 (hit 55027805172)
    "HL-325L": "gaudi3",  # hl-smi CSV 'HL-325L, ..., 131072 MiB' (hit 63540194583)
}


@pytest.mark.parametrize(("printed", "gpu_id"), sorted(PRINTED.items()), ids=sorted(PRINTED))
def test_printed_name_resolves_to_its_preset(printed, gpu_id):
    assert resolve_gpu(printed).id == gpu_id


def test_every_catalogued_gpu_has_a_printed_name_here():
    """The list covers the whole shipped catalog: a new preset needs its driver-printed name added above."""
    shipped = {e.preset.id for e in presets.gpu_entries() if e.origin == "shipped"}
    assert shipped - set(PRINTED.values()) == set()


def test_no_printed_name_is_claimed_by_two_presets():
    """A name (as resolve_gpu normalises it) that two shipped presets list would resolve to whichever loads first."""
    owners: dict[str, set[str]] = {}
    for e in presets.gpu_entries():
        if e.origin != "shipped":
            continue
        g = e.preset
        for n in {g.id, g.name, *g.aliases}:
            owners.setdefault(norm_name(n), set()).add(g.id)
    assert {k: v for k, v in owners.items() if len(v) > 1} == {}


def test_kvplan_gpus_lists_every_printed_name_with_its_device_total():
    """`kvplan gpus --search NAME` over every printed name above (so over the whole shipped catalog): the listing holds
    the preset the name resolves to, with the device total the planners use (the one rule) in ``device_total_bytes``."""
    import json

    from typer.testing import CliRunner

    from kvplan.cli.app import app
    from kvplan.inputs.presets.device import device_total

    runner, missing = CliRunner(), {}
    for printed, gpu_id in sorted(PRINTED.items()):
        out = runner.invoke(app, ["gpus", "--search", printed, "--format", "json"])
        assert out.exit_code == 0, (printed, out.output)
        rows = {r["id"]: r for r in json.loads(out.output)}
        if gpu_id not in rows:
            missing[printed] = sorted(rows)
            continue
        assert rows[gpu_id]["device_total_bytes"] == device_total(resolve_gpu(printed))[0], printed
    assert missing == {}
    assert len(PRINTED) >= 69
