"""utlx as a tritonx plugin (entry point ``tritonx.plugins: utlx = utlx.plugin:plugin``).

Why a plugin: tritonx owns Triton's single stages hook. utlx contributes one pipeline:

* after ``convert-triton-to-tritongpu``: lower the TLX placeholders to TTGIR (``utlx.compiler.lowering``);
* after ``tritongpu-pipeline`` (NVIDIA) and ``tritonamdgpu-pipeline`` (AMD): put back the async-copy wait
  counts the software pipeliner reset;
* in place of ``tritonamdgpu-canonicalize-pointers``: the stock pass, skipped for modules holding buffer ops a
  TLX kernel built itself (``utlx.compiler.amd_passes``);
* after ``tritongpu-reduce-data-duplication``: in AMD TLX kernels, the LDS round trips that pass made for MFMA
  operands become layout conversions again (``amd_passes.dot_operand_conversions_pass``);
* after the TTGIR stage's last ``symbol-dce``: AMD's warp-pipeline pass for kernels with
  ``warp_pipeline_stage`` borders, and the ``dump_layout``/``assert_same_layout`` reports.

Every pass returns at once for kernels without TLX ops, so the plugin is enabled by default and plain
Triton kernels compile byte-identically. utlx needs tritonx-core (a declared dependency): tritonx owns
Triton's stages hook, so utlx never sets or chains it itself.
"""

from __future__ import annotations

from typing import Any

from tritonx.settings import settings as tritonx_settings

from utlx.__about__ import __version__
from utlx.compiler.amd_passes import canonicalize_pointers_pass, dot_operand_conversions_pass, end_of_ttgir_pass
from utlx.compiler.stages import LOWERING_VERSION, lowering_pass, restore_waits_pass
from utlx.settings import settings

NAME = "utlx"
DESCRIPTION = ("TLX (Triton Language Extensions) ops on stock Triton: shared memory, cp.async, wgmma, TMA, mbarriers; "
               "AMD buffer ops, direct-to-LDS copies, warp pipelines")


def build_pipeline() -> Any:
    """The tritonx ``Pipeline`` that compiles TLX ops."""
    import tritonx

    p = tritonx.Pipeline(NAME, description=DESCRIPTION, cache_key=lambda: LOWERING_VERSION)
    p.insert_after("convert-triton-to-tritongpu", lowering_pass, stage="ttgir", required=False)  # Gluon kernels skip it
    p.insert_after("tritongpu-pipeline", restore_waits_pass, stage="ttgir", required=False)
    p.insert_after("tritonamdgpu-pipeline", restore_waits_pass, stage="ttgir", required=False)
    p.replace("tritonamdgpu-canonicalize-pointers", canonicalize_pointers_pass, stage="ttgir", required=False)
    p.insert_after("tritongpu-reduce-data-duplication", dot_operand_conversions_pass, stage="ttgir",
                   required=False)
    p.insert_after("symbol-dce", end_of_ttgir_pass, stage="ttgir", occurrence=-1, required=False)
    return p


def build_plugin() -> Any:
    """The tritonx ``Plugin`` object (enabled by default: it only acts on kernels that use TLX ops)."""
    import tritonx

    return tritonx.Plugin(NAME, version=__version__, description=DESCRIPTION, pipelines=[build_pipeline()],
                          cache_key=lambda: LOWERING_VERSION, default_enabled=True)


plugin = build_plugin()

#: tritonx's plugin registry once looked up (keeps the already-enabled path free of imports)
_REGISTRY: list[Any] = []


def disabled_by_environment() -> bool:
    """``UTLX_DISABLE=1``, or a ``TRITONX_PLUGINS`` list that leaves utlx out, switches utlx off."""
    if settings.disable:
        return True
    return not tritonx_settings.plugins.allows(NAME, default_enabled=True)


def enabled() -> bool:
    """Is utlx switched on in this process? Off when the environment disables it, and, once tritonx manages
    utlx (:func:`ensure_active` registered it), whenever tritonx has it disabled."""
    if disabled_by_environment():
        return False
    return _REGISTRY[0].is_enabled(NAME) if _REGISTRY else True


def ensure_active() -> str:
    """Make sure TLX kernels compile in this process; returns ``"tritonx"`` or ``"disabled"``.

    Called by ``import utlx`` and by every ``utlx.matmul``, so the common case (already enabled) is one
    dict lookup; otherwise it re-enables the plugin if someone switched it off, unless the environment
    disables utlx.
    """
    if _REGISTRY and _REGISTRY[0].is_enabled(NAME):
        return "tritonx"
    if disabled_by_environment():
        return "disabled"
    import tritonx
    from tritonx.plugins import registry

    if not _REGISTRY:
        _REGISTRY.append(registry)
    if not registry.is_enabled(NAME):
        try:
            tritonx.get_plugin(NAME)
        except Exception:
            tritonx.register_plugin(plugin)
        tritonx.enable_plugins([NAME])
    return "tritonx"
