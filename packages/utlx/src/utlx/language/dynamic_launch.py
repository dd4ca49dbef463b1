"""Blackwell cluster launch control (CLC): persistent kernels that steal the tiles of CTAs not yet
launched (TLX's ``dynamic_launch``). Every op here needs sm_100."""

from __future__ import annotations

from utlx.language._op import op


@op
def _alloc_clc_responses(num_responses, _semantic=None):
    """Allocate ``num_responses`` 16-byte CLC response buffers in shared memory."""


@op
def _clc_issue(clc_response_addr, barrier, _semantic=None):
    """Issue a CLC ``try_cancel`` whose response lands in ``clc_response_addr`` and completes on ``barrier``."""


@op
def _clc_query(clc_response_addr, _semantic=None):
    """The first CTA id of a successful CLC response (offset by this CTA's cluster rank), or -1."""


@op
def clc_create_context(num_consumers, num_stages=1, _semantic=None):
    """The barriers and responses of a ``num_stages``-deep CLC pipeline read by ``num_consumers`` tasks."""


@op
def clc_producer(context, p_producer=None, multi_ctas=False, k=0, _semantic=None):
    """Issue a CLC request into stage ``k`` of ``context`` (waiting for the stage to be free, phase
    ``p_producer``; only cluster CTA 0 waits when ``multi_ctas``)."""


@op
def clc_consumer(context, p_consumer=None, multi_ctas=False, k=0, _semantic=None):
    """Wait for stage ``k`` of ``context`` (phase ``p_consumer``), return the stolen tile id (-1 when none)
    and release the stage."""


__all__ = [
    "_alloc_clc_responses",
    "_clc_issue",
    "_clc_query",
    "clc_consumer",
    "clc_create_context",
    "clc_producer",
]
