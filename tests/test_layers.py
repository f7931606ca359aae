"""The import graph of ``qwinto_env`` and ``agents`` looks down only, and each game fact
is declared once.

The layers (see ``qwinto_env/__init__.py``): rules -> spec -> engines -> envs -> agents ->
trainers -> benchmark. Every import, at the top of a module or inside a function, counts.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("qwinto_env", "agents")

#: Module name prefixes, lowest layer first; the longest matching prefix decides.
LAYERS = [
    ("rules", ["qwinto_env.rules"]),
    ("spec", ["qwinto_env.spec"]),
    ("engines", ["qwinto_env.game", "qwinto_env.dice", "qwinto_env.cards", "qwinto_env.render",
                 "qwinto_env.batched"]),
    ("envs", ["qwinto_env"]),
    ("agents", ["agents"]),
    ("trainers", ["agents.trainers"]),
    ("benchmark", ["agents.benchmark"]),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sources() -> dict[str, Path]:
    """Every module of the two packages, by name."""
    return {module_name(path): path for package in PACKAGES
            for path in sorted((ROOT / package).rglob("*.py"))}


MODULES = sources()
TREES = {module: ast.parse(path.read_text(), str(path)) for module, path in MODULES.items()}


def resolve(name: str) -> str | None:
    """The module (or package) ``import name`` runs last, if it is one of ours."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def from_base(module: str, node: ast.ImportFrom) -> str:
    """The absolute module name a ``from ... import`` in ``module`` imports from."""
    base = node.module or ""
    if not node.level:
        return base
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
    return ".".join(anchor + ([base] if base else []))


def imports(module: str) -> list[tuple[str, str, int]]:
    """``(imported module, name taken from it or "", line)`` for every import in ``module``."""
    found = []
    for node in ast.walk(TREES[module]):
        if isinstance(node, ast.Import):
            found += [(target, "", node.lineno) for alias in node.names
                      if (target := resolve(alias.name))]
        elif isinstance(node, ast.ImportFrom):
            base = from_base(module, node)
            for alias in node.names:
                if f"{base}.{alias.name}" in MODULES:  # a submodule
                    found.append((f"{base}.{alias.name}", "", node.lineno))
                elif base in MODULES:                  # a name (or *) from a module
                    found.append((base, alias.name, node.lineno))
    return found


GRAPH = {module: imports(module) for module in MODULES}


def layer_of(module: str) -> int:
    best, best_len = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    return best


def test_every_module_is_read_and_has_a_layer():
    assert {"qwinto_env.rules", "qwinto_env.spec.dice", "qwinto_env.batched.sheets",
            "agents.load", "agents.trainers.config"} <= set(MODULES)
    assert all(layer_of(m) >= 0 for m in MODULES)


def test_qwinto_env_never_imports_agents():
    upward = [(m, target, line) for m, edges in GRAPH.items() if m.startswith("qwinto_env")
              for target, _, line in edges if target.split(".")[0] == "agents"]
    assert upward == []


def test_imports_look_down_the_layers():
    upward = [f"{m}:{line} imports {target} ({LAYERS[layer_of(target)][0]} above "
              f"{LAYERS[layer_of(m)][0]})"
              for m, edges in GRAPH.items() for target, _, line in edges
              if layer_of(target) > layer_of(m)]
    assert upward == []




def cycles() -> set[tuple[str, ...]]:
    """Every import cycle, as its modules in sorted order (Tarjan's strongly connected
    components of two or more modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = set()

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target, _, _ in GRAPH[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                found.add(tuple(sorted(component)))

    for module in MODULES:
        if module not in index:
            visit(module)
    return found


def test_no_import_cycle():
    assert cycles() == set()


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def module_aliases(module: str) -> dict[str, str]:
    """The names under which ``module`` holds our modules (``from .. import dice as
    single``: ``single`` -> ``qwinto_env.dice``; ``import agents.policy``: ``agents``)."""
    aliases = {}
    for node in ast.walk(TREES[module]):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if resolve(alias.name):
                    aliases[alias.asname or alias.name.split(".")[0]] = \
                        alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = from_base(module, node)
            for alias in node.names:
                if f"{base}.{alias.name}" in MODULES:
                    aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
    return aliases


def reached_into(module: str) -> list[str]:
    """``module.attr`` reads of another module's underscore names."""
    aliases = module_aliases(module)
    found = []
    for node in ast.walk(TREES[module]):
        if isinstance(node, ast.Attribute) and private(node.attr):
            dotted, value = [], node.value
            while isinstance(value, ast.Attribute):
                dotted.insert(0, value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in aliases:
                owner = ".".join([aliases[value.id]] + dotted)
                if owner in MODULES and owner != module:
                    found.append(f"{module}:{node.lineno} reads {owner}.{node.attr}")
    return found


def test_no_module_takes_another_modules_underscore_names():
    taken = [f"{m}:{line} takes {name} from {target}"
             for m, edges in GRAPH.items() for target, name, line in edges
             if private(name) and target != m]
    taken += [found for m in MODULES for found in reached_into(m)]
    assert taken == []


# -- game facts, declared once -------------------------------------------------------------

def assignments(name: str) -> list[str]:
    """The modules that assign ``name`` at module or class level."""
    where = []
    for module, tree in TREES.items():
        bodies = [tree.body] + [node.body for node in tree.body if isinstance(node, ast.ClassDef)]
        for body in bodies:
            for node in body:
                targets = node.targets if isinstance(node, ast.Assign) else \
                    [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
                for target in targets:
                    names = [t.id for t in ast.walk(target) if isinstance(t, ast.Name)]
                    if name in names and (not isinstance(node, ast.AnnAssign) or node.value):
                        where.append(module)
    return where


@pytest.mark.parametrize("name, places", [
    ("PASS", ["qwinto_env.spec.base"]),
    ("NUM_ACTIONS", ["qwinto_env.spec.cards", "qwinto_env.spec.dice"]),
    ("KEEP", ["qwinto_env.spec.dice"]), ("REROLL", ["qwinto_env.spec.dice"]),
    ("ROLL_FIRST", ["qwinto_env.spec.dice"]), ("SINGLE_FIRST", ["qwinto_env.spec.cards"]),
    ("DOUBLE_FIRST", ["qwinto_env.spec.cards"]), ("REWARDS", ["qwinto_env.spec.base"]),
    ("SUBSET_ROWS", ["qwinto_env.spec.dice"]), ("COLOUR_ROWS", ["qwinto_env.spec.base"]),
    ("SEAT", ["qwinto_env.spec.cards", "qwinto_env.spec.dice"]),
    ("DIE_FACES", ["qwinto_env.spec.dice"]), ("ROLL_OFFSET", ["qwinto_env.spec.dice"]),
    ("EMPTY_PILE_RULES", ["qwinto_env.spec.cards"]), ("PILE_RESHUFFLE", ["qwinto_env.spec.cards"]),
])
def test_a_fact_is_assigned_in_one_place(name, places):
    assert sorted(assignments(name)) == places


def code_lines(path: Path) -> list[tuple[int, str]]:
    """The lines of ``path`` with strings and comments taken out (what the code says)."""
    kept: dict[int, list[str]] = {}
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    for token in tokens:
        if token.type in (tokenize.STRING, tokenize.COMMENT) or \
                token.type == getattr(tokenize, "FSTRING_START", None):
            continue
        if token.type in (tokenize.NAME, tokenize.NUMBER, tokenize.OP):
            kept.setdefault(token.start[0], []).append(token.string)
    return [(line, " ".join(words)) for line, words in sorted(kept.items())]


#: Code that restates a fact the spec declares (outside qwinto_env.spec); the old code
#: had each of them (``num_players <= 6``, ``base + 6 + rules.MAX_VALUE``...).
RESTATED = {
    "a player limit": re.compile(r"(?i)player.*(?<![\w.])[4-7](?![\w.])"),
    "an action count": re.compile(r"(?<![\w.])(37|88)(?![\w.])"),
    "an observation offset": re.compile(r"\b(common|base) \+ [0-9]+ [+:]|\bcommon \+ [0-9]"
                                        r"|\+ 6 \+"),
}


#: The code a user runs besides the packages: the main job, the examples, the benchmarks.
SCRIPTS = [ROOT / "train.py", *sorted((ROOT / "examples").glob("*.py")),
           *sorted((ROOT / "benchmarks").glob("*.py"))]


@pytest.mark.parametrize("fact", sorted(RESTATED))
def test_no_code_outside_the_spec_restates(fact):
    pattern = RESTATED[fact]
    paths = [path for module, path in MODULES.items()
             if not module.startswith("qwinto_env.spec")] + SCRIPTS
    found = [f"{path.relative_to(ROOT)}:{line}: {text}" for path in paths
             for line, text in code_lines(path) if pattern.search(text)]
    assert found == []


def action_table_row() -> re.Pattern:
    """A docstring table row headed by a range of action ids the spec declares (``0..26``,
    ``27``, ``28..34``, ``35``...): the code scan above skips strings, so parallel.py's
    docstring restated the whole dice action table unseen."""
    from qwinto_env.spec import cards, dice
    from qwinto_env.spec.base import PASS

    ids = [f"0..{PASS - 1}", PASS, f"{dice.ROLL_FIRST}..{dice.ROLLS[-1]}", dice.KEEP,
           dice.REROLL, f"{cards.SINGLE_FIRST}..{cards.DOUBLE_FIRST - 1}",
           f"{cards.DOUBLE_FIRST}..{cards.NUM_ACTIONS - 1}"]
    return re.compile(rf"^\s*``({'|'.join(re.escape(str(i)) for i in ids)})``\s")


def test_no_docstring_outside_the_spec_restates_the_action_tables():
    """Docs refer to the tables in qwinto_env.spec (by module or by name) instead."""
    row = action_table_row()
    found = [f"{MODULES[module].relative_to(ROOT)}: {line.strip()}"
             for module, tree in TREES.items() if not module.startswith("qwinto_env.spec")
             for node in ast.walk(tree)
             if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
             for line in (ast.get_docstring(node, clean=False) or "").splitlines()
             if row.search(line)]
    assert found == []
