"""NVIDIA's utlx passes inside Triton's stages: the wait-count restore after ``tritongpu-pipeline`` and the
PTX rewrite that gives marked instructions their cluster forms (:mod:`.cluster_ptx`), and the cluster shape of
a ``ctas_per_cga`` kernel in its PTX entry (:mod:`.cluster_launch`)."""

from __future__ import annotations

from utlx.compiler.common.stages import restore_waits_pass
from utlx.language._op import LANGUAGE

from . import cluster_launch, cluster_ptx

# After the software pipeline: put back the async-copy wait counts it resets. Gluon kernels skip it.
LANGUAGE.insert_after("tritongpu-pipeline", restore_waits_pass, stage="ttgir", required=False)
# Multicast TMA loads and arrivals on a peer CTA's barrier: the stock PTX instructions the TLX ops marked
# become their cluster forms (stock Triton cannot emit them; see cluster_ptx). Unmarked PTX is untouched.
LANGUAGE.transform_stage("ptx", cluster_ptx.rewrite, required=False)  # AMD has no ptx stage
# ctas_per_cga clusters: the kernel's cluster shape in its PTX entry, so the driver forms the clusters (cluster_launch).
LANGUAGE.transform_stage("ptx", cluster_launch.add_cluster_directives, required=False)
