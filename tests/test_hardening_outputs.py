"""Issue 26 item 5: outputs.

* every output file is written to a temporary file beside the target and renamed when complete
  (:func:`kvplan.inputs.read.atomic_output`): a failed write leaves the earlier file as it was (no 0-byte
  leftover), no temporary file stays, a symlink at the target is replaced and its target left alone;
* an output that cannot be written is exit 1 (README), one line naming the flag;
* ``sweep --plot /nonexistent/x.svg`` prints nothing on stdout (the plot is checked and saved first);
* 8 concurrent ``models add`` of one id: exactly one success, seven exit 2 "exists";
* ``kvplan fit >&-`` (stdout closed, the format chosen from the terminal): one line, exit 1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli import app as cli_app
from kvplan.errors import OutputError
from kvplan.inputs.read import atomic_output, check_output_path, write_output
from tests.cli_run import ROOT, run_kvplan

runner = CliRunner()


def run(*args: str):
    return runner.invoke(cli_app.app, list(args))


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_failed_write_leaves_the_earlier_file_and_no_temporary(tmp_path):
    target = tmp_path / "report.xml"
    target.write_text("earlier report\n")
    with pytest.raises(RuntimeError), atomic_output(target, field="--report") as fh:
        fh.write("half of a new rep")
        raise RuntimeError("the renderer failed")
    assert target.read_text() == "earlier report\n"
    assert _leftovers(tmp_path) == []
    write_output(target, "new report\n", field="--report")
    assert target.read_text() == "new report\n" and _leftovers(tmp_path) == []


def test_the_mode_of_an_existing_file_is_kept(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("x")
    target.chmod(0o640)
    write_output(target, "y", field="--output")
    assert (target.stat().st_mode & 0o777) == 0o640


def test_a_symlink_is_replaced_not_written_through(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link = tmp_path / "plot.svg"
    link.symlink_to(victim)
    write_output(link, "<svg/>", field="--plot")
    assert victim.read_text() == "precious\n"
    assert not link.is_symlink() and link.read_text() == "<svg/>"


def test_a_device_is_written_in_place():
    write_output("/dev/null", "discarded", field="--output")
    assert Path("/dev/null").exists() and not Path("/dev/null").is_file()


@pytest.mark.parametrize("bad", ["/nonexistent/x.svg", "{tmp}", "{tmp}/no/such/dir/x.csv"])
def test_an_unwritable_output_is_an_output_error(tmp_path, bad):
    path = bad.format(tmp=tmp_path)
    with pytest.raises(OutputError) as e:
        write_output(path, "x", field="--output")
    assert e.value.exit_code == 1 and "--output" in e.value.one_line()
    with pytest.raises(OutputError):
        check_output_path(path, field="--output")


def test_check_report_that_cannot_be_written_is_exit_1_and_keeps_nothing(tmp_path):
    plan = ROOT / "tests" / "data" / "shared"
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(
        'version = 1\n[defaults]\nmodel = "Qwen/Qwen3-8B"\ngpu = "h100-sxm"\nfree_memory = "80GiB"\n'
        'weight_memory = "16GiB"\nmem_fraction_static = 0.75\n[[deployment]]\nname = "a"\n'
        '[deployment.target]\ncontext = "32k"\nrequests = 1\n'
    )
    assert plan.exists()
    res = run("check", str(plan_file), "--format", "json", "--report", "/nonexistent/r.xml")
    assert res.exit_code == 1, res.output
    assert res.stdout == "" and res.stderr.startswith("kvplan: error: --report: cannot write /nonexistent/r.xml")
    report = tmp_path / "r.xml"
    report.write_text("earlier\n")
    res = run("check", str(plan_file), "--format", "json", "--report", str(report))
    assert res.exit_code == 0 and report.read_text().startswith("<?xml") and _leftovers(tmp_path) == []


@pytest.mark.parametrize("flag", ["--plot", "--output"])
def test_sweep_to_an_unwritable_file_prints_nothing(flag):
    args = ["sweep", "-m", "Qwen/Qwen3-8B", "--gpu", "h100", "--context-length", "4k,8k", "--format", "csv"]
    res = run(*args, flag, "/nonexistent/x.svg" if flag == "--plot" else "/nonexistent/x.csv")
    assert res.exit_code == 1, res.output
    assert res.stdout == "" and len(res.stderr.strip().splitlines()) == 1 and flag in res.stderr


def test_install_preset_claims_the_name_once(tmp_path):
    from kvplan.errors import InputError
    from kvplan.inputs.preset_writer import install_preset

    target = tmp_path / "me--x.toml"
    for i in range(3):
        tmp = tmp_path / f".t{i}.tmp"
        tmp.write_text(f"writer {i}\n")
        if i == 0:
            install_preset(tmp, target, force=False)
        else:
            with pytest.raises(InputError, match="exists"):
                install_preset(tmp, target, force=False)
    assert target.read_text() == "writer 0\n"
    tmp = tmp_path / ".f.tmp"
    tmp.write_text("forced\n")
    install_preset(tmp, target, force=True)
    assert target.read_text() == "forced\n"


def test_eight_concurrent_models_add_of_one_id_one_wins(tmp_path):
    cfg = ROOT / "tests" / "data" / "shared" / "hf-configs" / "Qwen--Qwen3-8B" / "config.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KVPLAN_PRESETS": str(tmp_path), "KVPLAN_NO_CACHE": "1"}
    cmd = [sys.executable, "-m", "kvplan", "models", "add", str(cfg), "--id", "me/race"]
    procs = [
        subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(8)
    ]
    done = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
    codes = sorted(c for c, _o, _e in done)
    assert codes == [0] + [2] * 7, done
    assert all("exists" in e for c, _o, e in done if c == 2)
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["me--race.toml"]


def test_fit_with_stdout_closed_is_one_line_exit_1():
    """``kvplan fit >&-`` without --format: the format is chosen from stdout, which is not there."""
    proc = run_kvplan(
        ["fit"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=lambda: os.close(1)
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == ["kvplan: error: cannot write the output (Bad file descriptor)"]
