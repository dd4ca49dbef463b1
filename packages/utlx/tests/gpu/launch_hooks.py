"""``recording_launches()``: the names of the kernels Triton launches while a launch-enter hook is set (the
hook sends ``utlx.matmul`` down Triton's own launch path; leaving the block removes it again)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def recording_launches() -> Iterator[list[str]]:
    from triton import knobs

    seen: list[str] = []

    def hook(metadata):
        seen.append(metadata.get()["name"])

    knobs.runtime.launch_enter_hook.add(hook)
    try:
        yield seen
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)
