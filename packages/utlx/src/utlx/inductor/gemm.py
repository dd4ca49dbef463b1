"""utlx's Hopper GEMM as a choice of Inductor's mm / addmm / bmm in max-autotune, through Inductor's own hooks.

Where the choice comes in (read in torch 2.14.1's source, installed here: ``torch/_inductor/kernel/mm.py``
``tuned_mm`` / ``tuned_addmm``, ``kernel/bmm.py`` ``tuned_bmm``, ``choices.py``, ``heuristics/registry.py``):
every GEMM lowering builds its list of templates (aten, ``mm`` / ``bmm``, ``mm_persistent_tma``, ...) and asks
``V.choices.get_template_configs(kernel_inputs, templates, op_name)`` for the choices; that method runs
``InductorChoices._finalize_template_configs``, documented as *the* place to modify the template choices, and each
template's configurations come from the heuristic registered for ``(template uid, device, op)`` with
``register_template_heuristic``. So utlx needs no patch here:

* a subclass of the active ``InductorChoices`` (installed by :func:`install` with ``V.set_choices_handler`` for
  this thread and, where torch has it (2.14), ``config.inductor_choices_class`` for others, whose ``uuid()`` puts
  utlx's mode and template sources in the FX graph cache key) overrides ``_finalize_template_configs``: where
  Inductor offers its own Triton GEMM template (``mm`` for mm/addmm, ``bmm`` for bmm: that is, in max-autotune
  with the Triton backend) and the utlx kernel applies (:func:`why_not`), it appends the utlx template's choices
  (``allow``: they compete in the autotuning benchmark with cuBLAS and stock Triton, which keeps cuBLAS where it
  wins) or returns only them (``force``; addmm's separate aten call is emptied too);
* the utlx templates' configurations come from heuristics registered with ``register_template_heuristic`` under
  utlx's own template names (addmm's reuses Inductor's ``AddMMConfigMixin`` for its bias epilogue);
* ``override_best_choice`` (called after the benchmark; torch 2.14, not 2.11) counts whether a utlx choice won.

torch 2.11 (the GPU image): the same hooks (``_finalize_template_configs``, ``get_ktc``, the template heuristic
registry under ``torch._inductor.template_heuristics``) came with Inductor's template-choice refactor before
2.11, read in its wheel and run on the H200 (2026-12-04; CI's ``torch211`` env runs the compile tests on it);
``override_best_choice`` did not, and 2.11 pickles ``config.inductor_choices_class`` into the FX cache key (so the
class is importable by name). :func:`utlx.compat.inductor_gemm_hooks` checks each hook at :func:`install`.
With the integration off nothing of it is
installed: the handler and ``config.inductor_choices_class`` are put back as they were, and the registered
heuristics (keyed by utlx's template names, which stock Inductor never asks for) are inert.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from typing import Any

from tritonx.seams import Seam, read_slot, release_slot, write_slot

from utlx import compat
from utlx.inductor.applies import is_hopper, static_int
from utlx.inductor.gemm_template import BMM_SOURCE, MM_SOURCE, WS_MM_SOURCE

OPS = ("mm", "addmm", "bmm")
#: (BLOCK_M, BLOCK_N, BLOCK_K, NUM_STAGES, num_warps): utlx.matmul's H100/H200 persistent configurations that fit
#: one sm_90 block with Inductor's epilogue (which converts the accumulator through shared memory: 128x256x64 with
#: 3 stages compiles to 176 KB, 128x128x64 with 4 stages to 160 KB; see the compile test).
CONFIGS = (
    (128, 256, 64, 3, 8),
    (128, 128, 64, 4, 8),
    (128, 128, 64, 4, 4),
    (64, 256, 64, 4, 4),
)
#: The warp-specialized template's (mm / addmm only): num_warps is the producer's (the default task); the two
#: consumer warpgroups get ``CONSUMER_REGS`` registers each (``setmaxnreg``; 2 x 128 x 232 + 128 x 40 of the SM's
#: 64K). 128x256x64 with 3 stages compiles to 176 KB of shared memory, 128x128x64 with 4 to 144 KB.
WS_CONFIGS = (
    (128, 256, 64, 3, 4),
    (128, 128, 64, 4, 4),
)
CONSUMER_REGS = 232
MM_NAME = "utlx_hopper_tma_mm"
BMM_NAME = "utlx_hopper_tma_bmm"
WS_NAME = "utlx_hopper_ws_mm"
#: The grid's second axis (bmm's batch) is at most this on CUDA.
MAX_GRID_Y = 65535

_mode = "off"
_state = threading.local()
_installed: dict[str, Any] = {}
#: The choices class :func:`install` made (importable by this name, so that Inductor's cache key pickles it).
UtlxInductorChoices: type | None = None


def _choices_class_where() -> tuple[Any, str]:
    from torch._inductor import config

    return config, "inductor_choices_class"


#: torch 2.14's ``config.inductor_choices_class``: the class Inductor makes each thread's choices handler from.
CHOICES_CLASS = Seam("utlx.inductor-choices-class", where=_choices_class_where, slot=True,
                     reason="Inductor makes every thread's choices handler from this setting: utlx's GEMM choices "
                            "in all of them")


#: ``utlx.inductor.stats["gemm"]`` (this module owns it, so it needs nothing of the package above it): lowerings
#: that got utlx's choices (``added``, by op), that got only them (``forced``), autotuning picks that were utlx's
#: (``chosen``; None on a torch whose ``InductorChoices`` has no ``override_best_choice``, 2.11), and why the
#: others did not (``skipped``); ``unavailable`` says why the GEMM side is off where this torch lacks one of its
#: hooks.
STATS: dict[str, Any] = {"added": {}, "forced": {}, "chosen": 0, "skipped": {}}


def _skip(reason: str) -> None:
    skipped = STATS["skipped"]
    skipped[reason] = skipped.get(reason, 0) + 1


# --- the templates -------------------------------------------------------------------------------------------


def mm_grid(m: Any, n: Any, meta: dict[str, Any], *, cdiv: Any, min: Any) -> tuple[Any, Any, Any]:
    """Persistent: ``min(NUM_SMS, tiles)`` programs (the kernel strides its tile loop by ``NUM_SMS``)."""
    return min(meta["NUM_SMS"], cdiv(m, meta["BLOCK_M"]) * cdiv(n, meta["BLOCK_N"])), 1, 1


def bmm_grid(b: Any, m: Any, n: Any, meta: dict[str, Any], *, cdiv: Any, min: Any) -> tuple[Any, Any, Any]:
    """Persistent within a batch (``NUM_SMS`` is the SMs per batch there), one grid row per batch."""
    return min(meta["NUM_SMS"], cdiv(m, meta["BLOCK_M"]) * cdiv(n, meta["BLOCK_N"])), b, 1


@functools.cache
def templates() -> dict[str, Any]:
    """The ``TritonTemplate`` objects by name (made once: Inductor refuses a second template of one name)."""
    from torch._inductor.select_algorithm import SymbolicGridFn, TritonTemplate

    return {MM_NAME: TritonTemplate(name=MM_NAME, grid=SymbolicGridFn(mm_grid), source=MM_SOURCE),
            BMM_NAME: TritonTemplate(name=BMM_NAME, grid=SymbolicGridFn(bmm_grid), source=BMM_SOURCE),
            WS_NAME: TritonTemplate(name=WS_NAME, grid=SymbolicGridFn(mm_grid), source=WS_MM_SOURCE)}


#: The utlx templates each op gets, by name: the persistent one, and for mm / addmm the warp-specialized one.
OP_TEMPLATES = {"mm": (MM_NAME, WS_NAME), "addmm": (MM_NAME, WS_NAME), "bmm": (BMM_NAME,)}


def offered(op_name: str) -> int:
    """How many utlx choices a GEMM of ``op_name`` with M > 64 gets (every configuration of its templates)."""
    return sum(len(WS_CONFIGS if name == WS_NAME else CONFIGS) for name in OP_TEMPLATES[op_name])


# --- where it applies -----------------------------------------------------------------------------------------


def operand_layout(node: Any) -> tuple[bool | None, str | None]:
    """``(column_major, None)`` for an operand TMA can read (the last two dims row- or column-major, the leading
    dimension's stride, any batch stride and the offset 16-byte multiples), else ``(None, why)``."""
    sizes = [static_int(s) for s in node.get_size()]
    strides = [static_int(s) for s in node.get_stride()]
    offset = static_int(node.get_layout().offset)
    if any(v is None for v in (*sizes, *strides, offset)):
        return None, f"dynamic size or stride {list(node.get_size())}/{list(node.get_stride())}"
    if offset % 8 or any(s % 8 for s in strides[:-2]):
        return None, f"offset {offset} / batch stride {strides[:-2]} not 16-byte aligned"
    inner, outer = strides[-1], strides[-2]
    if inner == 1 and outer > 0 and outer % 8 == 0:
        return False, None
    if outer == 1 and inner > 0 and inner % 8 == 0:
        return True, None
    return None, f"strides {strides} (TMA: one unit stride, the other a multiple of 8 elements)"


def why_not(kernel_inputs: Any, op_name: str) -> str | None:
    """Why the utlx template does not apply to this GEMM (one line), or None when it does."""
    import torch

    mat1, mat2 = kernel_inputs.mat1mat2()
    if not is_hopper(mat1.get_device()):
        return "not an NVIDIA sm_90 device"
    dtype = mat1.get_dtype()
    if dtype not in (torch.float16, torch.bfloat16) or mat2.get_dtype() != dtype:
        return f"dtypes {dtype}/{mat2.get_dtype()} (fp16 or bf16, both the same)"
    out_dtype = kernel_inputs.output_layout().dtype
    if out_dtype != dtype:
        return f"output dtype {out_dtype} (the inputs' only)"
    for name, node in (("mat1", mat1), ("mat2", mat2)):
        _, reason = operand_layout(node)
        if reason is not None:
            return f"{op_name} {name}: {reason}"
    if op_name == "bmm" and static_int(mat1.get_size()[0]) > MAX_GRID_Y:
        return f"batch {mat1.get_size()[0]} > {MAX_GRID_Y}"
    return None


# --- configurations (registered template heuristics) ----------------------------------------------------------


def template_kwargs(m: int, n: int, batch: int, a_col: bool, b_col: bool, num_sms: int, ws: bool = False
                    ) -> list[dict[str, Any]]:
    """The template's keyword arguments, one dict per configuration: constexprs and launch options. Short
    problems (``M <= 64``) keep only the 64-row tile (and get no warp-specialized choice: its tiles are 128 rows);
    ``NUM_SMS`` is the SMs each batch's programs get."""
    if ws:
        configs, extra = (list(WS_CONFIGS) if m > 64 else []), {"CONSUMER_REGS": CONSUMER_REGS}
    else:
        configs, extra = [c for c in CONFIGS if m > 64 or c[0] == 64] or list(CONFIGS), {}
    sms = max(1, num_sms // max(1, batch))
    return [{"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "NUM_STAGES": stages, "NUM_SMS": sms,
             "A_COL": a_col, "B_COL": b_col, **extra, "num_stages": 1, "num_warps": warps}
            for bm, bn, bk, stages, warps in configs]


def _num_sms() -> int:
    from torch._inductor.utils import get_num_sms

    return get_num_sms()


@functools.cache
def heuristics() -> dict[tuple[str, str], type]:
    """Register (once) and return the heuristic classes of utlx's templates, by (template name, op)."""
    hooks = compat.inductor_gemm_hooks()
    base, addmm_mixin, register = hooks["TemplateConfigHeuristics"], hooks["AddMMConfigMixin"], hooks["register"]

    class UtlxGemmHeuristic(base):
        """utlx's persistent configurations for one GEMM (operand layouts read from the inputs)."""

        WS = False

        def _get_template_configs_impl(self, kernel_inputs: Any, op_name: str, **kwargs: Any) -> Any:
            mat1, mat2 = kernel_inputs.mat1mat2()
            a_col, _ = operand_layout(mat1)
            b_col, _ = operand_layout(mat2)
            size = mat1.get_size()
            batch = static_int(size[0]) if len(size) == 3 else 1
            yield from template_kwargs(static_int(size[-2]), static_int(mat2.get_size()[-1]), batch,
                                       bool(a_col), bool(b_col), _num_sms(), ws=self.WS)

    class UtlxAddmmHeuristic(addmm_mixin, UtlxGemmHeuristic):
        """addmm: Inductor's ``beta * bias + alpha * acc`` epilogue on the bias (its prefix input)."""

    class UtlxWsGemmHeuristic(UtlxGemmHeuristic):
        """The warp-specialized template's configurations."""

        WS = True

    class UtlxWsAddmmHeuristic(addmm_mixin, UtlxWsGemmHeuristic):
        """addmm on the warp-specialized template."""

    classes = {(MM_NAME, "mm"): UtlxGemmHeuristic, (MM_NAME, "addmm"): UtlxAddmmHeuristic,
               (BMM_NAME, "bmm"): UtlxGemmHeuristic, (WS_NAME, "mm"): UtlxWsGemmHeuristic,
               (WS_NAME, "addmm"): UtlxWsAddmmHeuristic}
    for (name, op), cls in classes.items():
        register(templates()[name].uid, "cuda", op_name=op)(cls)  # the uid is "triton::<name>"
    return classes


# --- the choices handler --------------------------------------------------------------------------------------


def _max_autotune() -> bool:
    from torch._inductor import config

    return bool(config.max_autotune or config.max_autotune_gemm)


def _stock_trigger(op_name: str) -> str:
    """The uid of the stock Triton template whose presence means Inductor is autotuning Triton GEMMs here."""
    hooks = compat.inductor_gemm_hooks()
    return (hooks["bmm_template"] if op_name == "bmm" else hooks["mm_template"]).uid


def finalize(handler: Any, stock: list[Any], kernel_inputs: Any, templates_in: list[Any], op_name: str) -> list[Any]:
    """The template choices (``KernelTemplateChoice``) Inductor gets for one ``get_template_configs`` call: ``stock``
    with utlx's appended (``allow``), utlx's alone (``force``), or ``stock`` unchanged where utlx does not apply.
    Nothing is rendered here (Inductor may still fix the output layout afterwards): :func:`count` counts what
    came out."""
    _state.offered = False
    if _mode == "off" or op_name not in OPS or not _max_autotune():
        return stock
    uids = {t.uid for t in templates_in}
    if _stock_trigger(op_name) not in uids:
        # force: addmm asks for its aten choices in a call of their own, before the one with the Triton templates
        if _mode == "force" and op_name == "addmm" and any(u.startswith("aten::") for u in uids) \
                and why_not(kernel_inputs, op_name) is None and _triton_allowed(kernel_inputs):
            return []
        return stock
    reason = why_not(kernel_inputs, op_name)
    if reason is not None:
        _skip(reason)
        return stock
    heuristics()
    mine = [ktc for name in OP_TEMPLATES[op_name] for ktc in handler.get_ktc(kernel_inputs, templates()[name], op_name)]
    _state.offered = bool(mine)
    if _mode == "force":
        return mine
    return [*stock, *mine]


def count(choices: list[Any], op_name: str) -> list[Any]:
    """Record in ``stats`` whether utlx's choices came out of the call :func:`finalize` offered them in; in force
    mode a utlx template that failed to render for every configuration is an error (there is nothing else)."""
    if not getattr(_state, "offered", False):
        return choices
    _state.offered = False
    stats = STATS
    if not any(is_utlx_choice(c) for c in choices):
        _skip("the utlx template failed to generate")
        if _mode == "force":
            raise RuntimeError(f"utlx.inductor: the utlx {op_name} template failed to generate for every "
                               "configuration (force mode has no other choice; see the log)")
        return choices
    stats["added"][op_name] = stats["added"].get(op_name, 0) + 1
    if _mode == "force":
        stats["forced"][op_name] = stats["forced"].get(op_name, 0) + 1
    return choices


def _triton_allowed(kernel_inputs: Any) -> bool:
    from torch._inductor.utils import use_triton_template

    return bool(use_triton_template(kernel_inputs.output_layout(), check_max_autotune=False))


def is_utlx_choice(choice: Any) -> bool:
    """True for a choice made from a utlx GEMM template (its ``KernelTemplateChoice`` annotation names it)."""
    ktc = (getattr(choice, "annotations", None) or {}).get("ktc")
    return getattr(getattr(ktc, "template", None), "name", None) in (MM_NAME, BMM_NAME, WS_NAME)


def _uuid() -> str:
    text = MM_SOURCE + BMM_SOURCE + WS_MM_SOURCE + repr((CONFIGS, WS_CONFIGS, CONSUMER_REGS))
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"utlx.inductor.gemm:{_mode}:{digest}"


def _choices_class(base: type) -> type:
    class UtlxInductorChoices(base):
        """Inductor's choices (or the ones installed before utlx's) plus utlx's GEMM templates."""

        def uuid(self) -> str:
            inner = getattr(super(), "uuid", None)
            return _uuid() + (f"+{inner()}" if callable(inner) else "")

        # the leading parameters as torch 2.14 names them; whatever follows goes through as given
        def _finalize_template_configs(self, template_choices: Any, kernel_inputs: Any, templates: Any,
                                       op_name: str, *args: Any, **kwargs: Any) -> list[Any]:
            stock = super()._finalize_template_configs(template_choices, kernel_inputs, templates, op_name, *args,
                                                       **kwargs)
            return finalize(self, stock, kernel_inputs, templates, op_name)

        def get_template_configs(self, kernel_inputs: Any, templates: Any, op_name: str, *args: Any,
                                 **kwargs: Any) -> list[Any]:
            return count(super().get_template_configs(kernel_inputs, templates, op_name, *args, **kwargs), op_name)

    if hasattr(base, "override_best_choice"):  # torch 2.14; 2.11 has no such hook: ``chosen`` stays None there
        def override_best_choice(self: Any, best_choice: Any, timings: Any) -> Any:
            best_choice = super(UtlxInductorChoices, self).override_best_choice(best_choice, timings)
            if is_utlx_choice(best_choice):
                STATS["chosen"] += 1
            return best_choice

        UtlxInductorChoices.override_best_choice = override_best_choice  # type: ignore[attr-defined]
    else:
        STATS["chosen"] = None

    return UtlxInductorChoices


def install(mode: str) -> None:
    """Put utlx's choices handler in place (once) and set the mode (``allow`` / ``force``)."""
    global _mode
    hooks = compat.inductor_gemm_hooks()
    _mode = mode
    if _installed:
        return
    from torch._inductor import config
    from torch._inductor.virtualized import V

    prior = V.choices
    base = type(prior) if isinstance(prior, hooks["InductorChoices"]) else hooks["InductorChoices"]
    cls = _choices_class(base)
    # Inductor pickles its config into the FX graph cache key, ``inductor_choices_class`` included (torch 2.11:
    # a local class does not pickle, and every compile bypassed the cache): the class is reachable by name here.
    global UtlxInductorChoices
    cls.__module__, cls.__qualname__ = __name__, "UtlxInductorChoices"
    UtlxInductorChoices = cls
    V.set_choices_handler(cls())  # in place at once (the context manager it returns is not needed)
    _installed.update(prior=prior, cls=cls)
    if hasattr(config, "inductor_choices_class"):  # a config of torch 2.14 (and the FX cache key's uuid() source)
        _installed["factory"] = read_slot(CHOICES_CLASS)
        write_slot(CHOICES_CLASS, cls)


def uninstall() -> None:
    """Take utlx's handler out: the prior handler (this thread) and ``config.inductor_choices_class`` return."""
    global _mode
    _mode = "off"
    if not _installed:
        return
    from torch._inductor.virtualized import V

    V.set_choices_handler(_installed["prior"])
    if "factory" in _installed and read_slot(CHOICES_CLASS) is _installed["cls"]:
        release_slot(CHOICES_CLASS, _installed["factory"])
    _installed.clear()
