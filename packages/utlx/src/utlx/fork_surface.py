"""The Triton surface that TLX code uses and only Meta's fork has, accepted while utlx is enabled.

TLX tutorials construct ``triton.Config(..., ctas_per_cga=(n, 1, 1))`` at import time (a TypeError on stock
Triton) and Meta's own helpers call ``GPUTarget.is_cuda_backend()``. The AMD tutorials pass options that only
the fork's ``HIPOptions`` has (``reverse_local_assignment=True``, ``enable_sched_group_barrier_scheduler=True``,
``llvm_fn_attrs=...`` before 3.8: stock raises "Keyword argument ... was specified but unrecognised"): they are
LLVM register-allocation and scheduling controls of the fork, so on AMD launches they are checked and then
dropped (no effect on stock Triton, documented in docs/utlx.md). And one of them builds tuples with a list
comprehension over ``range(N)`` (``[tlx.local_alloc(...) for _ in range(n)]``), which the fork's code
generator accepts and stock's does not (tuple comprehensions only): utlx accepts a comprehension over a
``range`` of compile-time ints, as the fork does. And some list autotune ``key`` names that are not kernel
arguments, which the fork ignores (as Triton 3.6-3.8 do) and Triton 3.9 rejects at import: utlx leaves such
names out of the key on 3.9, as the others never used them. The AMD tutorials also load with
``cache_modifier=".cs"`` (streaming), which loads accept from Triton 3.8 on: on 3.6 and 3.7 utlx maps it to the
same ``CACHE_MODIFIER.CS`` 3.8 uses (the AMDGCN is 3.8's, ``sc0 nt``; NVIDIA's 3.6/3.7 lowering of a load then
drops the hint). And ``@aggregate`` classes without their own ``__init__`` (3.8 builds one from the field
annotations; 3.6/3.7 fail with "Unsupported function referenced: object.__init__") get that constructor on
3.6/3.7 too. And a fork kernel may annotate a variable with a Python type (``ps: tuple = ()``), which stock
Triton evaluates and rejects: such an annotation is accepted and ignored, as the fork does. This module makes the
wrappers; they are installed as declared seams (:mod:`utlx.seams`, through :mod:`tritonx.seams`) when the utlx
plugin is enabled and undone when it is disabled (``tritonx.disable_plugins``); with utlx disabled in the
environment (``UTLX_DISABLE=1``, ``TRITONX_PLUGINS`` without utlx) nothing is installed at all. Each wrapper also
checks :func:`utlx.switch.enabled` when it is used, so stock Triton's behaviour and errors come back the moment
utlx is switched off. Where the classes and methods live per Triton version is in :mod:`utlx.compat`.

``ctas_per_cga=(x, y, z)`` asks for thread-block clusters in TLX's convention: the grid counts CTAs and each
CTA is its own program (``tl.program_id`` is the CTA's id, its tensors its own). Stock Triton's ``num_ctas`` is
another model (it splits one program's tensors across the cluster's CTAs and forms clusters only along x), so
utlx does not use it: the cluster shape rides on the compile options instead (``options.ctas_per_cga``, in
the options' hash, so each shape is its own compiled kernel on disk and in memory, and in the kernel's
metadata as in Meta's build) and :mod:`utlx.compiler.nvidia.cluster_launch` writes it into the PTX entry as
``.explicitcluster`` + ``.reqnctapercluster x, y, z``. A kernel with a compile-time cluster shape is launched
in clusters of that shape by the CUDA driver itself, in x, y and z, through stock Triton's unchanged launcher
(as ``__cluster_dims__`` does in CUDA C++). Clusters need sm_90 or newer; AMD targets refuse clusters of more
than one CTA (:class:`UtlxClusterLaunchError`). Under the interpreter (``TRITON_INTERPRET=1``) the autotuner
keeps cluster configs: :mod:`utlx.interpreter.cluster` runs the CTAs of each cluster together. Clusters of one CTA
(``(1, 1, 1)``) are exactly a plain launch everywhere.
"""

from __future__ import annotations

import ast
import functools
import warnings
from collections.abc import Callable
from typing import Any

from tritonx import seams
from tritonx.seams import Seam

from utlx import compat as _compat
from utlx.language.clusters import UtlxClusterLaunchError, cluster_shape, cluster_size
from utlx.switch import enabled

CTAS_PER_CGA = "ctas_per_cga"


def _cluster_error(dims: tuple[int, int, int], where: str, why: str) -> UtlxClusterLaunchError:
    size = cluster_size(dims)
    return UtlxClusterLaunchError(f"{where}: ctas_per_cga={dims} asks for thread-block clusters of {size} CTAs, {why}")


_Make = Callable[[Callable[..., Any]], Callable[..., Any]]


def _wrapping(make: _Make) -> _Make:
    """``make(original)`` whose replacement carries the original's name and docstring (``functools.wraps``)."""

    @functools.wraps(make)
    def build(original: Callable[..., Any]) -> Callable[..., Any]:
        return functools.update_wrapper(make(original), original)

    return build


# ------------------------------------------------------------------------------------ triton.Config


@_wrapping
def _config_init(original: Callable[..., Any]) -> Callable[..., Any]:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if CTAS_PER_CGA not in kwargs or not enabled():
            original(self, *args, **kwargs)  # stock Triton: an unknown ctas_per_cga is its TypeError
            self.ctas_per_cga = None
            return
        value = kwargs.pop(CTAS_PER_CGA)
        original(self, *args, **kwargs)
        self.ctas_per_cga = None if value is None else cluster_shape(value, "triton.Config")

    return __init__


@_wrapping
def _config_all_kwargs(original: Callable[..., Any]) -> Callable[..., Any]:
    def all_kwargs(self: Any) -> dict[str, Any]:
        out = original(self)
        dims = getattr(self, CTAS_PER_CGA, None)
        # a cluster of one CTA is a plain launch: leave it out, so the config equals one without it
        if dims is not None and cluster_size(dims) > 1 and enabled():
            out[CTAS_PER_CGA] = dims
        return out

    return all_kwargs


@_wrapping
def _config_str(original: Callable[..., Any]) -> Callable[..., Any]:
    def __str__(self: Any) -> str:
        text = original(self)
        dims = getattr(self, CTAS_PER_CGA, None)
        return f"{text}, ctas_per_cga: {dims}" if dims is not None else text

    return __str__


# ---------------------------------------------------------------------------------------- autotuner


@_wrapping
def _autotuner_init(original: Callable[..., Any]) -> Callable[..., Any]:
    def __init__(self: Any, fn: Any, arg_names: Any, configs: Any, key: Any, *args: Any, **kwargs: Any) -> None:
        if enabled() and _compat.AUTOTUNER_REJECTS_UNKNOWN_KEYS and key:
            key = [name for name in key if name in arg_names]  # never part of a tuning key before 3.9
        original(self, fn, arg_names, configs, key, *args, **kwargs)

    return __init__


def _utlx_compile_error(exc: BaseException) -> BaseException | None:
    """The utlx compile or cluster-launch error behind ``exc`` (a CompilationError or a pipeline's
    PassFailedError wraps it), if any."""
    from utlx.compiler.common.errors import UtlxCompileError

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, UtlxCompileError | UtlxClusterLaunchError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


@_wrapping
def _bench(original: Callable[..., Any]) -> Callable[..., Any]:
    def _bench(self: Any, *args: Any, **kwargs: Any) -> list[float]:
        try:
            return original(self, *args, **kwargs)
        except Exception as exc:
            found = _utlx_compile_error(exc) if enabled() else None
            if found is None:
                raise
            # what Triton does for a config that runs out of resources: it cannot be chosen. If no config is
            # left, the autotuner then runs one and the same error reaches the user.
            warnings.warn(f"utlx: autotuning skips config {kwargs.get('config')} of "
                          f"{getattr(getattr(self, 'fn', None), '__name__', self)!r}, which utlx cannot compile: "
                          f"{type(found).__name__}: {str(found).splitlines()[0][:300]}", stacklevel=2)
            return [float("inf"), float("inf"), float("inf")]

    return _bench


# --------------------------------------------------------------------------------- launch keywords


def _fork_hip_options(kwargs: dict[str, Any], where: str) -> None:
    """Drop the fork-only ``HIPOptions`` keywords (after checking their types) from an AMD launch."""
    stock = _compat.hip_option_fields()
    for name, types in _compat.FORK_HIP_OPTIONS.items():
        if name not in kwargs or name in stock:
            continue
        value = kwargs.pop(name)
        if not isinstance(value, types):
            raise TypeError(f"{where}: option {name}={value!r} must be {' or '.join(t.__name__ for t in types)}")


@_wrapping
def _pack_args(original: Callable[..., Any]) -> Callable[..., Any]:
    def pack_args(self: Any, backend: Any, kwargs: dict[str, Any], *rest: Any) -> Any:
        if enabled() and _compat.backend_is_hip(backend):
            _fork_hip_options(kwargs, f"launching {getattr(self, '__name__', self)}")
        if CTAS_PER_CGA in kwargs and enabled():
            where = f"launching {getattr(self, '__name__', self)}"
            dims = kwargs[CTAS_PER_CGA]
            dims = None if dims is None else cluster_shape(dims, where)
            if dims is None or cluster_size(dims) == 1:
                del kwargs[CTAS_PER_CGA]  # a plain launch
            else:
                kwargs[CTAS_PER_CGA] = dims  # the backend's parse_options keeps it (see _parse_options)
                _check_cluster_target(backend, dims, where)
        return original(self, backend, kwargs, *rest)

    return pack_args


def _check_cluster_target(backend: Any, dims: tuple[int, int, int], where: str) -> None:
    """Clusters of more than one CTA exist on NVIDIA sm_90+ only; anything else is refused, naming why."""
    target = getattr(backend, "target", None)
    if _compat.backend_is_hip(backend):
        raise _cluster_error(dims, where, "which utlx launches on NVIDIA GPUs only (stock Triton's AMD backend "
                             "forms no clusters on this target)")
    arch = getattr(target, "arch", 90)
    if isinstance(arch, int) and arch < 90:
        raise _cluster_error(dims, where, f"which need sm_90 or newer (target sm_{arch})")


@_wrapping
def _parse_options(original: Callable[..., Any]) -> Callable[..., Any]:
    """``CUDABackend.parse_options``: keep ``ctas_per_cga`` on the options (stock drops unknown keys).

    The options are a frozen dataclass; the cluster shape is set as an extra instance attribute, so it is in
    ``options.__dict__``: in ``options.hash()`` (each shape compiles to its own kernel), in the metadata
    (``compiled.metadata.ctas_per_cga``, as in Meta's build) and in what every stage receives.
    """

    def parse_options(self: Any, opts: dict[str, Any]) -> Any:
        dims = None
        if CTAS_PER_CGA in opts and enabled():
            opts = dict(opts)
            value = opts.pop(CTAS_PER_CGA)
            dims = None if value is None else cluster_shape(value, "ctas_per_cga")
        options = original(self, opts)
        if dims is not None and cluster_size(dims) > 1:
            _check_cluster_target(self, dims, "compiling with ctas_per_cga")
            try:
                object.__setattr__(options, CTAS_PER_CGA, dims)
            except (AttributeError, TypeError) as exc:  # options without an instance dict (a slotted dataclass)
                raise _cluster_error(dims, "compiling with ctas_per_cga", f"which this Triton's "
                                     f"{type(options).__name__} cannot carry ({exc})") from exc
        return options

    return parse_options


# --------------------------------------------------------------------------------------- GPUTarget


class _EnabledMethod:
    """A method that exists only while utlx is enabled (``hasattr`` is False otherwise)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if not enabled():
            raise AttributeError(f"'{getattr(owner, '__name__', owner)}' object has no attribute '{self.fn.__name__}' "
                                 f"(a method of Meta's Triton fork, provided by utlx while it is enabled)")
        return self.fn if obj is None else self.fn.__get__(obj, owner)


def is_cuda_backend(self: Any) -> bool:
    """True for NVIDIA targets (Meta's fork: CUDA and its TileIR backend)."""
    return self.backend in ("cuda", "tileir")


def is_cuda_backend_method(original: Any) -> _EnabledMethod:
    """What seam ``utlx.gpu-target-is-cuda-backend`` adds to ``GPUTarget`` (``original``: stock has none)."""
    return _EnabledMethod(is_cuda_backend)


def gpu_target_lacks_is_cuda_backend() -> bool:
    """Stock ``GPUTarget`` has no ``is_cuda_backend`` (Meta's fork does: then nothing is added)."""
    return "is_cuda_backend" not in vars(_compat.gpu_target_class())


# ------------------------------------------------------------------------------- list comprehensions


def range_comprehension(generator: Any, node: Any) -> Any:
    """``[f(i) for i in range(...)]`` over compile-time ints, as a tuple (the fork's rule); else
    ``NotImplemented`` (stock Triton's own method then accepts tuple comprehensions, or raises)."""
    import ast

    from triton.language import core as tl

    if not enabled() or len(node.generators) != 1:
        return NotImplemented
    comp = node.generators[0]
    call = comp.iter
    if comp.ifs or not isinstance(comp.target, ast.Name) or not isinstance(call, ast.Call) or call.keywords:
        return NotImplemented
    if not isinstance(call.func, ast.Name) or call.func.id != "range" or generator.visit(call.func) is not range:
        return NotImplemented
    bounds = [tl._unwrap_if_constexpr(generator.visit(arg)) for arg in call.args]
    if not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds):
        return NotImplemented  # runtime bounds: stock's error
    return _compat.codegen_comprehension(generator, node, [tl.constexpr(i) for i in range(*bounds)])


# ------------------------------------------------------------------- wrappers installed by utlx.seams


@_wrapping
def _load_cache_modifier(original: Callable[..., Any]) -> Callable[..., Any]:
    def _str_to_load_cache_modifier(self: Any, cache_modifier: Any) -> Any:
        if cache_modifier == ".cs" and enabled():
            from triton._C.libtriton import ir

            return ir.CACHE_MODIFIER.CS  # what Triton 3.8's loads map ".cs" to
        return original(self, cache_modifier)

    return _str_to_load_cache_modifier


def _call_site(_semantic: Any) -> str:
    """``file.py:line`` of the op being traced (the builder's current location), or '' when unknown."""
    import re

    try:
        text = str(_semantic.builder.get_loc())
    except Exception:  # a builder without a readable location: name no line rather than fail
        return ""
    m = re.search(r'"([^"]*?)([^/"]+)":(\d+)', text)
    return f"{m.group(2)}:{m.group(3)}" if m else ""


@_wrapping
def _dot_two_ctas(original: Callable[..., Any]) -> Callable[..., Any]:
    def dot(*args: Any, two_ctas: Any = False, _semantic: Any = None, **kwargs: Any) -> Any:
        flag = getattr(two_ctas, "value", two_ctas)  # a tl.constexpr or a Python bool
        if not enabled():
            extra = {"two_ctas": two_ctas} if flag is not False else {}  # stock's own TypeError comes back
            return original(*args, _semantic=_semantic, **kwargs, **extra)
        if not isinstance(flag, bool):
            raise TypeError(f"tl.dot: two_ctas must be a compile-time bool, got {flag!r}")
        if flag and not _compat.interpreting():
            from utlx.compiler.common.errors import UtlxPerformanceWarning

            where = _call_site(_semantic)
            warnings.warn(f"utlx.dot: two_ctas=True (the fork's 2-CTA collective tcgen05 MMA) is compiled as a dot "
                          f"of each CTA on its own{f' ({where})' if where else ''}: the same values, without the "
                          "pair sharing B; use tlx.async_dot(..., two_ctas=True) for a cta_group::2 MMA",
                          UtlxPerformanceWarning, stacklevel=2)
        return original(*args, _semantic=_semantic, **kwargs)

    return dot


def _field_init(cls: type) -> Callable[..., None]:
    """The constructor Triton 3.8 gives an aggregate without one: fields in annotation order, by position or
    keyword, each required unless the class gives it a default."""
    fields = tuple(getattr(cls, "__annotations__", {}))
    defaults = {name: cls.__dict__[name] for name in fields if name in cls.__dict__}

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(fields):
            raise TypeError(f"{cls.__name__}() takes {len(fields)} field values, got {len(args)}")
        for index, name in enumerate(fields):
            if index < len(args):
                if name in kwargs:
                    raise TypeError(f"{cls.__name__}() got two values for field '{name}'")
                value = args[index]
            elif name in kwargs:
                value = kwargs.pop(name)
            elif name in defaults:
                value = defaults[name]
            else:
                raise TypeError(f"{cls.__name__}() is missing field '{name}'")
            setattr(self, name, value)
        if kwargs:
            raise TypeError(f"{cls.__name__}() has no field '{next(iter(kwargs))}'")

    __init__.__triton_builtin__ = True  # type: ignore[attr-defined]  # Triton's dependency hashing skips it
    return __init__


@_wrapping
def _aggregate(original: Callable[..., Any]) -> Callable[..., Any]:
    def _aggregate(cls: type) -> Any:
        if enabled() and "__init__" not in cls.__dict__:
            cls.__init__ = _field_init(cls)  # type: ignore[misc]
        return original(cls)

    return _aggregate


#: Python type names the fork's kernels use as variable annotations (``ps: tuple = ()``); stock Triton evaluates
#: the annotation and fails with "NameError('tuple is not defined')". An annotation documents, it changes nothing.
_ANNOTATION_TYPES = frozenset({"tuple", "list", "dict", "bool", "str"})


@_wrapping
def _ann_assign(original: Callable[..., Any]) -> Callable[..., Any]:
    def visit_AnnAssign(self: Any, node: Any) -> Any:
        ann = node.annotation
        if enabled() and isinstance(ann, ast.Name) and ann.id in _ANNOTATION_TYPES and ann.id not in self.lscope \
                and ann.id not in self.gscope:
            return None if node.value is None else self.visit_Assign(node)
        return original(self, node)

    return visit_AnnAssign


def _place(owner: Callable[[], Any], name: str) -> Callable[[], tuple[Any, str]]:
    """``where`` of a seam on attribute ``name`` of ``owner()`` (resolved when the seam is installed)."""
    return lambda: (owner(), name)


_config, _tuner, _codegen = _compat.autotune_config_class, _compat.autotuner_class, _compat.code_generator_class


def _language() -> Any:
    import triton.language

    return triton.language


def _core() -> Any:
    from triton.language import core

    return core

#: The fork-only surface, as seams of stock Triton (installed by tritonx.seams while utlx is enabled).
SEAMS: tuple[Seam, ...] = (
    Seam("utlx.config-init", where=_place(_config, "__init__"), make=_config_init,
         reason="triton.Config accepts the fork's ctas_per_cga= keyword (TLX tutorials build such configs at "
                "import)"),
    Seam("utlx.config-all-kwargs", where=_place(_config, "all_kwargs"), make=_config_all_kwargs,
         reason="a config's launch keywords carry its ctas_per_cga clusters of more than one CTA"),
    Seam("utlx.config-str", where=_place(_config, "__str__"), make=_config_str,
         reason="a config's text shows its ctas_per_cga"),
    Seam("utlx.autotuner-bench", where=_place(_tuner, "_bench"), make=_bench,
         reason="a config utlx cannot compile (a TLX form it refuses, naming why) is skipped by the autotuner with "
                "a warning, as Triton skips configs that run out of resources"),
    Seam("utlx.autotuner-init", where=_place(_tuner, "__init__"), make=_autotuner_init, versions=((3, 9), (3, 9)),
         reason="autotune key names that are not kernel arguments are ignored, as the fork and Triton 3.6-3.8 do "
                "(3.9 rejects them)"),
    Seam("utlx.launch-options", where=_compat.launch_options_hook, make=_pack_args,
         reason="a launch's ctas_per_cga is checked (kept for the CUDA options when it asks for clusters) and the "
                "fork-only HIPOptions keywords are checked and taken out (compile path only)"),
    Seam("utlx.cuda-options-ctas-per-cga", where=_compat.cuda_options_hook, make=_parse_options,
         reason="the CUDA options carry ctas_per_cga (in their hash and the kernel metadata), which the PTX entry "
                "turns into .reqnctapercluster: TLX's clusters of one program per CTA"),
    Seam("utlx.codegen-annassign", where=_place(_codegen, "visit_AnnAssign"), make=_ann_assign,
         reason="a variable annotated with a Python type (ps: tuple = ()) is accepted and the annotation ignored, "
                "as the fork does"),
    Seam("utlx.codegen-listcomp", where=_place(_codegen, "visit_ListComp"),
         make=_compat.listcomp_hook(range_comprehension),
         reason="a list comprehension over a range of compile-time ints builds a tuple, as the fork accepts"),
    Seam("utlx.load-cache-modifier", where=_compat.load_cache_modifier_hook, make=_load_cache_modifier,
         versions=((3, 6), (3, 7)),
         reason="tl.load accepts cache_modifier='.cs' as Triton 3.8 does (3.6/3.7 take it on stores only)"),
    Seam("utlx.aggregate-init", where=_compat.aggregate_decorator_hook, make=_aggregate, versions=((3, 6), (3, 7)),
         reason="an @aggregate class without __init__ gets one from its annotations, as Triton 3.8 builds"),
    Seam("utlx.dot-two-ctas", where=_place(_core, "dot"), make=_dot_two_ctas,
         reason="tl.dot accepts the fork's two_ctas= (2-CTA collective MMA): per-CTA values are the same, so it is "
                "a dot of each CTA, with a UtlxPerformanceWarning naming the line"),
    Seam("utlx.dot-two-ctas-language", where=_place(_language, "dot"), make=_dot_two_ctas,
         reason="the same wrapper where kernels find it: triton.language.dot"),
    Seam("utlx.gpu-target-is-cuda-backend", where=_place(_compat.gpu_target_class, "is_cuda_backend"),
         make=is_cuda_backend_method, needed=gpu_target_lacks_is_cuda_backend,
         reason="GPUTarget.is_cuda_backend(), a method of Meta's fork that TLX helpers call"),
)


def installed() -> bool:
    """Are the fork-surface seams that apply to this Triton installed?"""
    return all(seams.is_installed(s.name) for s in SEAMS if s.applies())


__all__ = ["CTAS_PER_CGA", "SEAMS", "UtlxClusterLaunchError", "cluster_shape", "installed"]
