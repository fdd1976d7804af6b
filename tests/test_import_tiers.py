"""The package's layout contract, read from its source with `ast`: the library tier
(losses, layers, models, encoders, optimizers, export, distribute, `data/`,
`evaluation/`, ...) never imports the harness tier (`HARNESS`), and no modules import
each other in a cycle. Every import counts, `TYPE_CHECKING` ones and those inside
functions too."""

import ast
from pathlib import Path

from tests.support import ROOT

PACKAGE = ROOT / "aninfonce_tf"
# The harness tier: the modules under `aninfonce_tf` that run experiments and report
# them; every other module is the library tier.
HARNESS = (
    "configs",
    "runner",
    "sweep",
    "sweep_tables",
    "statistics",
    "plots",
    "compare",
    "recipes",
    "__main__",
)


def package_modules(package: Path) -> dict[str, Path]:
    """`{dotted name: file}` of every module of `package` (a package by its name)."""
    modules = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of `modules` that the module `name` (its file `path`) imports,
    without itself, the package's root and the packages that hold it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                keep = len(base) - node.level + (path.name == "__init__.py")
                module = ".".join(base[:keep] + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            candidates = [module, *(f"{module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        found.update(candidate for candidate in candidates if candidate in modules)
    root = name.split(".")[0]
    return {
        module
        for module in found
        if module not in (name, root) and not name.startswith(module + ".")
    }


def import_graph(package: Path) -> dict[str, set[str]]:
    """`{module: the modules it imports}` over the modules of `package`."""
    modules = package_modules(package)
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def in_harness(module: str) -> bool:
    """Whether `module` (`aninfonce_tf.x.y`) belongs to the harness tier."""
    parts = module.split(".")
    return len(parts) > 1 and parts[1] in HARNESS


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """`"library -> harness"` for each import of a harness module by a library one (the
    package's root, whose public API imports lazily by name, aside)."""
    return sorted(
        f"{module} -> {imported}"
        for module, imports in graph.items()
        if "." in module and not in_harness(module)
        for imported in imports
        if in_harness(imported)
    )


def import_cycles(graph: dict[str, set[str]]) -> list[str]:
    """Each set of modules that import each other in a cycle (a strongly connected
    component of `graph` of more than one module), as `"a <-> b <-> c"`."""
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def visit(module: str) -> None:
        index[module] = lowest[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph[module]):
            if imported not in index:
                visit(imported)
                lowest[module] = min(lowest[module], lowest[imported])
            elif imported in on_stack:
                lowest[module] = min(lowest[module], index[imported])
        if lowest[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(" <-> ".join(sorted(component)))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(cycles)


def test_the_library_tier_never_imports_the_harness_tier():
    upward = upward_imports(import_graph(PACKAGE))
    assert not upward, "imports from the library tier up into the harness tier:\n" + "\n".join(
        upward
    )


def test_no_modules_import_each_other_in_a_cycle():
    cycles = import_cycles(import_graph(PACKAGE))
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def type_checking_imports(package: Path) -> list[str]:
    """`"module: line"` of each import of the package under `if TYPE_CHECKING:`."""
    found = []
    for name, path in sorted(package_modules(package).items()):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            test = node.test if isinstance(node, ast.If) else None
            guard = getattr(test, "id", None) or getattr(test, "attr", None)
            if guard != "TYPE_CHECKING":
                continue
            for inner in node.body:
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    found.append(f"{name}: {ast.unparse(inner)}")
    return found


def test_no_module_imports_a_sibling_for_its_type_annotations_alone():
    found = type_checking_imports(PACKAGE)
    assert not found, "imports under TYPE_CHECKING (pass a value instead):\n" + "\n".join(found)


def test_the_contract_finds_an_upward_import_and_a_cycle(tmp_path):
    package = tmp_path / "aninfonce_tf"
    for module, text in {
        "__init__.py": "from aninfonce_tf import losses\n",
        "losses.py": "from aninfonce_tf.configs.base import UsageError\n",
        "layers.py": "import typing\nif typing.TYPE_CHECKING:\n    from . import models\n",
        "models.py": "def build():\n    from aninfonce_tf.layers import Dense\n",
        "configs/__init__.py": "",
        "configs/base.py": "from aninfonce_tf import losses\n",
    }.items():
        (package / module).parent.mkdir(parents=True, exist_ok=True)
        (package / module).write_text(text)
    graph = import_graph(package)
    assert upward_imports(graph) == ["aninfonce_tf.losses -> aninfonce_tf.configs.base"]
    assert import_cycles(graph) == [
        "aninfonce_tf.configs.base <-> aninfonce_tf.losses",
        "aninfonce_tf.layers <-> aninfonce_tf.models",
    ]
    assert type_checking_imports(package) == ["aninfonce_tf.layers: from . import models"]


# One concept per module; a module past this many lines holds more than one.
SOFT_CAP_LINES = 600


def test_every_module_stays_under_the_soft_cap():
    long = {
        name: lines
        for name, path in package_modules(PACKAGE).items()
        if (lines := len(path.read_text().splitlines())) > SOFT_CAP_LINES
    }
    assert not long, f"modules over {SOFT_CAP_LINES} lines (split by concept): {long}"
