"""tritonx.seams: every change to stock Triton is a declared seam, made once, undone where reversible, and only
by tritonx.seams (issue 30, problem 2).

The seams here patch stand-in classes (the mechanics do not care what they patch), so these tests leave
Triton alone; the last part scans the sources of both packages for writes to Triton made anywhere else.
"""

from __future__ import annotations

import textwrap

import pytest
import tritonx
from seam_scan import sources, triton_writes
from tritonx import seams
from tritonx.errors import PluginError
from tritonx.seams import ABSENT, Seam


class _Owner:
    def greet(self) -> str:
        return "stock"


def _shout(original):
    def greet(self) -> str:
        return original(self).upper()

    return greet


def _seam(name: str = "test.greet", owner: type = _Owner, **kw) -> Seam:
    return Seam(name, where=lambda: (owner, "greet"), make=_shout,
                reason="a stand-in seam for the tests", **kw)


@pytest.fixture
def owner():
    """A fresh class per test, its seams undone afterwards."""

    class Owner:
        def greet(self) -> str:
            return "stock"

    made: list[Seam] = []
    yield Owner, made
    for seam in reversed(made):
        seams.uninstall(seam)


# ------------------------------------------------------------------------------------------ the mechanics


def test_install_is_idempotent_and_uninstall_gives_the_original_back(owner):
    cls, made = owner
    stock = cls.greet
    seam = _seam("test.idem", cls)
    made.append(seam)
    assert seams.install(seam) and seams.install(seam)  # asked twice: one patch
    assert cls().greet() == "STOCK"  # wrapped once, not twice
    assert cls.greet.__wrapped__ is stock and seams.original("test.idem") is stock
    assert seams.is_installed("test.idem") and seams.in_place("test.idem")
    assert seams.uninstall(seam) and cls.greet is stock and not seams.is_installed("test.idem")


def test_a_seam_outside_its_versions_or_not_needed_installs_nothing(owner):
    cls, made = owner
    stock = cls.greet
    old = _seam("test.old", cls, versions=((3, 0), (3, 1)))
    unneeded = _seam("test.unneeded", cls, needed=lambda: False)
    made += [old, unneeded]
    assert not seams.install(old) and not seams.install(unneeded)
    assert cls.greet is stock and not seams.is_installed("test.old")


def test_a_slot_released_holds_the_value_it_had_and_is_no_longer_active():
    class Settings:
        tag = "user"

    slot = Seam("test.tag", where=lambda: (Settings, "tag"), slot=True, reason="a stand-in setting")
    seams.write_slot(slot, "user|mine")
    assert Settings.tag == "user|mine" and slot in seams.active() and seams.read_slot(slot) == "user|mine"
    seams.release_slot(slot, "user")  # the setting's own empty value, not None
    assert Settings.tag == "user" and slot not in seams.active()
    with pytest.raises(seams.SeamError, match=r"'test\.greet' wraps an attribute"):
        seams.release_slot(_seam(), None)


def test_a_seam_that_adds_an_attribute_removes_it_again(owner):
    cls, made = owner
    seam = Seam("test.adds", where=lambda: (cls, "wave"), make=lambda original: lambda self: f"wave {original!r}",
                reason="adds a method stock lacks")
    made.append(seam)
    assert seams.install(seam)
    assert cls().wave() == "wave ABSENT" and seams.original("test.adds") is ABSENT
    assert seams.uninstall(seam) and not hasattr(cls, "wave")


def test_a_wrapper_put_over_a_seam_is_left_alone_and_the_seam_stays_recorded(owner):
    cls, made = owner
    seam = _seam("test.covered", cls)
    made.append(seam)
    seams.install(seam)
    ours = cls.greet

    def cover(self):
        return ours(self) + "!"

    cover.__wrapped__ = ours
    cls.greet = cover
    assert seams.in_place("test.covered")  # reached through the cover's __wrapped__
    assert seams.uninstall(seam) is False and cls.greet is cover and seams.is_installed("test.covered")
    cls.greet = ours


def test_a_second_copy_of_the_seams_table_adopts_an_installed_seam(owner, monkeypatch):
    """A reload of the module that asks (or of tritonx.seams) never wraps a seam twice: the mark says it is there."""
    from tritonx.seams import patching

    cls, made = owner
    seam = _seam("test.adopt", cls)
    made.append(seam)
    seams.install(seam)
    replacement = cls.greet
    monkeypatch.setattr(patching, "_installed", {})  # what a fresh copy of the table starts from
    assert seams.install(seam) and cls.greet is replacement and cls().greet() == "STOCK"
    monkeypatch.undo()


def test_irreversible_seams_refuse_to_be_undone(owner):
    cls, _ = owner
    seam = _seam("test.forever", cls, reversible=False)
    seams.install(seam)
    with pytest.raises(seams.SeamError, match=r"seam 'test.forever' cannot be undone \(.*Owner.greet\)"):
        seams.uninstall(seam)
    from tritonx.seams import patching

    cls.greet = patching._installed.pop("test.forever").original  # (the test's own cleanup)


def test_a_seam_whose_place_moved_is_an_error_naming_it():
    seam = Seam("test.moved", where=lambda: (_ for _ in ()).throw(AttributeError("no CodeGenerator.visit_Foo")),
                make=_shout, reason="Triton moved it")
    with pytest.raises(seams.SeamError, match=r"seam 'test.moved': its place in Triton cannot be found "
                                              r"\(AttributeError: no CodeGenerator.visit_Foo\)"):
        seams.install(seam)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"name": "nodot"}, "seam name must be '<owner>.<name>'"),
    ({"reason": "two\nlines"}, "reason must be one non-empty line"),
    ({"make": None}, "give make .* or slot=True"),
    ({"versions": ((3, 9), (3, 6))}, "first <= last"),
])
def test_a_malformed_seam_is_refused_naming_what_is_wrong(kwargs, message):
    base = {"name": "test.bad", "where": lambda: (_Owner, "greet"), "make": _shout, "reason": "why"}
    with pytest.raises(TypeError, match=message):
        Seam(**{**base, **kwargs})


def test_versions_are_inclusive_and_shown_as_a_range():
    seam = _seam(versions=((3, 6), (3, 7)))
    assert seam.applies((3, 6)) and seam.applies((3, 7)) and not seam.applies((3, 8))
    assert seam.version_text() == "3.6-3.7" and _seam(versions=((3, 9), (3, 9))).version_text() == "3.9"


# -------------------------------------------------------------------------- plugins declare, tritonx installs


class _Hooks:
    """A plugin's hook provider: the seams it needs (tritonx's hook specification)."""

    def __init__(self, *declared: Seam) -> None:
        self.declared = declared

    @seams.hookimpl
    def tritonx_seams(self):
        return list(self.declared)


def test_enabling_a_plugin_switches_its_seams_on_once_and_disabling_switches_them_off():
    stock = _Owner.greet
    tritonx.register_plugin(tritonx.Plugin("seamy", hooks=_Hooks(_seam("seamy.greet"))))
    assert not seams.is_installed("seamy.greet")  # declaring (registering) the plugin patches nothing
    tritonx.enable_plugins(["seamy"])
    try:
        tritonx.enable_plugins(["seamy"])  # enabled twice: one patch
        assert _Owner().greet() == "STOCK" and _Owner.greet.__wrapped__ is stock
        assert "seamy" in seams.switched_on()
        listed = {s["name"]: s for s in seams.report()}
        assert listed["seamy.greet"]["versions"] == "3.6-3.9" and listed["seamy.greet"]["owner"] == "seamy"
        assert listed["seamy.greet"]["where"].endswith("_Owner.greet")
    finally:
        tritonx.disable_plugins(["seamy"])
    assert _Owner.greet is stock and not seams.is_installed("seamy.greet") and "seamy" not in seams.switched_on()


def test_seams_stay_on_while_another_runtime_still_has_the_plugin_enabled():
    from tritonx.runtime import Runtime

    stock = _Owner.greet
    plugin = tritonx.Plugin("shared-seams", hooks=_Hooks(_seam("shared-seams.greet")))
    tritonx.register_plugin(plugin)
    tritonx.enable_plugins(["shared-seams"])
    try:
        with Runtime().use():
            tritonx.register_plugin(plugin)
            tritonx.enable_plugins(["shared-seams"])
            tritonx.disable_plugins(["shared-seams"])
        assert seams.is_installed("shared-seams.greet") and _Owner().greet() == "STOCK"
    finally:
        tritonx.disable_plugins(["shared-seams"])
    assert _Owner.greet is stock


def test_a_misspelt_hook_is_an_error_naming_the_plugin():
    class Misspelt:
        @seams.hookimpl
        def tritonx_seam(self):  # (no such hook)
            return []

    tritonx.register_plugin(tritonx.Plugin("misspelt", hooks=Misspelt()))
    with pytest.raises(PluginError, match=r"plugin 'misspelt': its hooks do not fit tritonx's hook specification"):
        tritonx.enable_plugins(["misspelt"])
    assert not tritonx.is_plugin_enabled("misspelt") and "misspelt" not in seams.switched_on()


def test_a_seam_named_for_another_owner_is_refused():
    tritonx.register_plugin(tritonx.Plugin("honest", hooks=_Hooks(_seam("tritonx.greet"))))
    with pytest.raises(PluginError, match=r"plugin 'honest': seam 'tritonx.greet' must be named 'honest.<name>'"):
        tritonx.enable_plugins(["honest"])
    assert not tritonx.is_plugin_enabled("honest") and not seams.is_installed("tritonx.greet")


def test_a_seam_that_cannot_be_installed_leaves_the_plugin_disabled_and_nothing_patched():
    stock = _Owner.greet
    broken = Seam("halfway.moved", where=lambda: (_Owner, "no_such"), make=lambda original: original.missing,
                  reason="fails while building")
    tritonx.register_plugin(tritonx.Plugin("halfway", hooks=_Hooks(_seam("halfway.greet"), broken)))
    with pytest.raises(PluginError, match=r"plugin 'halfway' not enabled on Triton"):
        tritonx.enable_plugins(["halfway"])
    assert not tritonx.is_plugin_enabled("halfway") and _Owner.greet is stock
    assert not seams.is_installed("halfway.greet") and "halfway" not in seams.switched_on()


def test_core_seams_switch_on_when_a_pipeline_is_first_activated(compile_probe):
    from tritonx.seams import core

    with tritonx.activate(tritonx.Pipeline("seams-probe").disable("tritongpu-pipeline")):
        compile_probe("cuda:90")
    active = {s.name for s in seams.active()}
    assert "tritonx.compile-key" in active and "tritonx.stages-hook" in active
    assert ("tritonx.memory-key" in active) == core.MEMORY_KEY.applies()  # (Triton 3.6 only)
    import triton.compiler.compiler as cc

    assert getattr(cc.get_cache_key, seams.patching.MARK, None) == "tritonx.compile-key"


# ------------------------------------------------------------ no write to Triton outside tritonx.seams

def test_the_scan_finds_every_way_triton_used_to_be_patched():
    """Each idiom the sources used before the seams module (issue 30) is found by the scan."""
    planted = textwrap.dedent('''
        import triton
        import triton.compiler.compiler as cc
        from triton.compiler.code_generator import CodeGenerator
        from utlx import compat as _compat

        def install(owner, name, make):
            triton.knobs.runtime.add_stages_inspection_hook = make
            cc.get_cache_key = make
            CodeGenerator.visit_With = make
            setattr(owner, name, make(getattr(owner, name)))
            target = _compat.gpu_target_class()
            target.is_cuda_backend = make
            del target.is_cuda_backend
            builder = _compat.interpreter_builder_class()
            builder.create_dot = make
            setattr(CodeGenerator, "anything", make)
            _compat.function_rewriter().ast_transformer = make
            with triton.knobs.compilation.scope():
                triton.knobs.compilation.always_compile = True  # a scoped public setting: allowed
    ''')
    found = [line.split(": ", 1)[1] for line in triton_writes(planted)]
    assert found == [
        "triton.knobs.runtime.add_stages_inspection_hook = make", "cc.get_cache_key = make",
        "CodeGenerator.visit_With = make", "setattr(owner, name, make(getattr(owner, name)))",
        "target.is_cuda_backend = make", "del target.is_cuda_backend", "builder.create_dot = make",
        "setattr(CodeGenerator, 'anything', make)", "_compat.function_rewriter().ast_transformer = make",
    ]


def test_no_write_to_triton_outside_the_seams_module():
    files = sources()
    assert "utlx.fork_surface" in files and "tritonx.compat.cache" in files  # the scan sees both packages
    writes = [w for module, path in sorted(files.items()) if not module.startswith("tritonx.seams")
              for w in triton_writes(path.read_text(), module)]
    assert writes == [], "patch Triton through tritonx.seams (declare a Seam), not directly:\n" + "\n".join(writes)


def test_the_seams_module_is_where_the_writes_are():
    """The scan is not blind to the one place that does write (else the test above proves nothing)."""
    path = sources()["tritonx.seams.patching"]
    assert any("setattr(owner, attribute, replacement)" in w for w in triton_writes(path.read_text(),
                                                                                    "tritonx.seams.patching"))
