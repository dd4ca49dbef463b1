#!/usr/bin/env bash
# Run the GPU tests (and, when asked, the benchmarks) ON the H200 machine, from the repo root.
#
# Why a script: that machine has no network, Python 3.12, torch 2.11 and triton 3.6.0; a newer Triton
# and the deps the image lacks come in a bundle (tools/device/build_bundle.py) that must be unpacked and
# put in front of the image's packages, and the device tool takes one command of <= 2000 characters.
#
# usage: bash tools/device/run_gpu_tests.sh [options] [-- pytest args]
#   --bundle PATH      a .tar.xz from build_bundle.py (triton-X.Y.Z or stock); none: the image's Triton
#   --src live|bundle  repo packages from the checkout's sources (default; dist-info written by
#                      devinstall.py) or from the bundle's wheels (tests exactly what was built)
#   --bench            also run the benchmarks: $BENCH_CMD, default "python tools/bench/run.py"
#   --no-tests         skip pytest (with --bench: benchmarks only)
#   --plugin-path P    add a native plugin .so to TRITON_PLUGIN_PATHS (repeatable)
#   --python PY        interpreter (default: $PYTHON or python3)
# env: OUT (logs are written there when set: versions.txt, gpu-tests.log, gpu-tests.xml, bench.log),
#      TRITONX_DEVICE_WORK (scratch, default /tmp/tritonx-device), BENCH_CMD.
#      Exported for the tests: TRITONX_EXTRA_WHEELS (the bundle's extra/ folder), UTLX_META_WHEEL_DIR (when
#      it holds Meta's triton-utlx wheel).
# exit: pytest's status, else the benchmarks'; 3 when the environment is not the one asked for.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 3
PY=${PYTHON:-python3}
WORK=${TRITONX_DEVICE_WORK:-/tmp/tritonx-device}
BUNDLE="" SRC=live BENCH=0 TESTS=1
PLUGIN_PATHS=() PYTEST_ARGS=()

die() { echo "run_gpu_tests: error: $*" >&2; exit 3; }
say() { echo "[run_gpu_tests] $*"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) BUNDLE=${2:?--bundle needs a path}; shift 2 ;;
    --src) SRC=${2:?--src needs live or bundle}; shift 2 ;;
    --bench) BENCH=1; shift ;;
    --no-tests) TESTS=0; shift ;;
    --plugin-path) PLUGIN_PATHS+=("${2:?--plugin-path needs a path}"); shift 2 ;;
    --python) PY=${2:?--python needs an interpreter}; shift 2 ;;
    --) shift; PYTEST_ARGS=("$@"); break ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
case "$SRC" in live|bundle) ;; *) die "--src must be live or bundle, not '$SRC'" ;; esac
command -v "$PY" >/dev/null 2>&1 || die "python '$PY' not found"

case "$(cd "$WORK" 2>/dev/null && pwd || echo "$WORK")" in
  /|"$ROOT"|"$HOME"|/tmp) die "TRITONX_DEVICE_WORK='$WORK' would be wiped: give a scratch folder" ;;
esac
LOGDIR=${OUT:-$WORK/out}
rm -rf "$WORK" && mkdir -p "$WORK/site" "$LOGDIR" || die "cannot create $WORK"

# 1. Unpack the bundle.
TRITON_SITE="" TOP=""
if [ -n "$BUNDLE" ]; then
  [ -f "$BUNDLE" ] || die "bundle '$BUNDLE' not found (did carry name it?)"
  start=$(date +%s)
  tar -xJf "$BUNDLE" -C "$WORK" || die "cannot unpack $BUNDLE"
  TOP=$(dirname "$(ls "$WORK"/*/MANIFEST.json 2>/dev/null | head -n1)")
  [ -f "$TOP/MANIFEST.json" ] || die "$BUNDLE has no <name>/MANIFEST.json: not made by build_bundle.py"
  [ -d "$TOP/site/triton" ] && TRITON_SITE="$TOP/site"
  say "unpacked $(basename "$TOP") in $(( $(date +%s) - start )) s"
fi

# 2. Install the bundle's wheels into a plain folder (no network: --no-index --no-deps).
if [ -n "$TOP" ] && compgen -G "$TOP/wheels/*.whl" >/dev/null; then
  mapfile -t WHEELS < <("$PY" - "$TOP" "$SRC" <<'PYEOF'
import json, pathlib, sys
top, src = pathlib.Path(sys.argv[1]), sys.argv[2]
repo = set(json.loads((top / "MANIFEST.json").read_text()).get("repo_wheels", []))
for w in sorted((top / "wheels").glob("*.whl")):
    if src == "bundle" or w.name not in repo:
        print(w)
PYEOF
)
  if [ ${#WHEELS[@]} -gt 0 ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --disable-pip-version-check \
      --target "$WORK/site" "${WHEELS[@]}" || die "pip install of the bundle's wheels failed"
    say "installed ${#WHEELS[@]} wheels into $WORK/site"
  fi
fi

# 2b. Comparison builds (--extra-wheel) are carried, never installed: named for the tests that use them.
if [ -n "$TOP" ] && compgen -G "$TOP/extra/*.whl" >/dev/null; then
  export TRITONX_EXTRA_WHEELS="$TOP/extra"
  if compgen -G "$TOP/extra/triton_utlx-*.whl" >/dev/null; then
    export UTLX_META_WHEEL_DIR=${UTLX_META_WHEEL_DIR:-$TOP/extra}
  fi
  say "carried, not installed: $(cd "$TOP/extra" && ls -- *.whl | paste -sd' ' -) (TRITONX_EXTRA_WHEELS=$TOP/extra)"
fi

# 3. The repo packages: live sources + a dist-info (entry points), unless --src bundle.
SRC_PATH=""
if [ "$SRC" = live ]; then
  roots=$("$PY" tools/device/devinstall.py --target "$WORK/devinfo" packages/core packages/utlx) \
    || die "devinstall.py failed"
  SRC_PATH="$(echo "$roots" | paste -sd: -):$WORK/devinfo"
fi

# 4. PYTHONPATH: carried Triton first, then the repo, then the installed wheels, then what was there.
NEWPATH=""
for p in "$TRITON_SITE" "$SRC_PATH" "$WORK/site" "${PYTHONPATH:-}"; do
  [ -n "$p" ] && NEWPATH="${NEWPATH:+$NEWPATH:}$p"
done
# .pth files do not run from PYTHONPATH; boot/sitecustomize.py runs them (e.g. triton-utlx's plugin setup).
PTH_DIRS=""
for d in "$WORK/devinfo" "$WORK/site" "$TRITON_SITE"; do
  [ -n "$d" ] && compgen -G "$d/*.pth" >/dev/null && PTH_DIRS="${PTH_DIRS:+$PTH_DIRS:}$d"
done
if [ -n "$PTH_DIRS" ]; then
  export TRITONX_PTH_DIRS="$PTH_DIRS"
  NEWPATH="$ROOT/tools/device/boot:$NEWPATH"
  say ".pth files will run from: $PTH_DIRS"
fi
export PYTHONPATH="$NEWPATH"
# A plugin libtriton cannot load aborts the process (LLVM ERROR): check them before Triton sees them.
for p in ${PLUGIN_PATHS[@]+"${PLUGIN_PATHS[@]}"}; do
  [ -f "$p" ] || die "--plugin-path '$p' is not a file"
done
if [ ${#PLUGIN_PATHS[@]} -gt 0 ]; then
  joined=$(IFS=:; echo "${PLUGIN_PATHS[*]}")
  export TRITON_PLUGIN_PATHS="${TRITON_PLUGIN_PATHS:+$TRITON_PLUGIN_PATHS:}$joined"
fi
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-$WORK/triton-cache}
export PYTHONUNBUFFERED=1

# 5. Say what runs (and refuse to go on with the wrong Triton).
"$PY" - "$TRITON_SITE" <<'PYEOF' 2>&1 | tee "$LOGDIR/versions.txt"
import importlib.metadata as md, os, platform, shutil, subprocess, sys
want_site = sys.argv[1]
print(f"python  {platform.python_version()} ({sys.executable})")
try:
    import torch
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none (torch sees no CUDA device)"
    print(f"torch   {torch.__version__} (cuda {torch.version.cuda})")
    print(f"gpu     {gpu}")
except Exception as e:  # the tests that need torch will say so themselves
    print(f"torch   not importable: {e}")
import triton
print(f"triton  {triton.__version__} ({os.path.dirname(triton.__file__)})")
for dist in ("tritonx-core", "utlx", "triton-utlx"):
    try:
        print(f"{dist:<13} {md.version(dist)}")
    except md.PackageNotFoundError:
        pass
print(f"TRITON_PLUGIN_PATHS={os.environ.get('TRITON_PLUGIN_PATHS', '')}")
if shutil.which("nvidia-smi"):
    q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                       capture_output=True, text=True)
    print(f"nvidia-smi  {q.stdout.strip() or q.stderr.strip()}")
if want_site and not os.path.realpath(triton.__file__).startswith(os.path.realpath(want_site)):
    print(f"ERROR: triton was imported from {triton.__file__}, not from the bundle at {want_site}")
    sys.exit(3)
PYEOF
[ "${PIPESTATUS[0]}" -eq 0 ] || die "environment check failed (see above)"

# 6. Tests and benchmarks.
rc_tests=0 rc_bench=0
if [ "$TESTS" = 1 ]; then
  say "pytest -m gpu"
  "$PY" -m pytest -m gpu -p no:cacheprovider -q --rootdir "$ROOT" -c "$ROOT/pyproject.toml" \
    --junitxml "$LOGDIR/gpu-tests.xml" "${PYTEST_ARGS[@]}" 2>&1 | tee "$LOGDIR/gpu-tests.log"
  rc_tests=${PIPESTATUS[0]}
fi
if [ "$BENCH" = 1 ]; then
  BENCH_CMD=${BENCH_CMD:-"$PY tools/bench/run.py"}
  if [ -z "${BENCH_CMD##*tools/bench/run.py*}" ] && [ ! -f tools/bench/run.py ]; then
    say "no tools/bench/run.py in this checkout: set BENCH_CMD to the benchmark command"
    rc_bench=3
  else
    say "benchmarks: $BENCH_CMD"
    TRITONX_BENCH_OUT="$LOGDIR" bash -c "$BENCH_CMD" 2>&1 | tee "$LOGDIR/bench.log"
    rc_bench=${PIPESTATUS[0]}
  fi
fi
say "done: tests rc=$rc_tests bench rc=$rc_bench (logs in $LOGDIR)"
[ "$rc_tests" -ne 0 ] && exit "$rc_tests"
exit "$rc_bench"
