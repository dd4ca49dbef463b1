"""`tritonx new` renders complete projects, refuses bad input without leaving anything behind."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cookiecutter")

from tritonx.cli import new as new_module
from tritonx.cli.new import ScaffoldError, scaffold, template_dir

PYTHON_ONLY = ["src/{m}/passes.py", "tests/test_python_pass.py"]
NATIVE_ONLY = [
    "CMakeLists.txt", "cmake/locate_deps.py", "native/Dialect.td", "native/Plugin.cpp", "native/Passes.cpp",
    "native/TritonPluginABI.h", "requirements-build.txt", "src/{m}/native.py", "tests/test_native_plugin.py",
    "tests/test_build_gate.py",
]
COMMON = [
    "pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", ".gitignore", "ci/matrix.py", "ci/triton-versions.txt",
    "src/{m}/__init__.py", "src/{m}/plugin.py", "src/{m}/language.py", "tests/conftest.py", "tests/kernels.py",
    "tests/test_discovery.py", "tests/test_cli.py", "tests/test_language.py", "tests/interpret_language.py",
]


def _files(project: Path) -> set[str]:
    return {p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file()}


def _versions(project: Path) -> list[str]:
    lines = (project / "ci" / "triton-versions.txt").read_text().splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def _assert_fully_rendered(project: Path) -> None:
    for path in sorted(project.rglob("*")):
        if not path.is_file():
            continue
        text = path.read_text()
        assert "{{" not in text and "{%" not in text and "cookiecutter." not in text, path
        if path.suffix == ".py":
            compile(text, str(path), "exec")  # valid Python after rendering


def test_template_is_found_in_the_checkout():
    assert template_dir() == Path(__file__).resolve().parents[1]


def _rendered_variant(render, name: str, module: str, native: bool, **answers):
    """Render one variant: its files and the common ones are there, the other variant's are not, and nothing is
    left unrendered."""
    project = render(name, native=native, **answers)
    files = _files(project)
    for rel in COMMON + (NATIVE_ONLY if native else PYTHON_ONLY):
        assert rel.format(m=module) in files
    for rel in PYTHON_ONLY if native else NATIVE_ONLY:
        assert rel.format(m=module) not in files
    _assert_fully_rendered(project)
    return project


def test_python_variant(render):
    project = _rendered_variant(render, "tritonx-hello", "tritonx_hello", native=False, plugin_name="hello")
    pyproject = (project / "pyproject.toml").read_text()
    assert 'hello = "tritonx_hello.plugin:make_plugin"' in pyproject
    assert '"triton>=3.6,<3.10"' in pyproject and 'build-backend = "hatchling.build"' in pyproject
    assert _versions(project) == ["3.6.0", "3.7.1", "3.8.0", "3.9.0"]
    plugin = (project / "src" / "tritonx_hello" / "plugin.py").read_text()
    assert 'pipeline.insert_after(ANCHOR, mark_kernels)' in plugin and 'ANCHOR = "tritongpu-coalesce"' in plugin
    assert "tritonx pipeline --target cuda:90 --stage ttgir --plugins hello" in (project / "README.md").read_text()


def test_native_variant(render):
    project = _rendered_variant(render, "hello-native", "hello_native", native=True, plugin_name="hello_nat")
    assert _versions(project) == ["3.7.1"]  # the native default range is ==3.7.1
    td = (project / "native" / "Dialect.td").read_text()
    assert 'let name = "hello_nat";' in td and 'Op<Plugin_Dialect, "square"' in td
    plugin_cpp = (project / "native" / "Plugin.cpp").read_text()
    for name in ("hello_nat_to_square", "hello_nat_from_square", "hello_nat_tag"):
        assert f'"{name}"' in plugin_cpp
    entry = 'extern "C" __attribute__((visibility("default"))) tritonx_abi::PluginInfo *tritonGetPluginInfo()'
    assert entry in plugin_cpp
    cmake = (project / "CMakeLists.txt").read_text()
    assert "-Wl,-z,defs" in cmake and "-fno-rtti" in cmake and "LIBRARY DESTINATION hello_native/lib" in cmake
    assert 'build-backend = "scikit_build_core.build"' in (project / "pyproject.toml").read_text()


def test_answers_reach_the_files(render):
    project = render("tpl-answers", license="Apache-2.0", backends="cuda", triton_range=">=3.7,<3.9",
                     author="Ada", description='Says "hi"')
    assert "Apache License, Version 2.0" in (project / "LICENSE").read_text()
    assert 'BACKENDS = ["cuda"]' in (project / "tests" / "kernels.py").read_text()
    assert _versions(project) == ["3.7.1", "3.8.0"]
    pyproject = (project / "pyproject.toml").read_text()
    assert 'description = "Says \\"hi\\""' in pyproject and 'name = "Ada"' in pyproject


def test_generated_python_is_lint_clean(render):
    ruff = shutil.which("ruff") or (Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed")
    for project in (render("lint-py"), render("lint-native", native=True)):
        done = subprocess.run([str(ruff), "check", "--no-cache", "."], cwd=project, capture_output=True, text=True,
                              check=False)
        assert done.returncode == 0, done.stdout + done.stderr


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_existing_destination_is_refused_and_untouched(tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "mine.txt").write_text("keep")
    with pytest.raises(ScaffoldError, match="already exists"):
        scaffold("taken", output_dir=tmp_path)
    assert _leftovers(tmp_path) == ["taken"] and _leftovers(tmp_path / "taken") == ["mine.txt"]


@pytest.mark.parametrize(
    ("name", "native", "answers", "says"),
    [
        ("bad name", False, {}, "invalid package name NAME"),
        ("-x", False, {}, "invalid package name NAME"),
        ("ok-name", False, {"triton_range": ">=3.6"}, "triton_range: '>=3.6' admits Triton 3.10.0"),
        ("ok-name", False, {"triton_range": ">=3.2,<3.5"}, "admits no Triton version tritonx supports"),
        ("ok-name", True, {"triton_range": ">=3.6,<3.8"}, "native plugins need Triton >=3.7"),
        ("ok-name", False, {"plugin_name": "Bad-Name"}, "plugin_name: 'Bad-Name'"),
        ("ok-name", False, {"licence": "MIT"}, "unknown answer(s) licence"),
        ("class", False, {}, "module_name: 'class'"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(tmp_path, name, native, answers, says):
    with pytest.raises(ScaffoldError) as info:
        scaffold(name, native=native, output_dir=tmp_path, answers=answers)
    assert says in str(info.value)
    assert _leftovers(tmp_path) == []


def test_missing_output_dir_is_refused(tmp_path):
    with pytest.raises(ScaffoldError, match="--output-dir"):
        scaffold("fine", output_dir=tmp_path / "nope")
    assert _leftovers(tmp_path) == []


def test_a_failed_render_leaves_nothing(tmp_path, monkeypatch):
    import cookiecutter.generate

    def broken(**kwargs):
        Path(kwargs["output_dir"], "half-written").mkdir()
        raise RuntimeError("disk full")

    monkeypatch.setattr(cookiecutter.generate, "generate_files", broken)
    with pytest.raises(ScaffoldError, match="rendering the plugin template failed: RuntimeError: disk full"):
        scaffold("fine", output_dir=tmp_path)
    assert _leftovers(tmp_path) == []


def test_wheel_copy_of_the_template_wins(tmp_path, monkeypatch):
    bundled = tmp_path / "_template"
    shutil.copytree(template_dir(), bundled, ignore=shutil.ignore_patterns("tests", "__pycache__"))
    monkeypatch.setattr(new_module, "WHEEL_TEMPLATE", bundled)
    assert template_dir() == bundled
    project = scaffold("from-wheel", output_dir=tmp_path)
    assert (project / "src" / "from_wheel" / "plugin.py").is_file()


def test_missing_template_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(new_module, "WHEEL_TEMPLATE", tmp_path / "a")
    monkeypatch.setattr(new_module, "CHECKOUT_TEMPLATE", tmp_path / "b")
    with pytest.raises(ScaffoldError, match="plugin template is missing"):
        template_dir()


def test_cli_command(tmp_path):
    typer = pytest.importorskip("typer")
    from typer.testing import CliRunner

    app = typer.Typer()
    new_module.register(app)
    app.command("noop")(lambda: None)  # a second command, so `new` stays a subcommand as in the real app
    runner = CliRunner()
    ok = runner.invoke(app, ["new", "cli-made", "-o", str(tmp_path), "--plugin-name", "climade", "--backends", "hip"])
    assert ok.exit_code == 0, ok.output
    assert "Created" in ok.output and "--plugins climade" in ok.output
    assert 'BACKENDS = ["hip"]' in (tmp_path / "cli-made" / "tests" / "kernels.py").read_text()
    bad = runner.invoke(app, ["new", "cli-made", "-o", str(tmp_path)])
    assert bad.exit_code == 2 and "already exists" in bad.output
    bad = runner.invoke(app, ["new", "other", "-o", str(tmp_path), "--native", "--triton", ">=3.6,<3.10"])
    assert bad.exit_code == 2 and "native plugins need Triton >=3.7" in bad.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli-made"]


def test_plain_cookiecutter_works_from_the_checkout(tmp_path, python_runner):
    config = tmp_path / "cookiecutter.yaml"
    config.write_text(f"replay_dir: {tmp_path / 'replay'}\ncookiecutters_dir: {tmp_path / 'cache'}\n")
    out = tmp_path / "out"
    # cookiecutter writes each hook it runs to a tmp*.py in the temp folder and never deletes it: keep
    # them in this test's folder, not the user's /tmp
    hooks_tmp = tmp_path / "tmp"
    hooks_tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(hooks_tmp))
    args = ["-m", "cookiecutter", "--no-input", "--config-file", str(config), "-o", str(out), str(template_dir())]
    done = python_runner([*args, "package_name=cc-made", "variant=native"], cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "cc-made" / "native" / "Dialect.td").is_file()
    assert not (out / "cc-made" / "src" / "cc_made" / "passes.py").exists()
    # The same validation refuses bad answers there too, and cookiecutter removes the project.
    done = python_runner([*args, "package_name=cc-bad", "triton_range=>=3.0"], cwd=tmp_path, env=env)
    assert done.returncode != 0
    assert "triton_range: '>=3.0' admits Triton" in done.stderr
    assert not (out / "cc-bad").exists()
    assert list(hooks_tmp.glob("tmp*.py")), "cookiecutter's hook files went elsewhere (the temp folder?)"


def test_bytecode_in_the_installed_template_does_not_reach_the_project(tmp_path, monkeypatch):
    """pip byte-compiles the template inside the wheel; the generated project must not inherit those .pyc."""
    import compileall

    bundled = tmp_path / "_template"
    shutil.copytree(template_dir(), bundled, ignore=lambda d, names: ["tests"] if Path(d) == template_dir() else [])
    compileall.compile_dir(str(bundled), quiet=2)  # what pip does at install time (Jinja files just fail)
    compiled = list(bundled.rglob("*.pyc"))
    assert any("{{cookiecutter.package_name}}" in str(p) for p in compiled)  # the set-up really made some
    (bundled / "{{cookiecutter.package_name}}" / "stray.pyc").write_bytes(b"\0")
    monkeypatch.setattr(new_module, "WHEEL_TEMPLATE", bundled)
    (tmp_path / "out").mkdir()
    project = scaffold("no-stale", output_dir=tmp_path / "out")
    left = [p for p in project.rglob("*") if p.name == "__pycache__" or p.suffix in (".pyc", ".pyo")]
    assert left == []
    assert (project / "tests" / "conftest.py").is_file()


def _installed_triton() -> str:
    import importlib.metadata as md

    return md.version("triton").split("+")[0]


def test_native_variant_warns_when_the_venvs_triton_differs(tmp_path):
    from tritonx.cli.app import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["new", "warn-native", "--native", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    installed = _installed_triton()
    if installed == "3.7.1":
        assert "warning" not in result.stderr
    else:
        assert f"warning: this environment has Triton {installed}, but warn-native is for triton==3.7.1" \
            in result.stderr
        assert "TRITONX_LLVM_DIR" in result.stderr
    assert "Created" in result.stdout and "warning" not in result.stdout


def test_python_variant_warns_only_outside_its_range(tmp_path):
    from tritonx.cli.app import app
    from typer.testing import CliRunner

    installed = _installed_triton()
    runner = CliRunner()
    fits = runner.invoke(app, ["new", "fits", "-o", str(tmp_path)])
    assert fits.exit_code == 0 and "warning" not in fits.stderr
    other = "3.6.0" if installed != "3.6.0" else "3.9.0"
    elsewhere = runner.invoke(app, ["new", "elsewhere", "-o", str(tmp_path), "--triton", f"=={other}"])
    assert elsewhere.exit_code == 0, elsewhere.output
    assert f"has Triton {installed}, but elsewhere is for triton=={other}" in elsewhere.stderr


def test_test_extra_pins_nothing_a_user_already_has(render):
    """`pip install .[test]` must not downgrade numpy (it once pinned numpy<2.3) or pull torch."""
    for project in (render("extra-py"), render("extra-nat", native=True)):
        text = (project / "pyproject.toml").read_text()
        test_extra = text.split("[project.optional-dependencies]")[1].split("\n[")[0]
        assert "numpy" not in test_extra.split("#")[-1] and "torch" not in test_extra.split("#")[-1], test_extra
        assert 'test = ["pytest>=8"]' in test_extra


def test_matrix_builds_python_plugins_with_isolation_and_takes_find_links(render, python_runner, tmp_path):
    py = render("iso-py")
    done = python_runner(["ci/matrix.py", "--dry-run", "--versions", "3.8.0", "--find-links", str(tmp_path)], cwd=py)
    assert done.returncode == 0, done.stderr
    installs = [line for line in done.stdout.splitlines() if " pip install " in line]
    assert len(installs) == 2 and all(f"--find-links {tmp_path}" in line for line in installs)
    assert "--no-build-isolation" not in done.stdout  # a fresh venv has no hatchling: pip's isolated build gets it
    assert "numpy" not in done.stdout
    nat = render("iso-nat", native=True)
    done = python_runner(["ci/matrix.py", "--dry-run"], cwd=nat)
    assert done.returncode == 0, done.stderr
    assert "--no-build-isolation" in done.stdout and "requirements-build.txt" in done.stdout
