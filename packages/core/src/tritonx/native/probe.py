"""Load a plugin in a throw-away child process and read its ``tritonGetPluginInfo()`` struct.

Loading runs the plugin's static initializers, and a plugin built for another Triton/LLVM can abort or
crash there; in a child that costs a failed check instead of the user's process. The child is a bare
interpreter (``-I -S``: no site, no .pth, so no tritonx start-up recursion and no triton import). It
loads the installed libtriton.so with RTLD_GLOBAL first (the plugin's symbols bind to it, as they do
inside Triton), then the plugin with RTLD_LOCAL, decodes the struct with the layout from
:mod:`tritonx.compat.native`, prints one JSON line per step and leaves with ``os._exit`` (static
destructors are not what is being checked).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from ..compat.native import PLUGIN_INFO_LAYOUTS, TRITON_PLUGIN_PATHS
from ..settings import settings

MARKER = "@@tritonx-probe@@"

#: Environment variables removed from the child: nothing must load plugins or start tritonx there.
_SCRUBBED_ENV = (TRITON_PLUGIN_PATHS, "TRITONX_NATIVE_PLUGINS", "_TRITONX_NATIVE_STATE", "LD_PRELOAD")

_CHILD = r"""
import ctypes, json, os, sys
MARKER = "@@tritonx-probe@@"
def emit(**kw):
    sys.stdout.write(MARKER + json.dumps(kw) + "\n")
    sys.stdout.flush()
libtriton, plugin, entry, layouts = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
try:
    ctypes.CDLL(libtriton, mode=ctypes.RTLD_GLOBAL)
except OSError as exc:
    emit(step="libtriton", error=str(exc)); os._exit(0)
emit(step="libtriton", ok=True)
try:
    lib = ctypes.CDLL(plugin, mode=ctypes.RTLD_LOCAL)
except OSError as exc:
    emit(step="dlopen", error=str(exc)); os._exit(0)
emit(step="dlopen", ok=True)
try:
    fn = getattr(lib, entry)
except AttributeError as exc:
    emit(step="entry", error=str(exc)); os._exit(0)
fn.restype = ctypes.c_void_p
fn.argtypes = []
ptr = fn()
if not ptr:
    emit(step="entry", error=entry + "() returned NULL"); os._exit(0)
api = ctypes.c_uint32.from_address(ptr).value
emit(step="api", api_version=api)
layout = layouts.get(str(api))
if layout is None:
    os._exit(0)
KINDS = {"u32": ctypes.c_uint32, "size": ctypes.c_size_t, "str": ctypes.c_char_p, "ptr": ctypes.c_void_p}
structs = {}
def build(name):
    if name not in structs:
        fields = []
        for field, kind in layout[name]:
            if kind.startswith("array:"):
                fields.append((field, ctypes.POINTER(build(kind[6:]))))
            else:
                fields.append((field, KINDS[kind]))
        structs[name] = type(name, (ctypes.Structure,), {"_fields_": fields})
    return structs[name]
def text(value):
    return None if value is None else value.decode("utf-8", "replace")
def decode(obj, name):
    out = {}
    for field, kind in layout[name]:
        value = getattr(obj, field)
        if kind == "str":
            out[field] = text(value)
        elif kind == "ptr":
            out[field] = bool(value)
        elif kind.startswith("array:"):
            count = getattr(obj, field + "_count")
            if count and not value:
                raise ValueError(field + " is NULL but " + field + "_count is " + str(count))
            if count > 4096:
                raise ValueError(field + "_count is implausible: " + str(count))
            out[field] = [decode(value[i], kind[6:]) for i in range(count)]
        else:
            out[field] = int(value)
    return out
try:
    info = decode(ctypes.cast(ptr, ctypes.POINTER(build("PluginInfo"))).contents, "PluginInfo")
except (ValueError, KeyError) as exc:
    emit(step="decode", error=str(exc)); os._exit(0)
emit(step="info", info=info)
os._exit(0)
"""


class ProbeError(Exception):
    """The child could not load the plugin or read its info; the message says how it failed."""


@dataclass
class ProbeResult:
    """What the child saw: the API version, and the decoded struct when the layout is known."""

    api_version: int
    info: dict[str, Any] | None


def _child_env() -> dict[str, str]:
    return settings.child_environment(drop=_SCRUBBED_ENV)


def _tail(text: str, lines: int = 12) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return "\n".join(kept)


def probe(plugin: str, libtriton: str, *, entry: str = "tritonGetPluginInfo", timeout: float = 120.0) -> ProbeResult:
    """Run the child on ``plugin``; raise :class:`ProbeError` unless it reports the API version."""
    if not sys.executable:
        raise ProbeError("no Python executable to run the probe child (sys.executable is empty)")
    layouts = json.dumps({str(k): v for k, v in PLUGIN_INFO_LAYOUTS.items()})
    command = [sys.executable, "-I", "-S", "-c", _CHILD, libtriton, plugin, entry, layouts]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=_child_env(), check=False)
    except subprocess.TimeoutExpired as exc:
        raise ProbeError(f"the probe child did not finish in {timeout:.0f} s (hanging static initializer?)") from exc
    steps: dict[str, dict[str, Any]] = {}
    for line in done.stdout.splitlines():
        if line.startswith(MARKER):
            record = json.loads(line[len(MARKER) :])
            steps[record.pop("step")] = record
    failed = next((s for s in ("libtriton", "dlopen", "entry", "decode") if "error" in steps.get(s, {})), None)
    if failed is not None:
        what = {
            "libtriton": "loading the installed libtriton.so failed",
            "dlopen": "dlopen of the plugin failed",
            "entry": "calling its entry point failed",
            "decode": "its plugin info struct is invalid",
        }[failed]
        raise ProbeError(f"{what}: {steps[failed]['error']}")
    if "api" not in steps:
        if done.returncode < 0:
            try:
                how = f"killed by {signal.Signals(-done.returncode).name}"
            except ValueError:
                how = f"killed by signal {-done.returncode}"
        else:
            how = f"exited with status {done.returncode}"
        last = list(steps)[-1] if steps else "start"
        stderr = _tail(done.stderr)
        raise ProbeError(
            f"the probe child {how} after step {last!r}"
            + (f"; its stderr ends with:\n{stderr}" if stderr else " (no stderr output)")
        )
    return ProbeResult(api_version=int(steps["api"]["api_version"]), info=steps.get("info", {}).get("info"))
