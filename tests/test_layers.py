"""The package's layering and its security bans: what ruff's banned-api enforces, checked
from the source too, and the three banned-api lists kept in step."""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "ckpt"
RUFF = Path(sys.executable).with_name("ruff")


@functools.cache
def parsed_source(text: str, filename: str) -> ast.Module:
    """One parse of a source text per test process: a dozen checks below read the whole
    package, and parsing it again for each was most of this file's time. The tree is only
    walked, never changed; keyed on the text, so an edited or new file is parsed anew."""
    return ast.parse(text, filename=filename)


def parsed(path: Path) -> ast.Module:
    return parsed_source(path.read_text(), str(path))


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports inside functions included)."""
    return set(imports_in(path.read_text(), str(path)))


@functools.cache
def imports_in(text: str, filename: str) -> frozenset[str]:
    names: set[str] = set()
    for node in ast.walk(parsed_source(text, filename)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return frozenset(names)


def package_modules() -> dict[str, set[str]]:
    return {
        path.relative_to(PACKAGE).as_posix(): imported_modules(path)
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def under(name: str, root: str) -> bool:
    return name == root or name.startswith(root + ".")


def test_rich_is_imported_only_by_the_renderers() -> None:
    # ckpt.browse draws with Textual, which is Rich: its strips and segments are Rich's.
    offenders = {
        module: sorted(n for n in names if under(n, "rich"))
        for module, names in package_modules().items()
        if not module.startswith(("render/", "browse/"))
    }
    assert {m: n for m, n in offenders.items() if n} == {}
    # The renderers do import it: the check above looks at the right names.
    assert any(under(n, "rich") for n in package_modules()["render/human.py"])


def test_textual_is_imported_only_by_the_browser() -> None:
    modules = package_modules()
    offenders = {
        module: sorted(n for n in names if under(n, "textual"))
        for module, names in modules.items()
        if not module.startswith("browse/")
    }
    assert {m: n for m, n in offenders.items() if n} == {}
    assert any(under(n, "textual") for n in modules["browse/app.py"])
    # ...and the browser only from its command, which imports it when it runs.
    users = sorted(m for m, names in modules.items() if any(under(n, "ckpt.browse") for n in names))
    assert [m for m in users if not m.startswith("browse/")] == ["cli/browse_cmd.py"]


def test_the_mcp_sdk_is_imported_only_by_the_mcp_server_which_only_reads() -> None:
    modules = package_modules()
    offenders = {
        module: sorted(n for n in names if under(n, "mcp") or under(n, "mcp_types"))
        for module, names in modules.items()
        if not module.startswith("mcp/")
    }
    assert {m: n for m, n in offenders.items() if n} == {}
    assert any(under(n, "mcp") for n in modules["mcp/server.py"])
    # ...and ckpt.mcp only from its command, which imports it when it runs.
    users = sorted(m for m, names in modules.items() if any(under(n, "ckpt.mcp") for n in names))
    assert [m for m in users if not m.startswith("mcp/")] == ["cli/mcp_cmd.py"]
    # Read-only by construction: no tool reaches a verb that writes.
    writes = {"prune", "iter_prune", "copy", "iter_copy", "vacuum"}
    called = {
        node.attr
        for path in (PACKAGE / "mcp").rglob("*.py")
        for node in ast.walk(parsed(path))
        if isinstance(node, ast.Attribute)
    }
    assert called & {"checkpoint", "iter_history", "diff"}  # it reads the calls
    assert not called & writes


def test_library_modules_never_import_the_renderers() -> None:
    offenders = {
        module: sorted(n for n in names if under(n, "ckpt.render"))
        for module, names in package_modules().items()
        if not module.startswith(("render/", "cli/", "browse/"))
    }
    assert {m: n for m, n in offenders.items() if n} == {}
    assert any(under(n, "ckpt.render") for n in package_modules()["cli/inspect.py"])


def test_no_dynamic_imports_eval_or_private_click() -> None:
    """No module imports by name, but `migrate --graph`'s: it imports the one module the
    user names on the command line (their own graph), never a name from a store."""
    banned = ("importlib", "typer._click")
    found = {
        module: sorted(n for n in names if any(under(n, b) for b in banned))
        for module, names in package_modules().items()
    }
    assert {m: n for m, n in found.items() if n} == {
        "ops/user_graph.py": ["importlib", "importlib.util"]
    }
    calls = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id in {"eval", "exec", "__import__", "compile"}:
                    calls.append(f"{path.name}:{node.lineno} {node.func.id}")
    assert calls == []


def banned_api(config: dict[str, object]) -> dict[str, object]:
    lint = config["lint"]
    assert isinstance(lint, dict)
    return dict(lint["flake8-tidy-imports"]["banned-api"])


def test_nested_ruff_configs_repeat_the_bans() -> None:
    main = banned_api(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"])
    render = banned_api(tomllib.loads((PACKAGE / "render" / ".ruff.toml").read_text()))
    cli = banned_api(tomllib.loads((PACKAGE / "cli" / ".ruff.toml").read_text()))
    browse = banned_api(tomllib.loads((PACKAGE / "browse" / ".ruff.toml").read_text()))
    mcp = banned_api(tomllib.loads((PACKAGE / "mcp" / ".ruff.toml").read_text()))
    assert {"rich", "ckpt.render", "textual", "importlib", "pickle.Unpickler", "mcp"} <= set(main)
    assert render == {k: v for k, v in main.items() if k not in {"rich", "ckpt.render"}}
    assert cli == {k: v for k, v in main.items() if k != "ckpt.render"}
    assert browse == {k: v for k, v in main.items() if k not in {"rich", "ckpt.render", "textual"}}
    assert mcp == {k: v for k, v in main.items() if k != "mcp"}


PROBE = """\
import importlib
import pickle
from rich.text import Text
from textual.app import App
from ckpt.render import human
from typer import _click
from mcp.server.mcpserver import MCPServer
eval("1")
exec("1")
class Loader(pickle.Unpickler):
    pass
"""


@pytest.mark.skipif(not RUFF.exists(), reason="ruff is in the dev extra")
@pytest.mark.parametrize(
    ("folder", "allowed"),
    [
        ("", set()),
        ("render", {"rich", "ckpt.render"}),
        ("cli", {"ckpt.render"}),
        ("browse", {"rich", "ckpt.render", "textual"}),
        ("mcp", {"mcp"}),
    ],
)
def test_ruff_refuses_a_probe(tmp_path: Path, folder: str, allowed: set[str]) -> None:
    """The rules really fire where they should (a banned-api typo would pass silently): a
    probe in a copy of the config tree, so the package folder is never written."""
    import shutil

    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for nested in ("render", "cli", "browse", "mcp"):
        (tmp_path / "src" / "ckpt" / nested).mkdir(parents=True)
        shutil.copy(PACKAGE / nested / ".ruff.toml", tmp_path / "src" / "ckpt" / nested)
    probe = tmp_path / "src" / "ckpt" / folder / "probe.py"
    probe.write_text(PROBE)
    result = subprocess.run(
        [str(RUFF), "check", "--no-cache", "--output-format=concise", str(probe)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    report = result.stdout
    assert "S307" in report and "S102" in report, report
    names = (
        "importlib",
        "pickle.Unpickler",
        "typer._click",
        "rich",
        "ckpt.render",
        "textual",
        "mcp",
    )
    for name in names:
        assert (f"`{name}` is banned" in report) == (name not in allowed), (name, report)


# -- the store boundary (issue 30): stores/base.py is the one place a kind of store meets ----

STORE_KINDS = {"sqlite", "postgres", "pickle", "redis", "mongodb"}
STORE_CLASSES = {"SqliteStore", "PostgresStore", "PickleStore", "RedisStore", "MongoStore"}


def outside_stores() -> list[Path]:
    return [
        p for p in sorted(PACKAGE.rglob("*.py")) if "stores" not in p.relative_to(PACKAGE).parts
    ]


def names_kind(node: ast.expr) -> bool:
    """`x.kind`, `x["kind"]` or `x.get("kind")`: a store's kind, however it is reached."""
    if isinstance(node, ast.Attribute):
        return node.attr == "kind"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "kind"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        first = node.args[0] if node.args else None
        return node.func.attr == "get" and isinstance(first, ast.Constant) and first.value == "kind"
    return False


def boundary_breaches(path: Path) -> list[str]:
    """What in one file reaches past the store interface: dispatch on a store's kind, a
    check against a store class, a store's private attribute, the CLI reading `.raw`."""
    found = []
    in_cli = path.relative_to(PACKAGE).parts[0] == "cli"
    for node in ast.walk(parsed(path)):
        where = f"{path.relative_to(PACKAGE)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            named = STORE_KINDS & {
                c.value
                for operand in operands
                for c in ast.walk(operand)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            }
            if named and any(names_kind(operand) for operand in operands):
                found.append(f"{where}: dispatch on a kind == {sorted(named)}")
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
            named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
            if named & STORE_CLASSES:
                found.append(f"{where}: isinstance against {sorted(named & STORE_CLASSES)}")
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not (node.attr.startswith("__"))
        ):
            owner = node.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            if name in {"store", "backend", "raw", "_store"} or name.endswith("_store"):
                found.append(f"{where}: private {name}.{node.attr}")
        if in_cli and isinstance(node, ast.Attribute) and node.attr in {"raw", "backend"}:
            found.append(f"{where}: .{node.attr} in a command")
    return found


def test_nothing_outside_stores_names_a_kind_of_store() -> None:
    breaches = [line for path in outside_stores() for line in boundary_breaches(path)]
    assert breaches == []
    # Nor imports one: only the interface and the opener.
    imports = {
        module: sorted(
            n
            for n in names
            if under(n, "ckpt.stores")
            and n not in {"ckpt.stores", "ckpt.stores.base"}
            and not n.startswith(("ckpt.stores.base.", "ckpt.stores.discover"))
            and n.rsplit(".", 1)[-1]
            not in {"open_store", "open_target", "redactor", "Redactor", "discover", "PICKLE_NAMES"}
        )
        for module, names in package_modules().items()
        if not module.startswith("stores/")
    }
    assert {m: n for m, n in imports.items() if n} == {}


def test_the_boundary_check_finds_each_breach(tmp_path: Path) -> None:
    probe = PACKAGE / "cli" / "_probe_layers.py"
    probe.write_text(
        "def f(store, checkpoints, record):\n"
        "    if store.kind == 'sqlite':\n"
        "        pass\n"
        "    if isinstance(store, SqliteStore):\n"
        "        pass\n"
        "    store._sql\n"
        "    checkpoints.raw.aes_key\n"
        "    if record['store']['kind'] == 'sqlite':\n"
        "        pass\n"
        "    if 'postgres' != record['store']['kind']:\n"
        "        pass\n"
        "    if record['store'].get('kind') in ('redis', 'mongodb'):\n"
        "        pass\n"
        "    if record['kind'] == 'sqlite_master' or record['mode'] == 'sqlite':\n"
        "        pass\n"
    )
    try:
        found = boundary_breaches(probe)
    finally:
        probe.unlink()
    said = sorted((int(line.split(":")[1]), line.split(": ", 1)[1].split(" ")[0]) for line in found)
    assert said == [
        (2, "dispatch"),
        (4, "isinstance"),
        (6, "private"),
        (7, ".raw"),
        (8, "dispatch"),
        (10, "dispatch"),
        (12, "dispatch"),
    ]
    # ...in a renderer too, where the records reach (the renderers hold none today).
    assert [p for p in outside_stores() if p.parent.name == "render"]


NOQA = re.compile(r"#\s*noqa:\s*([A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)")
LINTED = ("src", "tests", "fixtures", "bench", "docs")  # what `make lint` checks


def enabled_rules() -> set[str]:
    """The rule codes ruff runs here, as ruff itself resolves `select` (a prefix selects
    a linter's codes, never another linter's that starts with the same letters: `B` is
    flake8-bugbear, not flake8-blind-except's BLE)."""
    shown = subprocess.run(
        [str(RUFF), "check", "--show-settings", str(PACKAGE / "api.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    enabled = shown.split("linter.rules.enabled = [", 1)[1].split("]", 1)[0]
    return set(re.findall(r"\(([A-Z]+[0-9]+)\)", enabled))


def stale_noqa(text: str, enabled: set[str]) -> list[str]:
    """`line code` for each code a `# noqa:` names that ruff does not run."""
    return [
        f"{number} {code}"
        for number, line in enumerate(text.splitlines(), 1)
        for codes in NOQA.findall(line)
        for code in re.findall(r"[A-Z]+[0-9]+", codes)
        if code not in enabled
    ]


@pytest.mark.skipif(not RUFF.exists(), reason="ruff is in the dev extra")
def test_noqa_names_only_enabled_rules() -> None:
    """A `# noqa` for a rule ruff does not run silences nothing and misleads the reader
    (RUF100 reports the ones that silence nothing; this holds the rule without ruff's
    cache or per-file config in the way)."""
    enabled = enabled_rules()
    assert {"B027", "E402", "F401", "RUF100", "S102"} <= enabled
    assert not {"BLE001", "C901", "SIM115", "S608"} & enabled
    stale = [
        f"{path.relative_to(ROOT)}:{line}"
        for folder in LINTED
        for path in sorted((ROOT / folder).rglob("*.py"))
        if ".venv" not in path.parts and "node_modules" not in path.parts
        for line in stale_noqa(path.read_text(), enabled)
    ]
    assert stale == []
    # The check fires on what it means: every code of a list, matched whole.
    mark = "#" + " noqa"  # not spelt whole: this file would hold the probe's codes
    probe = f"x = 1  {mark}: BLE001\ny = 2  {mark}: B027, C901\nimport z  {mark}:F401,E402\n"
    assert stale_noqa(probe, enabled) == ["1 BLE001", "2 C901"]


def test_no_test_module_imports_another_or_conftest() -> None:
    """What tests share lives in helper modules (tests/invoke.py, pg.py, promises.py ...):
    importing a test module runs its module-level setup again and makes its tests depend
    on another file's, and conftest is pytest's to load."""
    tests = ROOT / "tests"
    found = {
        path.name: sorted(
            n
            for n in imported_modules(path)
            if n.split(".")[0].startswith("test_") or n.split(".")[0] == "conftest"
        )
        for path in sorted(tests.glob("*.py"))
    }
    assert {name: names for name, names in found.items() if names} == {}
    assert "invoke" in imported_modules(tests / "test_cli_sqlite.py")  # the check reads imports


# -- the distribution (issue 30): pure Python, so pipx and uv install it without a compiler --


def test_the_wheel_is_pure_python(tmp_path: Path) -> None:
    """`pip wheel .` gives one py3-none-any wheel of Python source and py.typed only (built
    from a copy, so that setuptools' build/ stays out of the checkout)."""
    import zipfile

    tree = tmp_path / "tree"
    tree.mkdir()
    # What setuptools reads (a setup.py or setup.cfg that came back would build too).
    for name in ("pyproject.toml", "README.md", "LICENSE", "setup.py", "setup.cfg", "MANIFEST.in"):
        if (ROOT / name).exists():
            (tree / name).write_bytes((ROOT / name).read_bytes())
    for path in PACKAGE.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".so":
            target = tree / "src" / path.relative_to(ROOT / "src")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-w",
            str(tmp_path / "wheels"),
            str(tree),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    wheels = sorted((tmp_path / "wheels").iterdir())
    assert [w.name.endswith("-py3-none-any.whl") for w in wheels] == [True], wheels
    with zipfile.ZipFile(wheels[0]) as archive:
        shipped = {Path(name).suffix for name in archive.namelist() if name.startswith("ckpt/")}
    assert shipped == {".py", ".typed"}, shipped


# -- the CLI is a face over the API (issue 38) ---------------------------------------------

# What a command module may import of ckpt: the API, the records and errors it hands on, the
# renderers, and its own modules. Besides those: ckpt.records.vocabulary (the statuses and sorts
# its options declare at start-up, where importing the API would cost every run ~40 ms),
# the browser (another face, only `browse` imports it) and the package's __version__.
CLI_MAY_IMPORT = ("ckpt.api", "ckpt.records", "ckpt.render", "ckpt.errors", "ckpt.cli",
                  "ckpt.records.vocabulary", "ckpt.browse", "ckpt.mcp")  # fmt: skip
CLI_MAY_NAME = {"ckpt", "ckpt.__version__"}


def cli_reaches_past_the_api(path: Path) -> list[str]:
    return sorted(
        name
        for name in imported_modules(path)
        if under(name, "ckpt")
        and name not in CLI_MAY_NAME
        and not any(under(name, allowed) for allowed in CLI_MAY_IMPORT)
    )


def test_the_cli_imports_only_the_api_records_renderers_and_errors() -> None:
    # The browser and the MCP server are faces too: they keep the CLI's rule (no diff, sort or
    # selector of their own).
    found = {
        path.relative_to(PACKAGE).as_posix(): cli_reaches_past_the_api(path)
        for face in ("cli", "browse", "mcp")
        for path in sorted((PACKAGE / face).rglob("*.py"))
    }
    assert {m: n for m, n in found.items() if n} == {}
    assert any(under(n, "ckpt.api") for n in imported_modules(PACKAGE / "cli" / "common.py"))
    assert any(under(n, "ckpt.api") for n in imported_modules(PACKAGE / "browse" / "app.py"))
    assert any(under(n, "ckpt.api") for n in imported_modules(PACKAGE / "mcp" / "server.py"))


def test_the_cli_import_check_fires(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from ckpt.api import CheckpointStore\n"
        "from ckpt import __version__\n"
        "from ckpt.ops import maintain\n"
        "def f():\n"
        "    from ckpt.stores import open_target\n"
        "    import ckpt.analysis.changes\n"
        "if False:\n"
        "    from ckpt.scan.census import RawRow\n"
    )
    assert cli_reaches_past_the_api(probe) == [
        "ckpt.analysis.changes",
        "ckpt.ops",
        "ckpt.ops.maintain",
        "ckpt.scan.census",
        "ckpt.scan.census.RawRow",
        "ckpt.stores",
        "ckpt.stores.open_target",
    ]


def message_strings(path: Path) -> list[tuple[int, str]]:
    """A module's string constants, docstrings aside (those describe; these are said), and
    the command lines of `FIX_COMMANDS` (ckpt.scan.check: a finding's fix is a command to run,
    in the CLI's words)."""
    tree = parsed(path)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    commands = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign | ast.Assign)
        and any(
            getattr(target, "id", None) == "FIX_COMMANDS"
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
        for inner in ast.walk(node)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings | commands
    ]


def library_files() -> list[Path]:
    """The library: everything but the faces (the CLI, the renderers, the browser, MCP)."""
    return [
        path
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] not in {"cli", "render", "browse", "mcp"}
    ]


def flag_strings(path: Path) -> list[str]:
    """What a module says that names a command-line flag."""
    import re

    return [
        f"{path.relative_to(PACKAGE)}:{line}: {text[:60]!r}"
        for line, text in message_strings(path)
        if re.search(r"(?<![\w-])--[a-z]", text)
    ]


def test_library_words_name_no_flag() -> None:
    """The library says its own words (`aes_key`, `on_conflict`), the CLI maps them to
    its flags (cli.options.FLAGS); the renderers and the browser are faces, as cli/ is."""
    found = [line for path in library_files() for line in flag_strings(path)]
    assert found == []
    assert flag_strings(PACKAGE / "cli" / "options.py")  # it finds flags where there are


def test_every_parameter_a_library_message_names_has_its_flag() -> None:
    """A backticked word of a library message that is an API parameter is in FLAGS: the
    CLI never shows `aes_key` where it means --aes-key."""
    import inspect
    import re

    import ckpt.api
    from ckpt.cli.options import FLAGS, in_flags

    functions = [ckpt.api.open, ckpt.api.copy, ckpt.api.prune, ckpt.api.vacuum]
    functions += [m for _, m in inspect.getmembers(ckpt.api.CheckpointStore, inspect.isfunction)]
    parameters = {name for f in functions for name in inspect.signature(f).parameters}
    named = {
        word
        for path in library_files()
        for _, text in message_strings(path)
        for word in re.findall(r"`([a-z_]+(?:=[^`]*)?)`", text)
    }
    assert {n.split("=")[0] for n in named} & parameters  # it reads the messages
    missing = sorted(n for n in named if n.split("=")[0] in parameters and n not in FLAGS)
    assert missing == []
    assert in_flags("pass `aes_key` or set LANGGRAPH_AES_KEY") == (
        "pass --aes-key or set LANGGRAPH_AES_KEY"
    )
    assert in_flags("`all=True` and `ckpt threads`") == "--all and `ckpt threads`"


# The folders say the flow (cli -> api -> scan/ops/analysis -> stores -> records/decoders):
# a new module joins a group, not the top of the package.
TOP_LEVEL = {"__init__.py", "__main__.py", "api.py", "demo.py", "errors.py", "escapes.py"}
GROUPS = {"analysis", "browse", "cli", "decoders", "mcp", "ops", "records", "render", "scan",
          "stores"}  # fmt: skip


def test_the_package_top_holds_only_the_face_and_its_groups() -> None:
    modules = {p.name for p in PACKAGE.glob("*.py")}
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert modules == TOP_LEVEL
    assert folders == GROUPS
