"""Files the native-plugin tests feed to the checks, made at test time.

Real plugins come from Triton wheels (every wheel >= 3.7 ships ``triton/plugins/``); tiny C libraries
are built with the system C compiler (tests skip without one). The C struct below is written from the
layout in :mod:`tritonx.compat.native`, nothing more.
"""

from __future__ import annotations

import glob
import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tritonx.compat.version import parse_version
from tritonx.native.installation import find_triton

TEST_PLUGIN = "libTritonPluginsTestLib.so"
DIALECT_PLUGIN = "libMLIRDialectPlugin.so"

INFO_STRUCT_C = r"""
#include <stddef.h>
#include <stdint.h>
typedef struct { const char *name; const char *version; void *add_pass; void *register_pass; } pass_info;
typedef struct { const char *name; const char *version; void *register_dialect; } dialect_info;
typedef struct { const char *name; void *add_op; } op_info;
typedef struct {
  uint32_t api_version; const char *plugin_name; const char *plugin_version;
  pass_info *passes; size_t passes_count; dialect_info *dialects; size_t dialects_count;
  op_info *ops; size_t ops_count; const char *triton_version;
} plugin_info;
static pass_info passes[] = {{"tritonx_probe_pass", "1.2.3", 0, 0}, {"second_pass", "0.1", 0, 0}};
static op_info ops[] = {{"tritonx_probe_op", 0}};
static plugin_info info = {API_VERSION, "tritonx-probe", "4.5.6", passes, 2, 0, 0, ops, 1, TRITON_VERSION_STR};
__attribute__((visibility("default"))) plugin_info *tritonGetPluginInfo(void) { return RETURNED; }
"""

NO_ENTRY_C = "int tritonx_not_a_plugin(void) { return 42; }\n"

ABORT_IN_CONSTRUCTOR_C = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void tritonx_boom(void) {
  fputs("tritonx test plugin: static initializer aborts on purpose\n", stderr);
  abort();
}
__attribute__((visibility("default"))) void *tritonGetPluginInfo(void) { return 0; }
"""

UNDEFINED_SYMBOL_C = r"""
extern void tritonx_symbol_nobody_defines(void);
__attribute__((visibility("default"))) void *tritonGetPluginInfo(void) {
  tritonx_symbol_nobody_defines();
  return 0;
}
"""

DEPENDENCY_C = "int tritonx_dep_value(void) { return 7; }\n"
NEEDS_DEPENDENCY_C = r"""
extern int tritonx_dep_value(void);
__attribute__((visibility("default"))) void *tritonGetPluginInfo(void) { return (void *)(long)tritonx_dep_value(); }
"""


SRC = Path(__file__).resolve().parents[2] / "src"
PTH = SRC / "tritonx" / "native" / "tritonx-native.pth"
HERE = Path(__file__).resolve().parent


def pth_site(tmp_path: Path, pythonpath: str | None = None, **env_extra: str) -> tuple[Path, dict[str, str]]:
    """A ``site`` folder holding a copy of the shipped ``.pth`` line, and the environment for a child interpreter
    that processes it: no native-plugin variables inherited, ``PYTHONPATH`` this checkout's ``src`` and this
    folder (or ``pythonpath``), then ``env_extra``. One setup for every test that starts a child this way."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    shutil.copy(PTH, site / PTH.name)
    env = dict(os.environ)
    for name in ("TRITON_PLUGIN_PATHS", "TRITONX_NATIVE_PLUGINS", "_TRITONX_NATIVE_STATE"):
        env.pop(name, None)
    env["PYTHONPATH"] = pythonpath if pythonpath is not None else os.pathsep.join([str(SRC), str(HERE)])
    env.update(env_extra)
    return site, env


def run_child(tmp_path: Path, code: str, **env_extra: str) -> subprocess.CompletedProcess:
    inherited = os.environ.get("PYTHONPATH", "")
    site, env = pth_site(tmp_path, os.pathsep.join([str(SRC), str(HERE), inherited]).rstrip(os.pathsep),
                         TRITON_CACHE_DIR=str(tmp_path / "cache"), **env_extra)
    prologue = f"import site; site.addsitedir({str(site)!r})\n"
    return subprocess.run(
        [sys.executable, "-c", prologue + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )


def last_json(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def installed_triton():
    triton = find_triton()
    if triton is None:
        pytest.skip("Triton is not installed")
    return triton


def installed_supports_natives() -> bool:
    return parse_version(installed_triton().version)[:2] >= (3, 7)


def _natives_or_false() -> bool:
    try:
        return installed_supports_natives()
    except pytest.skip.Exception:  # no Triton at all
        return False


#: Marks a test that needs a Triton with native plugins (3.7 and later).
needs_natives = pytest.mark.skipif(not _natives_or_false(), reason="this Triton has no native plugins")


def installed_plugin(name: str = TEST_PLUGIN) -> Path:
    path = Path(installed_triton().bundled_plugins) / name
    if not path.is_file():
        pytest.skip(f"the installed Triton {installed_triton().version} ships no {name} (no native plugins before 3.7)")
    return path


def bundled_plugins_of_other_versions(name: str = TEST_PLUGIN) -> dict[str, Path]:
    """Triton version -> that wheel's bundled plugin, from sibling virtualenvs of this interpreter."""
    here = installed_triton()
    found: dict[str, Path] = {}
    roots = {Path(sys.prefix).parent, Path(sys.prefix).resolve().parent}
    for root in roots:
        pattern = str(root / "*" / "lib" / "python*" / "site-packages" / "triton" / "plugins" / name)
        for plugin in sorted(glob.glob(pattern)):
            init = Path(plugin).parent.parent / "__init__.py"
            text = init.read_text(encoding="utf-8") if init.is_file() else ""
            lines = [ln for ln in text.splitlines() if ln.startswith("__version__")]
            version = lines[0].split("=", 1)[1].strip().strip("'\"") if lines else None
            if version and version.split("+")[0] != here.version.split("+")[0]:
                found.setdefault(version, Path(plugin))
    return found


def any_real_plugin() -> Path:
    """A real plugin of any Triton version (the installed one first)."""
    own = Path(installed_triton().bundled_plugins) / TEST_PLUGIN
    if own.is_file():
        return own
    others = bundled_plugins_of_other_versions()
    if not others:
        pytest.skip("no Triton wheel with bundled plugins (>= 3.7) is installed anywhere near this interpreter")
    return next(iter(others.values()))


def compiler() -> str:
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler to build the test library")
    return cc


def build_library(directory: Path, name: str, source: str, *flags: str) -> Path:
    """Compile ``source`` into ``directory/name`` as a shared library (skip without a compiler)."""
    src = directory / (name + ".c")
    src.write_text(source)
    out = directory / name
    done = subprocess.run(
        [compiler(), "-shared", "-fPIC", "-O0", "-o", str(out), str(src), *flags],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"could not build the test library {name}: {done.stderr.strip()[-300:]}")
    return out


def build_info_plugin(
    directory: Path, name: str, *, api_version: int = 2, triton_version: str | None = None, returned: str = "&info"
) -> Path:
    version = installed_triton().version if triton_version is None else triton_version
    return build_library(
        directory,
        name,
        INFO_STRUCT_C,
        f"-DAPI_VERSION={api_version}",
        f'-DTRITON_VERSION_STR="{version}"',
        f"-DRETURNED={returned}",
    )


def random_bytes_file(directory: Path) -> Path:
    path = directory / "random.so"
    path.write_bytes(random.Random(1234).randbytes(4096))
    return path


def truncated_copy(directory: Path) -> Path:
    real = any_real_plugin()
    data = real.read_bytes()
    path = directory / "truncated.so"
    path.write_bytes(data[: len(data) // 3])
    return path


def other_machine_copy(directory: Path) -> Path:
    """A real plugin whose ELF header claims another architecture (e_machine patched)."""
    real = any_real_plugin()
    data = bytearray(real.read_bytes())
    machine = int.from_bytes(data[18:20], "little")
    other = 183 if machine != 183 else 62  # EM_AARCH64, or EM_X86_64 on an aarch64 host
    data[18:20] = other.to_bytes(2, "little")
    path = directory / "other_machine.so"
    path.write_bytes(bytes(data))
    return path
