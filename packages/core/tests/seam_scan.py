"""The scan behind "no write to Triton outside tritonx.seams" (issue 30), shared by tritonx's and utlx's tests."""

from __future__ import annotations

import ast
from pathlib import Path

from import_graph import SOURCES

#: Attributes of Triton's modules and classes that some seam changes (a write to one of these anywhere is a
#: patch, whatever the variable holding the owner is called). utlx's test checks every declared seam is here.
SEAM_ATTRIBUTES = frozenset({
    "add_stages_inspection_hook", "get_cache_key", "compute_cache_key", "_patch_lang", "ast_transformer",
    "create_dot", "all_kwargs", "prune_configs", "_pack_args", "visit_AnnAssign", "visit_ListComp", "visit_With",
    "_str_to_load_cache_modifier", "_aggregate", "is_cuda_backend", "parse_options", "_bench",
    "create_shl", "create_lshr", "create_ashr", "create_inline_asm", "create_fp_to_fp", "type_canonicalisation_dict",
    "dot",
})

#: Writes with a computed attribute name, each to an object that is not Triton's: (module, function).
DYNAMIC_WRITES_ALLOWED = {
    ("utlx.interpreter.hooks", "_patch_container"): "utlx's own modules and the kernel's globals, per launch",
    ("utlx.interpreter.hooks", "_restore_utlx"): "puts back what _patch_container changed",
    ("utlx.language._alias", "bind_submodules"): "binds submodules on utlx's own module",
    ("utlx.fork_surface", "__init__"): "the fields of a user's @aggregate instance",
    ("tritonx.compat.dsl", "mark_builtin"): "marks tritonx's own op functions as builtins",
}


def _triton_names(tree: ast.AST) -> set[str]:
    """Names bound to Triton's modules or to names imported from them (module level or inside functions)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "triton" or alias.name.startswith("triton."):
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module and \
                (node.module == "triton" or node.module.startswith("triton.")):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _is_knobs_scope(item: ast.withitem) -> bool:
    expr = item.context_expr
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "scope" and \
        "knobs" in ast.unparse(expr.func)


def _string_constants(tree: ast.AST) -> dict[str, str]:
    return {t.id: node.value.value for node in getattr(tree, "body", []) if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for t in node.targets if isinstance(t, ast.Name)}


def triton_writes(source: str, module: str = "<test>") -> list[str]:
    """Every write to a Triton module's or class's attribute in ``source``: ``"line: text"``.

    A write: an assignment, augmented assignment or ``del`` of an attribute, or ``setattr``/``delattr``,
    whose owner is reached from a name bound to Triton (``triton.knobs.x = ``, ``CodeGenerator.visit_With =``),
    or whose attribute is one a seam changes (:data:`SEAM_ATTRIBUTES`, whatever holds the owner), or a
    ``setattr`` with a computed name outside :data:`DYNAMIC_WRITES_ALLOWED`. Exempt: Triton's own public
    settings written inside ``with triton.knobs.<group>.scope():`` (Triton puts them back). Instance state
    of objects in flight (a code generator's scopes, a kernel's ``hash``) is not a patch and not counted.
    """
    tree = ast.parse(source)
    triton = _triton_names(tree)
    constants = _string_constants(tree)
    found: list[str] = []

    def flag(node: ast.AST) -> None:
        found.append(f"{module}:{node.lineno}: {ast.unparse(node).splitlines()[0]}")

    def attribute_written(target: ast.AST) -> bool:
        return isinstance(target, ast.Attribute) and (_root(target.value) in triton or
                                                      target.attr in SEAM_ATTRIBUTES)

    def visit(node: ast.AST, function: str, scoped: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if isinstance(node, ast.With) and any(_is_knobs_scope(i) for i in node.items):
            scoped = True
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = [t for target in node.targets for t in (target.elts if isinstance(target, ast.Tuple)
                                                               else [target])]
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        for target in targets:
            if attribute_written(target) and not (scoped and "knobs" in ast.unparse(target)):
                flag(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") \
                and len(node.args) >= 2:
            obj, name = node.args[0], node.args[1]
            literal = name.value if isinstance(name, ast.Constant) else constants.get(getattr(name, "id", ""))
            if _root(obj) in triton or literal in SEAM_ATTRIBUTES or \
                    (literal is None and (module, function) not in DYNAMIC_WRITES_ALLOWED):
                flag(node)
        for child in ast.iter_child_nodes(node):
            visit(child, function, scoped)

    visit(tree, "<module>", False)
    return found


def sources() -> dict[str, Path]:
    """Every module of both packages (``tritonx...``, ``utlx...``) and its file."""
    out = {}
    for src in SOURCES.values():
        for path in src.rglob("*.py"):
            parts = list(path.relative_to(src.parent).with_suffix("").parts)
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out
