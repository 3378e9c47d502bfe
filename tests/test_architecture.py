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
    os.chdir(ROOT)   # import-linter finds the package on sys.path and the config in the root
    try:
        code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert code == 0, out[out.find("Broken contracts"):]


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_no_module_imports_another_modules_private_names():
    found = []
    for name, path, tree in _modules():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        aliases: dict[str, str] = {}      # local name -> kafkalog module it stands for
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
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {mod} import {a.name}")
                    aliases[a.asname or a.name] = f"{mod}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("kafkalog_cli"):
                        aliases[a.asname or a.name] = a.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and aliases[node.value.id] != name):
                target = aliases[node.value.id]
                if _is_module(target):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {target}.{node.attr}")
    assert not found, "\n".join(found)


def _is_module(dotted: str) -> bool:
    rel = Path(*dotted.split("."))
    return (SRC.parent / rel).with_suffix(".py").exists() or (SRC.parent / rel / "__init__.py").exists()


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


@pytest.mark.parametrize("writer", [r"\bopen\([^)]*[\"'](w|wb|ab|r\+b|xb|a)[\"']", r"os\.(unlink|remove|rename|replace|truncate|utime)\(",
                                    r"shutil\.(rmtree|move|copy\w*)\(", r"(?<!fsops)\.(unlink|rename|write_bytes|write_text)\("])
def test_only_fsops_changes_files(writer):
    """storage/fsops.py is the only module that writes, renames or removes a file (the export
    writes its own output files, outside every log dir, in spark/export.py and render)."""
    allowed = {"storage/fsops.py", "storage/lock.py", "spark/export.py", "spark/engine.py", "spark/session.py"}
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        if rel in allowed:
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(writer, line) and not line.lstrip().startswith("#"):
                found.append(f"{rel}:{i}: {line.strip()}")
    assert not found, "\n".join(found)
