"""TRITONX_NATIVE_PLUGINS at interpreter start-up, through the real ``tritonx-native.pth`` line.

How the .pth is exercised: an editable install does not put ``tritonx-native.pth`` in site-packages,
so each child interpreter copies the shipped file into a temporary directory and calls
``site.addsitedir`` on it as its first statement, which processes the .pth exactly as site-packages
would, before anything imports triton. ``PYTHONPATH`` points at this checkout's ``src`` so the child
runs the code under test.
"""

from __future__ import annotations

import json

import pytest
import tritonx._startup as startup_module
from native_fixtures import (
    PTH,
    build_info_plugin,
    installed_plugin,
    installed_supports_natives,
    installed_triton,
    last_json,
    needs_natives,
    run_child,
)
from tritonx.compat.native import native_loading

RUNTIME_LOADING = native_loading(installed_triton().version).runtime_loading  # 3.9: extend_with


def test_shipped_pth_is_the_startup_line():
    assert PTH.read_text() == startup_module.PTH_LINE + "\n"
    assert PTH.read_text().count("\n") == 1


def test_pth_costs_nothing_when_unset(tmp_path):
    done = run_child(
        tmp_path,
        """
        import json, sys
        print(json.dumps({m: m in sys.modules for m in ("tritonx", "tritonx._startup", "triton")}))
        """,
    )
    assert last_json(done) == {"tritonx": False, "tritonx._startup": False, "triton": False}


def test_pth_never_imports_triton_or_the_tritonx_package(tmp_path):
    plugin = installed_plugin() if installed_supports_natives() else tmp_path / "missing.so"
    done = run_child(
        tmp_path,
        """
        import json, sys
        print(json.dumps({m: m in sys.modules for m in ("tritonx", "tritonx._startup", "triton")}))
        """,
        TRITONX_NATIVE_PLUGINS=str(plugin),
    )
    assert last_json(done) == {"tritonx": False, "tritonx._startup": True, "triton": False}


@needs_natives
def test_good_plugin_loaded_bad_file_refused_with_one_warning(tmp_path):
    good = installed_plugin()
    bad = tmp_path / "not-a-plugin.so"
    bad.write_text("plain text\n")
    done = run_child(
        tmp_path,
        """
        import json, os, sys
        import triton
        from triton._C import libtriton as L
        from native_kernels import compile_add_one, parsed_ttir
        from tritonx.runtime import current

        natives = current().natives

        attrs = sorted(a for a in dir(L.passes.plugin) if not a.startswith("_"))
        compiled = compile_add_one(32)  # a normal compile in the same process
        ctx, mod, pm = parsed_ttir(compiled, os.environ["TRITON_CACHE_DIR"])
        name = natives.native_passes()[0]
        adder = natives.find_pass(name)
        adder(pm, [])
        pm.run(mod, "tritonx-native-test")
        again = current().load_native(os.environ["GOOD"])  # loaded at start-up: returned, not refused
        print(json.dumps({
            "attrs": attrs,
            "names": natives.native_passes(),
            "funcs": [ln.strip().split("(")[0] for ln in str(mod).splitlines() if "tt.func" in ln],
            "ptx_ok": ".visible .entry add_one" in compiled.asm["ptx"],
            "loaded": [i.path for i in natives.loaded_natives()],
            "again": again.path,
            "plugin_paths": os.environ.get("TRITON_PLUGIN_PATHS"),
        }))
        """,
        TRITONX_NATIVE_PLUGINS=f"{good}:{bad}",
        GOOD=str(good),
    )
    out = last_json(done)
    warnings = [ln for ln in done.stderr.splitlines() if ln.startswith("tritonx:")]
    assert warnings == [
        f"tritonx: native plugin {bad} refused (elf): not a valid ELF shared library: no ELF magic number "
        f"(first bytes b'plai'); a native plugin is a .so built with -shared; left out"
    ]
    assert "add_plugin" in out["attrs"]  # passes.plugin.add_plugin on 3.7, 3.8 and 3.9
    assert out["names"] == ["plugin" if RUNTIME_LOADING else "add_plugin"]
    assert out["funcs"] == ["tt.func public @foo"]  # the plugin's pass renamed the kernel
    assert out["ptx_ok"]
    assert out["loaded"] == [str(good)] and out["again"] == str(good)
    if not RUNTIME_LOADING:
        assert out["plugin_paths"] == str(good)  # only the accepted library reached Triton
    else:
        assert out["plugin_paths"] is None  # 3.9 loads through extend_with, not the environment


@needs_natives
def test_subprocesses_reuse_the_verdicts(tmp_path):
    good = installed_plugin()
    bad = tmp_path / "empty.so"
    bad.write_bytes(b"")
    done = run_child(
        tmp_path,
        f"""
        import json, os, subprocess, sys
        startup = sys.modules["tritonx._startup"]
        code = "import site, sys, json; site.addsitedir({str(tmp_path / "site")!r}); " \\
               "s = sys.modules['tritonx._startup']; print(json.dumps([s.reused, len(s.results)]))"
        child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        print(json.dumps({{"parent_reused": startup.reused, "child": child.stdout.strip(), "child_err": child.stderr}}))
        """,
        TRITONX_NATIVE_PLUGINS=f"{good}:{bad}",
    )
    out = last_json(done)
    assert out["parent_reused"] is False
    assert json.loads(out["child"]) == [True, 2]
    assert "refused" not in out["child_err"]  # the warning is printed once, by the process that checked
    assert done.stderr.count("refused (elf)") == 1


@needs_natives
def test_state_made_for_another_triton_is_discarded(tmp_path):
    good = installed_plugin()
    stale = json.dumps({"spec": str(good), "triton": "/elsewhere/libtriton.so:1:1", "added": ["/elsewhere/x.so"]})
    done = run_child(
        tmp_path,
        """
        import json, os, sys
        s = sys.modules["tritonx._startup"]
        print(json.dumps({"reused": s.reused, "paths": os.environ.get("TRITON_PLUGIN_PATHS")}))
        """,
        TRITONX_NATIVE_PLUGINS=str(good),
        TRITON_PLUGIN_PATHS="/elsewhere/x.so",
        _TRITONX_NATIVE_STATE=stale,
    )
    out = last_json(done)
    assert out["reused"] is False
    assert "/elsewhere/x.so" not in (out["paths"] or "")


def test_unsupported_triton_refuses_at_startup_and_goes_on(tmp_path):
    if installed_supports_natives():
        pytest.skip("the installed Triton loads native plugins")
    plugin = build_info_plugin(tmp_path, "libinfo.so")  # a well-formed plugin: refused by triton_support
    done = run_child(
        tmp_path, "import triton, json; print(json.dumps(triton.__version__))", TRITONX_NATIVE_PLUGINS=str(plugin)
    )
    assert last_json(done) == installed_triton().version
    assert f"tritonx: native plugin {plugin} refused (triton_support): Triton {installed_triton().version} has no" in (
        done.stderr
    )


def test_checker_child_never_runs_a_tritonx_folder_of_the_current_directory(tmp_path):
    work = tmp_path / "work"
    fake = work / "tritonx" / "native"
    fake.mkdir(parents=True)
    marker = tmp_path / "hijacked"
    (work / "tritonx" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (fake / "__init__.py").write_text("")
    (fake / "_startup_child.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    missing = tmp_path / "missing.so"
    done = _run_in(work, tmp_path, TRITONX_NATIVE_PLUGINS=str(missing))
    results = last_json(done)
    assert not marker.exists()
    assert [(r["path"], r["ok"], r["check"]) for r in results] == [(str(missing), False, "exists")]


def _run_in(cwd, tmp_path, **env_extra):
    import subprocess
    import sys

    from native_fixtures import pth_site

    site, env = pth_site(tmp_path, **env_extra)
    # site processes .pth files before the current directory joins sys.path: do the same here
    code = (f"import site, sys; sys.path.remove(''); site.addsitedir({str(site)!r})\n"
            "import json, sys; print(json.dumps(sys.modules['tritonx._startup'].results))\n")
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=600, check=False)


SLOW_CONSTRUCTOR_C = r"""
#include <unistd.h>
__attribute__((constructor)) static void tritonx_slow(void) { sleep(3); }
"""


@needs_natives
def test_a_slow_check_is_paid_once_per_file(tmp_path):
    import os
    import time

    from native_fixtures import INFO_STRUCT_C, build_library

    version = installed_triton().version
    slow = build_library(tmp_path, "libslow.so", INFO_STRUCT_C + SLOW_CONSTRUCTOR_C, "-DAPI_VERSION=2",
                         f'-DTRITON_VERSION_STR="{version}"', "-DRETURNED=&info")
    code = """
        import json, sys
        s = sys.modules["tritonx._startup"]
        print(json.dumps({"cached": s.cached, "ok": [r["ok"] for r in s.results]}))
        """
    env = {"TRITONX_NATIVE_PLUGINS": str(slow), "TRITONX_CACHE_DIR": str(tmp_path / "verdicts")}
    timings, outs = [], []
    for _ in range(2):
        start = time.perf_counter()
        outs.append(last_json(run_child(tmp_path, code, **env)))
        timings.append(time.perf_counter() - start)
    assert outs == [{"cached": [], "ok": [True]}, {"cached": [str(slow)], "ok": [True]}]
    assert timings[0] > 3.0 > timings[1]  # the probe loaded it (3 s constructor) once
    st = os.stat(slow)
    os.utime(slow, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # touched, same bytes: same verdict
    assert last_json(run_child(tmp_path, code, **env))["cached"] == [str(slow)]
    with open(slow, "ab") as f:  # other bytes (a rebuilt library): checked again
        f.write(b"\0")
    assert last_json(run_child(tmp_path, code, **env))["cached"] == []


@needs_natives
def test_a_verdict_file_someone_else_can_write_is_not_trusted(tmp_path):
    import glob
    import os

    good = installed_plugin()
    code = """
        import json, sys
        print(json.dumps(sys.modules["tritonx._startup"].cached))
        """
    env = {"TRITONX_NATIVE_PLUGINS": str(good), "TRITONX_CACHE_DIR": str(tmp_path / "verdicts")}
    assert last_json(run_child(tmp_path, code, **env)) == []
    (verdict,) = glob.glob(str(tmp_path / "verdicts" / "native-verdicts" / "*.json"))
    assert last_json(run_child(tmp_path, code, **env)) == [str(good)]
    os.chmod(verdict, 0o666)
    assert last_json(run_child(tmp_path, code, **env)) == []
