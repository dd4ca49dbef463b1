"""Split-K workspaces kept per (device, CUDA stream), zeroed once: no memset on the per-call path.

Why: the split-K kernel (:mod:`utlx.kernels.nvidia.hopper_tma_splitk`) reduces partial tiles into an fp32
workspace that must be all-zero when a launch starts. Allocating and zeroing one per call
(``torch.zeros``: an allocation plus a memset launch) cost ~3.5 us of host time per call on the H200,
which is what separated ``utlx.matmul`` from cuBLAS at 16x8192x8192. The kernel now leaves the workspace
all-zero when it ends (the last program of each tile zeroes the tile's region and resets its arrival
counter), so one workspace can serve every later launch *on the same stream*: stream order puts each
launch after the previous one's clean-up.

Rules this module keeps:

* **one workspace per (device, stream)**: launches on two streams may overlap, so they never share one;
* **growth is a new zeroed allocation** (``torch.zeros`` on the stream it serves): the old tensor is
  dropped, and PyTorch's caching allocator reuses its memory only in that stream's order, after the
  launches already queued on it;
* **no cached workspace under CUDA-graph capture**: a captured launch would bake the pointer into a graph
  whose replays may run beside eager launches on another stream (or outlive a growth), so callers take a
  fresh zeroed workspace while the current stream is capturing (see :func:`capturing_fn`); the memset is
  then captured with the kernel, as before.

The per-call lookup is ``table.get(stream)`` on a per-device dict whose entries are ``(data_ptr, numel,
tensor)``: one dictionary lookup and one comparison, no tensor method call. A stream handle is the raw
``cudaStream_t`` the launch itself uses (Triton's ``driver.active.get_current_stream``, torch's C getter).
Streams PyTorch hands out are pooled and never destroyed; a user stream that is destroyed and whose handle
is reused by a new stream while work on the old one is still queued would share its workspace (call
:func:`release` after destroying streams of your own).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: One entry: the workspace's address, its length in fp32 words, the tensor that owns it.
Entry = tuple[int, int, Any]


class WorkspacePool:
    """All-zero fp32 workspaces by device index, then by raw stream handle."""

    def __init__(self) -> None:
        self._tables: dict[Any, dict[int, Entry]] = {}

    def table(self, device_index: Any) -> dict[int, Entry]:
        """The ``stream -> entry`` dict of one device (the same dict object for the pool's lifetime: a
        launch keeps it and looks streams up in it per call)."""
        table = self._tables.get(device_index)
        if table is None:
            table = self._tables.setdefault(device_index, {})
        return table

    def grow(self, table: dict[int, Entry], stream: int, numel: int, device: Any) -> Entry:
        """A new zeroed workspace of ``numel`` words for ``stream`` (which must be the current stream: the
        allocation and its memset are ordered on it), replacing a smaller one."""
        import torch

        ws = torch.zeros(numel, dtype=torch.float32, device=device)
        entry = (ws.data_ptr(), numel, ws)
        table[stream] = entry
        return entry

    def get(self, device: Any, stream: int, numel: int) -> Entry:
        """The entry for ``(device, stream)`` with at least ``numel`` words (grown when needed)."""
        table = self.table(device.index)
        entry = table.get(stream)
        if entry is None or entry[1] < numel:
            entry = self.grow(table, stream, numel, device)
        return entry

    def release(self) -> None:
        """Drop every workspace (their memory returns to PyTorch's caching allocator in stream order)."""
        for table in self._tables.values():
            table.clear()

    def __len__(self) -> int:
        return sum(len(t) for t in self._tables.values())


#: The pool every split-K launch of this process uses.
WORKSPACES = WorkspacePool()


def given_or_fresh(workspace: Any, numel: int, device: Any, who: str) -> Any:
    """The workspace a direct ``launch()`` of the split-K or stream-K kernel uses: ``workspace`` once checked
    (fp32, at least ``numel`` words, on ``device``), or a fresh zeroed one when None. ``who`` names the
    function in the error."""
    import torch

    if workspace is None:
        return torch.zeros(numel, dtype=torch.float32, device=device)
    if workspace.dtype != torch.float32 or workspace.numel() < numel or workspace.device != device:
        raise ValueError(f"{who}: workspace must be fp32 with at least {numel} elements on {device}, got "
                         f"{workspace.dtype} x {workspace.numel()} on {workspace.device}")
    return workspace


def release() -> None:
    """Free the cached split-K workspaces (e.g. after ``torch.cuda.empty_cache`` pressure or after
    destroying streams of your own); the next split-K launch on a stream allocates a fresh one."""
    WORKSPACES.release()


def capturing_fn() -> Callable[[], bool]:
    """A cheap ``() -> bool``: the current CUDA stream is capturing a graph.

    torch's C binding directly (``torch.cuda.is_current_stream_capturing`` adds a Python-level
    ``is_initialized`` check on every call); a torch build without CUDA never captures.
    """
    import torch

    if not torch.cuda.is_available():
        return lambda: False
    return torch._C._cuda_isCurrentStreamCapturing
