"""tools/device/issue31_gpu.sh without a GPU: syntax, usage errors, the dry-run plan, the step runner's budget.

Why: each GPU session has a few device calls of under 10 minutes for issue 31; a typo or a step that overruns
its call costs one of them. Here the script is run for real with ``--python echo`` (each benchmark step prints
its command instead of running it) and with budgets too small to start anything.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools/device/issue31_gpu.sh"
pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None,
                                reason="needs bash and timeout")


def sh(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def test_syntax_and_help():
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0
    out = sh("--help")
    assert out.returncode == 0 and "--part 1|2|3|4" in out.stdout and "--dry-run" in out.stdout


@pytest.mark.parametrize(("args", "message"), [
    ((), "give --part 1, 2, 3 or 4"), (("--part", "5"), "--part must be 1, 2, 3 or 4, not '5'"),
    (("--part", "1", "--budget-s", "ten"), "--budget-s must be whole seconds, not 'ten'"),
    (("--bogus",), "unknown option '--bogus'"), (("--steps", "check"), "--steps needs --deadline")])
def test_bad_usage_is_one_line_and_status_3(args, message):
    out = sh(*args)
    assert out.returncode == 3 and message in out.stderr


def test_dry_run_part_1_is_the_suite_alone_on_3_8():
    out = sh("--dry-run", "--part", "1")
    assert out.returncode == 0, out.stderr
    (suite,) = (line for line in out.stdout.splitlines() if "run_gpu_tests.sh" in line)
    assert "--bundle .bundle/triton-3.8.0.tar.xz -- -n 4 -vv -rfE --tb=short packages/core/tests " \
           "packages/utlx/tests/gpu" in suite
    assert "packages/utlx/tests/tutorials tools/tests --ignore-glob=*/test_inductor_*" in suite
    assert re.findall(r"^\(timeout (\d+) s\)", out.stdout, re.M) == ["560"]  # under the 600 s of a device command


def test_dry_run_part_2_is_the_inductor_tests_then_the_check_on_the_image_triton():
    out = sh("--dry-run", "--part", "2")
    assert out.returncode == 0, out.stderr
    (inductor,) = (line for line in out.stdout.splitlines() if "run_gpu_tests.sh" in line)
    assert "--bundle .bundle/stock.tar.xz --bench -- -n 2 -vv" in inductor
    assert "packages/utlx/tests/gpu/test_inductor_flex.py" in inductor
    assert "packages/utlx/tests/gpu/test_inductor_identity_gpu.py" in inductor
    assert "step check (timeout 150 s): python3 tools/bench/bench_inductor.py --check --mode force" in out.stdout


def test_dry_run_parts_3_and_4_list_every_benchmark_and_at_most_8_files_2_deep():
    text = sh("--dry-run", "--part", "3").stdout + sh("--dry-run", "--part", "4").stdout
    assert text.count("--bundle .bundle/stock.tar.xz --no-tests --bench") == 2
    assert "step bench (timeout 460 s): python3 tools/bench/bench_inductor.py --bench --mode force --iters 10" in text
    assert re.search(r"step block \(timeout 400 s\): TORCHINDUCTOR_COMPILE_THREADS=8 python3 "
                     r"tools/bench/bench_inductor.py --block --block-mode allow .*--json \$OUT/bench/block.json", text)
    fused, mm = (line for line in text.splitlines() if "step gemm" in line)
    assert "step gemm-fused (timeout 130 s)" in fused and "step gemm-mm (timeout 200 s)" in mm
    if (ROOT / "tools/bench/bench_inductor_gemm.py").exists():
        assert fused.endswith("tools/bench/bench_inductor_gemm.py --mode allow --dtype bf16 --iters 10 --only linear "
                              "SwiGLU")
        assert mm.endswith("--only mm")
    else:
        assert "SKIPPED (its script is not in this checkout)" in fused and "SKIPPED" in mm
    for part in ("1", "2", "3", "4"):
        files = sh("--dry-run", "--part", part).stdout.split("files back under $OUT (")[1]
        count, listed = int(files.split(" ")[0]), files.split("): ")[1].split()
        assert count == len(listed) <= 8 and all(f.count("/") <= 2 for f in listed)


def test_step_runner_runs_steps_under_the_deadline_and_logs_them(tmp_path):
    log = tmp_path / "plan.log"
    deadline = str(int(time.time()) + 300)
    out = sh("--steps", "check,bench", "--deadline", deadline, "--python", "echo", env={"PLAN_LOG": str(log)})
    assert out.returncode == 0, out.stderr
    assert "tools/bench/bench_inductor.py --check --mode force" in out.stdout  # echoed: the step ran
    assert "tools/bench/bench_inductor.py --bench --mode force --iters 10" in out.stdout
    lines = log.read_text().splitlines()
    assert re.fullmatch(r"step check \(timeout 150 s\): echo tools/bench/bench_inductor.py --check --mode force",
                        lines[0])
    assert lines[1].startswith("step check: rc=0 in ") and lines[3].startswith("step bench: rc=0 in ")


def test_step_runner_skips_what_the_budget_cannot_hold(tmp_path):
    log = tmp_path / "plan.log"
    out = sh("--steps", "check,block", "--deadline", str(int(time.time()) + 20), "--python", "echo",
             env={"PLAN_LOG": str(log)})
    assert out.returncode == 0
    assert "bench_inductor" not in out.stdout.replace("[issue31]", "")  # nothing was run
    assert re.search(r"step check: SKIPPED \(budget: \d+ s left, under 30 s\)", log.read_text())


def test_a_failing_step_is_the_exit_status_and_the_next_still_runs(tmp_path):
    out = sh("--steps", "check,bench", "--deadline", str(int(time.time()) + 300), "--python", "false",
             env={"PLAN_LOG": str(tmp_path / "plan.log")})
    assert out.returncode == 1
    assert "step check: rc=1" in out.stdout and "step bench: rc=1" in out.stdout


def test_a_part_with_no_time_left_skips_its_calls_and_says_so(tmp_path):
    fake = tmp_path / "b.tar.xz"
    fake.write_bytes(b"")
    for part, folder in (("1", "suite"), ("2", "inductor")):
        out = sh("--part", part, "--budget-s", "20", env={"OUT": str(tmp_path / part), "BUNDLE_38": str(fake),
                                                           "BUNDLE_STOCK": str(fake)})
        assert out.returncode == 0, out.stderr
        plan = (tmp_path / part / "plan.log").read_text()
        assert f"{folder}: SKIPPED (budget:" in plan and f"part {part} done in" in plan


def test_a_missing_bundle_is_named(tmp_path):
    out = sh("--part", "3", env={"OUT": str(tmp_path), "BUNDLE_STOCK": str(tmp_path / "nope.tar.xz")})
    assert out.returncode == 3 and "nope.tar.xz' not found (did carry name it?" in out.stderr
