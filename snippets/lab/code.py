"""What "the code that ran" is: a function and everything of the project it reaches.

``reach(func)`` follows the names a function's compiled code loads — its module's globals, attributes of modules
it refers to (``question.make_data``), names it imports in its body — to the functions, classes and module-level
values of the project (the ``snippets`` package, and the package ``func`` itself belongs to), and from those on,
transitively. What it returns, a :class:`Code`, is both what an experiment's result is keyed by (``digest``) and
what the result's *Code that measured this* panel shows (``pieces``): one list, computed once, used for both.
A figure is keyed the same way, on its renderer's ``Code``.

Each function and class is taken from its module's source *as this process loaded it* (a file edited while a
build runs does not give the old code's results the new code's key) and keyed by its syntax tree without
docstrings: a comment, a docstring, blank lines or a move within its file change nothing; a changed line it
contains changes the key. A module-level value is keyed by the statement that assigns it, and what that
statement refers to is reached in turn (``MARGIN = timing.NOISE_TOLERANCE`` reaches ``NOISE_TOLERANCE``). What
the code does not name — other functions of the same module, labels, tables, checks, prose — is not part of it.

This module imports nothing else of the lab: it is the ground floor every key stands on.
"""

from __future__ import annotations

import ast
import dis
import hashlib
import importlib.util
import inspect
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

PROJECT = "snippets"
# The recipes: the single files at the top of the package that a reader copies (a panel names them as recipes, and
# the site publishes each for download)
RECIPES = tuple(f"{PROJECT}.{path.stem}" for path in sorted(Path(__file__).resolve().parents[1].glob("*.py"))
                if path.stem != "__init__")
_LOADS = {"LOAD_GLOBAL", "LOAD_NAME"}
_ATTRS = {"LOAD_ATTR", "LOAD_METHOD"}


class SourceError(RuntimeError):
    """The source of something a result depends on cannot be found as it was loaded."""


@dataclass(frozen=True)
class Piece:
    """One function, class or module-level value that the code reaches."""

    module: str  # snippets.experiments.loader.measure
    name: str  # question_timing, TensorLoader, Timer.start, LOADER_NAMES
    kind: str  # "function", "class" or "value"
    source: str  # its text as loaded, decorators included
    path: str  # the file it is in
    first: int  # its line range in that file
    last: int
    material: str  # what keys it: the syntax tree without docstrings

    @property
    def qualname(self) -> str:
        """``loader.measure.question_timing``, ``tensor_loader.TensorLoader``: the name a panel shows."""
        return f"{self.module.removeprefix('snippets.experiments.').removeprefix('snippets.')}.{self.name}"

    @property
    def recipe(self) -> bool:
        return self.module in RECIPES


@dataclass(frozen=True)
class Code:
    """What ``reach`` found: the root first, then everything it reaches in order of first reference."""

    pieces: tuple[Piece, ...]
    digest: str

    @property
    def root(self) -> Piece:
        return self.pieces[0]

    @property
    def reached(self) -> tuple[Piece, ...]:
        return self.pieces[1:]


# ---- the source of each module, as this process loaded it ------------------------------------------------------

# {module name: (the identity of what its code made, its source)}. A module whose definitions are new objects
# (imported or reloaded again) is read again.
_loaded: dict[str, tuple[tuple[int, ...] | None, str]] = {}
_trees: dict[str, tuple[str, ast.Module, dict[tuple[str, ...], list[ast.AST]]]] = {}


def remember_source(module_name: str) -> None:
    """Read ``module_name``'s file now, while it is being imported (``@experiment`` calls this): what a later key
    sees is the code that was imported, even if the file changes meanwhile."""
    module = sys.modules.get(module_name)
    if getattr(module, "__file__", None):
        _loaded[module_name] = (None, Path(module.__file__).read_text(encoding="utf-8"))


def _definitions(module: types.ModuleType) -> tuple[int, ...]:
    return tuple(sorted(id(value) for key, value in vars(module).items()
                        if not key.startswith("__") and not isinstance(value, types.ModuleType)))


def loaded_source(module_name: str) -> str:
    """The source of ``module_name`` as this process loaded it."""
    module = sys.modules[module_name]
    token = _definitions(module)
    known = _loaded.get(module_name)
    if known is None or (known[0] is not None and known[0] != token):
        known = (token, Path(module.__file__).read_text(encoding="utf-8"))
    elif known[0] is None:  # read while the module was being imported: complete now
        known = (token, known[1])
    _loaded[module_name] = known
    return known[1]


def _tree(module_name: str) -> tuple[str, ast.Module, dict[tuple[str, ...], list[ast.AST]]]:
    """The loaded source, its syntax tree and its definitions by qualified path (``("Timer", "start")``) and its
    top-level assignments by ``("=", name)``."""
    source = loaded_source(module_name)
    known = _trees.get(module_name)
    if known is not None and known[0] is source:
        return known
    tree = ast.parse(source)
    index: dict[tuple[str, ...], list[ast.AST]] = {}

    def walk(body: list[ast.stmt], path: tuple[str, ...]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                index.setdefault(path + (node.name,), []).append(node)
                walk(node.body, path + (node.name,))
            elif isinstance(node, (ast.If, ast.Try)) and not path:  # `if TYPE_CHECKING:`, `try: import …`
                for part in (node.body, getattr(node, "orelse", []), getattr(node, "finalbody", []),
                             *[handler.body for handler in getattr(node, "handlers", [])]):
                    walk(part, path)
            elif not path and isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            index.setdefault(("=", name.id), []).append(node)
            elif not path and isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    index.setdefault(("import", alias.asname or alias.name), []).append(node)

    walk(tree.body, ())
    _trees[module_name] = (source, tree, index)
    return _trees[module_name]


def _dump_without_docstrings(node: ast.AST) -> str:
    """``ast.dump`` of ``node`` with every docstring in it left out (the tree is restored afterwards)."""
    taken: list[tuple[ast.AST, list]] = []
    try:
        for inner in ast.walk(node):
            body = getattr(inner, "body", None)
            if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)) and body \
                    and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                taken.append((inner, body))
                inner.body = body[1:] or [ast.Pass()]
        return ast.dump(node)
    finally:
        for inner, body in taken:
            inner.body = body


def _segment(source: str, nodes: list[ast.AST]) -> tuple[str, int, int]:
    lines = source.splitlines(keepends=True)
    first = min(min([n.lineno, *[d.lineno for d in getattr(n, "decorator_list", [])]]) for n in nodes)
    last = max(n.end_lineno for n in nodes)
    return "".join(lines[first - 1:last]), first, last


# ---- what a function refers to -----------------------------------------------------------------------------------

def _in_project(module_name: str | None, roots: frozenset[str]) -> bool:
    return bool(module_name) and module_name.split(".")[0] in roots and \
        bool(getattr(sys.modules.get(module_name), "__file__", None))


def _codes(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


Reference = tuple  # (the module the name is looked up in, or None; the name; the object)


# What each code object loads, as names, parsed from its bytecode once: ("global", name, (attr, ...)) for a global
# and the attributes read from it, ("import", module, level, (name, ...)) for an import in the body.
_loads: dict[types.CodeType, tuple[tuple, ...]] = {}


def _load_names(code: types.CodeType) -> tuple[tuple, ...]:
    known = _loads.get(code)
    if known is not None:
        return known
    found: list[tuple] = []
    for inner in _codes(code):
        instructions = list(dis.get_instructions(inner))
        for at, ins in enumerate(instructions):
            if ins.opname in _LOADS:
                step, attrs = at + 1, []
                while step < len(instructions) and instructions[step].opname in _ATTRS:
                    attrs.append(instructions[step].argval)
                    step += 1
                found.append(("global", ins.argval, tuple(attrs)))
            elif ins.opname == "IMPORT_NAME":
                level = next((prev.argval for prev in reversed(instructions[max(0, at - 2):at])
                              if prev.opname == "LOAD_CONST" and isinstance(prev.argval, int)), 0)
                step, names = at + 1, []
                while step < len(instructions) and instructions[step].opname in ("IMPORT_FROM", "STORE_FAST",
                                                                                 "STORE_NAME", "STORE_DEREF"):
                    if instructions[step].opname == "IMPORT_FROM":
                        names.append(instructions[step].argval)
                    step += 1
                found.append(("import", ins.argval, level, tuple(names)))
    _loads[code] = tuple(found)
    return _loads[code]


def _referenced(code: types.CodeType, namespace: dict, package: str | None, roots: frozenset[str]) -> list[Reference]:
    """(module, name, object) for every global a code object loads, with the chain of attributes it reads from a
    module (``question.make_data`` is ``make_data`` of ``question``) and every name it imports in its body,
    resolved in the namespaces as they are now."""
    found: list[Reference] = []
    home = namespace.get("__name__")
    for load in _load_names(code):
        if load[0] == "global":
            _, name, attrs = load
            if name not in namespace:
                continue
            value = namespace[name]
            found.append((home, name, value))
            for attr in attrs:  # attributes of the project's modules (reading torch's could import more of it)
                if not isinstance(value, types.ModuleType) or value.__name__.split(".")[0] not in roots:
                    break
                owner = value.__name__
                value = getattr(value, attr, None)
                found.append((owner, attr, value))
        else:
            _, name, level, names = load
            try:
                target = importlib.util.resolve_name("." * level + name, package) if level else name
            except (ImportError, ValueError):
                continue
            module = sys.modules.get(target)
            if module is None:
                continue
            found += [(target, attr, getattr(module, attr, None)) for attr in names]
    return found


def _expression_names(node: ast.AST, namespace: dict, roots: frozenset[str]) -> list[Reference]:
    """What an assignment's value refers to, resolved in its module: ``timing.NOISE_TOLERANCE`` and the like."""
    found: list[Reference] = []
    home = namespace.get("__name__")
    value_nodes = [node.value] if getattr(node, "value", None) is not None else []
    for value_node in value_nodes:
        for inner in ast.walk(value_node):
            chain: list[str] = []
            current = inner
            while isinstance(current, ast.Attribute):
                chain.insert(0, current.attr)
                current = current.value
            if isinstance(current, ast.Name) and current.id in namespace and (chain or isinstance(inner, ast.Name)):
                value = namespace[current.id]
                found.append((home, current.id, value))
                for attr in chain:
                    if not isinstance(value, types.ModuleType) or value.__name__.split(".")[0] not in roots:
                        break
                    owner = value.__name__
                    value = getattr(value, attr, None)
                    found.append((owner, attr, value))
    return found


def _unwrap(value: Any) -> Any:
    from_experiment = getattr(value, "func", None)
    if callable(from_experiment) and type(value).__name__ == "Experiment":
        value = from_experiment
    try:
        return inspect.unwrap(value) if callable(value) else value
    except ValueError:
        return value


def _home(value: Any) -> tuple[str, tuple[str, ...]] | None:
    """Module and qualified path of a function or class, or None."""
    if not (inspect.isfunction(value) or inspect.isclass(value)):
        return None
    path = tuple(part for part in value.__qualname__.split(".") if part != "<locals>")
    return value.__module__, path


def _origin(module_name: str, name: str, roots: frozenset[str], depth: int = 0) -> tuple[str, str] | None:
    """The module that assigns the value ``name`` reads in ``module_name`` (following ``from x import name``)."""
    if depth > 10 or not _in_project(module_name, roots):
        return None
    _, _, index = _tree(module_name)
    if ("=", name) in index:
        return module_name, name
    for node in index.get(("import", name), []):
        for alias in node.names:
            if (alias.asname or alias.name) == name:
                package = sys.modules[module_name].__package__
                try:
                    target = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \
                        if node.level else node.module
                except (ImportError, ValueError):
                    return None
                return _origin(target, alias.name, roots, depth + 1)
    return None


# ---- reach -------------------------------------------------------------------------------------------------------

_reached: dict[Any, tuple[tuple, Code]] = {}
# Each definition's text, lines and key material, by (module, path), with the loaded source they were cut from.
_texts: dict[tuple[str, tuple[str, ...]], tuple[str, str, int, int, str]] = {}


def _modules_token(code: Code) -> tuple:
    return tuple((name, _definitions(sys.modules[name])) for name in sorted({p.module for p in code.pieces})
                 if name in sys.modules)


# Codes by where their root is defined, with the source of every module they came from: a rebuild under mkdocs
# serve imports the project afresh (new objects), and reuses a Code whose modules read as they did.
_by_name: dict[tuple[str, tuple[str, ...]], tuple[dict[str, str], Code]] = {}


def memo() -> dict:
    """What ``reach`` found by name in this process (for ``adopt``)."""
    return _by_name


def adopt(found: dict) -> None:
    """Reuse what an earlier import of this module found (``memo``); an entry whose modules' sources changed
    since is found anew."""
    global _by_name
    _by_name = found


def reach(func: Callable) -> Code:
    """``func`` (an experiment, a renderer, a class) and every function, class and value of the project it
    reaches, each with its source as loaded and what keys it."""
    func = _unwrap(func)
    known = _reached.get(func)
    if known is not None and known[0] == _modules_token(known[1]):
        return known[1]
    home = _home(func)
    named = _by_name.get(home) if home is not None else None
    if named is not None and all(name in sys.modules and getattr(sys.modules[name], "__file__", None)
                                 and loaded_source(name) == source for name, source in named[0].items()):
        code = named[1]
    else:
        code = _reach(func)
        if home is not None:
            _by_name[home] = ({name: loaded_source(name) for name in {p.module for p in code.pieces}}, code)
    _reached[func] = (_modules_token(code), code)
    return code


def _reach(root: Callable) -> Code:
    home = _home(root)
    if home is None:
        raise TypeError(f"reach() needs a function or a class, got {type(root).__name__}")
    roots = frozenset({home[0].split(".")[0], PROJECT})
    pieces: list[Piece] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    queue: list[tuple[str, tuple[str, ...], Any]] = [(home[0], home[1], root)]
    while queue:
        module_name, path, obj = queue.pop(0)
        if (module_name, path) in seen:
            continue
        seen.add((module_name, path))
        piece, references = _piece(module_name, path, obj, roots)
        pieces.append(piece)
        for owner, name, value in references:
            value = _unwrap(value)
            if isinstance(value, types.ModuleType):
                continue
            where = _home(value)
            if where is not None and _in_project(where[0], roots) and where[1] in _tree(where[0])[2]:
                if where not in seen:
                    queue.append((where[0], where[1], value))
                continue
            origin = _origin(owner, name, roots) if owner and name else None
            if origin is not None and (origin[0], ("=", origin[1])) not in seen:
                queue.append((origin[0], ("=", origin[1]), None))
    digest = hashlib.sha256()
    for piece in pieces:
        digest.update(f"{piece.module}\0{piece.name}\0{piece.kind}\0{piece.material}\0".encode())
    return Code(tuple(pieces), digest.hexdigest())


def _piece(module_name: str, path: tuple[str, ...], obj: Any, roots: frozenset[str]) -> tuple[Piece, list[Reference]]:
    module = sys.modules.get(module_name)
    if module is None or not getattr(module, "__file__", None):
        raise SourceError(f"{module_name} has no source file to read {'.'.join(path)} from")
    source, _, index = _tree(module_name)
    nodes = index.get(path)
    if nodes:
        known = _texts.get((module_name, path))
        if known is None or known[0] is not source:
            text, first, last = _segment(source, nodes)
            known = (source, text, first, last, "\n".join(_dump_without_docstrings(node) for node in nodes))
            _texts[(module_name, path)] = known
        _, text, first, last, material = known
    elif obj is not None and path[-1] == "<lambda>":  # a lambda: the line it is on, keyed by its text
        try:
            lines, first = inspect.getsourcelines(obj)
        except (OSError, TypeError) as error:
            raise SourceError(f"the source of {obj!r} cannot be read: {error}") from None
        text, last = "".join(lines), first + len(lines) - 1
        material = text.strip()
    else:
        raise SourceError(f"{'.'.join(p for p in path if p != '=')} is not defined in {module_name} as this "
                          f"process loaded it ({module.__file__})")
    namespace = vars(module)
    package = module.__package__
    references: list[Reference] = []
    if path[0] == "=":
        kind, name = "value", path[1]
        for node in nodes:
            references += _expression_names(node, namespace, roots)
    elif inspect.isclass(obj):
        kind, name = "class", ".".join(path)
        for base in obj.__bases__:
            references.append((None, base.__name__, base))
        for member in vars(obj).values():
            member = getattr(member, "__func__", member)  # staticmethod, classmethod
            for function in ([member] if inspect.isfunction(member) else
                             [f for f in (getattr(member, "fget", None), getattr(member, "fset", None))
                              if inspect.isfunction(f)]):
                references += _referenced(function.__code__, function.__globals__, package, roots)
    else:
        kind, name = "function", ".".join(path)
        references += _referenced(obj.__code__, obj.__globals__, package, roots)
        for cell in obj.__closure__ or ():
            try:
                references.append((None, "", cell.cell_contents))
            except ValueError:  # an empty cell
                pass
        references += [(None, "", default) for default in (obj.__defaults__ or ())]
    return Piece(module_name, name, kind, text, module.__file__, first, last, material), references
