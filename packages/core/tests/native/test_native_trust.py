"""What a native plugin's verdict may be trusted for (issue 28, items 5, 6, 7 and the ``.pth`` search).

* The remembered verdict belongs to the library's bytes, not to its (size, mtime): a library swapped for
  another of the same size and mtime (``cp -p``, reproducible builds) is checked again.
* A library others can replace (world-writable, or in a world-writable directory without the sticky
  bit) is refused by ``check_native`` and at start-up, even when an earlier verdict said yes.
* A FIFO planted at a verdict path never hangs start-up.
* With an empty ``PYTHONPATH`` entry, a ``./tritonx/_startup.py`` of the current directory never runs.
"""

from __future__ import annotations

import glob
import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest
from native_fixtures import (
    HERE,
    SRC,
    build_info_plugin,
    last_json,
    needs_natives,
    pth_site,
    run_child,
)
from native_kernels import assert_compiles
from tritonx.errors import PluginLoadError
from tritonx.native import check_native

REPORT = """
    import json, sys
    s = sys.modules["tritonx._startup"]
    print(json.dumps({"cached": s.cached, "results": s.results}))
    """


def _start(tmp_path, code: str, *, cwd=None, timeout: float = 120, pythonpath: str | None = None,
           late_plugins: str | None = None, **env_extra):
    """One interpreter through the shipped ``.pth`` line, with a short timeout (a hang fails, not waits).

    ``late_plugins``: ``TRITONX_NATIVE_PLUGINS`` set only once the interpreter runs, right before the
    shipped line is processed, so that a ``.pth`` installed in the environment (it may be an older
    copy) sees the variable unset at start-up and only the line under test reads it.
    """
    site, env = pth_site(tmp_path, pythonpath, TRITON_CACHE_DIR=str(tmp_path / "cache"), **env_extra)
    prologue = f"import site; site.addsitedir({str(site)!r})\n"
    if late_plugins is not None:
        prologue = f"import os; os.environ['TRITONX_NATIVE_PLUGINS'] = {late_plugins!r}\n" + prologue
    return subprocess.run([sys.executable, "-c", prologue + textwrap.dedent(code)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=env, check=False)


def _same_size_other_bytes(lib, old: bytes, new: bytes) -> None:
    """Rewrite one string of the library in place, keeping its size and its timestamps."""
    st = os.stat(lib)
    data = lib.read_bytes()
    assert data.count(old) == 1 and len(old) == len(new)
    lib.write_bytes(data.replace(old, new))
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = os.stat(lib)
    assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns)


@needs_natives
def test_a_library_swapped_with_the_same_size_and_mtime_is_checked_again(tmp_path):
    lib = build_info_plugin(tmp_path, "libswap.so")
    env = {"TRITONX_NATIVE_PLUGINS": str(lib), "TRITONX_CACHE_DIR": str(tmp_path / "verdicts")}
    first = last_json(run_child(tmp_path, REPORT, **env))
    assert first["cached"] == [] and first["results"][0]["info"]["plugin_version"] == "4.5.6"
    assert last_json(run_child(tmp_path, REPORT, **env))["cached"] == [str(lib)]  # remembered
    _same_size_other_bytes(lib, b"4.5.6", b"4.5.7")
    again = last_json(run_child(tmp_path, REPORT, **env))
    assert again["cached"] == []  # not the old verdict: the bytes changed
    assert again["results"][0]["info"]["plugin_version"] == "4.5.7"


@needs_natives
def test_a_subprocess_does_not_inherit_the_verdict_on_a_swapped_library(tmp_path):
    lib = build_info_plugin(tmp_path, "libswap.so")
    code = f"""
        import json, os, subprocess, sys
        data = open({str(lib)!r}, "rb").read()
        open({str(lib)!r}, "wb").write(data.replace(b"4.5.6", b"4.5.7"))  # swapped after this start-up
        site = {str(tmp_path / "site")!r}
        child = ("import site, sys, json; site.addsitedir(" + repr(site) + "); s = sys.modules['tritonx._startup']; "
                 "print(json.dumps([s.reused, s.results[0]['info']['plugin_version']]))")
        out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=300)
        print(json.dumps({{"parent": sys.modules["tritonx._startup"].reused, "child": out.stdout.strip()}}))
        """
    out = last_json(run_child(tmp_path, code, TRITONX_NATIVE_PLUGINS=str(lib),
                              TRITONX_CACHE_DIR=str(tmp_path / "verdicts")))
    assert out["parent"] is False
    assert json.loads(out["child"]) == [False, "4.5.7"]  # checked again, not the parent's state reused


def test_a_fifo_at_the_verdict_path_does_not_hang_startup(tmp_path):
    lib = tmp_path / "plain.so"
    lib.write_text("not a library\n")
    env = {"TRITONX_NATIVE_PLUGINS": str(lib), "TRITONX_CACHE_DIR": str(tmp_path / "verdicts")}
    first = last_json(_start(tmp_path, REPORT, **env))
    assert [r["check"] for r in first["results"]] == ["elf"]
    (verdict,) = glob.glob(str(tmp_path / "verdicts" / "native-verdicts" / "*.json"))
    os.unlink(verdict)
    os.mkfifo(verdict, 0o600)  # planted: an open() for reading would wait for a writer forever
    done = _start(tmp_path, REPORT, timeout=60, **env)
    again = last_json(done)
    assert again["cached"] == [] and [r["check"] for r in again["results"]] == ["elf"]
    assert stat.S_ISREG(os.lstat(verdict).st_mode)  # the fresh verdict was renamed over the FIFO


def test_a_fifo_named_as_the_library_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "libfifo.so"
    os.mkfifo(fifo, 0o600)
    done = _start(tmp_path, REPORT, timeout=60, TRITONX_NATIVE_PLUGINS=str(fifo),
                  TRITONX_CACHE_DIR=str(tmp_path / "verdicts"))
    (result,) = last_json(done)["results"]
    assert (result["ok"], result["check"]) == (False, "exists") and "not a regular file" in result["message"]


def _refused_for_permissions(path, contains: str) -> None:
    with pytest.raises(PluginLoadError) as info:
        check_native(path)
    assert info.value.check == "permissions", str(info.value)
    assert str(path) in str(info.value) and contains in str(info.value)
    assert "\n" not in str(info.value)
    assert_compiles()


@needs_natives
def test_check_native_refuses_a_world_writable_library(tmp_path):
    lib = build_info_plugin(tmp_path, "libopen.so")
    assert check_native(lib).plugin_version == "4.5.6"
    os.chmod(lib, 0o666)
    _refused_for_permissions(lib, "writable by every user (mode 0666)")


@needs_natives
def test_check_native_refuses_a_library_in_a_world_writable_directory_without_sticky_bit(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    lib = build_info_plugin(shared, "libshared.so")
    os.chmod(shared, 0o777)
    _refused_for_permissions(lib, f"its directory {shared} is writable by every user without the sticky bit")
    link_dir = tmp_path / "links"  # a link in such a directory can be re-pointed: refused as well
    link_dir.mkdir()
    os.chmod(shared, 0o755)
    os.symlink(lib, link_dir / "libshared.so")
    os.chmod(link_dir, 0o777)
    _refused_for_permissions(link_dir / "libshared.so", f"its directory {link_dir} is writable")
    os.chmod(link_dir, 0o1777)  # sticky (like /tmp): only the owner may rename or remove: accepted
    assert check_native(link_dir / "libshared.so").plugin_name == "tritonx-probe"


@needs_natives
def test_startup_refuses_a_library_made_world_writable_after_its_verdict(tmp_path):
    lib = build_info_plugin(tmp_path, "libmode.so")
    env = {"TRITONX_NATIVE_PLUGINS": str(lib), "TRITONX_CACHE_DIR": str(tmp_path / "verdicts")}
    assert [r["ok"] for r in last_json(run_child(tmp_path, REPORT, **env))["results"]] == [True]
    os.chmod(lib, 0o666)
    done = run_child(tmp_path, REPORT, **env)
    out = last_json(done)
    assert out["cached"] == []
    assert [(r["ok"], r["check"]) for r in out["results"]] == [(False, "permissions")]
    assert f"tritonx: native plugin {lib} refused (permissions): the file is writable by every user" in done.stderr


def test_an_empty_pythonpath_entry_never_runs_a_tritonx_folder_of_the_current_directory(tmp_path):
    work = tmp_path / "work"
    (work / "tritonx").mkdir(parents=True)
    marker = tmp_path / "hijacked"
    planted = f"open({str(marker)!r}, 'w').write('ran')\n"
    (work / "tritonx" / "__init__.py").write_text(planted)
    (work / "tritonx" / "_startup.py").write_text(planted)
    missing = tmp_path / "missing.so"
    # ":SRC:HERE": the empty first entry is the current directory, ahead of the real tritonx
    pythonpath = os.pathsep.join(["", str(SRC), str(HERE)])
    done = _start(tmp_path, REPORT, cwd=work, pythonpath=pythonpath, late_plugins=str(missing),
                  TRITONX_CACHE_DIR=str(tmp_path / "verdicts"))
    assert not marker.exists()
    out = last_json(done)
    assert [(r["path"], r["check"]) for r in out["results"]] == [(str(missing), "exists")]  # the real start-up ran


def test_the_triton_identity_changes_when_libtriton_is_replaced_by_a_copy_with_its_mtime(tmp_path):
    """Verdicts also name the Triton install they were made for; a libtriton swapped by ``cp -p`` (same
    size and mtime) must not pass for the one the verdicts were made against."""
    import shutil

    import tritonx._startup as startup

    lib = tmp_path / "libtriton.so"
    lib.write_bytes(b"A" * 4096)
    before = startup.file_identity(str(lib))
    other = tmp_path / "other.so"
    other.write_bytes(b"B" * 4096)
    shutil.copystat(lib, other)  # same mtime
    os.replace(other, lib)
    assert os.stat(lib).st_size == 4096
    assert startup.file_identity(str(lib)) != before


def test_the_elf_reader_never_blocks_on_a_fifo(tmp_path):
    """Library search and the ELF checks read files found on the search path (``LD_LIBRARY_PATH``, RPATH):
    a FIFO swapped in after the ``isfile`` test must raise at once, not wait for a writer."""
    fifo = tmp_path / "libplanted.so"
    os.mkfifo(fifo, 0o600)
    code = f"""
        from tritonx.native.elf import ElfImage, read_header_quick
        print(read_header_quick({str(fifo)!r}))
        try:
            ElfImage({str(fifo)!r})
        except OSError as exc:
            print("refused:", exc.strerror)
        """
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), str(HERE)]))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60,
                          env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["None", "refused: not a regular file"]
