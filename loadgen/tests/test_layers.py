"""The harness's house rules (README.md, "How the code is laid out"), checked on its source: imports point down the
layers, never up; no import inside a function but the lazy loads of heavy optional libraries; no module over 400
lines; no two modules with one name (or one name and its plural); no class defined twice."""
from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[1] / "harness"
# bottom to top: a module may import from its own layer and those below
LAYERS = ["basics", "tools", "config", "runtime", "results", "report", "measuring", "cli"]
LAZY = {"matplotlib", "pygount"}  # heavy optional libraries, loaded only when used
MAX_LINES = 400


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(HARNESS.rglob("*.py")):
        parts = path.relative_to(HARNESS.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ("cli", "__main__"):
        return LAYERS.index("cli")
    return LAYERS.index(parts[1])


def imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported harness module, line, inside a function) of every import in `path`."""
    tree = ast.parse(path.read_text())
    found = []

    def visit(node, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.ImportFrom) and child.module:
                targets = [child.module] if child.module.startswith("harness") else []
                if child.module == "harness" or child.module in modules():  # `from harness.report import charts`
                    targets = [f"{child.module}.{a.name}" if f"{child.module}.{a.name}" in modules() else child.module
                               for a in child.names]
                found.extend((t, child.lineno, in_function) for t in targets)
                if not child.module.startswith("harness"):
                    found.append((child.module, child.lineno, in_function))
            elif isinstance(child, ast.Import):
                found.extend((a.name, child.lineno, in_function) for a in child.names)
            visit(child, inside)

    visit(tree, False)
    return found


def test_imports_point_down_the_layers():
    up = []
    for module, path in modules().items():
        for target, line, _ in imports(path):
            if target.startswith("harness.") and layer(target) > layer(module):
                up.append(f"{path.relative_to(HARNESS.parent)}:{line}: {module} ({LAYERS[layer(module)]}) imports "
                          f"{target} ({LAYERS[layer(target)]})")
    assert not up, "\n".join(up)


def test_no_import_inside_a_function_but_lazy_heavy_libraries():
    inside = [f"{path.relative_to(HARNESS.parent)}:{line}: {target}" for module, path in modules().items()
              for target, line, in_function in imports(path)
              if in_function and target.split(".")[0] not in LAZY
              and not (target.startswith("harness.") and target.split(".")[-1] in LAZY_MODULES)]
    assert not inside, "\n".join(inside)


LAZY_MODULES = {"charts"}  # harness.report.charts: matplotlib, loaded only when charts are drawn


def test_no_module_is_over_400_lines():
    long = {str(p.relative_to(HARNESS.parent)): n for p in modules().values()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, long


def test_no_two_modules_share_a_name_or_differ_by_a_plural():
    names = [p.stem for p in modules().values() if p.stem not in ("__init__", "__main__")]
    stems = Counter(n[:-1] if n.endswith("s") and n[:-1] in names else n for n in names)
    assert not [n for n, count in stems.items() if count > 1], sorted(names)


def test_no_class_is_defined_twice():
    classes = Counter(node.name for p in modules().values() for node in ast.walk(ast.parse(p.read_text()))
                      if isinstance(node, ast.ClassDef))
    assert not [name for name, count in classes.items() if count > 1], classes
