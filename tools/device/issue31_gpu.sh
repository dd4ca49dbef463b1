#!/usr/bin/env bash
# Issue 31's GPU session in device calls of under 10 minutes each, every result under $OUT.
#
# usage: bash tools/device/issue31_gpu.sh --part 1|2|3|4 [--budget-s S] [--dry-run] [--python PY]
#   --part 1    carry [".bundle/triton-3.8.0.tar.xz"] (built with --extra-wheel triton-utlx==3.8.0.post16, for
#               Meta's Hopper tutorial tests): pytest -m gpu -n 4 over the whole suite but the torch.compile tests,
#               alone on the GPU (2026-12-04: -n 3 reached ~96% in 400 s; -n 4 beside another pytest ~97% in 490 s);
#               -vv, so that a run cut by its cap still names every test that finished
#   --part 2    carry [".bundle/stock.tar.xz"]; on the image's Triton 3.6 (torch 2.11 is built against it:
#               torch.compile must not meet the 3.8 bundle): the torch.compile GPU tests (tests/gpu/test_inductor_*.py,
#               -n 2: 270 s on 2026-12-04), then bench_inductor.py --check (150 s)
#   --part 3    carry [".bundle/stock.tar.xz"]; image Triton: bench_inductor.py --bench (fp16 and bf16; 19 of 24 cells
#               took 260 s on 2026-12-04), then bench_inductor_gemm.py --only linear SwiGLU (70 s before
#               the bias-free linear was added)
#   --part 4    carry [".bundle/stock.tar.xz"]; image Triton: bench_inductor.py --block (stock max-autotune of the
#               first mask alone ran past 150 s on 2026-12-04), then bench_inductor_gemm.py --only mm (3 of 8 shapes
#               took 69 s)
#   --budget-s S  wall-clock limit of the whole part (default 570): each step runs under
#               timeout min(its cap, what is left); a step with under 30 s left is skipped and says so
#   --dry-run   print the commands, their caps and the files that come back; run nothing
#   --python PY interpreter (default: $PYTHON or python3)
# env: OUT (required unless --dry-run), BUNDLE_38, BUNDLE_STOCK (default .bundle/triton-3.8.0.tar.xz and
#      .bundle/stock.tar.xz). Internal: --steps LIST --deadline EPOCH runs benchmark steps inside
#      run_gpu_tests.sh's environment (its BENCH_CMD).
# exit: 0 when every step that ran passed; else the first failing step's status; 3 on bad usage.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 3
SELF="tools/device/issue31_gpu.sh"
PY=${PYTHON:-python3}
PART="" BUDGET=570 DRY=0 STEPS="" DEADLINE=""
BUNDLE_38=${BUNDLE_38:-.bundle/triton-3.8.0.tar.xz}
BUNDLE_STOCK=${BUNDLE_STOCK:-.bundle/stock.tar.xz}

die() { echo "issue31_gpu: error: $*" >&2; exit 3; }
say() { echo "[issue31] $*"; [ -n "${PLAN_LOG:-}" ] && echo "$*" >>"$PLAN_LOG"; return 0; }

while [ $# -gt 0 ]; do
  case "$1" in
    --part) PART=${2:?--part needs 1 or 2}; shift 2 ;;
    --budget-s) BUDGET=${2:?--budget-s needs seconds}; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    --python) PY=${2:?--python needs an interpreter}; shift 2 ;;
    --steps) STEPS=${2:?--steps needs a list}; shift 2 ;;
    --deadline) DEADLINE=${2:?--deadline needs an epoch}; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
case "$BUDGET" in ''|*[!0-9]*) die "--budget-s must be whole seconds, not '$BUDGET'" ;; esac

# Step caps (s) and the commands. Estimates behind the caps: docs/gpu.md, "Issue 31's GPU session".
cap_of() {
  case "$1" in
    suite) echo 560 ;; inductor) echo 560 ;;
    check) echo 150 ;; bench) echo 460 ;; block) echo 400 ;; gemm-fused) echo 130 ;; gemm-mm) echo 200 ;;
    *) die "unknown step '$1'" ;;
  esac
}
step_cmd() {  # the command of a benchmark step (run inside run_gpu_tests.sh's environment)
  local out=${TRITONX_BENCH_OUT:-.}
  case "$1" in
    check) echo "$PY tools/bench/bench_inductor.py --check --mode force" ;;
    bench) echo "$PY tools/bench/bench_inductor.py --bench --mode force --iters 10" ;;
    # max-autotune tunes every GEMM of the block: let Inductor compile the candidates in 8 workers
    block) echo "TORCHINDUCTOR_COMPILE_THREADS=8 $PY tools/bench/bench_inductor.py --block --block-mode allow" \
                "--iters 10 --block-budget-s $(( $(cap_of block) - 90 )) --json $out/block.json" ;;
    # the linear workloads first (issue 31: faster there; the bias-free linear tells the bias epilogue's cost),
    # then the 8 plain GEMM shapes
    gemm-fused|gemm-mm)
      local only="linear SwiGLU"
      [ "$1" = gemm-mm ] && only="mm"
      if [ -f tools/bench/bench_inductor_gemm.py ]; then
        echo "$PY tools/bench/bench_inductor_gemm.py --mode allow --dtype bf16 --iters 10 --only $only"
      else
        echo ""
      fi ;;
    *) die "unknown step '$1'" ;;
  esac
}

# Internal: run benchmark steps one after the other, each under min(cap, time to the deadline).
if [ -n "$STEPS" ]; then
  [ -n "$DEADLINE" ] || die "--steps needs --deadline"
  rc_all=0
  for step in ${STEPS//,/ }; do
    cmd=$(step_cmd "$step")
    left=$(( DEADLINE - $(date +%s) - 5 ))
    cap=$(cap_of "$step")
    t=$(( cap < left ? cap : left ))
    if [ -z "$cmd" ]; then
      say "step $step: SKIPPED (its script is not in this checkout)"; continue
    fi
    if [ "$t" -lt 30 ]; then
      say "step $step: SKIPPED (budget: ${left} s left, under 30 s)"; continue
    fi
    say "step $step (timeout ${t} s): $cmd"
    start=$(date +%s)
    timeout -k 10 "$t" bash -c "$cmd"
    rc=$?
    say "step $step: rc=$rc in $(( $(date +%s) - start )) s$([ "$rc" = 124 ] && echo ' (cut by its timeout)')"
    [ "$rc" -ne 0 ] && [ "$rc_all" -eq 0 ] && rc_all=$rc
  done
  exit "$rc_all"
fi

case "$PART" in 1|2|3|4) ;; "") die "give --part 1, 2, 3 or 4 (see --help)" ;;
  *) die "--part must be 1, 2, 3 or 4, not '$PART'" ;; esac

# One top-level command: run_gpu_tests.sh under timeout min(cap, left), its logs in $OUT/<folder>.
START=$(date +%s)
DEADLINE=$(( START + BUDGET ))
RC=0
top() {  # top FOLDER CAP BENCH_CMD ARGS...
  local folder=$1 cap=$2 bench=$3; shift 3
  local left=$(( DEADLINE - $(date +%s) - 5 ))
  local t=$(( cap < left ? cap : left ))
  if [ "$DRY" = 1 ]; then
    echo "(timeout ${cap} s) OUT=\$OUT/$folder${bench:+ BENCH_CMD=\"$bench\"} bash tools/device/run_gpu_tests.sh $*"
    return 0
  fi
  if [ "$t" -lt 30 ]; then
    say "$folder: SKIPPED (budget: ${left} s left)"; return 0
  fi
  mkdir -p "$OUT/$folder"
  say "$folder (timeout ${t} s): run_gpu_tests.sh $*"
  local start rc
  start=$(date +%s)
  OUT="$OUT/$folder" BENCH_CMD="$bench" timeout -k 10 "$t" bash tools/device/run_gpu_tests.sh --python "$PY" "$@"
  rc=$?
  say "$folder: rc=$rc in $(( $(date +%s) - start )) s$([ "$rc" = 124 ] && echo ' (cut by its timeout)')"
  [ "$rc" -ne 0 ] && [ "$RC" -eq 0 ] && RC=$rc
  return 0
}

if [ "$DRY" = 0 ]; then
  [ -n "${OUT:-}" ] || die "OUT is not set (the device tool sets it; for a try here: OUT=/tmp/out)"
  mkdir -p "$OUT" || die "cannot create $OUT"
  export PLAN_LOG="$OUT/plan.log"  # the steps run by run_gpu_tests.sh append to it too
  : >"$PLAN_LOG"
  for b in $([ "$PART" = 1 ] && echo "$BUNDLE_38" || echo "$BUNDLE_STOCK"); do
    [ -f "$b" ] || die "bundle '$b' not found (did carry name it? see docs/gpu.md)"
  done
  say "part $PART, budget ${BUDGET} s, started $(date -u +%H:%M:%S) UTC, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
fi

# top FOLDER CAP BENCH_STEPS ARGS...: the benchmark steps run after the tests, in the same environment
top_steps() {
  local folder=$1 cap=$2 steps=$3; shift 3
  local deadline=$DEADLINE
  [ "$DRY" = 1 ] && deadline="<start+$BUDGET>"
  top "$folder" "$cap" "${steps:+bash $SELF --steps $steps --deadline $deadline --python $PY}" "$@"
  if [ "$DRY" = 1 ] && [ -n "$steps" ]; then
    for s in ${steps//,/ }; do
      cmd=$(TRITONX_BENCH_OUT="\$OUT/$folder" step_cmd "$s")
      echo "  step $s (timeout $(cap_of "$s") s): ${cmd:-SKIPPED (its script is not in this checkout)}"
    done
  fi
}

case "$PART" in
  1) top_steps suite "$(cap_of suite)" "" --bundle "$BUNDLE_38" -- -n 4 -vv -rfE --tb=short \
       packages/core/tests packages/utlx/tests/gpu packages/utlx/tests/compile packages/utlx/tests/tutorials tools/tests \
       "--ignore-glob=*/test_inductor_*"
     FILES="plan.log suite/versions.txt suite/gpu-tests.log suite/gpu-tests.xml" ;;
  2) top_steps inductor "$(cap_of inductor)" check --bundle "$BUNDLE_STOCK" --bench -- -n 2 -vv -rfE --tb=short \
       packages/utlx/tests/gpu/test_inductor_*.py
     FILES="plan.log inductor/versions.txt inductor/gpu-tests.log inductor/gpu-tests.xml inductor/bench.log" ;;
  3) top_steps bench "$BUDGET" bench,gemm-fused --bundle "$BUNDLE_STOCK" --no-tests --bench
     FILES="plan.log bench/versions.txt bench/bench.log" ;;
  4) top_steps bench "$BUDGET" block,gemm-mm --bundle "$BUNDLE_STOCK" --no-tests --bench
     FILES="plan.log bench/versions.txt bench/bench.log bench/block.json" ;;
esac

if [ "$DRY" = 1 ]; then
  echo "files back under \$OUT ($(echo $FILES | wc -w) of at most 8): $(echo $FILES)"
  exit 0
fi
say "part $PART done in $(( $(date +%s) - START )) s, rc=$RC"
exit "$RC"
