"""Every environment variable utlx reads, typed, in one place (fields of :mod:`tritonx.settings`' kinds).

utlx reads no variable anywhere else: one rule for booleans and lists across both packages, and one
table (``README.md``'s environment table) describing them all. ``TRITONX_PLUGINS`` is tritonx's setting
(utlx asks it whether the list leaves utlx out), and whether Triton interprets kernels is Triton's own
knob (``utlx.compat.interpreting``).
"""

from __future__ import annotations

from tritonx.settings import FALSE_WORDS, BoolField, FloatField, ParsedField, Settings, SettingsError, StrField
from tritonx.settings import settings as tritonx_settings

#: ``settings.matmul_cache`` when ``UTLX_MATMUL_CACHE`` switches the tuning cache off.
OFF = "off"


def _tuning_cache_file(text: str | None) -> str | None:
    """None when unset (the default file), :data:`OFF` for ``''``/a false word, else the path as given."""
    if text is None:
        return None
    if text.strip().lower() in ("", *FALSE_WORDS):
        return OFF
    return text.strip()


def _cache_dir(text: str | None) -> str:
    return text if text else tritonx_settings.user_cache_dir("utlx")


def _tuning_fields(api: str, unit: str, budget_s: float, when: str) -> tuple[FloatField, ParsedField]:
    """The two settings every tuned host API (``utlx.matmul``, ``utlx.attention``) has: how long it may tune one
    ``unit`` (seconds, ``budget_s`` by default, used ``when`` the call names none) and the file of its winners."""
    name = api.upper()
    budget = FloatField(
        f"UTLX_{name}_TUNE_BUDGET_S", budget_s, minimum=0.0,
        doc=f"seconds `utlx.{api}` may spend tuning one {unit} (when {when}); a tuning cut short by it is "
            "remembered as partial and tuned again by a later process")
    cache = ParsedField(
        f"UTLX_{name}_CACHE", _tuning_cache_file, default=f"`$UTLX_CACHE_DIR/{api}-tuning.json`",
        doc=f"the file where `utlx.{api}` remembers its tuning winners; `0`/`off`/empty switches the cache off")
    return budget, cache


INDUCTOR_MODES = ("off", "allow", "force")


def _inductor_mode(text: str | None) -> str:
    """``UTLX_INDUCTOR``: unset, empty, ``0`` or ``off`` is off; else ``allow`` or ``force`` (one-line error)."""
    value = (text or "").strip().lower()
    if value in ("", "0"):
        return "off"
    if value not in INDUCTOR_MODES:
        raise SettingsError(f"UTLX_INDUCTOR={text!r}: expected one of {', '.join(INDUCTOR_MODES)}")
    return value


class UtlxSettings(Settings):
    """The variables utlx reads."""

    disable = BoolField(
        "UTLX_DISABLE", False,
        doc="`import utlx` does not switch its lowering pipeline on (also off when `TRITONX_PLUGINS` leaves "
            "`utlx` out)")
    hazard_checks = BoolField(
        "UTLX_HAZARD_CHECKS", True, doc="utlx's hazard checker under `TRITON_INTERPRET=1` (synchronisation itself "
                                        "is modelled either way)")
    async_load_fallback = BoolField(
        "UTLX_ASYNC_LOAD_FALLBACK", True,
        doc="an `async_load` whose rows cannot be proven aligned for cp.async compiles to a synchronous load with "
            "a performance warning; `0` makes it a compile error instead (read once at import: it enters the "
            "compile cache key)")
    strict_amd = BoolField(
        "UTLX_STRICT_AMD", False,
        doc="an AMD TLX op that stock Triton can compile only to slower code than written (a dropped register "
            "pin, a staged direct-to-LDS copy, an ignored schedule hint) is a compile error instead of a "
            "performance warning (read once at import: it enters the compile cache key)")
    matmul_ws = BoolField(
        "UTLX_MATMUL_WS", True,
        doc="the warp-specialized kernels (cooperative and pingpong) are among `utlx.matmul`'s candidates")
    pdl = BoolField(
        "UTLX_PDL", False,
        doc="`utlx.matmul` and `utlx.attention` launch their Hopper kernels with programmatic dependent launch "
            "(the next call's CTAs are dispatched while the previous kernel drains). Off by default: on the H200 it "
            "was no faster in a plain loop of GEMMs (geomean -0.7% fp16, -1.2% bf16; `docs/benchmarks.md`). "
            "Read when a problem is first planned: earlier plans keep their launch mode")
    matmul_tune_budget_s, matmul_cache = _tuning_fields("matmul", "shape class", 120.0, "`tune()` is given no budget")
    attention_tune_budget_s, attention_cache = _tuning_fields("attention", "problem class", 60.0, "given no budget")
    attention_config = StrField(
        "UTLX_ATTENTION_CONFIG", doc="force one `utlx.attention` configuration by id (skips tuning)")
    inductor = ParsedField(
        "UTLX_INDUCTOR", _inductor_mode, default="off",
        doc="`import utlx` switches the torch.compile integration on (`utlx.inductor.enable`): `allow` adds utlx's "
            "FlexAttention and GEMM (mm/addmm/bmm, max-autotune) templates to Inductor's autotuning, `force` always "
            "uses them where they apply; `off`")
    cache_dir = ParsedField(
        "UTLX_CACHE_DIR", _cache_dir, default="`$XDG_CACHE_HOME/utlx`, else `~/.cache/utlx`",
        doc="utlx's cache folder (the tuning caches' home)")


#: The process's utlx settings.
settings = UtlxSettings()
