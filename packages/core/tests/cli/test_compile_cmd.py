"""``tritonx compile``: a stage's IR, ``--dump-after``, ``--diff`` against a plugin, input errors."""

from __future__ import annotations

from cli_helpers import ADD_SIG, MATMUL_CONSTS, MATMUL_SIG


def test_prints_ttgir_by_default(cli, add_file):
    result = cli("compile", f"{add_file}:add_one", "--target", "cuda:90", "--signature", ADD_SIG,
                 "--constexpr", "BLOCK=128")
    assert result.exit_code == 0, result.output
    assert "#ttg.blocked" in result.stdout and "tt.func public @add_one" in result.stdout


def test_ptx_stage_and_json(cli, add_file):
    data = cli.json("compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=128", "--stage", "ptx")
    assert data["stage"] == "ptx" and ".entry add_one" in data["ir"] and ".target sm_90" in data["ir"]
    assert "cubin" in data["stages"]


def test_amd_target(cli, add_file):
    data = cli.json("compile", f"{add_file}:add_one", "--target", "hip:gfx942", "--signature", ADD_SIG,
                    "-c", "BLOCK=128", "--stage", "amdgcn")
    assert "gfx942" in data["ir"] and "global_load" in data["ir"]


def test_dump_after_coalesce(cli, add_file):
    result = cli("compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=128",
                 "--dump-after", "tritongpu-coalesce")
    assert result.exit_code == 0, result.output
    assert "IR dump after tritongpu-coalesce (stage ttgir, occurrence 0)" in result.stdout
    assert "#blocked" in result.stdout and "ttg." in result.stdout

    data = cli.json("compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=128",
                    "--dump-after", "tritongpu-coalesce")
    assert [d["stage"] for d in data["dumps"]] == ["ttgir"]
    assert "#ttg.blocked" in data["dumps"][0]["ir"] and "tt.load" in data["dumps"][0]["ir"]


def test_dump_after_unknown_pass_suggests_names(cli, add_file):
    result = cli("compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=128",
                 "--dump-after", "tritongpu-coalesc")
    assert result.exit_code == 1
    assert "unknown pass 'tritongpu-coalesc'" in result.output
    assert "closest: tritongpu-coalesce" in result.output
    assert "Traceback" not in result.output


def test_diff_shows_disabled_pipelining(cli, matmul_file, no_pipelining_plugin):
    args = ["compile", f"{matmul_file}:probe_matmul", "--target", "cuda:90", "--signature", MATMUL_SIG,
            *MATMUL_CONSTS, "--divisible", "all", "--plugins", "cli-test", "--diff"]
    data = cli.json(*args)
    stages = data["stages"]
    assert stages["ttir"]["changed"] is False
    assert stages["ttgir"]["changed"] is True
    removed = [line for line in stages["ttgir"]["diff"].splitlines() if line.startswith("-")]
    assert any("ttg.async_copy_global_to_local" in line for line in removed)
    assert stages["ptx"]["changed"] is True
    assert "cubin" not in stages  # binary stages are not diffed

    result = cli(*args[:-1], "--diff", "--stage", "ptx")
    text = result.stdout
    assert "changed: ptx; unchanged: none" in result.stderr and "changed:" not in text
    assert "--- ptx (stock)" in text and "+++ ptx (plugins)" in text
    assert any(line.startswith("-") and "cp.async" in line for line in text.splitlines())


def test_diff_without_plugins_reports_no_difference(cli, add_file):
    result = cli("compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=128", "--diff",
                 "--stage", "ttgir")
    assert result.exit_code == 0, result.output
    assert "no difference in ttgir" in result.stderr and result.stdout == ""  # a message, not data


def test_binary_stage_goes_to_stdout_as_data(cli, add_file):
    """Off a terminal, stdout carries the cubin itself (`--stage cubin > k.cubin`); no message there."""
    result = cli("compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=128", "--stage", "cubin")
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes.startswith(b"\x7fELF") and b"add_one" in result.stdout_bytes
    data = cli.json("compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=128", "--stage", "cubin")
    assert data["bytes"] == len(result.stdout_bytes)


def test_binary_stage_on_a_terminal_is_a_message_on_stderr(cli, add_file, monkeypatch):
    from tritonx.cli import compile_cmd

    monkeypatch.setattr(compile_cmd, "stdout_is_terminal", lambda: True)
    result = cli("compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=128", "--stage", "cubin")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert "stage cubin is binary" in result.stderr and "pick a text stage: source, ttir, ttgir" in result.stderr


def test_input_errors(cli, add_file, tmp_path):
    def err(*args: str) -> str:
        result = cli("compile", *args)
        assert result.exit_code != 0, result.output
        assert "Traceback" not in result.output
        return result.output

    assert "expected FILE.py:KERNEL" in err(str(add_file), "--signature", ADD_SIG)
    assert "does not exist" in err(f"{tmp_path / 'missing.py'}:k", "--signature", ADD_SIG)
    assert "has no 'nope'; its @triton.jit kernels: add_one" in err(f"{add_file}:nope", "--signature", ADD_SIG)
    assert "not a @triton.jit kernel" in err(f"{add_file}:not_a_kernel", "--signature", ADD_SIG)
    assert "'x_ptr' is not NAME=TYPE" in err(f"{add_file}:add_one", "--signature", "x_ptr,n=i32")
    assert "needs --constexpr BLOCK=..." in err(f"{add_file}:add_one", "--signature", ADD_SIG)
    assert "no parameter(s) 'z'" in err(f"{add_file}:add_one", "--signature", ADD_SIG + ",z=i32", "-c", "BLOCK=8")
    assert "compute capability" in err(f"{add_file}:add_one", "--signature", ADD_SIG, "--target", "cuda:x")
    assert "stage 'foo' was not produced" in err(f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=8",
                                                 "--stage", "foo")
    assert "power of 2" in err(f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=100")
    assert "unknown plugin(s) 'ghost'" in err(f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=8",
                                              "--plugins", "ghost")
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    assert "importing" in err(f"{broken}:k", "--signature", ADD_SIG) and "boom" in err(f"{broken}:k",
                                                                                          "--signature", ADD_SIG)
