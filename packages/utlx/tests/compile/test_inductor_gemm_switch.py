"""``utlx.inductor``'s GEMM choices: where Inductor's mm / addmm / bmm get them, where not (and why), and that
``disable()`` puts Inductor's choices handler back.

Why these checks: the integration hooks into Inductor only through ``V.choices`` (a subclass of its
``InductorChoices``) and template heuristics registered under utlx's own names. Here Inductor's real
``get_template_configs`` runs, on a CPU, for a device that answers as an sm_90 GPU (``inductor_fake_hopper``):
stock choices must pass through untouched where utlx does not apply or the switch is off, utlx's must be appended
(``allow``) or alone (``force``) where it does, and ``utlx.inductor.stats`` must say which.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch._inductor.choices")

import utlx.inductor as ui  # noqa: E402
from inductor_fake_hopper import contiguous, fake_hopper, input_node, lowering, template_choices  # noqa: E402
from torch._inductor import config  # noqa: E402
from torch._inductor.virtualized import V  # noqa: E402
from utlx.inductor import gemm  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _inductor_cache(tmp_path_factory):
    from inductor_fake_hopper import private_inductor_cache

    with private_inductor_cache(tmp_path_factory.mktemp("inductor-cache")):
        yield


@pytest.fixture(autouse=True)
def _off():
    ui.disable()
    yield
    ui.disable()


def _names(choices) -> list[str]:
    return [c.name for c in choices]


def _mm_inputs(graph, m=256, n=384, k=512, dtype=torch.bfloat16, b_stride=None):
    a = input_node(graph, "a", [m, k], [k, 1], dtype)
    b = input_node(graph, "b", [k, n], b_stride or [1, k], dtype)  # a linear weight: column-major
    return [a, b]


def _utlx(choices) -> list:
    return [c for c in choices if gemm.is_utlx_choice(c)]


def test_enable_disable_restores_the_choices_handler_and_config():
    before_handler, before_factory = type(V.choices), config.inductor_choices_class
    ui.enable("allow")
    assert type(V.choices).__name__ == "UtlxInductorChoices"
    assert isinstance(V.choices, before_handler)  # a subclass of what was there
    assert config.inductor_choices_class is type(V.choices)
    assert V.choices.uuid().startswith("utlx.inductor.gemm:allow:")
    ui.enable("force")  # switching mode installs nothing twice
    assert type(V.choices).__name__ == "UtlxInductorChoices" and type(V.choices).__mro__[1] is before_handler
    ui.disable()
    assert type(V.choices) is before_handler
    assert config.inductor_choices_class is before_factory


def test_allow_appends_utlx_choices_and_keeps_every_stock_one():
    with fake_hopper(), lowering() as graph:
        stock = _names(template_choices("mm", _mm_inputs(graph)))
        ui.enable("allow")
        before = dict(ui.stats["gemm"]["added"])
        got = template_choices("mm", _mm_inputs(graph))
    mine = _utlx(got)
    assert len(mine) == gemm.offered("mm") == len(gemm.CONFIGS) + len(gemm.WS_CONFIGS)
    assert sum("CONSUMER_REGS" in c.description for c in mine) == len(gemm.WS_CONFIGS)  # the warp-specialized ones
    assert [c.name for c in got if not gemm.is_utlx_choice(c)][:1] == stock[:1]  # aten (cuBLAS) first, kept
    assert len(got) == len(stock) + len(mine)
    assert ui.stats["gemm"]["added"]["mm"] == before.get("mm", 0) + 1
    assert all("B_COL=True" in c.description and "A_COL=False" in c.description for c in mine)


@pytest.mark.parametrize("op", ["mm", "addmm", "bmm"])
def test_force_leaves_only_utlx_choices(op):
    ui.enable("force")
    with fake_hopper(), lowering() as graph:
        if op == "bmm":
            a = input_node(graph, "a", [3, 256, 512], contiguous([3, 256, 512]))
            b = input_node(graph, "b", [3, 512, 384], contiguous([3, 512, 384]))
            got = template_choices(op, [a, b])
        elif op == "addmm":
            bias = input_node(graph, "bias", [256, 384], [0, 1])  # a broadcast row, as mm_args expands it
            got = template_choices(op, [bias, *_mm_inputs(graph)])
        else:
            got = template_choices(op, _mm_inputs(graph))
    assert got and all(gemm.is_utlx_choice(c) for c in got), _names(got)
    assert ui.stats["gemm"]["forced"][op] >= 1


def test_force_empties_addmms_separate_aten_call():
    """tuned_addmm asks for [aten addmm, bias_addmm] in a call of its own before the Triton-template call."""
    from torch._inductor.kernel.mm import aten_addmm
    from torch._inductor.kernel_inputs import MMKernelInputs

    with fake_hopper(), lowering() as graph:
        bias = input_node(graph, "bias", [384], [1])
        inputs = MMKernelInputs([bias, *_mm_inputs(graph)], scalars=dict(alpha=1, beta=1))
        stock = V.choices.get_template_configs(inputs, [aten_addmm], "addmm")
        ui.enable("force")
        forced = V.choices.get_template_configs(inputs, [aten_addmm], "addmm")
        ui.enable("allow")
        allowed = V.choices.get_template_configs(inputs, [aten_addmm], "addmm")
    assert len(stock) == 1 and forced == [] and _names(allowed) == _names(stock)


@pytest.mark.parametrize(("case", "reason"), [
    ("fp32", "dtypes torch.float32/torch.float32 (fp16 or bf16, both the same)"),
    ("unaligned", "mm mat1: strides [100, 1] (TMA: one unit stride, the other a multiple of 8 elements)"),
    ("offset", "mm mat1: offset 4 / batch stride [] not 16-byte aligned"),
])
def test_not_added_where_utlx_does_not_apply_and_stats_say_why(case, reason):
    ui.enable("force")  # even force leaves the stock choices where utlx does not apply
    with fake_hopper(), lowering() as graph:
        if case == "fp32":
            inputs = _mm_inputs(graph, dtype=torch.float32)
        elif case == "unaligned":
            inputs = _mm_inputs(graph, k=100)
        else:
            inputs = [input_node(graph, "a", [256, 512], [512, 1], offset=4), _mm_inputs(graph)[1]]
        before = ui.stats["gemm"]["skipped"].get(reason, 0)
        got = template_choices("mm", inputs)
    assert got and not _utlx(got)
    assert ui.stats["gemm"]["skipped"][reason] == before + 1


def test_not_added_without_a_hopper_gpu():
    """This machine has no GPU: the real device check says so (no fake)."""
    ui.enable("allow")
    with lowering() as graph:
        inputs = _mm_inputs(graph)
        from torch._inductor.kernel_inputs import MMKernelInputs

        assert gemm.why_not(MMKernelInputs(inputs), "mm") == "not an NVIDIA sm_90 device"


def test_nothing_without_max_autotune_and_off_is_stock():
    with fake_hopper(max_autotune=False), lowering() as graph:
        ui.enable("force")
        before = dict(ui.stats["gemm"]["added"])
        got = template_choices("mm", _mm_inputs(graph))
        assert not _utlx(got) and ui.stats["gemm"]["added"] == before
    ui.disable()
    with fake_hopper(), lowering() as graph:
        never = [(type(c).__name__, c.description) for c in template_choices("mm", _mm_inputs(graph))]
        ui.enable("allow")
        assert _utlx(template_choices("mm", _mm_inputs(graph)))
        ui.disable()
        after = [(type(c).__name__, c.description) for c in template_choices("mm", _mm_inputs(graph))]
    assert after == never and not any(gemm.MM_NAME in d for _, d in after)


def test_configs_short_m_and_bmm_sms():
    assert {(c["BLOCK_M"], c["num_warps"]) for c in gemm.template_kwargs(32, 4096, 1, False, False, 132)} == {(64, 4)}
    assert gemm.template_kwargs(32, 4096, 1, False, False, 132, ws=True) == []
    assert {c["CONSUMER_REGS"] for c in gemm.template_kwargs(4096, 4096, 1, False, False, 132, ws=True)} == {232}
    wide = gemm.template_kwargs(4096, 4096, 4, True, False, 132)
    assert len(wide) == len(gemm.CONFIGS) and {c["NUM_SMS"] for c in wide} == {33}
    assert all(c["A_COL"] and not c["B_COL"] for c in wide)


def test_env_knob_installs_the_gemm_choices_too():
    """``UTLX_INDUCTOR=allow`` and ``import utlx`` alone: the choices handler is in place in that process."""
    import os
    import subprocess
    import sys

    code = ("import utlx, sys; from torch._inductor.virtualized import V; from torch._inductor import config; "
            "print(type(V.choices).__name__, config.inductor_choices_class.__name__, V.choices.uuid().split(':')[1])")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "UTLX_INDUCTOR": "allow"},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["UtlxInductorChoices", "UtlxInductorChoices", "allow"]


def test_stock_heuristics_are_untouched():
    """utlx registers heuristics under its own template names only: the stock templates' stay torch's."""
    from torch._inductor.kernel.bmm import bmm_template
    from torch._inductor.kernel.mm import mm_template, persistent_tma_mm_template
    from torch._inductor.template_heuristics.registry import (
        _TEMPLATE_HEURISTIC_REGISTRY,
        get_registered_heuristic_class,
    )

    gemm.heuristics()
    ours = {key for key, cls in _TEMPLATE_HEURISTIC_REGISTRY.items() if cls.__module__ == gemm.__name__}
    assert ours == {(gemm.templates()[name].uid, "cuda", op) for name, op in gemm.heuristics()}
    assert len(ours) == 5 and all(key[0].startswith("triton::utlx_hopper_") for key in ours)
    stock = [(t.uid, "cuda", op) for t in (mm_template, persistent_tma_mm_template) for op in ("mm", "addmm")]
    for key in [*stock, (bmm_template.uid, "cuda", "bmm")]:
        assert get_registered_heuristic_class(*key).__module__.startswith("torch._inductor."), key


@pytest.mark.parametrize("mode", ["allow", "force"])
def test_inductors_own_lowerings_offer_the_utlx_choices(mode):
    """Inductor's real ``tuned_mm`` / ``tuned_addmm`` / ``tuned_bmm`` (only the autotuning benchmark stubbed: it
    needs the GPU): what they hand ``autotune_select_algorithm`` has utlx's choices next to cuBLAS (allow) or alone
    (force, addmm's separate aten call included)."""
    from unittest import mock

    from torch._inductor.kernel import bmm as bmm_module
    from torch._inductor.kernel import mm as mm_module

    seen: dict[str, list] = {}
    ui.enable(mode)
    with fake_hopper(), lowering() as graph:
        a, b = _mm_inputs(graph)
        bias = input_node(graph, "bias", [384], [1])
        x = input_node(graph, "x", [2, 256, 512], contiguous([2, 256, 512]))
        y = input_node(graph, "y", [2, 512, 384], contiguous([2, 512, 384]))

        def select(name, choices, *args, **kwargs):
            seen[name] = list(choices)
            return a, None

        with mock.patch.object(mm_module, "autotune_select_algorithm", select), \
                mock.patch.object(bmm_module, "autotune_select_algorithm", select):
            mm_module.tuned_mm(a, b)
            mm_module.tuned_addmm(bias, a, b)
            bmm_module.tuned_bmm(x, y)
    assert set(seen) == {"mm", "addmm", "bmm"}
    for name, choices in seen.items():
        mine = _utlx(choices)
        assert len(mine) == gemm.offered(name), name
        if mode == "force":
            assert len(choices) == len(mine), (name, _names(choices))
        else:
            assert any(type(c).__name__ == "ExternKernelCaller" for c in choices), name  # cuBLAS stays
            assert len(choices) > len(mine) + 1, name  # and stock Triton


def test_a_torch_without_the_gemm_hooks_keeps_the_flex_side(monkeypatch):
    """Where one GEMM hook is missing (a torch utlx does not know), enable() warns, says why in stats, and the
    FlexAttention seams are still installed."""
    from utlx import compat

    def missing():
        raise RuntimeError("utlx.inductor: torch 2.99 has no torch._inductor.choices.InductorChoices")

    monkeypatch.setattr(compat, "inductor_gemm_hooks", missing)
    before = type(V.choices)
    with pytest.warns(UserWarning, match="the GEMM templates are off: utlx.inductor: torch 2.99 has no"):
        ui.enable("allow")
    assert ui.mode() == "allow" and type(V.choices) is before
    assert "torch 2.99" in ui.stats["gemm"].pop("unavailable")
    from tritonx.seams import is_installed

    assert all(is_installed(seam.name) for seam in ui.SEAMS)
