"""``torch.ops.utlx.matmul``: torch.compile(fullgraph=True) captures a model calling ``utlx.matmul``.

CPU: the capture and the fake implementation in-process (meta and fake tensors); the real path in a
subprocess under ``TRITON_INTERPRET=1`` (utlx's portable GEMM in Triton's interpreter), where
``torch.library.opcheck`` checks schema, fake and autograd registration against the real kernel and
the compiled model is compared with eager and a float32 reference. GPU (marker ``gpu``): the real
kernels under inductor, forward and backward.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
import utlx  # noqa: E402
from utlx import torch_ops  # noqa: E402

SRC = [str(Path(__file__).resolve().parents[3] / p / "src") for p in ("core", "utlx")]


class MatmulModel(torch.nn.Module):
    """What a torch user writes: utlx.matmul between ordinary torch ops."""

    def forward(self, x, w):
        return torch.relu(utlx.matmul(x, w)) * 2.0


class GraphRecorder:
    """A torch.compile backend that keeps Dynamo's FX graphs and runs them as they are."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward


def test_the_op_is_registered_once():
    assert hasattr(torch.ops.utlx, "matmul")
    assert str(torch.ops.utlx.matmul.default._schema) == "utlx::matmul(Tensor a, Tensor b) -> Tensor"
    assert torch_ops.register() == []  # idempotent
    import importlib

    assert importlib.reload(torch_ops).register() == []  # a reloaded module does not register twice


def test_fullgraph_capture_of_a_model_calling_utlx_matmul():
    recorder = GraphRecorder()
    compiled = torch.compile(MatmulModel(), fullgraph=True, backend=recorder)
    x = torch.empty(64, 32, dtype=torch.float16, device="meta")
    w = torch.empty(32, 48, dtype=torch.float16, device="meta")
    out = compiled(x, w)  # meta tensors: the graph runs on the op's fake (meta) implementation
    assert (tuple(out.shape), out.dtype, out.device.type) == ((64, 48), torch.float16, "meta")
    (graph,) = recorder.graphs
    calls = [n.target for n in graph.graph.nodes if n.op == "call_function"]
    assert calls.count(torch.ops.utlx.matmul.default) + calls.count(torch.ops.utlx.matmul) == 1, calls
    assert torch.relu in calls


def test_aot_autograd_and_dynamic_shapes_see_the_fake_implementation():
    compiled = torch.compile(MatmulModel(), fullgraph=True, backend="aot_eager", dynamic=True)
    for m, k, n in ((64, 32, 48), (17, 40, 8)):
        x = torch.empty(m, k, dtype=torch.bfloat16, device="meta")
        w = torch.empty(k, n, dtype=torch.bfloat16, device="meta")
        out = compiled(x, w)
        assert tuple(out.shape) == (m, n) and out.dtype == torch.bfloat16


def test_fake_implementation_checks_like_utlx_matmul():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a = torch.empty(64, 32, dtype=torch.float16, device="cuda")
        b = torch.empty(32, 48, dtype=torch.float16, device="cuda")
        c = torch.ops.utlx.matmul(a, b)
        assert (tuple(c.shape), c.dtype, c.device.type) == ((64, 48), torch.float16, "cuda")
        assert c.stride() == (48, 1)  # what the real implementation returns: a new row-major tensor
        with pytest.raises(RuntimeError, match="inner dimensions differ"):
            torch.ops.utlx.matmul(a, torch.empty(31, 48, dtype=torch.float16, device="cuda"))
        with pytest.raises(RuntimeError, match="two fp16 or two bf16"):
            torch.ops.utlx.matmul(a.float(), b.float())


def test_cpu_tensors_outside_the_interpreter_get_utlx_matmuls_error(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    a = torch.ones(8, 8, dtype=torch.float16)
    with pytest.raises(ValueError, match="must be on the same GPU"):
        torch.ops.utlx.matmul(a, a)


INTERPRETED = textwrap.dedent('''
    import torch
    import utlx
    from utlx import torch_ops  # noqa: F401

    torch.manual_seed(0)

    def ref(a, b):
        return a.float() @ b.float()

    def close(got, want, what):
        tol = 2e-3 * want.abs().max().item()
        err = (got.float() - want).abs().max().item()
        assert err <= tol, f"{what}: max error {err} > {tol}"

    # real kernel vs schema, fake implementation, autograd registration (torch's own checker)
    a = torch.randn(48, 40).half()
    b = torch.randn(40, 72).half()
    report = torch.library.opcheck(torch.ops.utlx.matmul.default, (a, b))
    assert all(v == "SUCCESS" for v in report.values()), report

    class Model(torch.nn.Module):
        def forward(self, x, w):
            return torch.relu(utlx.matmul(x, w)) * 2.0

    x = torch.randn(96, 64).half().requires_grad_()
    w = torch.randn(64, 80).half().requires_grad_()
    compiled = torch.compile(Model(), fullgraph=True, backend="aot_eager")
    got = compiled(x, w)
    eager = torch.relu(torch.ops.utlx.matmul(x, w)) * 2.0
    want = torch.relu(ref(x, w)) * 2.0
    close(got, want, "compiled forward")
    assert torch.equal(got, eager), "compiled and eager run the same kernel: bit-identical"
    got.float().sum().backward()
    xf, wf = x.detach().float().requires_grad_(), w.detach().float().requires_grad_()
    (torch.relu(xf @ wf) * 2.0).sum().backward()
    close(x.grad, xf.grad, "grad x")
    close(w.grad, wf.grad, "grad w")
    print("interpreted utlx.matmul op: opcheck, compiled == eager == fp32 reference, gradients ok")
''')


def _run_interpreted(tmp_path, name: str, source: str, last_words: str) -> None:
    """Run ``source`` as a script under ``TRITON_INTERPRET=1`` with this checkout's packages first on the path;
    it must exit 0 having printed ``last_words`` (a child process: the interpreter is chosen at import)."""
    script = tmp_path / name
    script.write_text(source)
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=os.pathsep.join([*SRC, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    assert last_words in done.stdout


def test_real_path_under_the_interpreter(tmp_path):
    """opcheck + compiled model vs eager vs fp32 reference, with the real utlx kernel run by the interpreter."""
    _run_interpreted(tmp_path, "interpreted_op.py", INTERPRETED, "compiled == eager == fp32 reference, gradients ok")


DIRECT = textwrap.dedent('''
    import sys

    import torch
    import utlx

    torch.manual_seed(0)
    a = torch.randn(40, 24).half()
    w = torch.randn(56, 24).half()
    for b in (w.T, w.T.contiguous()):   # a column-major view (x @ w.T) and a row-major operand
        got = utlx.matmul(a, b)          # the documented call, without importing utlx.torch_ops
        assert got.shape == (40, 56) and got.dtype == torch.float16 and got.device.type == "cpu"
        want = a.float() @ b.float()
        err = (got.float() - want).abs().max().item()
        assert err <= 2e-3 * want.abs().max().item(), err
        assert torch.equal(utlx.matmul(a, b), got), "a second call (the remembered plan) gives the same"
    assert "utlx.torch_ops" not in sys.modules
    from utlx import torch_ops  # noqa: F401

    assert torch.equal(torch.ops.utlx.matmul(a, w.T), utlx.matmul(a, w.T)), "one path: the op calls utlx.matmul"
    print("utlx.matmul on CPU tensors under the interpreter: ok")
''')


def test_utlx_matmul_takes_cpu_tensors_under_the_interpreter(tmp_path):
    """docs/utlx.md's promise for ``utlx.matmul`` itself (it raised 'must be on the same GPU, got cpu and cpu')."""
    _run_interpreted(tmp_path, "direct.py", DIRECT, "utlx.matmul on CPU tensors under the interpreter: ok")


@pytest.mark.gpu
def test_compiled_model_matches_eager_on_the_gpu():
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    torch.manual_seed(0)
    x = torch.randn(512, 384, device="cuda", dtype=torch.float16, requires_grad=True)
    w = torch.randn(384, 256, device="cuda", dtype=torch.float16, requires_grad=True)
    model = MatmulModel()
    eager = model(x, w)
    compiled = torch.compile(model, fullgraph=True)  # inductor around the opaque utlx op
    got = compiled(x, w)
    ref = torch.relu(x.detach().float() @ w.detach().float()) * 2.0
    tol = 2e-3 * ref.abs().max().item()
    assert (got.float() - ref).abs().max().item() <= tol
    assert (got.float() - eager.float()).abs().max().item() <= tol
    got.float().sum().backward()
    xf, wf = x.detach().float().requires_grad_(), w.detach().float().requires_grad_()
    (torch.relu(xf @ wf) * 2.0).sum().backward()
    for g, r in ((x.grad, xf.grad), (w.grad, wf.grad)):
        assert (g.float() - r).abs().max().item() <= 2e-3 * r.abs().max().item() + 1e-2
