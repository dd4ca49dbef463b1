"""Which NVIDIA targets each family of TLX ops is registered for (``tritonx.dsl`` target patterns).

Why patterns and not checks in the bodies: the vendor and architecture that serve a kernel are chosen where the op
is registered (the most specific pattern wins), so a body never asks which GPU it compiles for; a target without a
body of its own gets the refusal registered for its backend (:mod:`.refusals`, ``utlx.compiler.amd.refusals``).
"""

from __future__ import annotations

#: Every NVIDIA target (mbarriers, fences, inline-PTX sync ops).
NVIDIA = ("cuda",)
#: Hopper: wgmma.
HOPPER = ("cuda:90",)
#: Blackwell data-center parts: tensor memory, tcgen05, cluster launch control.
BLACKWELL = ("cuda:100", "cuda:103")
#: Blackwell's tensor memory per CTA: 128 lanes (rows) and 512 32-bit columns.
TMEM_LANES = 128
TMEM_COLUMNS = 512
#: TMA, warp specialization: Hopper and Blackwell.
SM90_PLUS = HOPPER + BLACKWELL
