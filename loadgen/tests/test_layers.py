"""The harness's house rules (README.md, "How the code is laid out"), checked on its source: imports point down the
layers, never up; no import inside a function but the lazy loads of heavy optional libraries; no module over 400
lines; no two modules with one name (or one name and its plural); no class defined twice; no function over 60 lines
or 7 parameters; no docstring or comment naming a module that does not exist; flag names written in one module."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[1] / "harness"
# bottom to top: a module may import from its own layer and those below
LAYERS = [
    "basics",
    "stats",
    "tools",
    "config",
    "runtime",
    "containers",
    "conformance",
    "results",
    "judging",
    "report",
    "export",
    "history",
    "servers",
    "measuring",
    "calibrate",
    "versus",
    "cli",
]
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
                    targets = [
                        f"{child.module}.{a.name}" if f"{child.module}.{a.name}" in modules() else child.module
                        for a in child.names
                    ]
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
                up.append(
                    f"{path.relative_to(HARNESS.parent)}:{line}: {module} ({LAYERS[layer(module)]}) imports "
                    f"{target} ({LAYERS[layer(target)]})"
                )
    assert not up, "\n".join(up)


def test_no_import_inside_a_function_but_lazy_heavy_libraries():
    inside = [
        f"{path.relative_to(HARNESS.parent)}:{line}: {target}"
        for module, path in modules().items()
        for target, line, in_function in imports(path)
        if in_function
        and target.split(".")[0] not in LAZY
        and not (target.startswith("harness.") and target.split(".")[-1] in LAZY_MODULES)
    ]
    assert not inside, "\n".join(inside)


LAZY_MODULES = {
    "charts",
    "versus_charts",
    "history_charts",
}  # harness.export.charts and versus_charts: matplotlib, loaded only when charts are drawn


def test_the_readme_draws_every_room_in_its_layer():
    """The README's layout table names the rooms bottom to top as LAYERS has them, and every package is one of them."""
    readme = (HARNESS.parents[1] / "README.md").read_text()
    table = readme.split("| rooms, bottom to top |", 1)[1].split("\n\n", 1)[0]
    drawn = re.findall(r"`(\w+)/`", table)
    packages = sorted({p.parent.name for p in HARNESS.glob("*/*.py")})
    assert drawn == LAYERS and sorted(drawn) == packages, (drawn, packages)


def test_no_module_is_over_400_lines():
    long = {
        str(p.relative_to(HARNESS.parent)): n
        for p in modules().values()
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not long, long


def test_no_two_modules_share_a_name_or_differ_by_a_plural():
    names = [p.stem for p in modules().values() if p.stem not in ("__init__", "__main__")]
    stems = Counter(n[:-1] if n.endswith("s") and n[:-1] in names else n for n in names)
    assert not [n for n, count in stems.items() if count > 1], sorted(names)


def test_no_class_is_defined_twice():
    classes = Counter(
        node.name
        for p in modules().values()
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.ClassDef)
    )
    assert not [name for name, count in classes.items() if count > 1], classes


MAX_FUNCTION_LINES, MAX_PARAMETERS = 60, 7
REPO = HARNESS.parents[1]
PY_MENTION = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.py)\b")
DOTTED = re.compile(r"\bharness(?:\.\w+)+")


def functions():
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield module, node


def parameters(node) -> int:
    a = node.args
    names = [*a.posonlyargs, *a.args, *a.kwonlyargs] + [x for x in (a.vararg, a.kwarg) if x]
    return len([n for n in names if n.arg not in ("self", "cls")])


def test_no_function_is_over_60_lines_or_7_parameters():
    long = [
        f"{m}.{n.name}: {n.end_lineno - n.lineno + 1} lines"
        for m, n in functions()
        if n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES
    ]
    wide = [f"{m}.{n.name}: {parameters(n)} parameters" for m, n in functions() if parameters(n) > MAX_PARAMETERS]
    assert not long + wide, "split these (an options object for the parameters): " + "; ".join(long + wide)


def texts(path: Path) -> list[str]:
    """The docstrings and comments of a module: where it names other modules."""
    source = path.read_text()
    out = [
        node.value.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    ]
    return out + [line.split("#", 1)[1] for line in source.splitlines() if "#" in line]


def test_no_docstring_or_comment_names_a_module_that_does_not_exist():
    files = [str(p.relative_to(REPO)) for p in REPO.rglob("*.py") if ".venv" not in p.parts]
    missing = []
    for module, path in modules().items():
        for text in texts(path):
            for name in PY_MENTION.findall(text):
                if not any(f == name or f.endswith("/" + name) for f in files):
                    missing.append(f"{module}: {name}")
            missing += [f"{module}: {dotted}" for dotted in DOTTED.findall(text) if not resolves(dotted)]
    assert not missing, missing


def resolves(dotted: str) -> bool:
    """harness.a.b.c names a module, or a name in one (a package's unknown member is a module that does not exist);
    a file of the checkout's (`.run/harness.lock`) is not a module."""
    parts = dotted.split(".")
    if parts[-1] in ("lock", "json", "toml", "txt"):
        return True
    known = modules()
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in known:
            return end == len(parts) or known[prefix].name != "__init__.py" or _defines(known[prefix], parts[end])
    return False


def _defines(path: Path, name: str) -> bool:
    return any(
        getattr(node, "name", None) == name or isinstance(node, ast.alias) and (node.asname or node.name) == name
        for node in ast.walk(ast.parse(path.read_text()))
    )


FLAG_RULES = "harness.results.flag_kinds"


def test_a_flag_name_is_a_literal_in_one_module_only():
    """Flag names are written in results/flag_kinds.py and read from it: elsewhere no literal names a flag where a flag
    is meant (a Flag made, a flag name compared or listed). Names that are flags only (hyphenated) appear nowhere else
    at all; single words that are also other things (`errors`, a record's field) are checked where used as flags."""
    from harness.results.flag_kinds import ALL

    names = {k.name for k in ALL}
    found = []
    for module, path in modules().items():
        if module == FLAG_RULES:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in names and "-" in node.value:
                found.append(f"{module}:{node.lineno} {node.value!r}")
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "Flag"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                found.append(f"{module}:{node.lineno} Flag({node.args[0].value!r})")
            elif (
                isinstance(node, ast.Compare)
                and any(
                    isinstance(c, (ast.Set, ast.Tuple, ast.List, ast.Constant)) and _names_flag(c, names)
                    for c in node.comparators
                )
                and "name" in ast.unparse(node.left)
            ):
                found.append(f"{module}:{node.lineno} {ast.unparse(node)}")
    assert not found, found


def _names_flag(node, names: set[str]) -> bool:
    values = [node] if isinstance(node, ast.Constant) else list(node.elts)
    return any(isinstance(v, ast.Constant) and v.value in names for v in values)


# a measurement's date as the docs write them (26 Nov, 1–2 Dec, 2026-11-26, a run id); JSON Schema's 2020-12 is a name
DATED = re.compile(
    r"\b\d{1,2}[–-]?\d{0,2} (Nov|Dec)\b|\b202[5-9]-\d\d(-\d\d)?\b|\b202[5-9]\d{4}-\d{6}\b|\b(Nov|Dec) \d{1,2}\b"
)


def test_no_module_docstring_quotes_a_dated_measurement():
    """A module says what it does now; what one machine measured on a day belongs to the document reporting it."""
    dated = {
        str(p.relative_to(HARNESS.parent)): m.group(0)
        for p in modules().values()
        if (m := DATED.search(ast.get_docstring(ast.parse(p.read_text())) or ""))
    }
    assert not dated, dated
