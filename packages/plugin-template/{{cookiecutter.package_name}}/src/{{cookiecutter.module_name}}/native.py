"""Where the compiled plugin library lives (no Triton import: tests and tools call this first)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from . import PLUGIN_NAME

LIBRARY_NAME = "lib{{ cookiecutter.module_name }}.so"
#: Points at another build of the library (for example a CMake build directory while developing).
LIBRARY_ENV = "{{ cookiecutter.__module_upper }}_LIBRARY"

#: Names under which Triton exposes the library's passes (``passes.plugin.<name>``).
TO_SQUARE = f"{PLUGIN_NAME}_to_square"
FROM_SQUARE = f"{PLUGIN_NAME}_from_square"
TAG = f"{PLUGIN_NAME}_tag"
#: Op of the plugin's dialect, as printed in the IR.
SQUARE_OP = f"{PLUGIN_NAME}.square"
#: String attribute the tag pass sets on every kernel.
TAG_ATTR = f"{PLUGIN_NAME}.tag"


def library_path() -> Path:
    """The plugin library: ``$LIBRARY_ENV`` if set, else the one installed inside this package."""
    override = os.environ.get(LIBRARY_ENV)
    if override:
        path = Path(override)
        if not path.is_file():
            raise FileNotFoundError(f"{PLUGIN_NAME}: {LIBRARY_ENV}={override} is not a file")
        return path
    path = Path(__file__).resolve().parent / "lib" / LIBRARY_NAME
    if not path.is_file():
        raise FileNotFoundError(
            f"{PLUGIN_NAME}: native library {path} is missing; build and install the package with "
            f"`pip install --no-build-isolation .` (editable installs do not place it there; set {LIBRARY_ENV})"
        )
    return path


#: tritonx's start-up variable: native libraries it checks and hands to Triton before Triton loads.
NATIVE_PLUGINS_ENV = "TRITONX_NATIVE_PLUGINS"


def preload() -> Path:
    """Hand the library to tritonx's start-up loader, for scripts and tests that start without it.

    Triton 3.7/3.8 read their plugin list once, when libtriton is imported, so a native library must be
    declared before that. The usual way is the environment (``TRITONX_NATIVE_PLUGINS=<library>``, read
    when Python starts); this does the same from inside the process, which works only while Triton is
    not yet imported. tritonx checks the library first (in a child process) and refuses a bad one with
    a warning instead of letting Triton abort.
    """
    path = library_path()
    current = [p for p in os.environ.get(NATIVE_PLUGINS_ENV, "").split(":") if p]
    if str(path) in current and "tritonx._startup" in sys.modules:
        return path  # declared at start-up: tritonx already handled it
    if "triton" in sys.modules:
        raise RuntimeError(
            f"{PLUGIN_NAME}: Triton is already imported, too late to load {path}; start Python with "
            f"{NATIVE_PLUGINS_ENV}={path}"
        )
    if "tritonx._startup" in sys.modules:
        raise RuntimeError(
            f"{PLUGIN_NAME}: tritonx start-up already ran for {NATIVE_PLUGINS_ENV}={':'.join(current)}; add {path} "
            "to that variable before Python starts"
        )
    os.environ[NATIVE_PLUGINS_ENV] = ":".join([*current, str(path)])
    # What the tritonx-native.pth line does at interpreter start-up, without importing tritonx (its
    # __init__ imports Triton): run tritonx/_startup.py, which checks and hands over the libraries.
    spec = importlib.util.find_spec("tritonx")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{PLUGIN_NAME}: tritonx-core is not installed")
    startup = Path(next(iter(spec.submodule_search_locations))) / "_startup.py"
    loader_spec = importlib.util.spec_from_file_location("tritonx._startup", startup)
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules["tritonx._startup"] = module
    loader_spec.loader.exec_module(module)
    return path
