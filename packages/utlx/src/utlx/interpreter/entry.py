"""The check every interpreted kernel entry starts with (inserted by ``ops_clc.guard_cancelled``'s AST rewrite).

It composes the two models that decide whether a call of the kernel runs: CLC (a program another program's
``try_cancel`` took returns at once) and clusters (the grid loop's call for a cluster's rank-0 CTA runs the whole
cluster; its other CTAs already ran). It lives above both so that neither imports the other.
"""

from __future__ import annotations

import sys
from typing import Any

from utlx import compat as _compat
from utlx.interpreter import cluster, state
from utlx.interpreter.ops_clc import program_cancelled


def skip_program(args: dict[str, Any]) -> bool:
    """Should this call of the kernel return at once? (``args``: the entry's ``locals()``, its arguments.)"""
    if cluster.size() == 1 or cluster.in_cluster() or not state.launch_active():
        return program_cancelled()
    if cluster.rank_of(tuple(_compat.grid_idx())) != 0 or program_cancelled():
        return True  # ran with its cluster
    cluster.run_cluster(args, sys._getframe(1).f_code)
    return True
