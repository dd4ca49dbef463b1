"""AMD's utlx passes inside Triton's ``make_ttgir`` stage (:mod:`.passes` says what each does)."""

from __future__ import annotations

from utlx.compiler.common.stages import restore_waits_pass
from utlx.language._op import LANGUAGE

from .passes import canonicalize_pointers_pass, dot_operand_conversions_pass, end_of_ttgir_pass

# After AMD's software pipeline: put back the async-copy wait counts it resets.
LANGUAGE.insert_after("tritonamdgpu-pipeline", restore_waits_pass, stage="ttgir", required=False)
# The stock pointer canonicalisation, skipped for modules holding buffer ops a TLX kernel built itself.
LANGUAGE.replace("tritonamdgpu-canonicalize-pointers", canonicalize_pointers_pass, stage="ttgir", required=False)
# AMD TLX kernels: the LDS round trips reduce-data-duplication made for MFMA operands become layout conversions.
LANGUAGE.insert_after("tritongpu-reduce-data-duplication", dot_operand_conversions_pass, stage="ttgir",
                      required=False)
# After the TTGIR stage's last symbol-dce: AMD's warp-pipeline pass and the dump_layout/assert_same_layout reports.
LANGUAGE.insert_after("symbol-dce", end_of_ttgir_pass, stage="ttgir", occurrence=-1, required=False)
