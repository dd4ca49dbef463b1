"""Blackwell (sm_100) TLX ops: tensor memory (:mod:`.tmem`), tcgen05 MMAs and commits (:mod:`.tcgen05`), cluster
launch control (:mod:`.clc`, :mod:`.clc_ptx`), 2-CTA MMAs, commits and loads (:mod:`.two_cta`), and the errors
the Blackwell-only ops give elsewhere (:mod:`.refusals`). Importing it registers them for the Blackwell targets
of :mod:`..targets`."""

from . import alias, clc, f32x2, refusals, scaled, tcgen05, tmem, two_cta  # noqa: F401
