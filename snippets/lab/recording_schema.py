"""What a recording under ``results/`` may hold: it arrives by pull request, so it is untrusted input.

``check_folder`` is called before anything of a recording is drawn: the folder's layout (no links, no file
over ``MAX_FILE``, nothing but the manifest, result files and notebooks), then the manifest, each result and each
notebook against ``recording.schema.json`` (a JSON Schema, checked with ``jsonschema``: type, range and format of
every field), then what a schema cannot say (a label against its folder, a result's parameters against its
experiment and its file's name, dates, PNG images), and every value of every result. A recording that fails is
refused as a whole, with one message naming the file and the field (``RecordingRefused``); a normal build leaves
it out and says so, a frozen build stops.

Strings are checked twice over: here, so that a recorded string cannot carry markup (a format for each field the
manifest has; in a result's value no ``&``, ``{``, ``}``, ``](``, ``javascript:``, no ``<`` but in Python's own
code names such as ``<genexpr>``), and wherever they are shown, where they are escaped.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import inspect
import json
import math
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

MAX_FILE = 4 * 1024 * 1024  # bytes: the largest result recorded so far is 0.4 MiB
MAX_TOTAL = 32 * 1024 * 1024
MAX_FILES = 2000
MAX_STRING = 4000
MAX_DEPTH = 24
MAX_NUMBER = 1e30  # a recorded number beyond this is a corrupt or hostile one (integers: 64 bits, seeds)
MAX_SECONDS = 1e6  # a recorded duration beyond 11 days is too
SCHEMA = Path(__file__).with_name("recording.schema.json")
# Python names its own code objects in angle brackets; a profile of an epoch lists them (``<genexpr>``).
_CODE_NAME = re.compile(r"<(genexpr|lambda|listcomp|dictcomp|setcomp|module|frozen [\w.]+|string)>")
_MARKUP = re.compile(r"[&{}\x00-\x08\x0b-\x1f\x7f]|\]\(|javascript:|vbscript:|data:text", re.I)
_TYPES = {"object": "a JSON object", "array": "a list", "string": "a string", "integer": "an integer",
          "number": "a number", "boolean": "true or false"}


class RecordingRefused(ValueError):
    """A recording (or one of its files) does not have the shape this project records."""


def _refuse(where: str, why: str) -> None:
    raise RecordingRefused(f"{where}: {why}")


def _string(value: Any, where: str) -> str:
    """A string of a result's value: bounded, without markup."""
    if not isinstance(value, str):
        _refuse(where, f"expected a string, found {type(value).__name__}")
    if len(value) > MAX_STRING:
        _refuse(where, f"a string of {len(value):,} characters (at most {MAX_STRING:,})")
    if _MARKUP.search(value) or "<" in _CODE_NAME.sub("", value):
        _refuse(where, f"{value[:80]!r} holds markup or control characters, which no recorded value has")
    return value


def _number(value: Any, where: str, *, low: float, high: float) -> float:
    if not math.isfinite(value):
        _refuse(where, f"{value!r} is not a finite number")
    if not low <= value <= high:
        _refuse(where, f"{value!r} is outside {low:g} … {high:g}")
    return value


@functools.cache
def _schema() -> dict:
    return json.loads(SCHEMA.read_text(encoding="utf-8"))


@functools.cache
def _validators() -> dict:
    """``recording.schema.json``'s definitions, each a validator of its own (manifest, result, notebook_file, …)."""
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(_schema())
    return {name: Draft202012Validator({**_schema(), "$ref": f"#/$defs/{name}"}) for name in _schema()["$defs"]}


@functools.cache
def pattern(name: str) -> re.Pattern:
    """The format ``recording.schema.json`` gives the strings it calls ``name`` (``label``, ``experiment``, …)."""
    return re.compile(_schema()["$defs"][name]["pattern"])


def _field(path) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path).removeprefix(".")


def _why(error) -> str:
    """What is wrong, in this project's words, for one error of ``jsonschema``."""
    value, rule, kind = error.instance, error.schema, error.validator
    if kind == "type":
        wanted = rule["type"] if isinstance(rule["type"], str) else rule["type"][0]
        return f"expected {_TYPES[wanted]}, found {type(value).__name__}"
    if kind in ("minimum", "maximum"):
        return f"{value!r} is outside {rule.get('minimum', -MAX_NUMBER):g} … {rule.get('maximum', MAX_NUMBER):g}"
    if kind in ("enum", "const"):
        allowed = rule["enum"] if kind == "enum" else [rule["const"]]
        return f"{str(value)[:40]!r} is not one of {', '.join(map(str, allowed))}"
    if kind == "required":
        return f"missing field(s) {', '.join(sorted(set(rule['required']) - set(value)))}"
    if kind == "additionalProperties":
        return f"unknown field(s) {', '.join(sorted(map(str, set(value) - set(rule['properties']))))[:200]}"
    if kind in ("maxProperties", "maxItems"):
        return f"more than {error.validator_value} entries"
    if kind == "maxLength":
        return f"a string of {len(value):,} characters (at most {error.validator_value:,})"
    return f"{str(value)[:80]!r} is not in the expected format"


def _validate(value: Any, definition: str, where: str) -> None:
    """Refuse ``value`` if it is not what ``recording.schema.json`` calls ``definition``, naming the field."""
    from jsonschema.exceptions import best_match

    error = best_match(_validators()[definition].iter_errors(value))
    if error is None:
        return
    field = _field(error.absolute_path)
    if "propertyNames" in error.absolute_schema_path:  # a key, not a value: the error's path is its object's
        field = f"{field}: a name" if field else "a name"
    _refuse(f"{where}: {field}" if field else where, _why(error))


def _when(value: str, where: str) -> None:
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        _refuse(where, f"{value!r} is not a date and time")


# Keys under which a recorded value holds a duration, a count or a size: never negative.
_NON_NEGATIVE = re.compile(r"^(median|mean|min|max|iqr|std|rounds|runs|blocks|timed_epochs|calls|own|cumulative|"
                           r"total_own|elapsed|seconds|bytes|n|epochs|steps|.*_s|.*_seconds|.*_ms|.*_bytes|"
                           r".*_count|count_.*)$")


_SECONDS = re.compile(r"^(median|mean|iqr|rounds|elapsed|seconds|.*_s|.*_seconds)$")


def check_value(value: Any, where: str, *, depth: int = 0, key: str = "") -> None:
    """A result's value: JSON objects, lists, strings without markup, finite numbers (non-negative where they are
    times, counts or sizes), bounded in depth and length."""
    if depth > MAX_DEPTH:
        _refuse(where, f"nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, dict):
        for name, item in value.items():
            if len(name) > 200:
                _refuse(f"{where}: a key", f"a key of {len(name):,} characters (at most 200)")
            _string(name, f"{where}: a key")
            check_value(item, f"{where}.{name}", depth=depth + 1, key=name)
    elif isinstance(value, list):
        for number, item in enumerate(value):
            check_value(item, f"{where}[{number}]", depth=depth + 1, key=key)
    elif isinstance(value, str):
        _string(value, where)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int):
        _number(value, where, low=0 if _NON_NEGATIVE.match(key) else -2 ** 64, high=2 ** 64)
    elif isinstance(value, float):
        _number(value, where, low=0.0 if _NON_NEGATIVE.match(key) else -MAX_NUMBER,
                high=MAX_SECONDS if _SECONDS.match(key) else MAX_NUMBER)
    else:
        _refuse(where, f"{type(value).__name__} is not a JSON value")


def check_manifest(manifest: Any, where: str, folder: str) -> dict:
    if isinstance(manifest, dict) and manifest.get("format") != 1:
        _refuse(f"{where}: format", f"{str(manifest.get('format'))[:40]} is not this project's recording format 1; "
                                    "re-record the machine with make record")
    if isinstance(manifest, dict) and isinstance(manifest.get("label"), str) and manifest["label"] != folder:
        _refuse(f"{where}: label", f"{manifest['label'][:80]!r} does not match its folder {folder!r}")
    _validate(manifest, "manifest", where)
    _when(manifest["recorded_at"], f"{where}: recorded_at")
    return manifest


def check_entry(entry: Any, where: str, experiment: str, accepts: Callable[[str], bool] | None) -> dict:
    """One result file: its fields, its parameters (known to the experiment, when it still exists) and value."""
    if isinstance(entry, dict) and "format" in entry and entry["format"] != 1:
        _refuse(f"{where}: format", f"{entry['format']!r} is not this project's recording format 1")
    _validate(entry, "result", where)
    if entry["experiment"] != experiment:
        _refuse(f"{where}: experiment", f"{entry['experiment']!r} in the folder of {experiment}")
    for name, value in entry["params"].items():
        if accepts is not None and not accepts(name):
            _refuse(f"{where}: params.{name}", f"{experiment} has no parameter {name!r}")
        check_value(value, f"{where}: params.{name}", depth=1)
    _when(entry["computed_at"], f"{where}: computed_at")
    check_value(entry["value"], f"{where}: value")
    return entry


def check_notebook(notebook: Any, where: str) -> None:
    """An executed notebook's outputs: printed text and PNG figures only — no HTML, no script, no other type."""
    _validate(notebook, "notebook_file", where)
    for number, cell in enumerate(notebook["cells"], 1):
        for output in cell.get("outputs", []):
            image = output.get("data", {}).get("image/png")
            if image is None:
                continue
            try:
                decoded = base64.b64decode(image.replace("\n", ""), validate=True)
            except (binascii.Error, ValueError):
                _refuse(f"{where}: cell {number}", "an image/png output that is not base64")
            if not decoded.startswith(b"\x89PNG\r\n\x1a\n"):
                _refuse(f"{where}: cell {number}", "an image/png output that is not a PNG image")


def read_json(path: Path, where: str) -> Any:
    """A recorded JSON file, refused if it is a link, too large or not JSON (NaN and Infinity included)."""
    if path.is_symlink():
        _refuse(where, "is a symbolic link; a recording holds plain files only")
    if not path.exists():
        _refuse(where, "is missing")
    size = path.stat().st_size
    if size > MAX_FILE:
        _refuse(where, f"{size / 1024 / 1024:.1f} MiB, over the {MAX_FILE // 1024 // 1024} MiB a recorded file may have")

    def no_constant(name: str):
        raise RecordingRefused(f"{where}: {name} is not a finite number")

    try:
        return json.loads(path.read_text(encoding="utf-8"), parse_constant=no_constant)
    except OSError as error:
        _refuse(where, f"cannot be read ({error.strerror or error})")
    except UnicodeDecodeError:
        _refuse(where, "not UTF-8 text")
    except json.JSONDecodeError as error:
        _refuse(where, f"not valid JSON ({error})")


def accepted_parameters(function: Callable) -> Callable[[str], bool]:
    signature = inspect.signature(function)
    if any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
        return lambda name: True
    names = {name for name, p in signature.parameters.items() if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    return names.__contains__


def check_folder(folder: Path, find_experiment: Callable[[str], Any],
                 checked: Callable[[Path, dict], None] = lambda path, entry: None) -> dict:
    """Every file of recording ``folder``, checked; its manifest returned. ``find_experiment(name)`` gives the
    experiment of that name (with ``.func``), or None when the site has none by that name: such results are
    never read (the manifest lists them as stale). ``checked(path, entry)`` is handed each result as checked."""
    label = folder.name
    where = f"results/{label}"
    if folder.is_symlink():
        _refuse(where, "is a symbolic link; a recording is a plain folder")
    files, total = [], 0
    for path in sorted(folder.rglob("*")):
        shown = f"{where}/{path.relative_to(folder).as_posix()}"
        if path.is_symlink():
            _refuse(shown, "is a symbolic link; a recording holds plain files only")
        if path.is_dir():
            continue
        parts = path.relative_to(folder).parts
        expected = (parts == ("manifest.json",)
                    or (len(parts) == 2 and pattern("experiment").match(parts[0])
                        and re.fullmatch(r"[0-9a-f]{16}\.json", parts[1]))
                    or (len(parts) == 2 and parts[0] == "notebooks" and path.suffix == ".ipynb"
                        and pattern("notebook").match(path.stem)))
        if not expected:
            _refuse(shown, "is not a file a recording has (manifest.json, <experiment>/<16 hex digits>.json, "
                           "notebooks/<name>.ipynb)")
        size = path.stat().st_size
        if size > MAX_FILE:
            _refuse(shown, f"{size / 1024 / 1024:.1f} MiB, over the {MAX_FILE // 1024 // 1024} MiB a recorded "
                           "file may have")
        total += size
        files.append(path)
    if len(files) > MAX_FILES or total > MAX_TOTAL:
        _refuse(where, f"{len(files)} files, {total / 1024 / 1024:.1f} MiB: over the {MAX_FILES} files or "
                       f"{MAX_TOTAL // 1024 // 1024} MiB a recording may have")
    manifest = check_manifest(read_json(folder / "manifest.json", f"{where}/manifest.json"),
                              f"{where}/manifest.json", label)
    for path in files:
        parts = path.relative_to(folder).parts
        shown = f"{where}/{'/'.join(parts)}"
        if parts[0] == "notebooks":
            check_notebook(read_json(path, shown), shown)
        elif len(parts) == 2:
            exp = find_experiment(parts[0])
            if exp is None:  # an experiment the site no longer has: never read, counted stale
                continue
            entry = check_entry(read_json(path, shown), shown, parts[0], accepted_parameters(exp.func))
            if params_key(entry["params"]) != path.stem:
                _refuse(shown, f"holds {parts[0]}({entry['params']}), whose file is {params_key(entry['params'])}.json")
            checked(path, entry)
    return manifest


def params_key(params: dict) -> str:
    """The name of a result's file: its parameters' digest."""
    return hashlib.sha256(json.dumps(params, sort_keys=True, default=repr).encode()).hexdigest()[:16]
