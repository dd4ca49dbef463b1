"""Every error tritonx raises, in one hierarchy.

Each error names what is at fault (plugin, pipeline, pass, stage, op or argument) so the message alone
tells a kernel engineer where to look; none of them leaves Triton in a broken state.
"""

from __future__ import annotations


class TritonxError(Exception):
    """Base class of every tritonx error."""


class PipelineError(TritonxError, ValueError):
    """A pipeline or one of its edits is malformed (wrong stage, wrong argument types...)."""


class UnknownPassError(PipelineError):
    """A pass name matches no pass of the installed Triton (or of a loaded native plugin)."""


class PassNotInVersionError(UnknownPassError):
    """The pass exists in another supported Triton version, not in the installed one."""


class PassNotFoundInStageError(PipelineError):
    """A known pass name does not occur in the stage being compiled (target/option specific)."""


class PipelineConflictError(PipelineError):
    """Two active edits contradict each other (for example two replacements of one pass)."""


class PipelineFrozenError(PipelineError):
    """An active or kernel-bound pipeline was edited; edit a copy instead."""


class CompileOptionError(TritonxError, ValueError):
    """A compile option (``compile_for(options=...)``, ``tritonx compile -o``) is unknown or out of range.

    ``option`` names the option at fault (None when Triton refused the combination), ``problem`` says
    what is valid, ``unknown`` lists unknown names and ``known`` the target's options.
    """

    def __init__(self, message: str, *, option: str | None = None, problem: str = "",
                 unknown: tuple[str, ...] = (), known: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.option = option
        self.problem = problem
        self.unknown = unknown
        self.known = known


class PassFailedError(TritonxError, RuntimeError):
    """A pass inserted by a pipeline raised while compiling; names pipeline, pass and stage."""


class PluginError(TritonxError):
    """A plugin could not be found, imported or enabled."""


class PluginLoadError(PluginError):
    """A native plugin library was refused before Triton saw it, or could not be loaded.

    ``check`` names the safety check that failed (``exists``, ``elf``, ``symbol``, ``api_version``,
    ``triton_version``, ``undefined_symbols``, ``probe``, ``load``...), ``path`` the library.
    """

    def __init__(self, message: str, *, path: str | None = None, check: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.check = check


class RemoteCacheWarning(UserWarning):
    """Triton's remote cache (tritonx's Redis backend) failed or served an entry that did not verify.

    Compiles go on locally either way; issued once per process for failures and once for ignored
    entries (``tritonx.compat.remote_cache_stats()`` counts every one).
    """


class UnkeyedStateWarning(UserWarning):
    """A Python pass holds or reads state that tritonx cannot put in Triton's cache key.

    Changing that state between processes would silently reuse a binary built with the old value;
    give the pass a key (see :mod:`tritonx.model.keyed`). Issued once per pass.
    """


class DslError(TritonxError, ValueError):
    """A kernel-callable DSL op (:mod:`tritonx.dsl`) was defined or called wrongly.

    The message starts with the op's full name (``myplugin.rotate_left``) and names the argument at
    fault; raised while a kernel is traced, Triton shows it with the kernel's source line, and under
    the interpreter the message carries ``file:line`` itself. ``op``, ``argument`` and ``target`` hold
    the parts for programs.
    """

    def __init__(self, message: str, *, op: str | None = None, argument: str | None = None,
                 target: str | None = None) -> None:
        super().__init__(message)
        self.op = op
        self.argument = argument
        self.target = target


class DslSignatureError(DslError, TypeError):
    """A DSL op was called with arguments that do not bind to its signature (a ``TypeError`` too)."""


class DslNotImplementedError(DslError, NotImplementedError):
    """A DSL op has no implementation for the target being compiled, or no interpreter body."""
