"""``utlx.inductor``'s switch: off by default, modes, the env knob, and off leaves Inductor exactly as it was.

Why these checks: the integration changes two attributes of torch's flex lowering module through declared
seams; with it off, stock Inductor must run its own objects (so its generated code is the stock one), and where
the utlx kernel does not apply (here: no Hopper GPU) the lowering must get no utlx choice.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
flex_module = pytest.importorskip("torch._inductor.kernel.flex.flex_attention")

import utlx.inductor as ui  # noqa: E402
from utlx.inductor import flex  # noqa: E402


@pytest.fixture(autouse=True)
def _off():
    ui.disable()
    yield
    ui.disable()


def test_off_by_default_and_enable_disable_restores_stock_objects():
    select, append = flex_module.autotune_select_algorithm, flex_module.flex_attention_template.maybe_append_choice
    assert ui.mode() == "off"
    ui.enable("force")
    assert ui.mode() == "force"
    assert flex_module.autotune_select_algorithm is not select
    assert "maybe_append_choice" in vars(flex_module.flex_attention_template)
    ui.enable("allow")  # switching mode installs nothing twice
    assert ui.mode() == "allow"
    ui.disable()
    assert ui.mode() == "off"
    assert flex_module.autotune_select_algorithm is select
    assert "maybe_append_choice" not in vars(flex_module.flex_attention_template)
    assert flex_module.flex_attention_template.maybe_append_choice == append


def test_bad_mode_is_one_clear_error():
    with pytest.raises(ValueError, match=r"utlx.inductor.enable: mode must be 'allow' or 'force', got 'always'"):
        ui.enable("always")
    assert ui.mode() == "off"


@pytest.mark.parametrize(("value", "expected"), [("force", "force"), ("allow", "allow"), ("", "off"), ("0", "off")])
def test_env_knob(value, expected):
    """``import utlx`` alone reads the knob (so ``UTLX_INDUCTOR=force`` works in a script that imports utlx)."""
    env = {**os.environ, "UTLX_INDUCTOR": value}
    code = "import sys, utlx; m = sys.modules.get('utlx.inductor'); print(m.mode() if m else 'off')"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == expected


def test_env_knob_rejects_unknown_value():
    env = {**os.environ, "UTLX_INDUCTOR": "yes"}
    out = subprocess.run([sys.executable, "-c", "import utlx.inductor"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode != 0
    assert "UTLX_INDUCTOR='yes': expected one of off, allow, force" in out.stderr


def test_stock_choices_untouched_where_utlx_does_not_apply():
    """The wrapped select passes the stock choices through unchanged when the utlx kernel does not apply (no
    Hopper GPU here: the recorded call names a CPU query), and records why."""

    class Node:
        def get_device(self):
            return torch.device("cpu")

    seen = {}

    def fake_select(name, choices, *args, **kwargs):
        seen["choices"] = list(choices)
        return "selected"

    wrapped = ui._add_choices(fake_select)
    record = ui._record_append(lambda choices, **kw: choices.append(kw["tag"]))
    ui.enable("force")
    stock: list = []
    record(stock, tag="stock-choice", input_nodes=[Node()] * 9)
    before = dict(ui.stats["skipped"])
    assert wrapped("flex_attention", stock, [], None) == "selected"
    assert seen["choices"] == ["stock-choice"]
    assert ui.stats["skipped"].get("not an NVIDIA sm_90 device", 0) == before.get("not an NVIDIA sm_90 device", 0) + 1


def test_why_not_names_the_reason():
    class Node:
        def __init__(self, dtype=torch.bfloat16, stride=(262144, 32768, 128, 1)):
            self.dtype, self.stride = dtype, stride

        def get_device(self):
            return torch.device("cuda", 0)

        def get_dtype(self):
            return self.dtype

        def get_stride(self):
            return self.stride

    options = {"QK_HEAD_DIM": 128, "V_HEAD_DIM": 128, "SPARSE_Q_BLOCK_SIZE": 128, "SPARSE_KV_BLOCK_SIZE": 128}
    nodes = [Node()] * 9
    hopper = flex.is_hopper
    try:
        flex.is_hopper = lambda device: True
        assert flex.why_not({"input_nodes": nodes, **options}) is None
        assert "head dims 96/96" in flex.why_not({"input_nodes": nodes, **options, "QK_HEAD_DIM": 96, "V_HEAD_DIM": 96})
        assert "SPARSE_KV_BLOCK_SIZE=64" in flex.why_not({"input_nodes": nodes, **options, "SPARSE_KV_BLOCK_SIZE": 64})
        assert "dtype torch.float32" in flex.why_not({"input_nodes": [Node(torch.float32)] * 9, **options})
        assert "query strides" in flex.why_not({"input_nodes": [Node(stride=(1, 1, 1, 128))] * 9, **options})
    finally:
        flex.is_hopper = hopper
    assert flex.why_not({"input_nodes": nodes, **options}) == "not an NVIDIA sm_90 device"
