"""Issue 29: every input error is one line without Python internals; messages on stderr, data on stdout."""

from __future__ import annotations

import re

import pytest
from cli_helpers import ADD_SIG


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def one_line_error(result, *needles: str) -> str:
    """Exit 1, exactly one line on stderr naming each needle, nothing on stdout, no traceback."""
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.stdout == "", result.stdout
    err = result.stderr
    assert len(_lines(err)) == 1, err
    assert "Traceback" not in err and "internal error" not in err
    for needle in needles:
        assert needle in err, err
    return err


# ------------------------------------------------------------------------------------------------
# TRITONX_DEBUG


@pytest.mark.parametrize("value", ["2", "verbose"])
def test_bad_tritonx_debug_is_one_line(cli, value):
    result = cli.runner.invoke(cli.app, ["pipeline", "--stage", "ttir"], env={"TRITONX_DEBUG": value})
    err = one_line_error(result, f"TRITONX_DEBUG={value!r} is not a boolean", "1, true, yes, on, 0, false, no, off")
    assert err.startswith("tritonx: error: ")


@pytest.mark.parametrize("value", ["1", "yes", "0", ""])
def test_valid_tritonx_debug_values_run(cli, value):
    result = cli.runner.invoke(cli.app, ["pipeline", "--stage", "ttir", "--json"], env={"TRITONX_DEBUG": value})
    assert result.exit_code == 0, result.output


def test_tritonx_debug_1_shows_the_traceback(cli, add_file):
    """The documented switch: TRITONX_DEBUG=1 behaves as --debug (Triton's own exception is re-raised)."""
    result = cli.runner.invoke(cli.app, ["compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=100"],
                               env={"TRITONX_DEBUG": "1"})
    assert result.exit_code == 1
    assert result.exception is not None and not isinstance(result.exception, SystemExit)


# ------------------------------------------------------------------------------------------------
# --target: checked against the archs the installed backend knows, before anything compiles


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """Where ``tempfile`` puts files during the test (Triton's ptxas inputs among them)."""
    import tempfile

    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.mark.parametrize("target", ["cuda:999", "cuda:0", "cuda:101"])
def test_unknown_cuda_arch_is_refused_with_the_known_ones(cli, add_file, private_tmp, target):
    from tritonx.cli.targets import cuda_capabilities

    known = cuda_capabilities()
    assert known and 90 in known and 80 in known and 100 in known  # asked of the installed ptxas
    arch = target.split(":")[1]
    err = one_line_error(cli("compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=128",
                             "--target", target),
                         f"--target {target}", f"compute capability {arch}", "known: " + ", ".join(map(str, known)))
    assert "ptxas fatal" not in err and "Repro command" not in err
    assert list(private_tmp.iterdir()) == []  # no .ptx / .log left behind
    one_line_error(cli("pipeline", "--target", target), f"--target {target}", "known: ")


def test_known_cuda_archs_compile(cli, add_file):
    """The ends of the list and the first arch of the second ptxas (sm_100) really compile."""
    from tritonx.cli.targets import cuda_capabilities

    known = cuda_capabilities()
    for cap in sorted({known[0], 100, known[-1]}):
        data = cli.json("compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=128",
                        "--target", f"cuda:{cap}", "--stage", "ptx")
        assert f".target sm_{cap}" in data["ir"] and "cubin" in data["stages"]


def test_unknown_hip_arch_is_refused_with_the_known_ones(cli, add_file):
    err = one_line_error(cli("compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=128",
                             "--target", "hip:gfx000"), "--target hip:gfx000", "unknown AMD arch 'gfx000'",
                         "gfx942", "gfx90a", "gfx1100")
    assert "PassManager" not in err


def test_failed_ptxas_leaves_no_temp_file_and_is_ptxas_own_line(cli, add_file, private_tmp):
    result = cli("compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=128",
                 "-o", "ptx_options=--no-such-ptxas-flag")
    one_line_error(result, "ptxas refused the kernel", "no-such-ptxas-flag")
    assert "Repro command" not in result.stderr
    assert list(private_tmp.iterdir()) == []


# ------------------------------------------------------------------------------------------------
# --constexpr values and --divisible names

MIXED_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def scale(x_ptr, BLOCK: tl.constexpr, y_ptr, n, alpha, ACT: tl.constexpr = "none"):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if ACT == "relu":
        x = tl.maximum(x, 0.0)
    tl.store(y_ptr + offs, x * alpha, mask=offs < n)
'''
MIXED_SIG = "x_ptr=*fp32,y_ptr=*fp32,n=i32,alpha=fp32"


@pytest.fixture
def mixed_file(tmp_path):
    path = tmp_path / "mixed.py"
    path.write_text(MIXED_KERNEL)
    return path


def _ttir_func_line(cli, mixed_file, *args: str) -> str:
    result = cli("compile", f"{mixed_file}:scale", "--signature", MIXED_SIG, "-c", "BLOCK=128", "--stage", "ttir",
                 *args)
    assert result.exit_code == 0, result.output
    return next(line for line in result.stdout.splitlines() if "tt.func public @scale" in line)


def test_constexpr_that_is_no_literal_is_one_line(cli, add_file):
    one_line_error(cli("compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=abc"),
                   "--constexpr BLOCK=abc", "'abc' is not a number", "BLOCK=\"'abc'\"")


@pytest.mark.parametrize(("value", "kind"), [("'abc'", "str"), ("None", "NoneType"), ("[1]", "list")])
def test_constexpr_literal_that_is_no_number_is_named(cli, add_file, value, kind):
    """A literal that parses but is no number reaches the kernel: the error says so in words, not as Triton's
    AttributeError("'str' object has no attribute 'type'")."""
    err = one_line_error(cli("compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", f"BLOCK={value}"),
                         f"a Python {kind} is used where Triton needs a number or a tensor",
                         f"--constexpr BLOCK={value} is a {kind}")
    assert "AttributeError" not in err and "has no attribute" not in err


def test_quoted_string_constexpr_reaches_the_kernel(cli, mixed_file):
    relu = cli("compile", f"{mixed_file}:scale", "--signature", MIXED_SIG, "-c", "BLOCK=128", "-c", "ACT='relu'",
               "--stage", "ttir")
    assert relu.exit_code == 0, relu.output
    assert "arith.maxnumf" in relu.stdout or "arith.maximumf" in relu.stdout
    plain = cli("compile", f"{mixed_file}:scale", "--signature", MIXED_SIG, "-c", "BLOCK=128", "--stage", "ttir")
    assert "maxnumf" not in plain.stdout and "maximumf" not in plain.stdout


def test_divisible_marks_named_arguments_after_a_constexpr(cli, mixed_file):
    """y_ptr and n come after the constexpr BLOCK: the first-N form could never mark them without BLOCK."""
    line = _ttir_func_line(cli, mixed_file, "--divisible", "y_ptr,n")
    args = dict(re.findall(r"%(\w+): ([^,)]*(?:\{[^}]*\})?)", line))
    assert "tt.divisibility = 16" in args["y_ptr"] and "tt.divisibility = 16" in args["n"], line
    assert "tt.divisibility" not in args["x_ptr"], line
    repeated = _ttir_func_line(cli, mixed_file, "--divisible", "x_ptr", "--divisible", "n")
    args = dict(re.findall(r"%(\w+): ([^,)]*(?:\{[^}]*\})?)", repeated))
    assert "tt.divisibility" in args["x_ptr"] and "tt.divisibility" not in args["y_ptr"], repeated
    every = _ttir_func_line(cli, mixed_file, "--divisible", "all")
    args = dict(re.findall(r"%(\w+): ([^,)]*(?:\{[^}]*\})?)", every))
    assert all("tt.divisibility = 16" in args[n] for n in ("x_ptr", "y_ptr", "n")), every
    assert "tt.divisibility" not in args["alpha"], every  # a float carries no alignment


@pytest.mark.parametrize(("value", "needles"), [
    ("4", ("--divisible takes parameter names, not '4'", "--divisible all", "x_ptr, y_ptr, n")),
    ("z_ptr", ("--divisible z_ptr", "no parameter 'z_ptr'", "x_ptr, y_ptr, n")),
    ("BLOCK", ("--divisible BLOCK", "'BLOCK' is a constexpr",)),
    ("alpha", ("--divisible alpha", "fp32 is neither a pointer nor an integer",)),
])
def test_divisible_errors_are_one_line(cli, mixed_file, value, needles):
    one_line_error(cli("compile", f"{mixed_file}:scale", "--signature", MIXED_SIG, "-c", "BLOCK=128",
                       "--divisible", value), *needles)


# ------------------------------------------------------------------------------------------------
# tritonx new NAME


@pytest.mark.parametrize("name", ["", ".", "..", "a/b"])
def test_new_with_an_invalid_name_says_so(cli, tmp_path, name):
    out = tmp_path / "out"
    out.mkdir()
    result = cli("new", name, "-o", str(out))
    assert result.exit_code == 2, result.output
    err = result.stderr
    assert len(_lines(err)) == 1 and "Traceback" not in err, err
    assert f"invalid package name NAME: {name!r} is not a valid distribution name" in err, err
    assert "already exists" not in err
    assert list(out.iterdir()) == []  # nothing written
