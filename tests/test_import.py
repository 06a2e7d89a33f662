"""Importing odebug (issue 19 item 9).

* Run from a source tree whose C extension is not built (the usual case after a
  non-editable ``pip install .``: the checkout shadows the installed package),
  ``import odebug`` says what to do instead of Python's "partially initialized
  module ... circular import".
* ``help(odebug)`` / ``pkgutil.iter_modules`` list only importable modules: the
  plain C library lives in ``odebug/lib/`` and is not taken for an extension
  module ``odebug.libodebug``.
"""
import glob
import importlib
import importlib.machinery
import os
import pkgutil
import pydoc
import shutil
import subprocess
import sys

import odebug

PKG = os.path.dirname(os.path.abspath(odebug.__file__))


def _fake_tree(root, source_tree):
    """odebug's Python files in ROOT/odebug, without the built extension."""
    pkg = root / "odebug"
    pkg.mkdir()
    for f in glob.glob(os.path.join(PKG, "*.py")):
        shutil.copy(f, pkg)
    if source_tree:
        (root / "setup.py").write_text("")
        (root / "csrc").mkdir()
    return root


def _import_in(cwd):
    # -S: no site (an editable install's finder would find another _core);
    # -c puts the current directory first on sys.path, as in a checkout
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return subprocess.run([sys.executable, "-S", "-c", "import odebug"], cwd=str(cwd),
                          env=env, capture_output=True, text=True, timeout=60)


def test_unbuilt_source_tree_says_what_to_do(tmp_path):
    p = _import_in(_fake_tree(tmp_path, source_tree=True))
    assert p.returncode != 0
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: odebug: cannot import the C extension odebug._core"), \
        p.stderr
    assert "source tree" in last and "not built" in last
    assert "python setup.py build_ext --inplace" in last and "pip install -e ." in last
    assert "run from outside the source tree" in last
    assert "circular import" not in last


def test_missing_extension_elsewhere_says_so(tmp_path):
    p = _import_in(_fake_tree(tmp_path, source_tree=False))
    last = p.stderr.strip().splitlines()[-1]
    assert p.returncode != 0 and "no built C extension in" in last, p.stderr
    assert "build_ext --inplace" in last


def test_built_package_imports_and_finds_its_library():
    assert os.path.isfile(odebug.get_library())
    assert os.path.dirname(odebug.get_library()) == os.path.join(PKG, "lib")
    assert not os.path.exists(os.path.join(PKG, "libodebug.so"))


def test_every_listed_submodule_imports():
    names = [m.name for m in pkgutil.iter_modules(odebug.__path__)]
    assert "_core" in names and "kernel" in names
    assert not any("libodebug" in n for n in names), names
    for name in names:
        importlib.import_module("odebug." + name)


def test_help_lists_no_unimportable_module():
    text = pydoc.render_doc(odebug, renderer=pydoc.plaintext)
    contents = text.split("PACKAGE CONTENTS", 1)[1].split("\n\n", 1)[0]
    listed = [line.split()[0] for line in contents.strip().splitlines()]
    assert "libodebug" not in listed and "kernel" in listed, listed
    for name in listed:
        importlib.import_module("odebug." + name)


def _runpath(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True,
                         check=True).stdout
    return [line.split("[", 1)[1].rstrip("]").split(":") for line in out.splitlines()
            if "(RUNPATH)" in line or "(RPATH)" in line]


def test_core_finds_only_its_own_library():
    """``_core``'s only search path is ``$ORIGIN/lib``: Python's LDSHARED (pyenv, some
    distros) carries its build's ``-Wl,-rpath``, which came first and would have been
    searched for libodebug.so before odebug's own directory; the library has none."""
    core = next(f for f in glob.glob(os.path.join(PKG, "_core.*"))
                if f.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)))
    assert _runpath(core) == [["$ORIGIN/lib"]]
    assert _runpath(odebug.get_library()) == []
