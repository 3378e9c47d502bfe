"""The package drawing of docs/design.md, enforced: layers import downward only (import-linter's
contract in pyproject.toml), no module imports another module's private names, and the only
segment and partition models are storage's."""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

from tests.helpers.paths import REPO as ROOT

SRC = ROOT / "src" / "kafkalog_cli"


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        yield name, path, ast.parse(path.read_text(), str(path))


def test_layers_import_downward_only(capsys):
    from importlinter.cli import lint_imports

    cwd = os.getcwd()
    os.chdir(ROOT)  # import-linter finds the package on sys.path and the config in the root
    try:
        code = lint_imports(
            config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True
        )
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert code == 0, out[out.find("Broken contracts") :]


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_no_module_imports_another_modules_private_names():
    found = []
    for name, path, tree in _modules():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        aliases: dict[str, str] = {}  # local name -> kafkalog module it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    mod = ".".join(base + ([mod] if mod else []))
                if not mod.startswith("kafkalog_cli"):
                    continue
                for a in node.names:
                    if _private(a.name) and mod != name:
                        found.append(
                            f"{path.relative_to(ROOT)}:{node.lineno}: from {mod} import {a.name}"
                        )
                    aliases[a.asname or a.name] = f"{mod}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("kafkalog_cli"):
                        aliases[a.asname or a.name] = a.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and _private(node.attr)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and aliases[node.value.id] != name
            ):
                target = aliases[node.value.id]
                if _is_module(target):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {target}.{node.attr}")
    assert not found, "\n".join(found)


def _is_module(dotted: str) -> bool:
    rel = Path(*dotted.split("."))
    return (SRC.parent / rel).with_suffix(".py").exists() or (
        SRC.parent / rel / "__init__.py"
    ).exists()


# the per-op models the storage model replaced; a new one would be the same mistake again
_MODEL_NAME = re.compile(r"^(Active|Log)?(Segment|Partition)(View|Info|Files|Ref)?$")


def test_segments_and_partitions_are_modelled_in_storage_only():
    found = []
    for name, path, tree in _modules():
        if name.startswith("kafkalog_cli.storage"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and _MODEL_NAME.search(node.name):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: class {node.name}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "writer",
    [
        r"\bopen\([^)]*[\"'](w|wb|ab|r\+b|xb|a)[\"']",
        r"os\.(unlink|remove|rename|replace|truncate|utime)\(",
        r"shutil\.(rmtree|move|copy\w*)\(",
        r"(?<!fsops)\.(unlink|rename|write_bytes|write_text)\(",
    ],
)
def test_only_fsops_changes_files(writer):
    """storage/fsops.py is the only module that writes, renames or removes a file (the export
    writes its own output files, outside every log dir, in spark/export.py and render)."""
    allowed = {
        "storage/fsops.py",
        "storage/lock.py",
        "spark/export.py",
        "spark/engine.py",
        "spark/session.py",
    }
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        if rel in allowed:
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(writer, line) and not line.lstrip().startswith("#"):
                found.append(f"{rel}:{i}: {line.strip()}")
    assert not found, "\n".join(found)


# ------------------------------------------------------------------ the compiled modules (.pyx)
# import-linter reads only .py files: the compiled twins' imports are checked here by their text
_PYX_IMPORT = re.compile(
    r"^(?:from\s+([\w.]+)\s+c?import\s+(\([\w\s,]+\)|[\w ,]+)|c?import\s+([\w.]+))", re.M
)


def _layers() -> list[list[str]]:
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    return [[m.strip() for m in layer.split(":")] for layer in layers]


def _layer(module: str, layers: list[list[str]]) -> int:
    for i, layer in enumerate(layers):
        if any(module == m or module.startswith(m + ".") for m in layer):
            return i
    raise AssertionError(f"{module} is in no layer")


def _pyx_imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names imported from it) of each import and cimport of a .pyx (docstrings and
    comments left out)."""
    text = re.sub(r'"""[\s\S]*?"""|#[^\n]*', "", path.read_text())
    out = []
    for m in _PYX_IMPORT.finditer(text):
        if m.group(1):
            out.append(
                (m.group(1), [n.split()[0] for n in m.group(2).strip("()").split(",") if n.strip()])
            )
        else:
            out.append((m.group(3), []))
    return out


@pytest.mark.parametrize("pyx", sorted(p.name for p in SRC.rglob("*.pyx")))
def test_a_compiled_module_imports_downward_only_and_not_its_pure_twin(pyx):
    """Each .pyx obeys the layers as its .py neighbours do, imports no private name of another
    module, and imports nothing from its pure twin (name + "_py"), which must stand alone too."""
    (path,) = SRC.rglob(pyx)
    module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
    layers = _layers()
    mine = _layer(module, layers)
    twin = module + "_py"
    found = []
    imports = _pyx_imports(path)
    assert imports  # the check reads something
    for target, names in imports:
        if not target.startswith("kafkalog_cli"):
            continue
        if _layer(target, layers) < mine:
            found.append(f"{pyx}: imports {target} from a layer above")
        if target == twin or twin in (f"{target}.{n}" for n in names):
            found.append(f"{pyx}: imports its pure twin {twin}")
        found += [f"{pyx}: from {target} import {n}" for n in names if _private(n)]
    assert not found, "\n".join(found)
