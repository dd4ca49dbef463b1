"""tritonx owns the single stages-hook slot: it chains what was there and notices overwrites."""

from __future__ import annotations

import pytest
import triton
import tritonx
from tritonx.integration.hook import HookReplacedWarning


def test_chains_a_hook_installed_before(runtime, compile_probe):
    seen = []

    def foreign(*args):
        if not args:
            return ("-foreign", "F")
        seen.append(sorted(args[1]))
        return None

    triton.knobs.runtime.add_stages_inspection_hook = foreign
    p = tritonx.Pipeline("mine").disable("tritongpu-pipeline")
    with tritonx.activate(p):
        assert triton.knobs.runtime.add_stages_inspection_hook is runtime.hook.function
        key, hsh = runtime.hook.function()
        compiled = compile_probe()
    assert key == "-foreign" and hsh.startswith("F-tritonx-")  # the foreign key is kept, ours follows
    assert seen and "ttgir" in seen[0]  # the foreign hook still saw the stages
    assert "cp.async" not in compiled.asm["ptx"]  # and tritonx's edit still applied
    assert runtime.hook.status()["chained"].endswith("foreign")


def test_notices_being_overwritten(runtime):
    runtime.hook.ensure_installed()

    def intruder(*args):
        return ("", "") if not args else None

    triton.knobs.runtime.add_stages_inspection_hook = intruder
    with pytest.warns(HookReplacedWarning, match="intruder"):
        tritonx.activate(tritonx.Pipeline("again")).deactivate()
    assert triton.knobs.runtime.add_stages_inspection_hook is runtime.hook.function
    assert runtime.hook.foreign is intruder


def test_a_fresh_runtime_takes_the_slot_and_gives_it_back(runtime):
    from tritonx.runtime import Runtime

    runtime.hook.ensure_installed()
    inner = Runtime()
    with inner.use():
        assert triton.knobs.runtime.add_stages_inspection_hook is inner.hook.function
        assert inner.hook.foreign is None  # another runtime's hook is replaced, never chained
        assert tritonx.active() == ()
    assert triton.knobs.runtime.add_stages_inspection_hook is runtime.hook.function
