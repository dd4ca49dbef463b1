"""What a plugin is: a named, versioned bundle of pipelines and native libraries.

Installed distributions expose one through the ``tritonx.plugins`` entry-point group (the entry point
resolves to a :class:`Plugin` or to a zero-argument callable returning one); code may also register
one directly with :func:`tritonx.register_plugin`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .pipeline import Pipeline


@dataclass
class Plugin:
    """A tritonx plugin.

    Attributes:
        name: unique name, used by ``TRITONX_PLUGINS`` and the CLI.
        version: the plugin's own version string.
        description: one line shown by ``tritonx plugins``.
        pipelines: the pipelines activated (globally) while the plugin is enabled.
        native_libraries: paths of native ``.so`` plugins this plugin needs; checked before loading.
        cache_key: optional zero-argument callable whose result enters Triton's cache key while the
            plugin is enabled (use it for state the pipelines' own keys cannot see): a ``str``, or
            ``None`` to keep binaries compiled with the plugin out of every other process's cache
            (the protocol of :mod:`tritonx.model.keyed`).
        default_enabled: enabled without being named in ``TRITONX_PLUGINS``.
        hooks: optional module or object implementing tritonx's hook specification
            (:class:`tritonx.seams.SeamSpec`): its ``tritonx_seams()`` names the changes to stock Triton the
            plugin needs; they are installed (through :mod:`tritonx.seams`) when the plugin is enabled and
            undone when it is disabled, so a plugin never patches Triton itself.
        distribution: the installed distribution it came from (filled in by discovery).
    """

    name: str
    version: str = "0"
    description: str = ""
    pipelines: Sequence[Pipeline] = field(default_factory=tuple)
    native_libraries: Sequence[str] = field(default_factory=tuple)
    cache_key: Callable[[], str | None] | None = None
    default_enabled: bool = False
    distribution: str | None = None
    hooks: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise TypeError(f"Plugin name must be a non-empty string, got {self.name!r}")
        if self.cache_key is not None and not callable(self.cache_key):
            raise TypeError(f"plugin {self.name!r}: cache_key takes a zero-argument callable returning a str or "
                            f"None, got {type(self.cache_key).__name__}")
        self.pipelines = tuple(self.pipelines)
        self.native_libraries = tuple(str(p) for p in self.native_libraries)
