"""utlx's changes to stock Triton are declared seams (issue 30): installed by tritonx.seams when the utlx plugin is
enabled (once, however often it is enabled), undone when it is disabled, listed by ``tritonx doctor``.

The switching tests run in a child process: the test session's own runtimes enable utlx in ways a test cannot
undo, and "disabled leaves stock Triton" must be seen from a clean start.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tritonx
from seam_scan import SEAM_ATTRIBUTES
from tritonx import seams
from utlx import seams as utlx_seams
from utlx.plugin import ensure_active

SRC = [str(Path(__file__).resolve().parents[3] / sub / "src") for sub in ("utlx", "core")]

#: What utlx changes, by seam name (the issue counted ~15; the fork's annotation rule makes 16).
EXPECTED = {
    "utlx.interpreter-patch-lang", "utlx.interpreter-ast-transformer", "utlx.interpreter-bf16-dot",
    "utlx.config-init", "utlx.config-all-kwargs", "utlx.config-str",
    "utlx.autotuner-init", "utlx.autotuner-bench", "utlx.launch-options", "utlx.cuda-options-ctas-per-cga",
    "utlx.codegen-annassign",
    "utlx.codegen-listcomp",
    "utlx.load-cache-modifier", "utlx.aggregate-init", "utlx.gpu-target-is-cuda-backend", "utlx.codegen-with",
    # the interpreter as the GPU computes (Blackwell tutorials), and the fork's e8m0 argument dtype
    "utlx.interpreter-shl-width", "utlx.interpreter-lshr-width", "utlx.interpreter-ashr-width",
    "utlx.interpreter-inline-asm", "utlx.interpreter-fp8-rounding", "utlx.e8m0-argument-dtype",
    # clusters under the interpreter (ctas_per_cga reaches the cluster model)
    "utlx.interpreter-cluster-launch",
}


def _child(code: str, **env: str) -> dict:
    done = subprocess.run([sys.executable, "-c", f"import sys; sys.path[:0] = {SRC!r}\n" + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=300, env={"PATH": "/usr/bin:/bin", **env})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_utlx_declares_each_of_its_seams_once_with_versions_and_a_reason():
    declared = utlx_seams.tritonx_seams()
    names = [s.name for s in declared]
    assert set(names) == EXPECTED and len(names) == len(set(names))
    for seam in declared:
        assert seam.owner_name == "utlx" and seam.reason.strip() and seam.version_text()


def test_every_attribute_utlx_changes_is_one_the_source_scan_looks_for():
    """Else the scan of tritonx's test_seams could miss a direct write to it."""
    for seam in utlx_seams.tritonx_seams():
        if seam.applies():
            _, attribute = seam.where()
            assert attribute in SEAM_ATTRIBUTES or attribute.startswith("__"), seam.name


def test_the_seams_that_apply_here_are_installed_and_in_place_while_utlx_is_enabled():
    assert ensure_active() == "tritonx"
    for seam in utlx_seams.tritonx_seams():
        if seam.applies():
            assert seams.is_installed(seam.name) and seams.in_place(seam.name), seam.name
        else:
            assert not seams.is_installed(seam.name), seam.name


def test_doctor_lists_utlx_seams():
    from tritonx.cli.doctor_cmd import collect

    assert ensure_active() == "tritonx"
    listed = {s["name"]: s for s in collect()["seams"]}
    config = listed["utlx.config-init"]
    assert config["where"] == "triton.runtime.autotuner.Config.__init__" and config["versions"] == "3.6-3.9"
    assert "ctas_per_cga" in config["reason"]
    assert {n for n in EXPECTED if next(s for s in utlx_seams.tritonx_seams() if s.name == n).applies()} <= set(listed)


def test_enabled_twice_patches_once_and_disabled_gives_triton_its_own_attributes_back():
    out = _child("""
        import json, triton, utlx, tritonx
        from tritonx import seams
        from triton.backends.compiler import GPUTarget
        from triton.compiler.code_generator import CodeGenerator
        from triton.runtime.autotuner import Config

        stock_init, stock_with = seams.original("utlx.config-init"), seams.original("utlx.codegen-with")
        wrapped = Config.__init__
        tritonx.enable_plugins(["utlx"]); utlx.plugin.ensure_active()  # enabled again: nothing more
        once = Config.__init__ is wrapped and Config.__init__.__wrapped__ is stock_init and \\
            getattr(stock_init, "__tritonx_seam__", None) is None
        tritonx.disable_plugins(["utlx"])
        off = {"init": Config.__init__ is stock_init, "with": CodeGenerator.visit_With is stock_with,
               "is_cuda_backend": "is_cuda_backend" in vars(GPUTarget),
               "utlx_seams": [s["name"] for s in seams.report() if s["owner"] == "utlx"]}
        utlx.plugin.ensure_active()
        print(json.dumps({"once": once, "off": off, "back": Config.__init__ is not stock_init and
                          triton.Config({}, ctas_per_cga=(1, 1, 1)).ctas_per_cga == (1, 1, 1)}))
    """)
    assert out["once"] is True
    assert out["off"] == {"init": True, "with": True, "is_cuda_backend": False, "utlx_seams": []}
    assert out["back"] is True


@pytest.mark.parametrize("env", [{"TRITON_INTERPRET": "1"}, {"UTLX_DISABLE": "1"}, {}])
def test_the_seams_follow_what_import_utlx_switches_on(env):
    """Compiling: the plugin is enabled and brings every seam. Interpreting: the seams, without enabling the
    plugin's pipeline. Disabled by the environment: none."""
    out = _child("""
        import json, utlx, tritonx
        from tritonx import seams
        print(json.dumps({"utlx": sorted(s["name"] for s in seams.report() if s["owner"] == "utlx"),
                          "enabled": tritonx.is_plugin_enabled("utlx")}))
    """, **env)
    applicable = sorted(s.name for s in utlx_seams.tritonx_seams() if s.applies())
    if "UTLX_DISABLE" in env:
        assert out == {"utlx": [], "enabled": False}
    else:
        assert out == {"utlx": applicable, "enabled": "TRITON_INTERPRET" not in env}


def test_disabling_utlx_at_run_time_in_this_process_keeps_stock_behaviour_and_enabling_restores_it():
    import triton

    assert ensure_active() == "tritonx"
    tritonx.disable_plugins(["utlx"])
    try:
        with pytest.raises(TypeError, match="ctas_per_cga"):
            triton.Config({}, ctas_per_cga=(1, 1, 1))
    finally:
        assert ensure_active() == "tritonx"
    assert seams.is_installed("utlx.config-init")
    assert triton.Config({}, ctas_per_cga=(1, 1, 1)).ctas_per_cga == (1, 1, 1)
