"""The ELF reading and symbol resolution under the undefined_symbols check."""

from __future__ import annotations

import os
import sys

import pytest
from native_fixtures import DEPENDENCY_C, NEEDS_DEPENDENCY_C, any_real_plugin, build_library
from tritonx.native.elf import ElfFormatError, ElfImage, UndefinedSymbol, host_header
from tritonx.native.libpath import dependency_closure
from tritonx.native.symbols import process_scope, resolve_undefined

WEAK_UNDEFINED_C = r"""
extern void tritonx_optional_hook(void) __attribute__((weak));
int tritonx_call_hook(void) { if (tritonx_optional_hook) { tritonx_optional_hook(); return 1; } return 0; }
"""


def test_host_header_describes_this_interpreter():
    header = host_header()
    with ElfImage(os.path.realpath(sys.executable)) as image:
        assert image.header.same_machine(header)
    assert header.describe().endswith("ET_DYN")


def test_real_plugin_needs_libtriton_and_versioned_libc_symbols():
    plugin = any_real_plugin()
    with ElfImage(plugin) as image:
        dynamic = image.dynamic()
        undefined = image.undefined_symbols()
        assert image.exports("tritonGetPluginInfo")
        assert not image.exports("tritonx_not_there")
    assert dynamic.needed[0] == "libtriton.so"
    assert dynamic.soname == "libTritonPluginsTestLib.so"
    versions = {s.version for s in undefined if s.version}
    assert any(v.startswith("GLIBC_") for v in versions), versions
    assert any(v.startswith(("GLIBCXX_", "CXXABI_")) for v in versions), versions


def test_versions_are_respected_when_resolving():
    scope = process_scope({})
    libc = [p for p in scope if os.path.basename(p).startswith("libc.so")]
    assert libc, scope
    with ElfImage(libc[0]) as image:
        malloc_versions = image.exported_symbols({"malloc"})["malloc"]
    real = next(iter(malloc_versions))
    wanted = [
        UndefinedSymbol("malloc", real, False),
        UndefinedSymbol("malloc", "GLIBC_99.99", False),
        UndefinedSymbol("tritonx_nowhere", None, True),
    ]
    report = resolve_undefined(wanted, scope)
    assert [s.version for s in report.unresolved] == ["GLIBC_99.99"]
    assert report.weak_unresolved == 1 and report.checked == 3


def test_weak_undefined_symbol_does_not_fail(tmp_path):
    lib = build_library(tmp_path, "libweak.so", WEAK_UNDEFINED_C)
    with ElfImage(lib) as image:
        undefined = image.undefined_symbols()
    hook = [s for s in undefined if s.name == "tritonx_optional_hook"]
    assert hook == [UndefinedSymbol("tritonx_optional_hook", None, True)]
    report = resolve_undefined(undefined, process_scope({}))
    assert report.unresolved == []
    assert report.weak_unresolved >= 1  # the hook (and the toolchain's own weak references)


def test_dependency_closure_follows_needed_and_origin(tmp_path):
    """DT_NEEDED found through DT_RUNPATH $ORIGIN (not on any default path)."""
    build_library(tmp_path, "libtritonxdep.so", DEPENDENCY_C)
    lib = build_library(
        tmp_path, "libneeds.so", NEEDS_DEPENDENCY_C, f"-L{tmp_path}", "-ltritonxdep", "-Wl,-rpath,$ORIGIN"
    )
    closure = dependency_closure(str(lib))
    found = {n.name: n.path for n in closure.needed if n.requested_by == str(lib)}
    assert found["libtritonxdep.so"] == str(tmp_path / "libtritonxdep.so")
    assert closure.missing == []


@pytest.mark.parametrize("data, reason", [(b"", "empty"), (b"\x7fELF\x02\x01\x01" + b"\0" * 9, "malformed ELF")])
def test_malformed_headers(tmp_path, data, reason):
    path = tmp_path / "bad.so"
    path.write_bytes(data)
    with pytest.raises(ElfFormatError, match=reason):
        ElfImage(path)
