"""What a recording under ``results/`` may hold: it arrives by pull request, so it is untrusted input.

``check_folder`` is called before anything of a recording is drawn: the folder's layout (no links, no file
over ``MAX_FILE``, nothing but the manifest, result files and notebooks), then every field of the manifest and
of each result — type, range and format — and every notebook's outputs. A recording that fails is refused as a
whole, with one message naming the file and the field (``RecordingRefused``); a normal build leaves it out and
says so, a frozen build stops.

Strings are checked twice over: here, so that a recorded string cannot carry markup (no ``&``, ``{``, ``}``,
``](``, ``javascript:``, no ``<`` but in Python's own code names such as ``<genexpr>``), and wherever they are
shown, where they are escaped.
"""

from __future__ import annotations

import base64
import binascii
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

LABEL = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
EXPERIMENT = re.compile(r"^[a-z][a-z0-9_]{0,40}\.[a-z][a-z0-9_]{0,60}$")
PARAMS_FILE = re.compile(r"^[0-9a-f]{16}\.json$")
NOTEBOOK = re.compile(r"^[a-z][a-z0-9_]{0,60}$")
DIGEST = re.compile(r"^[0-9a-f]{64}$")
COMMIT = re.compile(r"^([0-9a-f]{7,40}(-dirty(-[0-9a-f]{16})?)?|unknown)$")
TORCH_VERSION = re.compile(r"^\d{1,3}\.\d{1,3}(\.\d{1,3})?((a|b|rc|\.dev|\.post)\d{1,10})*(\+[A-Za-z0-9.]{1,40})?$")
PYTHON_VERSION = re.compile(r"^3\.\d{1,2}\.\d{1,3}((a|b|rc)\d{1,3})?\+?$")
DEVICE_NAME = re.compile(r"^[\w ()@.,:+\-/#®™]{1,200}$")
DEVICES = {"cpu", "cuda", "mps", "xpu"}
START_METHODS = {"fork", "spawn", "forkserver"}
FINGERPRINT_REQUIRED = {"torch", "device", "device_name", "threads"}
FINGERPRINT_OPTIONAL = {"cpu", "python", "start_method"}
MANIFEST_REQUIRED = {"format", "label", "fingerprint", "recorded_at", "experiments"}
MANIFEST_OPTIONAL = {"commit", "python", "notebooks"}
ENTRY_FIELDS = {"format", "experiment", "params", "source", "computed_at", "elapsed_s", "value"}
# Python names its own code objects in angle brackets; a profile of an epoch lists them (``<genexpr>``).
_CODE_NAME = re.compile(r"<(genexpr|lambda|listcomp|dictcomp|setcomp|module|frozen [\w.]+|string)>")
_MARKUP = re.compile(r"[&{}\x00-\x08\x0b-\x1f\x7f]|\]\(|javascript:|vbscript:|data:text", re.I)
# What a recorded notebook's outputs may be: what the notebooks make (printed text, PNG figures).
OUTPUT_TYPES = {"stream", "display_data", "execute_result"}
MIME_TYPES = {"text/plain", "image/png"}
STREAMS = {"stdout", "stderr"}


class RecordingRefused(ValueError):
    """A recording (or one of its files) does not have the shape this project records."""


def _refuse(where: str, why: str) -> None:
    raise RecordingRefused(f"{where}: {why}")


def _string(value: Any, where: str, *, pattern: re.Pattern | None = None, limit: int = MAX_STRING) -> str:
    if not isinstance(value, str):
        _refuse(where, f"expected a string, found {type(value).__name__}")
    if len(value) > limit:
        _refuse(where, f"a string of {len(value):,} characters (at most {limit:,})")
    if pattern is not None:
        if not pattern.match(value):
            _refuse(where, f"{value[:80]!r} is not in the expected format")
        return value
    if _MARKUP.search(value) or "<" in _CODE_NAME.sub("", value):
        _refuse(where, f"{value[:80]!r} holds markup or control characters, which no recorded value has")
    return value


def _number(value: Any, where: str, *, low: float = -MAX_NUMBER, high: float = MAX_NUMBER,
            integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        _refuse(where, f"expected {'an integer' if integer else 'a number'}, found {type(value).__name__}")
    if not math.isfinite(value):
        _refuse(where, f"{value!r} is not a finite number")
    if not low <= value <= high:
        _refuse(where, f"{value!r} is outside {low:g} … {high:g}")
    return value


def _when(value: Any, where: str) -> str:
    text = _string(value, where, limit=40, pattern=re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+([+-]\d\d:\d\d|Z)$"))
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        _refuse(where, f"{text!r} is not a date and time")
    return text


def _fields(value: Any, where: str, required: set[str], optional: set[str] = frozenset()) -> dict:
    if not isinstance(value, dict):
        _refuse(where, f"expected a JSON object, found {type(value).__name__}")
    missing, unknown = required - set(value), set(value) - required - set(optional)
    if missing:
        _refuse(where, f"missing field(s) {', '.join(sorted(missing))}")
    if unknown:
        _refuse(where, f"unknown field(s) {', '.join(sorted(map(str, unknown)))[:200]}")
    return value


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
            _string(name, f"{where}: a key", limit=200)
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
    if not isinstance(manifest, dict):
        _refuse(where, f"expected a JSON object, found {type(manifest).__name__}")
    if manifest.get("format") != 1:
        _refuse(f"{where}: format", f"{str(manifest.get('format'))[:40]} is not this project's recording format 1; "
                                    "re-record the machine with make record")
    if _string(manifest.get("label"), f"{where}: label", pattern=LABEL) != folder:
        _refuse(f"{where}: label", f"{manifest['label']!r} does not match its folder {folder!r}")
    _fields(manifest, where, MANIFEST_REQUIRED, MANIFEST_OPTIONAL)
    fingerprint = manifest["fingerprint"]
    if not isinstance(fingerprint, dict):
        _refuse(f"{where}: fingerprint", f"expected a JSON object, found {type(fingerprint).__name__}")
    known = FINGERPRINT_REQUIRED | FINGERPRINT_OPTIONAL
    for name, value in fingerprint.items():  # a key a newer version of the fingerprint has: plain text or a count
        if name not in known:
            _string(name, f"{where}: fingerprint: a name", pattern=re.compile(r"^[a-z][a-z0-9_]{0,40}$"))
            if isinstance(value, int) and not isinstance(value, bool):
                _number(value, f"{where}: fingerprint.{name}", low=0, high=2 ** 32, integer=True)
            else:
                _string(value, f"{where}: fingerprint.{name}", pattern=DEVICE_NAME)
    fp = _fields({k: v for k, v in fingerprint.items() if k in known}, f"{where}: fingerprint",
                 FINGERPRINT_REQUIRED, FINGERPRINT_OPTIONAL)
    _string(fp["torch"], f"{where}: fingerprint.torch", pattern=TORCH_VERSION, limit=60)
    if fp["device"] not in DEVICES:
        _refuse(f"{where}: fingerprint.device", f"{str(fp['device'])[:40]!r} is not one of {', '.join(sorted(DEVICES))}")
    _string(fp["device_name"], f"{where}: fingerprint.device_name", pattern=DEVICE_NAME)
    if "cpu" in fp:
        _string(fp["cpu"], f"{where}: fingerprint.cpu", pattern=DEVICE_NAME)
    _number(fp["threads"], f"{where}: fingerprint.threads", low=1, high=4096, integer=True)
    if "python" in fp:
        _string(fp["python"], f"{where}: fingerprint.python", pattern=PYTHON_VERSION, limit=20)
    if "start_method" in fp and fp["start_method"] not in START_METHODS:
        _refuse(f"{where}: fingerprint.start_method", f"{str(fp['start_method'])[:40]!r} is not one of "
                                                      f"{', '.join(sorted(START_METHODS))}")
    _when(manifest["recorded_at"], f"{where}: recorded_at")
    if "commit" in manifest:
        _string(manifest["commit"], f"{where}: commit", pattern=COMMIT, limit=80)
    if "python" in manifest:
        _string(manifest["python"], f"{where}: python", pattern=PYTHON_VERSION, limit=20)
    experiments = manifest["experiments"]
    if not isinstance(experiments, dict) or len(experiments) > 500:
        _refuse(f"{where}: experiments", "expected an object of at most 500 experiments")
    for name, digests in experiments.items():
        _string(name, f"{where}: experiments: a name", pattern=EXPERIMENT)
        for digest in digests if isinstance(digests, list) else [digests]:
            _string(digest, f"{where}: experiments.{name}", pattern=DIGEST)
    notebooks = manifest.get("notebooks", {})
    if not isinstance(notebooks, dict) or len(notebooks) > 100:
        _refuse(f"{where}: notebooks", "expected an object of at most 100 notebooks")
    for stem, digest in notebooks.items():
        _string(stem, f"{where}: notebooks: a name", pattern=NOTEBOOK)
        _string(digest, f"{where}: notebooks.{stem}", pattern=DIGEST)
    return manifest


def check_entry(entry: Any, where: str, experiment: str, accepts: Callable[[str], bool] | None) -> dict:
    """One result file: its fields, its parameters (known to the experiment, when it still exists) and value."""
    _fields(entry, where, ENTRY_FIELDS)
    if entry["format"] != 1:
        _refuse(f"{where}: format", f"{entry['format']!r} is not this project's recording format 1")
    if _string(entry["experiment"], f"{where}: experiment", pattern=EXPERIMENT) != experiment:
        _refuse(f"{where}: experiment", f"{entry['experiment']!r} in the folder of {experiment}")
    params = entry["params"]
    if not isinstance(params, dict):
        _refuse(f"{where}: params", f"expected a JSON object, found {type(params).__name__}")
    for name, value in params.items():
        _string(name, f"{where}: params: a name", pattern=re.compile(r"^[a-z_][a-z0-9_]{0,40}$"))
        if accepts is not None and not accepts(name):
            _refuse(f"{where}: params.{name}", f"{experiment} has no parameter {name!r}")
        check_value(value, f"{where}: params.{name}", depth=1)
    _string(entry["source"], f"{where}: source", pattern=DIGEST)
    _when(entry["computed_at"], f"{where}: computed_at")
    _number(entry["elapsed_s"], f"{where}: elapsed_s", low=0.0, high=7 * 24 * 3600.0)
    if not isinstance(entry["value"], dict):
        _refuse(f"{where}: value", f"expected a JSON object, found {type(entry['value']).__name__}")
    check_value(entry["value"], f"{where}: value")
    return entry


def check_notebook(notebook: Any, where: str) -> None:
    """An executed notebook's outputs: printed text and PNG figures only — no HTML, no script, no other type."""
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        _refuse(where, "not a notebook (no list of cells)")
    for number, cell in enumerate(notebook["cells"], 1):
        at = f"{where}: cell {number}"
        if not isinstance(cell, dict):
            _refuse(at, "not a notebook cell")
        outputs = cell.get("outputs", [])
        if not isinstance(outputs, list):
            _refuse(at, "outputs are not a list")
        for output in outputs:
            kind = output.get("output_type") if isinstance(output, dict) else None
            if kind not in OUTPUT_TYPES:
                _refuse(at, f"an output of type {str(kind)[:40]!r}; a recorded notebook holds "
                            f"{', '.join(sorted(OUTPUT_TYPES))} only")
            if kind == "stream":
                if output.get("name") not in STREAMS:
                    _refuse(at, f"a stream named {str(output.get('name'))[:40]!r}")
                _text(output.get("text"), at)
                continue
            data = output.get("data")
            if not isinstance(data, dict):
                _refuse(at, "an output without data")
            if set(data) - MIME_TYPES:
                _refuse(at, f"output data of type {', '.join(sorted(map(str, set(data) - MIME_TYPES)))[:120]}; "
                            f"a recorded notebook's outputs are {', '.join(sorted(MIME_TYPES))} only")
            if "text/plain" in data:
                _text(data["text/plain"], at)
            if "image/png" in data:
                image = data["image/png"]
                if not isinstance(image, str):
                    _refuse(at, "an image/png output that is not base64 text")
                try:
                    decoded = base64.b64decode(image.replace("\n", ""), validate=True)
                except (binascii.Error, ValueError):
                    _refuse(at, "an image/png output that is not base64")
                if not decoded.startswith(b"\x89PNG\r\n\x1a\n"):
                    _refuse(at, "an image/png output that is not a PNG image")


def _text(value: Any, where: str) -> None:
    lines = value if isinstance(value, list) else [value]
    for line in lines:
        if not isinstance(line, str) or len(line) > 100_000:
            _refuse(where, "printed text that is not a string (or is over 100,000 characters)")


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
                    or (len(parts) == 2 and EXPERIMENT.match(parts[0]) and PARAMS_FILE.match(parts[1]))
                    or (len(parts) == 2 and parts[0] == "notebooks" and path.suffix == ".ipynb"
                        and NOTEBOOK.match(path.stem)))
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
