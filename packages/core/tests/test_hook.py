"""tritonx owns the single stages-hook slot: it chains what was there and notices overwrites."""

from __future__ import annotations

import pytest
import triton
import tritonx
from tritonx.integration import hook


def test_chains_a_hook_installed_before(stock_hook_slot, compile_probe):
    seen = []

    def foreign(*args):
        if not args:
            return ("-foreign", "F")
        seen.append(sorted(args[1]))
        return None

    triton.knobs.runtime.add_stages_inspection_hook = foreign
    hook._foreign = None
    p = tritonx.Pipeline("mine").disable("tritongpu-pipeline")
    with tritonx.activate(p):
        assert triton.knobs.runtime.add_stages_inspection_hook is hook.tritonx_stages_hook
        key, hsh = hook.tritonx_stages_hook()
        compile_probe()
    assert key.startswith("-foreign-tritonx-") and hsh.startswith("F")
    assert seen and "ttgir" in seen[0]  # the foreign hook still saw the stages
    assert hook.status()["chained"].endswith("foreign")


def test_notices_being_overwritten(stock_hook_slot):
    hook.ensure_installed()

    def intruder(*args):
        return ("", "") if not args else None

    triton.knobs.runtime.add_stages_inspection_hook = intruder
    with pytest.warns(hook.HookReplacedWarning, match="intruder"):
        tritonx.activate(tritonx.Pipeline("again")).deactivate()
    assert triton.knobs.runtime.add_stages_inspection_hook is hook.tritonx_stages_hook
    assert hook.chained_hook() is intruder
