"""``utlx.inductor``: utlx's Hopper kernels as choices of torch.compile's Inductor (issue 31).

Off by default. ``utlx.inductor.enable(mode="allow")`` (or ``UTLX_INDUCTOR=allow`` before the first
``import utlx.inductor``) lets the utlx FlexAttention forward template compete in Inductor's autotuning with the
stock template's configurations; ``mode="force"`` makes it the only choice wherever it applies. Where it does not
apply (not an sm_90 GPU, a dtype other than fp16/bf16, head dims other than 64/128 or unequal QK and V head dims,
BlockMask blocks not multiples of 128, decoding shapes, non-unit inner strides) the stock lowering runs unchanged.
The same switch adds utlx's Hopper GEMM template to Inductor's mm / addmm / bmm in max-autotune
(:mod:`utlx.inductor.gemm`: through Inductor's own ``InductorChoices`` and template heuristic hooks, no patch).
``disable()`` takes everything back out.

How, and why this way: torch 2.11's flex lowering (``torch._inductor.kernel.flex.flex_attention``) has no
extension point for extra template choices (``InductorChoices.get_flex_attention_fwd_configs`` only gives the
stock template's configurations). So two declared seams (:mod:`tritonx.seams`, installed by :func:`enable`,
uninstalled by :func:`disable`) wrap, in that module only: the stock template's ``maybe_append_choice`` (to
record what the lowering passes it: inputs, layout, the score_mod/mask_mod subgraphs, kernel options) and the
module's ``autotune_select_algorithm`` name (to add the utlx choice to the list). Nothing else of Inductor
changes, so with the integration off the generated code is the stock one byte for byte. A third seam
(``utlx.inductor-flex-cpu-note``) only counts the flex lowerings of CPU queries in ``stats`` (they never reach a
template choice), so ``enable()`` on a CPU says why it did nothing. The backward pass
keeps the stock template: it reads the logsumexp the utlx forward writes exactly as the stock one does.
While the integration is on, torch.compile's cache keys carry utlx's mode and code (:mod:`utlx.inductor.cache_key`,
through torch's ``cache_key_tag``): no FX graph cache entry, local or remote, crosses between on and off, modes,
or utlx versions.
"""

from __future__ import annotations

import sys
import threading
import warnings
from typing import Any

from tritonx.seams import Seam, install, is_installed, uninstall

from utlx import compat
from utlx.inductor.gemm import STATS as GEMM_STATS

MODES = ("off", "allow", "force")
#: Environment knob read once at import: ``allow`` / ``force`` switch the integration on.
ENV = "UTLX_INDUCTOR"

_state = threading.local()
_mode = "off"
#: How many flex lowerings got the utlx choice (``added``) and why the others did not (reason -> count): what
#: the benchmark and the GPU tests read to know the utlx kernel really ran.
stats: dict[str, Any] = {"added": 0, "skipped": {}}
#: The GEMM templates' (:data:`utlx.inductor.gemm.STATS`).
stats["gemm"] = GEMM_STATS


def mode() -> str:
    """The current mode: ``off``, ``allow`` or ``force``."""
    return _mode


def _record_append(original: Any) -> Any:
    def maybe_append_choice(choices: list[Any], **kwargs: Any) -> Any:
        if not hasattr(_state, "flex_kwargs"):
            _state.flex_kwargs = kwargs  # the first configuration's: inputs, layout, subgraphs, options
        return original(choices, **kwargs)

    return maybe_append_choice


def _add_choices(original: Any) -> Any:
    def autotune_select_algorithm(name: str, choices: list[Any], *args: Any, **kwargs: Any) -> Any:
        recorded = getattr(_state, "flex_kwargs", None)
        if hasattr(_state, "flex_kwargs"):
            del _state.flex_kwargs
        if name == "flex_attention" and recorded is not None and _mode != "off":
            from utlx.inductor import flex

            reason = flex.why_not(recorded)
            mine = [] if reason is not None else flex.choices(recorded)
            if not mine:
                reason = reason or "the utlx template failed to generate"
                stats["skipped"][reason] = stats["skipped"].get(reason, 0) + 1
            else:
                stats["added"] += 1
                choices = mine if _mode == "force" else [*choices, *mine]
        return original(name, choices, *args, **kwargs)

    return autotune_select_algorithm


#: The ``stats["skipped"]`` key of a flex lowering on the CPU.
CPU_REASON = "cpu device: Inductor's C++ flex lowering runs (utlx has no CPU kernel)"


def _count_cpu(original: Any) -> Any:
    def lower_cpu(*args: Any, **kwargs: Any) -> Any:
        stats["skipped"][CPU_REASON] = stats["skipped"].get(CPU_REASON, 0) + 1
        return original(*args, **kwargs)  # the stock CPU lowering, same arguments: the stock code

    return lower_cpu


def _cpu_where() -> tuple[Any, str]:
    return compat.inductor_flex_module(), "lower_cpu"


def _template_where() -> tuple[Any, str]:
    return compat.inductor_flex_module().flex_attention_template, "maybe_append_choice"


def _select_where() -> tuple[Any, str]:
    return compat.inductor_flex_module(), "autotune_select_algorithm"


SEAMS: tuple[Seam, ...] = (
    Seam("utlx.inductor-flex-record", where=_template_where, make=_record_append,
         reason="torch's flex lowering has no hook for extra template choices: record what it gives its template"),
    Seam("utlx.inductor-flex-choices", where=_select_where, make=_add_choices,
         reason="torch's flex lowering has no hook for extra template choices: add utlx's before autotuning"),
    Seam("utlx.inductor-flex-cpu-note", where=_cpu_where, make=_count_cpu,
         needed=lambda: hasattr(compat.inductor_flex_module(), "lower_cpu"),
         reason="torch's flex lowering sends CPU queries to its C++ template first: count them in stats, no change"),
)


def enable(mode: str = "allow") -> None:
    """Switch the integration on (``allow``: compete in autotuning; ``force``: the utlx template wherever it
    applies). Raises if this torch's Inductor is not one utlx knows (:func:`utlx.compat.inductor_flex_module`)."""
    global _mode
    if mode not in ("allow", "force"):
        raise ValueError(f"utlx.inductor.enable: mode must be 'allow' or 'force', got {mode!r}")
    compat.inductor_flex_module()  # the version check, before anything is installed
    from utlx.inductor import cache_key

    cache_key.check()  # no integration whose compiles torch's caches cannot tell apart
    for seam in SEAMS:
        if not is_installed(seam.name):
            install(seam)
    from utlx.inductor import gemm

    try:
        gemm.install(mode)
    except RuntimeError as e:  # a torch without one of the GEMM hooks: the FlexAttention side still works
        stats["gemm"]["unavailable"] = str(e)
        warnings.warn(f"utlx.inductor: the GEMM templates are off: {e}", stacklevel=2)
    cache_key.apply(mode, _choices_now())  # torch.compile's caches key what this mode and these templates compile
    _mode = mode


def _choices_now() -> str:
    """The template choices as configured in this process (module attributes a user may change, e.g.
    ``gemm.WS_CONFIGS = ()``): part of the cache key tag."""
    from utlx.inductor import flex, gemm

    return repr((flex.VARIANTS, flex.DEEP_VARIANTS, gemm.CONFIGS, gemm.WS_CONFIGS, gemm.CONSUMER_REGS))


def disable() -> None:
    """Switch the integration off and put stock Inductor back as it was."""
    global _mode
    _mode = "off"
    if "utlx.inductor.gemm" in sys.modules:
        sys.modules["utlx.inductor.gemm"].uninstall()
    if "utlx.inductor.cache_key" in sys.modules:
        sys.modules["utlx.inductor.cache_key"].remove()
    for seam in reversed(SEAMS):
        if is_installed(seam.name):
            uninstall(seam)


def _from_env() -> None:
    from utlx.settings import settings

    value = settings.inductor
    if value != "off":
        enable(value)


# Only as ``utlx.inductor``: torch >= 2.14 probes ``triton.language.extra.tlx.inductor.registry`` while Inductor
# itself is being imported. utlx's alias refuses that name (utlx.language._alias: not one of Meta's tlx
# submodules), so this file is not run a second time under it; should a copy be loaded under another name by
# other means, it must not act (the real one enables once Inductor is whole).
if __name__ == "utlx.inductor":
    _from_env()
