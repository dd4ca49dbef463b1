"""Every kind of bad library is refused by the right check, and the process keeps compiling kernels."""

from __future__ import annotations

import subprocess

import pytest
from native_fixtures import (
    ABORT_IN_CONSTRUCTOR_C,
    DEPENDENCY_C,
    NEEDS_DEPENDENCY_C,
    NO_ENTRY_C,
    UNDEFINED_SYMBOL_C,
    build_info_plugin,
    build_library,
    bundled_plugins_of_other_versions,
    compiler,
    installed_supports_natives,
    installed_triton,
    other_machine_copy,
    random_bytes_file,
    truncated_copy,
)
from native_kernels import assert_compiles
from tritonx.errors import PluginLoadError
from tritonx.native import CHECKS, check_native, diagnose_native


def refused(path, check: str, *, contains: str = "") -> PluginLoadError:
    """check_native(path) must raise PluginLoadError from ``check``; then a kernel must still compile."""
    with pytest.raises(PluginLoadError) as info:
        check_native(path)
    error = info.value
    assert error.check == check, f"expected check {check!r}, got {error.check!r}: {error}"
    assert error.path == str(path)
    assert str(path) in str(error)
    assert f"check {check!r}" in str(error)
    if contains:
        assert contains in str(error)
    assert_compiles()
    return error


def test_missing_path(tmp_path):
    refused(tmp_path / "nope.so", "exists", contains="no such file")


def test_directory(tmp_path):
    refused(tmp_path, "exists", contains="not a regular file")


def test_empty_file(tmp_path):
    path = tmp_path / "empty.so"
    path.write_bytes(b"")
    refused(path, "elf", contains="the file is empty")


def test_random_bytes(tmp_path):
    refused(random_bytes_file(tmp_path), "elf", contains="no ELF magic number")


def test_text_file(tmp_path):
    path = tmp_path / "notes.so"
    path.write_text("this is not a library\n")
    refused(path, "elf", contains="no ELF magic number (first bytes b'this')")


def test_truncated_copy_of_a_real_plugin(tmp_path):
    refused(truncated_copy(tmp_path), "elf", contains="truncated")


def test_library_for_another_machine(tmp_path):
    error = refused(other_machine_copy(tmp_path), "elf", contains="rebuild the plugin for this machine")
    assert "built for AARCH64" in str(error) or "built for X86_64" in str(error)


def test_object_file_is_not_a_library(tmp_path):
    source = tmp_path / "plugin.c"
    source.write_text(NO_ENTRY_C)
    obj = tmp_path / "plugin.o"
    subprocess.run([compiler(), "-c", "-fPIC", "-o", str(obj), str(source)], check=True)
    refused(obj, "elf", contains="is an object file (link it with -shared), not a shared library (ET_DYN)")


def test_library_without_entry_point(tmp_path):
    lib = build_library(tmp_path, "libnoentry.so", NO_ENTRY_C)
    refused(lib, "symbol", contains="does not export tritonGetPluginInfo")


def test_checks_stop_at_the_first_failure(tmp_path):
    lib = build_library(tmp_path, "libnoentry.so", NO_ENTRY_C)
    diagnosis = diagnose_native(lib)
    assert [(c.name, c.ok) for c in diagnosis.checks] == [("exists", True), ("permissions", True), ("elf", True),
                                                                ("symbol", False)]
    assert not diagnosis.ok and diagnosis.info is None


@pytest.mark.skipif("installed_supports_natives()", reason="the installed Triton loads native plugins")
def test_triton_without_native_support_is_refused(tmp_path):
    """Triton 3.6: any well-formed plugin is refused before anything tries to load it."""
    lib = build_info_plugin(tmp_path, "libinfo.so")
    refused(lib, "triton_support", contains="no native plugin support")


def _needs_natives():
    if not installed_supports_natives():
        pytest.skip(f"Triton {installed_triton().version} has no native plugins")


def test_plugin_of_another_triton_version(tmp_path):
    others = bundled_plugins_of_other_versions()
    if not others:
        pytest.skip("no other Triton version's test plugin is installed in a sibling virtualenv")
    here = installed_triton().version
    for version, plugin in others.items():
        with pytest.raises(PluginLoadError) as info:
            check_native(plugin)
        if not installed_supports_natives():
            assert info.value.check == "triton_support" and "no native plugin support" in str(info.value)
            continue
        # Same ABI -> the version check refuses it; ABI drift (3.9's LLVM) -> its symbols do not resolve.
        assert info.value.check in ("undefined_symbols", "triton_version"), (version, str(info.value))
        if info.value.check == "triton_version":
            assert f"built for Triton {version}, the installed Triton is {here}" in str(info.value)
        else:
            assert f"rebuild it against Triton {here}" in str(info.value)
    assert_compiles()


def test_missing_needed_library(tmp_path):
    _needs_natives()
    build_library(tmp_path, "libtritonxdep.so", DEPENDENCY_C)
    lib = build_library(tmp_path, "libneedsdep.so", NEEDS_DEPENDENCY_C, f"-L{tmp_path}", "-ltritonxdep")
    (tmp_path / "libtritonxdep.so").unlink()
    refused(lib, "needed_libraries", contains="libtritonxdep.so (needed by libneedsdep.so)")


def test_undefined_symbol(tmp_path):
    _needs_natives()
    lib = build_library(tmp_path, "libundef.so", UNDEFINED_SYMBOL_C)
    refused(lib, "undefined_symbols", contains="tritonx_symbol_nobody_defines")


def test_crash_in_static_initializer_is_contained(tmp_path):
    _needs_natives()
    lib = build_library(tmp_path, "libabort.so", ABORT_IN_CONSTRUCTOR_C)
    error = refused(lib, "probe", contains="killed by SIGABRT")
    assert "static initializer aborts on purpose" in str(error)  # the child's stderr tail


def test_segfault_reading_the_info_struct_is_contained(tmp_path):
    _needs_natives()
    lib = build_info_plugin(tmp_path, "libwild.so", returned="(plugin_info *)8")
    refused(lib, "probe", contains="killed by SIGSEGV")


def test_entry_point_returning_null(tmp_path):
    _needs_natives()
    lib = build_info_plugin(tmp_path, "libnull.so", returned="0")
    refused(lib, "probe", contains="tritonGetPluginInfo() returned NULL")


def test_unknown_api_version(tmp_path):
    _needs_natives()
    lib = build_info_plugin(tmp_path, "libapi99.so", api_version=99)
    refused(lib, "api_version", contains="plugin API version 99, this tritonx knows 2")


def test_wrong_triton_version(tmp_path):
    _needs_natives()
    lib = build_info_plugin(tmp_path, "liboldtriton.so", triton_version="3.0.0")
    error = refused(lib, "triton_version", contains="built for Triton 3.0.0")
    assert f"the installed Triton is {installed_triton().version}" in str(error)


def test_check_order_is_cheap_first():
    """File-system and ELF checks before anything that loads the library; the versions it reports last."""
    assert CHECKS == tuple("exists permissions elf symbol triton_support needed_libraries undefined_symbols "
                           "probe api_version triton_version".split())
