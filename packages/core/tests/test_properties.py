"""Property tests of the pure parts of the engine: plan, annotate, pass-name parsing and cache keys.

Hypothesis draws random pass lists (a few names, so selectors hit often, repeated names so occurrences
matter) and random edits of every pass-edit kind, and checks the rules docs/pipelines.md states, against a
model computed here from :func:`selects` alone.
"""

from __future__ import annotations

import copy
from collections import Counter

import pytest

pytest.importorskip("hypothesis", reason="property tests need hypothesis (the default test env has it)")

from hypothesis import given, settings
from hypothesis import strategies as st
from tritonx.compat import parse_pipeline_names
from tritonx.engine.keys import combined_key, pipeline_key
from tritonx.engine.plan import annotate, plan, selects
from tritonx.errors import PipelineConflictError
from tritonx.model.edits import Disable, InsertAfter, InsertBefore, NamedPass, PassSelector, Replace
from tritonx.model.keyed import callable_key
from tritonx.model.passes import PassInfo
from tritonx.settings import parse_list

NAMES = ("canonicalize", "cse", "tritongpu-coalesce", "tritongpu-pipeline")
STAGES = ("ttir", "ttgir")
KINDS = (InsertBefore, InsertAfter, Replace, Disable)


def _infos(names_and_stages: list[tuple[str, str]]) -> list[PassInfo]:
    seen: Counter[tuple[str, str]] = Counter()
    out = []
    for index, (name, stage) in enumerate(names_and_stages):
        out.append(PassInfo(name=name, adder=f"passes.x.add_{name.replace('-', '_')}", args=(index,), stage=stage,
                            index=index, occurrence=seen[(name, stage)], label="x"))
        seen[(name, stage)] += 1
    return out


pass_lists = st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(STAGES)), max_size=12).map(_infos)
selectors = st.builds(PassSelector, st.sampled_from((*NAMES, "no-such-pass")),
                      st.one_of(st.none(), st.integers(-3, 3)), st.one_of(st.none(), st.sampled_from(STAGES)))


@st.composite
def edits(draw):
    kind = draw(st.sampled_from(KINDS))
    fields = {"pipeline": draw(st.sampled_from(("p", "q"))), "selector": draw(selectors)}
    if kind is not Disable:
        fields["new"] = NamedPass(draw(st.sampled_from(("new-a", "new-b"))))
    return kind(**fields)


def _totals(passes: list[PassInfo]) -> dict[str, int]:
    return dict(Counter(p.name for p in passes))


def _conflict(passes, edit_list, totals) -> bool:
    for info in passes:
        hits = [e for e in edit_list if selects(e, info, totals)]
        replacing = sum(isinstance(e, Replace) for e in hits)
        if replacing > 1 or (replacing and any(isinstance(e, Disable) for e in hits)):
            return True
    return False


@settings(max_examples=300, deadline=None)
@given(pass_lists, st.lists(edits(), max_size=5))
def test_plan_follows_the_composition_rules(passes, edit_list):
    totals = _totals(passes)
    before = copy.deepcopy(passes)
    if _conflict(passes, edit_list, totals):
        with pytest.raises(PipelineConflictError, match="conflicting edits on pass"):
            plan(passes, edit_list, totals)
        return
    planned = plan(passes, edit_list, totals)
    assert passes == before and all(p.mark is None for p in passes)  # the inputs are not touched

    expected = []
    for at, info in enumerate(passes):
        hits = [e for e in edit_list if selects(e, info, totals)]
        expected += [("new", e.uid, at) for e in hits if isinstance(e, InsertBefore)]
        replacing = [e for e in hits if isinstance(e, Replace)]
        if replacing:
            expected.append(("new", replacing[0].uid, at))
            assert planned.marks[at].what == "replaced" and planned.marks[at].pipeline == replacing[0].pipeline
        elif any(isinstance(e, Disable) for e in hits):
            assert planned.marks[at].what == "disabled"
        else:
            expected.append(("pass", info.index, at))
            assert at not in planned.marks
        expected += [("new", e.uid, at) for e in hits if isinstance(e, InsertAfter)]
    got = [("pass", s.info.index, s.info.index) if s.kind == "pass" else ("new", s.edit.uid, s.anchor)
           for s in planned.steps]
    assert got == expected
    matched = {e.uid for e in edit_list if any(selects(e, info, totals) for info in passes)}
    assert planned.used == matched
    assert planned.is_identity(passes) == (not matched)


@settings(max_examples=200, deadline=None)
@given(pass_lists, st.lists(edits(), max_size=5))
def test_annotate_shows_every_stock_pass_once_and_every_new_step(passes, edit_list):
    totals = _totals(passes)
    if _conflict(passes, edit_list, totals):
        return
    planned = plan(passes, edit_list, totals)
    before = copy.deepcopy(passes)
    shown = annotate(passes, planned)
    assert passes == before
    new_steps = [s for s in planned.steps if s.kind == "new"]
    assert len(shown) == len(passes) + len(new_steps)
    stock = [p for p in shown if p.mark not in ("inserted", "replacement")]
    assert [(p.name, p.index) for p in stock] == [(p.name, p.index) for p in passes]
    for at, p in enumerate(stock):
        mark = planned.marks.get(at)
        assert (p.mark, p.edit) == ((mark.what, mark.pipeline) if mark else (None, None))
    added = [p for p in shown if p.mark in ("inserted", "replacement")]
    assert sorted(p.name for p in added) == sorted(s.edit.new.describe() for s in new_steps)
    assert sum(p.mark == "replacement" for p in added) == sum(m.what == "replaced" for m in planned.marks.values())


@given(st.lists(st.text(alphabet="abc/ ._-", max_size=6), max_size=6))
def test_list_parser_strips_and_drops_empty_items(items):
    assert parse_list(":".join(items), sep=":") == tuple(i.strip() for i in items if i.strip())


# -- pass-name parsing ----------------------------------------------------------------------------------

pass_names = st.from_regex(r"[a-z][a-z0-9]{0,6}(-[a-z0-9]{1,5}){0,3}", fullmatch=True)
options = st.one_of(st.just(""), st.from_regex(r"\{[a-z]{1,4}=[a-z0-9]{1,3}( [a-z]{1,4}=[a-z0-9]{1,3}){0,2}\}",
                                               fullmatch=True))


@st.composite
def pipelines(draw):
    """(pipeline text as MLIR prints it, the pass names in order)."""
    parts, names = [], []
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            inner = draw(st.lists(pass_names, min_size=1, max_size=3))
            anchor = draw(st.sampled_from(("func.func", "tt.func", "builtin.module")))
            parts.append(f"{anchor}({','.join(n + draw(options) for n in inner)})")
            names += inner
        else:
            name = draw(pass_names)
            parts.append(name + draw(options))
            names.append(name)
    wrapper = draw(st.sampled_from(("any({})", "builtin.module({})", "{}")))
    return wrapper.format(",".join(parts)), names


@settings(max_examples=300, deadline=None)
@given(pipelines())
def test_parse_pipeline_names_lists_every_pass_in_order(case):
    text, names = case
    assert parse_pipeline_names(text) == names


def test_parse_pipeline_names_on_a_real_pipeline_string():
    text = "any(canonicalize{  max-iterations=10 region-simplify=normal},func.func(cse,tritongpu-coalesce),loop-licm)"
    assert parse_pipeline_names(text) == ["canonicalize", "cse", "tritongpu-coalesce", "loop-licm"]


# -- keys -------------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(edits(), edits())
def test_edit_keys_are_equal_exactly_when_the_edits_are(a, b):
    same = (type(a), a.pipeline, a.selector, getattr(a, "new", None), a.required) == \
           (type(b), b.pipeline, b.selector, getattr(b, "new", None), b.required)
    fields_equal = (type(a), a.selector, getattr(a, "new", None), a.required) == \
                   (type(b), b.selector, getattr(b, "new", None), b.required)
    assert (a.key() == b.key()) == fields_equal  # the pipeline's name enters the pipeline key, not the edit's
    if same:
        assert a.key() == b.key()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=8), max_size=5), st.lists(st.text(max_size=8), max_size=5))
def test_combined_key_is_order_sensitive_and_empty_for_nothing(a, b):
    assert combined_key([]) == ""
    if a:
        assert len(combined_key(a)) == 32
    if a != b and (a or b):
        assert combined_key(a) != combined_key(b) or "\n".join(a) == "\n".join(b)


def _make_pass(value):
    def fn(module, ctx):
        return value

    return fn


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.integers(), st.text(max_size=10), st.tuples(st.integers(), st.booleans())),
       st.one_of(st.integers(), st.text(max_size=10), st.tuples(st.integers(), st.booleans())))
def test_callable_key_sees_immutable_closure_values(x, y):
    assert (callable_key(_make_pass(x)) == callable_key(_make_pass(y))) == (repr(x) == repr(y) and type(x) is type(y))


def test_pinned_key_of_a_named_pass_pipeline():
    """A refactor must not change cache keys: every binary in users' caches would be rebuilt (or worse)."""
    from tritonx.model.pipeline import Pipeline

    p = Pipeline("pinned")
    p.disable("tritongpu-pipeline", occurrence=1, stage="ttgir")
    p.insert_before("tritongpu-coalesce", "tritongpu-remove-layout-conversions", required=False)
    assert [e.key() for e in p.edits] == [
        "disable/tritongpu-pipeline#1@ttgir////True",
        "insert_before/tritongpu-coalesce#None@None/named:tritongpu-remove-layout-conversions:None///False",
    ]
    assert pipeline_key(p) == "d1c81f24450f348e6e2c8d26236367a984a6c6d7d2510b62db47ce0088bcbc25"
