"""Every Triton-version difference of native (.so) plugin loading, in one place.

Measured on the PyPI wheels (2026-11-29):

* 3.6.0 has no native plugin support at all.
* 3.7.1 and 3.8.0: libtriton reads ``TRITON_PLUGIN_PATHS`` (colon-separated) once, when it is first
  imported, and aborts the whole process (``LLVM ERROR``) on a bad entry. Each pass a plugin declares
  appears as ``triton._C.libtriton.passes.plugin.<pass name>(pm, args)``; the wheel's test plugin
  declares ``add_plugin``, its dialect plugin ``plugingpu_conversion``.
* 3.9.0: nothing is read from the environment; ``passes.plugin.extend_with(path)`` loads a library at
  any time and creates ``passes.plugin.add_<pass name>(pm, args=[])`` (the test plugin now declares
  ``plugin`` -> ``add_plugin``), ``ir.extend_dialects_with(path)`` registers its dialects.
* The ``tritonGetPluginInfo()`` struct is the same in 3.7.1, 3.8.0 and 3.9.0 (API version 2).

Standard library only, and it never imports ``triton``: it answers questions from a version string, so
the checks can run before (and without) libtriton being loaded.
"""

from __future__ import annotations

from dataclasses import dataclass

from .version import parse_version, release

#: Environment variable libtriton 3.7/3.8 reads at import.
TRITON_PLUGIN_PATHS = "TRITON_PLUGIN_PATHS"

#: How a Triton version loads native plugins (:attr:`NativeLoading.mechanism`).
UNSUPPORTED, ENV, EXTEND_WITH = "unsupported", "env", "extend_with"

#: The exported C entry point every native plugin must define.
ENTRY_POINT = "tritonGetPluginInfo"

#: Layout of the struct returned by ``tritonGetPluginInfo()``, per plugin API version. Field kinds:
#: ``u32``, ``size`` (size_t), ``str`` (const char *), ``ptr`` (any pointer), ``array:<struct>`` (pointer
#: to the first element; its count is the field named ``<field>_count``).
PLUGIN_INFO_LAYOUTS: dict[int, dict[str, list[tuple[str, str]]]] = {
    2: {
        "PluginInfo": [
            ("api_version", "u32"),
            ("plugin_name", "str"),
            ("plugin_version", "str"),
            ("passes", "array:PassInfo"),
            ("passes_count", "size"),
            ("dialects", "array:DialectInfo"),
            ("dialects_count", "size"),
            ("ops", "array:OpInfo"),
            ("ops_count", "size"),
            ("triton_version", "str"),
        ],
        "PassInfo": [("name", "str"), ("version", "str"), ("add_pass", "ptr"), ("register_pass", "ptr")],
        "DialectInfo": [("name", "str"), ("version", "str"), ("register_dialect", "ptr")],
        "OpInfo": [("name", "str"), ("add_op", "ptr")],
    }
}

#: Plugin API versions this tritonx can decode and that some supported Triton loads.
KNOWN_API_VERSIONS: tuple[int, ...] = tuple(sorted(PLUGIN_INFO_LAYOUTS))


def versions_match(plugin_triton_version: str, installed_triton_version: str) -> bool:
    """Does a plugin built for one Triton version load into the installed one? (Triton's own rule.)"""
    return release(plugin_triton_version) == release(installed_triton_version)


@dataclass(frozen=True)
class NativeLoading:
    """How the installed Triton loads native plugins.

    Attributes:
        triton_version: the installed Triton's version string.
        mechanism: ``"unsupported"`` (< 3.7), ``"env"`` (libtriton reads ``TRITON_PLUGIN_PATHS`` at import:
            3.7, 3.8) or ``"extend_with"`` (load at any time through ``passes.plugin.extend_with``: 3.9).
    """

    triton_version: str
    mechanism: str

    @property
    def supported(self) -> bool:
        return self.mechanism != UNSUPPORTED

    @property
    def runtime_loading(self) -> bool:
        """Can a library be loaded after ``triton`` was imported?"""
        return loads_at_run_time(self.mechanism)

    @property
    def reads_environment(self) -> bool:
        """Does libtriton take native plugins only from ``TRITON_PLUGIN_PATHS``, when it is first imported?"""
        return self.mechanism == ENV

    def pass_attribute(self, pass_name: str) -> str:
        """Name of the ``libtriton.passes.plugin`` attribute that adds the plugin pass ``pass_name``."""
        if self.mechanism == EXTEND_WITH:
            # extend_with prefixes "add_" but never doubles it (measured: "plugin" -> "add_plugin").
            return pass_name if pass_name.startswith("add_") else f"add_{pass_name}"
        return pass_name

    def load_calls(self, has_dialects: bool, has_ops: bool = False) -> list[str]:
        """Dotted ``libtriton`` functions to call with the library path to load it at run time (3.9).

        ``ir.builder.extend_with`` creates a builder method per custom op (kernel-callable native ops,
        :mod:`tritonx.dsl`); 3.7/3.8 create them when libtriton loads the library at import.
        """
        if self.mechanism != EXTEND_WITH:
            return []
        calls = ["passes.plugin.extend_with"]
        if has_dialects:
            calls.append("ir.extend_dialects_with")
        if has_ops:
            calls.append("ir.builder.extend_with")
        return calls

    def unsupported_reason(self) -> str:
        return (
            f"Triton {self.triton_version} has no native plugin support (native .so plugins need Triton >= 3.7); "
            f"upgrade Triton or leave the native library out"
        )


def native_loading(triton_version: str) -> NativeLoading:
    """The loading mechanism of a Triton version (by version string; never imports triton)."""
    major_minor = parse_version(triton_version)[:2]
    if major_minor < (3, 7):
        mechanism = UNSUPPORTED
    elif major_minor < (3, 9):
        mechanism = ENV
    else:
        mechanism = EXTEND_WITH
    return NativeLoading(triton_version=triton_version, mechanism=mechanism)


def loads_at_run_time(mechanism: str | None) -> bool:
    """Does this mechanism (as the start-up report names it) load libraries after ``import triton`` (3.9)?"""
    return mechanism == EXTEND_WITH
