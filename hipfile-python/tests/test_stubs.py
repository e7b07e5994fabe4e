"""The type stubs hold to what the modules export: `hipfile/__init__.pyi` declares every name of
`hipfile.__all__` (and nothing the package lacks); `hipfile/_hipfile.pyi` declares exactly the
native module's names, each function with the module's own parameters, each class with its
public members."""

import ast
import inspect
import os
import sys

import hipfile
from hipfile import _hipfile

PACKAGE = os.path.dirname(os.path.abspath(hipfile.__file__))


def declared(stub):
    """Top-level names of a stub, and for each its node."""
    tree = ast.parse(open(os.path.join(PACKAGE, stub)).read())
    names = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.Assign):
            names.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
    return names


def test_the_package_stub_declares_all_of_the_package():
    names = declared("__init__.pyi")
    missing = sorted(set(hipfile.__all__) - set(names))
    assert not missing, f"in hipfile.__all__, not in __init__.pyi: {missing}"
    # Besides the package's names, the types its calls return (defined in its modules).
    modules = [m for k, m in sys.modules.items() if k.startswith("hipfile.") and m is not None]
    public = [n for n in names if not n.startswith("_")]
    stale = sorted(n for n in public if not any(hasattr(m, n) for m in [hipfile, *modules]))
    assert not stale, f"in __init__.pyi, in no module of the package: {stale}"


def test_the_native_stub_is_the_native_module():
    names = declared("_hipfile.pyi")
    exported = {n for n in dir(_hipfile) if not n.startswith("__")}
    assert set(names) == exported
    for name, node in names.items():
        obj = getattr(_hipfile, name)
        if isinstance(node, ast.FunctionDef):
            ours = [a.arg for a in node.args.args]
            theirs = list(inspect.signature(obj).parameters)
            assert ours == theirs, f"{name}: the stub takes {ours}, the module {theirs}"
        elif isinstance(node, ast.ClassDef):
            members = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
            public = {m for m in dir(obj) if not m.startswith("_")}
            assert members == public, f"{name}: the stub has {sorted(members)}, the module {sorted(public)}"
