"""A language: a named set of kernel-callable ops, the passes that lower them, and their cache key.

Write one module per language (``my_plugin/language.py``) that creates a :class:`Language` and declares
its ops with ``@lang.op``; kernels ``import my_plugin.language as mp`` and call ``mp.rotate_left(x, 8)``.
The language becomes active like any tritonx extension: its :meth:`Language.plugin` (or
:meth:`Language.pipeline`) inserts its passes, and its :meth:`Language.cache_key` enters Triton's key
while it is active. A kernel that calls one of its ops while it is not active fails to compile with an
error saying how to enable it: the op's code is not part of Triton's key otherwise, so an edited op
could be served a binary the old one built.
"""

from __future__ import annotations

import hashlib
import inspect
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import DslError
from ..model.keyed import CustomPass, callable_key
from ..model.pipeline import Pipeline
from ..model.plugin import Plugin
from . import lowering as _lowering
from .op import Op, Result
from .targets import KernelTarget

#: The pass after which native custom ops are built (the first TTIR pass on every supported version).
NATIVE_ANCHOR = "inline"
#: The pass after which placeholders are lowered with Gluon's TTGIR builder.
LOWER_ANCHOR = "convert-triton-to-tritongpu"

#: Version of the placeholder format and of how ops are traced (part of every language's key).
DSL_FORMAT = "tritonx-dsl-1"


class LanguagePass(CustomPass):
    """One of a language's passes; keyed by the language's key (so copies and extended pipelines keep it)."""

    def __init__(self, language: Language, kind: str, run: Callable[[Language, Any, Any], Any]) -> None:
        self.language = language
        self.kind = kind
        self._run = run
        self.__name__ = f"{language.name}-{kind}"
        self.__qualname__ = self.__name__

    def __call__(self, module: Any, ctx: Any) -> Any:
        return self._run(self.language, module, ctx)

    def cache_key(self) -> str:
        return f"{self.__name__}:{self.language.cache_key()}"


class Language:
    """A namespace of kernel-callable ops (``tritonx.dsl.Language("my_plugin")``).

    Args:
        name: the language's name: prefixes every op (``my_plugin.rotate_left``) and names its pipeline and
            plugin; ``[A-Za-z_][A-Za-z0-9_]*``.
        version: part of the cache key.
        description: shown by ``tritonx plugins`` for :meth:`plugin`.
        cache_key: the key itself (a string or a zero-argument callable). By default it is derived from the
            source files that define the ops and their implementations and from the code those implementations
            reach (helpers in other modules: ``tritonx.model.code_reach``), so any edit there is a new key.
        lowering: ``fn(module, placeholders, ctx: ModuleContext)`` lowering every TTGIR placeholder of the
            language at once, for languages whose ops share state (buffers, barriers); by default each
            op's ``@op.lower`` runs on its own placeholders.
    """

    def __init__(self, name: str, *, version: str = "0", description: str = "",
                 cache_key: str | Callable[[], str] | None = None,
                 lowering: Callable[[Any, list[Any], _lowering.ModuleContext], Any] | None = None) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise DslError(f"a language name must be a Python identifier (it prefixes op names), got {name!r}")
        self.name = name
        self.version = version
        self.description = description
        self.module_lowering = lowering
        self._key_source = cache_key
        self._ops: dict[str, Op] = {}
        self._lock = threading.RLock()
        self._key: str | None = None
        self._pipeline: Pipeline | None = None
        self._extra_edits: list[tuple[str, str, Any, dict[str, Any]]] = []
        self._extra_sources: list[Path] = []
        self.lower_pass = LanguagePass(self, "lower", _lowering.lower_placeholders)
        self.native_pass = LanguagePass(self, "native-ops", _lowering.materialize_native)

    def lowering(self, fn: Callable[[Any, list[Any], _lowering.ModuleContext], Any]) -> Callable[..., Any]:
        """Set the language's module lowering (decorator; the same as ``Language(lowering=fn)``), for a
        language whose lowering lives in a module that imports the one declaring the ops."""
        with self._lock:
            if self.module_lowering is not None and self.module_lowering is not fn:
                raise DslError(f"{self.name}: the language already has a module lowering")
            self.module_lowering = fn
            self.changed()
        return fn

    # -- ops ------------------------------------------------------------------------------------------------

    def op(self, stub: Callable[..., Any] | None = None, *, name: str | None = None,
           result: Result | Callable[[dict[str, Any]], Any] | None = None,
           check: Callable[[dict[str, Any]], str | None] | None = None, variadic: bool = False) -> Any:
        """Declare an op from a stub whose signature (with :mod:`tritonx.dsl.params` annotations) and
        docstring are the op's; its body never runs. Usable bare (``@lang.op``) or with options.

        ``result`` (for ops lowered after tracing): :func:`~tritonx.dsl.like` or ``fn(args) -> tl type``.
        ``check``: ``fn(args) -> error text | None`` over all checked arguments (cross-argument rules).
        ``variadic``: pass ``*args, **kwargs`` through unbound (emit implementations only).
        """

        def declare(fn: Callable[..., Any]) -> Op:
            built = Op(self, fn, name=name, result=result, check=check, variadic=variadic)
            with self._lock:
                if built.name in self._ops:
                    raise DslError(f"{built.full_name}: declared twice (op names are unique within a language)",
                                   op=built.full_name)
                self._ops[built.name] = built
                self.changed()
            return built

        return declare(stub) if stub is not None else declare

    def get(self, name: str) -> Op:
        """The op called ``name``; a :class:`DslError` listing the ops otherwise."""
        try:
            return self._ops[name]
        except KeyError:
            raise DslError(f"{self.name}: no op named {name!r} (ops: {', '.join(sorted(self._ops)) or 'none'})",
                           op=f"{self.name}.{name}") from None

    @property
    def ops(self) -> dict[str, Op]:
        return dict(self._ops)

    def changed(self) -> None:
        """Forget the derived key (an op or implementation was added)."""
        with self._lock:
            self._key = None
            if self._pipeline is not None and any(op._impls["native"] for op in self._ops.values()):
                if not self._has_native_pass(self._pipeline):
                    raise DslError(f"{self.name}: a native implementation was registered after the language's "
                                   "pipeline was built; register every implementation before calling pipeline()")

    # -- identity -----------------------------------------------------------------------------------------

    def set_cache_key(self, key: str | Callable[[], str]) -> None:
        """State the language's key after it was declared (the same as ``Language(cache_key=...)``), for a
        language whose key is computed in a module that imports the one declaring the ops (its compiler)."""
        if not isinstance(key, str) and not callable(key):
            raise DslError(f"{self.name}: set_cache_key() takes a string or a zero-argument callable, got "
                           f"{type(key).__name__}")
        with self._lock:
            self._key_source = key
            self.changed()

    def add_source(self, path: str | Path) -> None:
        """Count another source file in the derived cache key (a helper module the implementations call)."""
        self._extra_sources.append(Path(path))
        self.changed()

    def cache_key(self) -> str:
        """What enters Triton's cache key while the language is active."""
        source = self._key_source
        if isinstance(source, str):
            return f"{self.name}:{source}"
        if callable(source):
            return f"{self.name}:{source()}"
        with self._lock:
            if self._key is None:
                self._key = self._derive_key()
            return self._key

    def _derive_key(self) -> str:
        h = hashlib.sha256()
        h.update(f"{DSL_FORMAT}|{self.name}|{self.version}".encode())
        files: set[Path] = set(self._extra_sources)
        for name in sorted(self._ops):
            op = self._ops[name]
            h.update(f"|{name}{op.op_signature}{sorted(op.specs.items())!r}{op.result!r}{op.implementations()}".encode())
            for fn in op.implementation_functions():
                src = _source_file(fn)
                if src is not None:
                    files.add(src)
                # what the implementation reaches (helpers in other modules too), as Python passes are keyed
                h.update(callable_key(fn).encode())
        for path in sorted(files):
            h.update(path.name.encode())
            try:
                h.update(path.read_bytes())
            except OSError:
                h.update(b"<unreadable>")
        return f"{self.name}:{h.hexdigest()[:32]}"

    # -- activation -------------------------------------------------------------------------------------

    def insert_after(self, anchor: str, fn: Callable[..., Any], **options: Any) -> Language:
        """Add a pass of the language (``Pipeline.insert_after``) to its pipeline (before it is built)."""
        return self._extra("insert_after", anchor, fn, options)

    def insert_before(self, anchor: str, fn: Callable[..., Any], **options: Any) -> Language:
        """Add a pass of the language (``Pipeline.insert_before``) to its pipeline (before it is built)."""
        return self._extra("insert_before", anchor, fn, options)

    def replace(self, anchor: str, fn: str | Callable[..., Any], **options: Any) -> Language:
        """Run a pass of the language instead of the named one (``Pipeline.replace``), for a language whose
        ops make a stock pass wrong for its kernels: the replacement may still run the stock pass for the
        kernels it suits (before the pipeline is built)."""
        return self._extra("replace", anchor, fn, options)

    def transform_stage(self, stage: str, fn: Callable[[str, Any], str], **options: Any) -> Language:
        """Rewrite a text stage's output (``Pipeline.transform_stage``): for a language whose ops end as
        instructions only that stage can write (before the pipeline is built). ``fn`` must return the text
        unchanged for kernels without the language's ops; pass ``required=False`` when the language also
        compiles for a backend without that stage."""
        return self._extra("transform_stage", stage, fn, options)

    def _extra(self, kind: str, anchor: str, fn: Any, options: dict[str, Any]) -> Language:
        with self._lock:
            if self._pipeline is not None:
                raise DslError(f"{self.name}: add passes before the language's pipeline is built")
            self._extra_edits.append((kind, anchor, fn, options))
        return self

    def pipeline(self) -> Pipeline:
        """The tritonx pipeline that lowers the language's ops (built once): the lowering pass after
        ``convert-triton-to-tritongpu``, the native-op pass after ``inline`` when an op is native, and
        the passes added with :meth:`insert_after`/:meth:`insert_before`/:meth:`replace`."""
        with self._lock:
            if self._pipeline is None:
                p = Pipeline(self.name, description=self.description or f"tritonx.dsl language {self.name}",
                             cache_key=self.cache_key)
                if any(op._impls["native"] for op in self._ops.values()):
                    p.insert_after(NATIVE_ANCHOR, self.native_pass, stage="ttir", required=False,
                                   pass_name=self.native_pass.__name__)
                p.insert_after(LOWER_ANCHOR, self.lower_pass, stage="ttgir", required=False,
                               pass_name=self.lower_pass.__name__)
                for kind, anchor, fn, options in self._extra_edits:
                    getattr(p, kind)(anchor, fn, **options)
                self._pipeline = p
            return self._pipeline

    def plugin(self, *, version: str | None = None, description: str | None = None, default_enabled: bool = False,
               native_libraries: Sequence[str] = (), pipelines: Sequence[Pipeline] = (), hooks: Any = None) -> Plugin:
        """A tritonx plugin named like the language, whose pipelines start with :meth:`pipeline` (``hooks``: the
        provider of the seams of Triton it needs, see :attr:`tritonx.Plugin.hooks`)."""
        return Plugin(name=self.name, version=version or self.version,
                      description=description if description is not None else self.description,
                      pipelines=[self.pipeline(), *pipelines], native_libraries=native_libraries,
                      cache_key=self.cache_key, default_enabled=default_enabled, hooks=hooks)

    def _has_native_pass(self, pipeline: Pipeline) -> bool:
        return any(getattr(e.new, "fn", None) is self.native_pass for e in pipeline.edits)

    def active_in(self, pipelines: Sequence[Pipeline]) -> bool:
        """Do ``pipelines`` lower this language (do they carry its lowering pass)?"""
        return any(getattr(e.new, "fn", None) is self.lower_pass for p in pipelines for e in p.edits)

    def require_active(self, op_name: str, target: KernelTarget) -> None:
        """Raise unless the compile being traced on this thread uses the language's pipeline."""
        from ..integration.hook import compiling_pipelines

        pipelines = compiling_pipelines()
        if pipelines is not None and self.active_in(pipelines):
            return
        raise DslError(
            f"{op_name}: the '{self.name}' language is not active for this compile [target {target.name}]: enable "
            f"its plugin (tritonx.enable_plugins(['{self.name}']) or TRITONX_PLUGINS={self.name}), or activate "
            f"its pipeline (tritonx.activate(<language>.pipeline()) or @tritonx.pipeline(...) on the kernel); "
            "its ops are lowered by that pipeline and keyed into Triton's cache through it",
            op=op_name, target=target.name)

    def __repr__(self) -> str:
        return f"<tritonx.dsl.Language {self.name!r}: {', '.join(sorted(self._ops)) or 'no ops'}>"


def _source_file(fn: Any) -> Path | None:
    target = getattr(fn, "__func__", fn)
    try:
        path = inspect.getsourcefile(target)
    except TypeError:
        return None
    return Path(path) if path else None
