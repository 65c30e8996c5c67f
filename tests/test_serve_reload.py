"""The pieces of ``make serve`` that need no server: the address check and the hook's fresh imports."""

from __future__ import annotations

import importlib.util
import socket
import sys
from types import SimpleNamespace

import pytest

from conftest import ROOT


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


serve = _load("snippets/lab/serve.py", "pitfalls_serve_under_test")


@pytest.fixture()
def restored_snippets():
    """Put the test process's own snippets modules back afterwards: other tests hold references to them."""
    saved = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "snippets"}
    yield
    for name in [name for name in sys.modules if name.split(".")[0] == "snippets"]:
        del sys.modules[name]
    sys.modules.update(saved)


@pytest.mark.parametrize("text, expected", [("127.0.0.1:8000", ("127.0.0.1", 8000)),
                                            ("0.0.0.0:8123", ("0.0.0.0", 8123))])
def test_addresses_are_parsed(text, expected):
    assert serve.parse_addr(text) == expected


@pytest.mark.parametrize("text", ["8000", "127.0.0.1:", ":8000", "127.0.0.1:http", "127.0.0.1:0", "h:70000"])
def test_bad_addresses_are_refused_with_an_example(text):
    with pytest.raises(Exception, match="127.0.0.1:8000"):
        serve.parse_addr(text)


def test_a_port_in_use_is_reported_and_a_free_one_is_not():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert serve.port_in_use("127.0.0.1", port)
    assert serve.port_in_use("127.0.0.1", port) is None


def test_busy_port_ends_with_one_line_saying_what_to_do(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert serve.main(["--addr", f"127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"make serve PORT={port + 1}" in err[0]


def test_every_rebuild_after_the_first_imports_the_snippets_afresh(restored_snippets):
    hook = _load("snippets/lab/mkdocs_hook.py", "pitfalls_hook_under_test")
    config = SimpleNamespace(plugins={})
    hook.on_config(config)
    first = sys.modules["snippets.lab.context"]
    first.current().refreshed.add("an experiment refreshed by the first build")
    hook.on_config(config)
    second = sys.modules["snippets.lab.context"]
    assert second is not first, "the second build reused the modules imported by the first"
    assert "an experiment refreshed by the first build" in second.current().refreshed, "REFRESH would re-run everything"
    # The hook names pages through the module the pages now import, not a stale one.
    hook.on_page_markdown("", SimpleNamespace(file=SimpleNamespace(src_path="index.md")))
    assert second.current().page == "index.md" and first.current().page != "index.md"
    hook.on_page_content("", SimpleNamespace(file=SimpleNamespace(src_path="index.md"), url=""))
    assert second.current().page is None
