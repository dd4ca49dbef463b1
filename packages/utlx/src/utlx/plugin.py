"""utlx as a tritonx plugin (entry point ``tritonx.plugins: utlx = utlx.plugin:plugin``).

Why a plugin: tritonx owns Triton's single stages hook. utlx contributes one pipeline, its ``tritonx.dsl``
language's (``utlx.language._op.LANGUAGE``):

* after ``convert-triton-to-tritongpu``: lower the TLX placeholders to TTGIR (``utlx.compiler.common.lowering``);
* after ``tritongpu-pipeline`` (NVIDIA) and ``tritonamdgpu-pipeline`` (AMD): put back the async-copy wait
  counts the software pipeliner reset;
* in place of ``tritonamdgpu-canonicalize-pointers``: the stock pass, skipped for modules holding buffer ops a
  TLX kernel built itself (``utlx.compiler.amd.passes``);
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

import utlx.compiler  # noqa: F401  (gives the language its lowerings and passes before it is built)
from utlx import seams
from utlx.__about__ import __version__
from utlx.language._op import DESCRIPTION, LANGUAGE
from utlx.switch import _REGISTRY, NAME, disabled_by_environment, enabled

__all__ = ["NAME", "build_pipeline", "build_plugin", "disabled_by_environment", "enabled", "ensure_active", "plugin",
           "switch_on_seams"]


def build_pipeline() -> Any:
    """The tritonx ``Pipeline`` that compiles TLX ops: the ``utlx`` language's (``tritonx.dsl``)."""
    return LANGUAGE.pipeline()


def build_plugin() -> Any:
    """The tritonx ``Plugin`` object (enabled by default: it only acts on kernels that use TLX ops). Its hooks
    (:mod:`utlx.seams`) declare the seams of Triton utlx needs; tritonx installs them when it enables utlx."""
    return LANGUAGE.plugin(version=__version__, description=DESCRIPTION, default_enabled=True, hooks=seams)


plugin = build_plugin()


def ensure_active() -> str:
    """Make sure TLX kernels compile in this process; returns ``"tritonx"`` or ``"disabled"``.

    Called by ``import utlx`` and by every ``utlx.matmul``, so the common case (already enabled) is one
    dict lookup; otherwise it re-enables the plugin if someone switched it off, unless the environment
    disables utlx.
    """
    if _REGISTRY and _REGISTRY[0](NAME):
        return "tritonx"
    if disabled_by_environment():
        return "disabled"
    import tritonx

    if not _REGISTRY:
        _REGISTRY.append(tritonx.is_plugin_enabled)
    if not tritonx.is_plugin_enabled(NAME):
        try:
            tritonx.get_plugin(NAME)
        except Exception:
            tritonx.register_plugin(plugin)
        tritonx.enable_plugins([NAME])
    return "tritonx"


def switch_on_seams() -> None:
    """Under ``TRITON_INTERPRET=1`` (nothing compiles, so the plugin's pipeline is not activated): install
    utlx's seams through :mod:`tritonx.seams` as enabling the plugin would, unless the environment disables
    utlx."""
    if disabled_by_environment():
        return
    import tritonx.seams

    tritonx.seams.switch_on(NAME, seams)
