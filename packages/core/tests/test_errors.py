"""Bad input gets a clear error naming what is at fault, and Triton keeps working."""

from __future__ import annotations

import pytest
import tritonx
from tritonx import errors
from tritonx_testutil import ptx_counts


def test_unknown_pass_suggests_closest_names():
    p = tritonx.Pipeline("typo").disable("tritongpu-pipline")  # a pipeline is data: checked when switched on
    with pytest.raises(errors.UnknownPassError, match=r"'tritongpu-pipline'.*closest: tritongpu-pipeline"):
        tritonx.activate(p)
    assert tritonx.active() == () and not p.frozen  # refused whole: nothing activated, still editable


def test_unknown_pass_is_refused_when_bound_and_names_the_pipeline_that_wrote_it():
    """Binding checks names too, and an edit taken in by ``extend`` keeps naming its own pipeline."""
    p = tritonx.Pipeline("outer").extend(tritonx.Pipeline("inner").insert_after("tritongpu-coalesce", "no-such-pass"))
    import triton

    @triton.jit
    def kernel(x_ptr):
        pass

    with pytest.raises(errors.UnknownPassError, match=r"pipeline 'inner': unknown insertable pass 'no-such-pass'"):
        tritonx.pipeline(p)(kernel)


def test_names_are_checked_against_the_runtime_that_switches_the_pipeline_on(runtime):
    """Which names exist is the runtime's (its native plugins' passes): a name it learned is accepted."""
    p = tritonx.Pipeline("learned").disable("tritonx-test-learned-pass")
    with pytest.raises(errors.UnknownPassError):
        tritonx.activate(p)
    runtime.names.learn("passes.test.add_learned", "tritonx-test-learned-pass")
    with tritonx.activate(p):
        assert tritonx.active() == (p,)


def test_pass_of_another_version_says_which(monkeypatch):
    from tritonx.engine import names

    data = {v: dict(m) for v, m in names._passmap().items()}
    installed = names._installed_key()
    other = next(v for v in data if v != installed)
    data[other]["passes.future.add_time_travel"] = "tritongpu-time-travel"
    monkeypatch.setattr(names, "_passmap", lambda: data)
    p = tritonx.Pipeline("future").disable("tritongpu-time-travel")
    with pytest.raises(errors.PassNotInVersionError, match=rf"does not exist in the installed Triton.*{other}"):
        tritonx.activate(p)


def test_python_pass_that_raises_names_pipeline_pass_and_stage(compile_probe):
    def broken(module, ctx):
        raise ZeroDivisionError("boom")

    p = tritonx.Pipeline("fragile").insert_after("tritongpu-coalesce", broken, pass_name="broken-pass")
    with tritonx.activate(p), pytest.raises(errors.PassFailedError) as err:
        compile_probe()
    msg = str(err.value)
    assert "'broken-pass'" in msg and "'fragile'" in msg and "'ttgir'" in msg and "ZeroDivisionError: boom" in msg
    # later compiles are unaffected
    assert ptx_counts(compile_probe())["cp.async"] > 0


def test_wrong_stage_names():
    p = tritonx.Pipeline("s")
    with pytest.raises(errors.PipelineError, match="unknown stage 'ttgr'"):
        p.override_stage("ttgr", lambda *a: None)
    with pytest.raises(errors.PipelineError, match="unknown text stage 'ttgir'"):
        p.transform_stage("ttgir", lambda t, c: t)
    with pytest.raises(errors.PipelineError, match="unknown stage 'cubn'"):
        p.disable("tritongpu-pipeline", stage="cubn")


def test_wrong_argument_types():
    p = tritonx.Pipeline("types")
    with pytest.raises(errors.PipelineError, match="occurrence must be an int"):
        p.disable("canonicalize", occurrence="first")
    with pytest.raises(errors.PipelineError, match="must be a pass name"):
        p.insert_after("tritongpu-coalesce", 42)
    with pytest.raises(errors.PipelineError, match="must be a list"):
        p.insert_after("tritongpu-coalesce", "tritongpu-coalesce", args="oops")
    with pytest.raises(errors.PipelineError, match="non-empty string name"):
        tritonx.Pipeline("")


def test_named_pass_with_wrong_args_fails_at_compile(compile_probe):
    p = tritonx.Pipeline("badargs").insert_after("tritongpu-coalesce", "tritongpu-pipeline", args=["three"])
    with tritonx.activate(p), pytest.raises(errors.PipelineError, match=r"does not take args"):
        compile_probe()


def test_activating_something_that_is_not_a_pipeline():
    with pytest.raises(errors.PipelineError, match=r"takes tritonx\.Pipeline objects, got str"):
        tritonx.activate("my-pipeline")
    with pytest.raises(errors.PipelineError, match=r"@triton\.jit kernels"):
        tritonx.pipeline(tritonx.Pipeline("k"))(lambda: None)


def test_two_replacements_conflict_and_name_both():
    a = tritonx.Pipeline("first").replace("tritongpu-pipeline", lambda m, c: None)
    b = tritonx.Pipeline("second").replace("ttgpuir.add_pipeline", lambda m, c: None)
    with tritonx.activate(a, b), pytest.raises(errors.PipelineConflictError) as err:
        tritonx.capture("cuda:90")
    assert "'first'" in str(err.value) and "'second'" in str(err.value)


def test_replace_and_disable_conflict():
    a = tritonx.Pipeline("r").replace("tritongpu-pipeline", lambda m, c: None)
    b = tritonx.Pipeline("d").disable("tritongpu-pipeline")
    with tritonx.activate(a, b), pytest.raises(errors.PipelineConflictError, match=r"'r'.*'d'"):
        tritonx.capture("cuda:90")


def test_active_pipeline_is_frozen():
    p = tritonx.Pipeline("frozen")
    with tritonx.activate(p):
        with pytest.raises(errors.PipelineFrozenError, match="edit a copy"):
            p.disable("tritongpu-pipeline")
        p.copy().disable("tritongpu-pipeline")  # a copy is editable


def test_required_edit_that_never_matches(compile_probe):
    p = tritonx.Pipeline("nv-only").disable("tritongpu-pipeline")
    with tritonx.activate(p), pytest.raises(errors.PassNotFoundInStageError, match="hip:gfx942"):
        compile_probe("hip:gfx942")
    lenient = tritonx.Pipeline("nv-only-lenient").disable("tritongpu-pipeline", required=False)
    with tritonx.activate(lenient):
        assert "v_mfma" in compile_probe("hip:gfx942").asm["amdgcn"]


def test_deactivate_inactive_pipeline():
    with pytest.raises(errors.PipelineError, match="is not active"):
        tritonx.deactivate(tritonx.Pipeline("never"))


@pytest.mark.smoke
def test_real_pass_of_another_version_names_that_version(runtime):
    """A pass one supported Triton has and the installed one lacks (from the shipped pass map)."""
    from tritonx.engine import names

    installed = names._installed_key()
    here = set(runtime.names.installed_map().values())
    elsewhere = {n: sorted(v for v, m in names._passmap().items() if n in m.values())
                 for m in names._passmap().values() for n in m.values() if n not in here}
    assert elsewhere, f"every mapped pass exists in Triton {installed}"
    name, versions = sorted(elsewhere.items())[0]
    p = tritonx.Pipeline("cross-version").disable(name)
    with pytest.raises(errors.PassNotInVersionError) as err:
        tritonx.activate(p)
    assert installed in str(err.value) and versions[0] in str(err.value)
