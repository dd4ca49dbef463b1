"""What a check of a native plugin library found, as plain data.

The records cross process boundaries (the start-up checker runs in a child and reports in JSON), so
they convert to and from plain dicts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class CheckResult:
    """One safety check: its name, whether it passed, and what it saw (or why it failed)."""

    name: str
    ok: bool
    detail: str = ""


@dataclass
class NativePluginInfo:
    """A native plugin library that passed every check, with what its ``tritonGetPluginInfo()`` declares.

    Attributes:
        path: absolute path of the library.
        plugin_name, plugin_version: the plugin's own name and version.
        api_version: the plugin API version of its info struct (2 for Triton 3.7 to 3.9).
        triton_version: the Triton version it was built for.
        passes: ``(name, version)`` of each pass it declares.
        dialects: ``(name, version)`` of each dialect it declares.
        ops: names of the custom ops it declares.
        checks: every check run, in order, as ``(name, ok, detail)``.
    """

    path: str
    plugin_name: str
    plugin_version: str
    api_version: int
    triton_version: str
    passes: list[tuple[str, str]] = field(default_factory=list)
    dialects: list[tuple[str, str]] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)

    @property
    def pass_names(self) -> list[str]:
        return [name for name, _ in self.passes]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NativePluginInfo:
        return cls(
            path=str(data["path"]),
            plugin_name=str(data["plugin_name"]),
            plugin_version=str(data["plugin_version"]),
            api_version=int(data["api_version"]),
            triton_version=str(data["triton_version"]),
            passes=[(str(n), str(v)) for n, v in data.get("passes", [])],
            dialects=[(str(n), str(v)) for n, v in data.get("dialects", [])],
            ops=[str(o) for o in data.get("ops", [])],
            checks=[CheckResult(**c) if isinstance(c, dict) else CheckResult(*c) for c in data.get("checks", [])],
        )
