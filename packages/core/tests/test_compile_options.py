"""``compile_for`` validates its options like the CLI's ``-o`` (issue 28, item 12): one check, errors that
name the option and the valid range, unknown names refused (Triton drops them silently)."""

from __future__ import annotations

import pytest
import tritonx
from tritonx.errors import CompileOptionError
from tritonx.integration.options import check_compile_options


@pytest.mark.parametrize(
    ("target", "options", "message"),
    [
        ("cuda:90", {"num_warps": 3}, "compile option num_warps=3 for cuda:90: must be a power of 2 from 1 to 32"),
        ("cuda:90", {"num_warps": 1048576}, "num_warps=1048576 for cuda:90: must be a power of 2 from 1 to 32"),
        ("cuda:90", {"num_warps": True}, "num_warps=True for cuda:90: must be a power of 2"),
        ("hip:gfx942", {"num_warps": 32}, "num_warps=32 for hip:gfx942: must be a power of 2 from 1 to 16"),
        ("cuda:90", {"num_stages": -1}, "compile option num_stages=-1 for cuda:90: must be an int >= 0"),
        ("cuda:90", {"num_stages": 2.5}, "num_stages=2.5 for cuda:90: must be an int >= 0"),
        ("cuda:90", {"num_ctas": 3}, "num_ctas=3 for cuda:90: must be a power of 2 from 1 to 16"),
        ("cuda:90", {"maxnreg": 1000}, "maxnreg=1000 for cuda:90: must be an int from 1 to 255"),
        ("cuda:90", {"enable_fp_fusion": "no"}, "enable_fp_fusion='no' for cuda:90: must be a bool"),
        ("cuda:90", {"num_wraps": 4}, "unknown compile option(s) num_wraps for cuda:90; options: "),
        ("cuda:80", {"num_ctas": 2}, "num_ctas > 1 requires NVIDIA SM90+"),  # Triton's own refusal, one line
    ],
)
def test_compile_for_refuses_bad_options_naming_them(target, options, message):
    with pytest.raises(CompileOptionError) as info:
        tritonx.compile_for(target, options=options)
    assert message in str(info.value)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


def test_unknown_option_lists_the_known_ones():
    with pytest.raises(CompileOptionError) as info:
        check_compile_options("cuda:90", {"num_wraps": 4})
    assert info.value.unknown == ("num_wraps",)
    assert {"num_warps", "num_stages", "num_ctas"} <= set(info.value.known)


def test_valid_options_reach_the_binary():
    kernel = tritonx.compile_for("cuda:90", options={"num_warps": 8, "num_stages": 2, "enable_fp_fusion": False,
                                                     "maxnreg": None})  # None: Triton's default
    assert (kernel.metadata.num_warps, kernel.metadata.num_stages) == (8, 2)
    assert ".reqntid 256" in kernel.asm["ptx"]  # 8 warps of 32 threads
    rdna = tritonx.compile_for("hip:gfx1100", options={"num_warps": 32})  # RDNA: 32-thread waves, 32 fit
    assert rdna.metadata.num_warps == 32


def test_num_stages_zero_is_accepted_and_differs_from_one():
    """Triton compiles 0 as a setting of its own (and any negative value exactly as 0)."""
    zero = tritonx.compile_for("cuda:90", options={"num_stages": 0})
    one = tritonx.compile_for("cuda:90", options={"num_stages": 1})
    assert zero.metadata.num_stages == 0 and zero.asm["ptx"] != one.asm["ptx"]
