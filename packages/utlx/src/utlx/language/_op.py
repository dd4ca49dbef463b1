"""utlx's ops, declared through ``tritonx.dsl`` (tritonx's public API for kernel-callable ops).

Why a module: every TLX op is written once, as a documented stub with TLX's exact signature (the
``utlx/language/*.py`` files); ``@op`` declares it in the ``utlx`` language (:data:`LANGUAGE`), which
makes it a Triton builtin that binds each call to that signature (every parameter reaches the
implementation as a keyword, defaults filled in) and runs the compile-path body (``utlx.compiler``) or
the interpreter's (``utlx.interpreter``), both registered through :mod:`utlx.language._dispatch`. The
language's pipeline (``utlx.plugin``) lowers the ops; its cache key is utlx's ``LOWERING_VERSION``, which the
compile path states (``LANGUAGE.set_cache_key``) when it is imported.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from tritonx import dsl

#: What ``tritonx plugins`` and the pipeline say utlx is.
DESCRIPTION = ("TLX (Triton Language Extensions) ops on stock Triton: shared memory, cp.async, wgmma, TMA, mbarriers; "
               "AMD buffer ops, direct-to-LDS copies, warp pipelines")


#: The ``utlx`` language: every TLX op and its passes. Its cache key is stated by the compile path when it is
#: imported (``utlx.compiler.key.LOWERING_VERSION``, a hash of its sources): the language sits below the compiler.
LANGUAGE = dsl.Language("utlx", description=DESCRIPTION)

#: Attribute set on every utlx op (its name); the ``with`` hook of ``utlx.compiler.nvidia.tasks`` reads it.
UTLX_OP_ATTR = "__utlx_op__"


def is_utlx_op(obj: Any) -> bool:
    """True for an op of the ``utlx`` language (a builtin made by :func:`op` or :func:`passthrough_op`)."""
    return isinstance(obj, dsl.Op) and obj.language is LANGUAGE


def op(stub: Callable[..., Any]) -> dsl.Op:
    """Declare the op named like ``stub``: its signature and docstring are the op's, its body never runs."""
    if "_semantic" not in inspect.signature(stub).parameters:
        raise TypeError(f"utlx op stub '{stub.__name__}' must take a '_semantic=None' parameter")
    built = LANGUAGE.op(stub)
    setattr(built, UTLX_OP_ATTR, built.name)
    return built


def passthrough_op(stub: Callable[..., Any]) -> dsl.Op:
    """Like :func:`op` but passes ``*args, **kwargs`` through unbound: for ops with a variadic signature in
    TLX (``async_task("default", registers=...)`` / ``async_task(num_warps=4)``)."""
    built = LANGUAGE.op(stub, variadic=True)
    setattr(built, UTLX_OP_ATTR, built.name)
    return built
