"""Decide whether a native plugin library is safe to hand to Triton, before Triton ever sees it.

Triton aborts the whole process (``LLVM ERROR``) on a library it cannot load, so every check happens
first, cheapest first, and the only one that runs plugin code does it in a child process:

1. ``exists``            the path is a readable file
2. ``permissions``       nobody else can replace it (not world-writable, nor in a world-writable
                         directory without the sticky bit): what passes is what Triton loads later
3. ``elf``               an ELF shared object (ET_DYN) for this machine's class/endianness/architecture
4. ``symbol``            it exports ``tritonGetPluginInfo`` in its dynamic symbol table
5. ``triton_support``    the installed Triton loads native plugins at all (>= 3.7)
6. ``needed_libraries``  every DT_NEEDED library is found (libtriton.so is the installed one)
7. ``undefined_symbols`` every strong undefined symbol is exported by libtriton.so, the libraries the
                         plugin needs or the interpreter's global scope (versions respected)
8. ``probe``             a child process loads it and reads its info struct (crash -> refusal)
9. ``api_version``       the struct's API version is one tritonx knows
10. ``triton_version``   it was built for the installed Triton version (Triton's own equality rule)
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field

from ..compat.native import ENTRY_POINT, KNOWN_API_VERSIONS, native_loading, versions_match
from ..errors import PluginLoadError
from ._trust import writable_by_others
from .elf import ElfFormatError, ElfImage, host_header
from .info import CheckResult, NativePluginInfo
from .installation import TritonInstall, find_triton
from .libpath import dependency_closure
from .probe import ProbeError, probe
from .symbols import describe, process_scope, resolve_undefined

CHECKS: tuple[str, ...] = (
    "exists",
    "permissions",
    "elf",
    "symbol",
    "triton_support",
    "needed_libraries",
    "undefined_symbols",
    "probe",
    "api_version",
    "triton_version",
)

_SHOWN_SYMBOLS = 8


class _Refused(Exception):
    def __init__(self, check: str, message: str) -> None:
        super().__init__(message)
        self.check = check
        self.message = message


@dataclass
class NativeDiagnosis:
    """Every check run on one library, with the plugin info (passed) or the error (refused)."""

    path: str
    checks: list[CheckResult] = field(default_factory=list)
    info: NativePluginInfo | None = None
    error: PluginLoadError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _demangle(names: list[str]) -> list[str]:
    """C++ names made readable with c++filt when it is installed (the raw names otherwise)."""
    tool = shutil.which("c++filt")
    if not tool or not names:
        return names
    try:
        out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return names
    lines = out.stdout.splitlines()
    return lines if len(lines) == len(names) else names


def _check_exists(path: str) -> str:
    if not os.path.lexists(path):
        raise _Refused("exists", "no such file; check the path given in TRITONX_NATIVE_PLUGINS or native_libraries")
    if not os.path.exists(path):
        raise _Refused("exists", "dangling symbolic link; point it at the built library")
    if not os.path.isfile(path):
        raise _Refused("exists", "not a regular file (a directory?); give the path of the .so itself")
    if not os.access(path, os.R_OK):
        raise _Refused("exists", "the file is not readable by this user; fix its permissions")
    return f"{os.path.getsize(path)} bytes"


def _check_permissions(path: str) -> str:
    why = writable_by_others(path)
    if why is not None:
        raise _Refused("permissions", why)
    return "writable by nobody else"


def _check_elf(image_path: str) -> ElfImage:
    try:
        image = ElfImage(image_path)
    except ElfFormatError as exc:
        raise _Refused(
            "elf", f"not a valid ELF shared library: {exc}; a native plugin is a .so built with -shared"
        ) from exc
    except OSError as exc:
        raise _Refused("elf", f"cannot read the file: {exc}") from exc
    host = host_header()
    if not image.header.same_machine(host):
        image.close()
        raise _Refused(
            "elf",
            f"built for {image.header.describe()}, but this Python runs on {host.describe().rsplit(' ', 1)[0]}; "
            f"rebuild the plugin for this machine",
        )
    if image.header.type != "ET_DYN":
        kind = {"ET_EXEC": "an executable", "ET_REL": "an object file (link it with -shared)"}.get(
            image.header.type, image.header.type
        )
        image.close()
        raise _Refused("elf", f"is {kind}, not a shared library (ET_DYN)")
    return image


def _check_symbol(image: ElfImage) -> str:
    if not image.exports(ENTRY_POINT):
        raise _Refused(
            "symbol",
            f"does not export {ENTRY_POINT}() in its dynamic symbol table, so it is not a Triton plugin; define it "
            f'as extern "C" with default visibility (TRITON_PLUGIN_API in triton/Tools/PluginUtils.h)',
        )
    return f"{ENTRY_POINT} exported"


def _check_triton(triton: TritonInstall | None) -> TritonInstall:
    if triton is None:
        raise _Refused("triton_support", "Triton is not installed in this Python environment; install triton >= 3.7")
    loading = native_loading(triton.version)
    if not loading.supported:
        raise _Refused("triton_support", loading.unsupported_reason())
    if not os.path.isfile(triton.libtriton):
        raise _Refused("triton_support", f"the installed Triton has no {triton.libtriton}; reinstall triton")
    return triton


def diagnose_native(path: str | os.PathLike[str], *, probe_timeout: float = 120.0) -> NativeDiagnosis:
    """Run the checks in order until one fails; never raises for a bad library."""
    path = os.path.abspath(os.path.expanduser(os.fspath(path)))
    diagnosis = NativeDiagnosis(path=path)
    checks = diagnosis.checks
    image: ElfImage | None = None
    current = CHECKS[0]
    try:
        checks.append(CheckResult("exists", True, _check_exists(path)))
        current = "permissions"
        checks.append(CheckResult("permissions", True, _check_permissions(path)))
        current = "elf"
        image = _check_elf(path)
        checks.append(CheckResult("elf", True, image.header.describe()))
        current = "symbol"
        checks.append(CheckResult("symbol", True, _check_symbol(image)))
        current = "triton_support"
        triton = _check_triton(find_triton())
        loading = native_loading(triton.version)
        checks.append(
            CheckResult("triton_support", True, f"Triton {triton.version}: loads plugins via {loading.mechanism}")
        )

        current = "needed_libraries"
        preloaded = {"libtriton.so": triton.libtriton}
        closure = dependency_closure(path, preloaded=preloaded)
        if closure.missing:
            missing = ", ".join(f"{n.name} (needed by {os.path.basename(n.requested_by)})" for n in closure.missing)
            raise _Refused(
                "needed_libraries",
                f"needed libraries not found on the library search path (RPATH/RUNPATH, LD_LIBRARY_PATH, ld.so cache): "
                f"{missing}; install them or add their directory to LD_LIBRARY_PATH",
            )
        direct = [n.name for n in closure.needed if n.requested_by == path]
        checks.append(CheckResult("needed_libraries", True, f"found {', '.join(direct) or 'none'}"))

        current = "undefined_symbols"
        providers: list[str] = []
        seen: set[str] = set()
        for lib in [*process_scope(preloaded), *closure.libraries]:
            real = os.path.realpath(lib)
            if real not in seen:
                seen.add(real)
                providers.append(lib)
        report = resolve_undefined(image.undefined_symbols(), providers)
        if report.unresolved:
            shown = _demangle([describe(s) for s in report.unresolved[:_SHOWN_SYMBOLS]])
            more = len(report.unresolved) - len(shown)
            raise _Refused(
                "undefined_symbols",
                f"{len(report.unresolved)} undefined symbol(s) are exported neither by the installed libtriton.so "
                f"(Triton {triton.version}) nor by the libraries it needs: {'; '.join(shown)}"
                + (f"; and {more} more" if more > 0 else "")
                + f". It was most likely built against another Triton/LLVM: rebuild it against Triton {triton.version}",
            )
        weak = f", {report.weak_unresolved} weak left unresolved" if report.weak_unresolved else ""
        checks.append(
            CheckResult(
                "undefined_symbols", True, f"{report.checked} resolved in {len(report.providers)} libraries{weak}"
            )
        )
        image.close()
        image = None

        current = "probe"
        try:
            result = probe(path, triton.libtriton, entry=ENTRY_POINT, timeout=probe_timeout)
        except ProbeError as exc:
            raise _Refused("probe", f"loading it in a child process failed: {exc}") from exc
        checks.append(CheckResult("probe", True, "loaded in a child process; info struct read"))

        current = "api_version"
        if result.api_version not in KNOWN_API_VERSIONS or result.info is None:
            known = ", ".join(str(v) for v in KNOWN_API_VERSIONS)
            raise _Refused(
                "api_version",
                f"plugin API version {result.api_version}, this tritonx knows {known}; "
                f"rebuild it against Triton {triton.version}'s triton/Tools/PluginUtils.h",
            )
        info = result.info
        checks.append(CheckResult("api_version", True, str(result.api_version)))

        current = "triton_version"
        built_for = info.get("triton_version") or ""
        if not versions_match(built_for, triton.version):
            raise _Refused(
                "triton_version",
                f"built for Triton {built_for or '(none given)'}, the installed Triton is {triton.version}; "
                f"rebuild it against Triton {triton.version} (Triton itself would abort the process on it)",
            )
        checks.append(CheckResult("triton_version", True, built_for))
    except _Refused as refused:
        checks.append(CheckResult(refused.check, False, refused.message))
        diagnosis.error = PluginLoadError(
            f"native plugin {path} refused by check {refused.check!r}: {refused.message}",
            path=path,
            check=refused.check,
        )
        return diagnosis
    except Exception as exc:  # a bug or an unexpected file: refuse, naming the check that broke
        checks.append(CheckResult(current, False, f"{type(exc).__name__}: {exc}"))
        diagnosis.error = PluginLoadError(
            f"native plugin {path} refused: check {current!r} could not complete ({type(exc).__name__}: {exc})",
            path=path,
            check=current,
        )
        return diagnosis
    finally:
        if image is not None:
            image.close()

    diagnosis.info = NativePluginInfo(
        path=path,
        plugin_name=info.get("plugin_name") or "",
        plugin_version=info.get("plugin_version") or "",
        api_version=int(info.get("api_version", result.api_version)),
        triton_version=built_for,
        passes=[(p.get("name") or "", p.get("version") or "") for p in info.get("passes", [])],
        dialects=[(d.get("name") or "", d.get("version") or "") for d in info.get("dialects", [])],
        ops=[o.get("name") or "" for o in info.get("ops", [])],
        checks=list(checks),
    )
    return diagnosis


def check_native(path: str | os.PathLike[str], *, probe_timeout: float = 120.0) -> NativePluginInfo:
    """Check a native plugin library; return what it declares or raise :class:`PluginLoadError`.

    ``PluginLoadError.check`` names the failed check (see :data:`CHECKS`), ``.path`` the library.
    """
    diagnosis = diagnose_native(path, probe_timeout=probe_timeout)
    if diagnosis.error is not None:
        raise diagnosis.error
    assert diagnosis.info is not None
    return diagnosis.info
