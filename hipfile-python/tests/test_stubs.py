"""The type stubs hold to what the modules export. `hipfile/__init__.pyi` declares exactly
`hipfile.__all__`, itself or through its star import of `hipfile._api`, besides the types the
package's calls return; the Pythonic API (`_api.__all__`) is typed by `_api.py`'s own
annotations, every parameter and return of each name. `hipfile/_hipfile.pyi` declares exactly
the native module's names, each function with the module's own parameters, each class with its
public members, methods as methods and properties as properties."""

import ast
import importlib
import inspect
import os
import sys

import hipfile
from hipfile import _api, _hipfile

PACKAGE = os.path.dirname(os.path.abspath(hipfile.__file__))


def parsed(stub):
    return ast.parse(open(os.path.join(PACKAGE, stub)).read())


def declared(stub):
    """Top-level names of a stub, and for each its node: what it defines, re-exports (`import a
    as a`) and star-imports (each name of that module's `__all__`). A name declared twice fails."""
    names = {}

    def declare(name, node):
        assert name not in names, f"{stub} declares {name} twice"
        names[name] = node

    for node in parsed(stub).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            declare(node.name, node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            declare(node.target.id, node)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    declare(target.id, node)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    for name in importlib.import_module(node.module).__all__:
                        declare(name, node)
                elif alias.asname == alias.name:
                    declare(alias.name, node)
    return names


def annotated_with(stub):
    """Every name the annotations of a stub's functions use."""
    used = set()
    for node in ast.walk(parsed(stub)):
        if isinstance(node, ast.FunctionDef):
            arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            for annotation in [node.returns, *(a.annotation for a in arguments)]:
                for part in ast.walk(annotation) if annotation is not None else []:
                    if isinstance(part, ast.Name):
                        used.add(part.id)
                    elif isinstance(part, ast.Constant) and isinstance(part.value, str):
                        used.add(part.value)
    return used


def test_the_package_stub_is_the_package():
    names = declared("__init__.pyi")
    missing = sorted(set(hipfile.__all__) - set(names))
    assert not missing, f"in hipfile.__all__, not in __init__.pyi: {missing}"
    # Besides the package's names, only the types its calls return: classes of its modules.
    modules = [m for k, m in sys.modules.items() if k.startswith("hipfile.") and m is not None]
    returned = annotated_with("__init__.pyi")
    extra = [n for n in names if not n.startswith("_") and n not in hipfile.__all__]
    stale = sorted(
        n for n in extra if n not in returned or not any(inspect.isclass(getattr(m, n, None)) for m in modules)
    )
    assert not stale, f"in __init__.pyi, neither in hipfile.__all__ nor a class its calls return: {stale}"


def unannotated(function, bound):
    """The parameters of `function` (past `self` where `bound`) without an annotation, and
    `return` where its return has none."""
    signature = inspect.signature(function)
    parameters = list(signature.parameters.values())[1 if bound else 0 :]
    missing = [p.name for p in parameters if p.annotation is inspect.Parameter.empty]
    return missing + (["return"] if signature.return_annotation is inspect.Signature.empty else [])


def members(cls):
    """The functions of a class defined in `_api` (and of its bases there) that its users
    reach: public and special methods, properties; each with whether it is bound."""
    for base in cls.__mro__:
        if base.__module__ != _api.__name__:
            continue
        for name, value in vars(base).items():
            if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                continue
            if isinstance(value, property):
                yield from ((f"{base.__name__}.{name}", f, True) for f in (value.fget, value.fset) if f)
            elif isinstance(value, (staticmethod, classmethod)):
                yield f"{base.__name__}.{name}", value.__func__, isinstance(value, classmethod)
            elif inspect.isfunction(value):
                yield f"{base.__name__}.{name}", value, True


def test_the_pythonic_api_exports_what_it_defines():
    here = [
        n
        for n, v in vars(_api).items()
        if not n.startswith("_") and (getattr(v, "__module__", None) == _api.__name__ or n in _api.__annotations__)
    ]
    unlisted = sorted(set(here) - set(_api.__all__))
    assert not unlisted, f"public in _api, not in _api.__all__: {unlisted}"
    assert len(set(_api.__all__)) == len(_api.__all__), "_api.__all__ names one twice"


def test_the_pythonic_api_is_annotated():
    native = [v for v in vars(_hipfile).values() if callable(v)]
    for name in _api.__all__:
        assert hasattr(_api, name), f"_api.__all__ names {name}, which _api lacks"
        obj = getattr(_api, name)
        assert getattr(hipfile, name) is obj, f"hipfile.{name} is not _api's"
        if any(obj is v for v in native):
            continue  # typed by _hipfile.pyi
        if inspect.isclass(obj):
            for member, function, bound in members(obj):
                missing = unannotated(function, bound)
                assert not missing, f"_api.{member}: no annotation for {missing}"
        elif callable(obj):
            missing = unannotated(obj, False)
            assert not missing, f"_api.{name}: no annotation for {missing}"
        else:
            assert name in _api.__annotations__, f"_api.{name} has no annotation"


def test_the_native_stub_is_the_native_module():
    names = declared("_hipfile.pyi")
    exported = {n for n in dir(_hipfile) if not n.startswith("__")}
    assert set(names) == exported, (
        f"only in _hipfile.pyi: {sorted(set(names) - exported)}, only in the module: {sorted(exported - set(names))}"
    )
    for name, node in names.items():
        obj = getattr(_hipfile, name)
        if isinstance(node, ast.FunctionDef):
            ours = [a.arg for a in node.args.args]
            theirs = list(inspect.signature(obj).parameters)
            assert ours == theirs, f"{name}: the stub takes {ours}, the module {theirs}"
        elif isinstance(node, ast.ClassDef):
            stubbed = {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}
            public = {m for m in dir(obj) if not m.startswith("_")}
            ours = {m for m in stubbed if not m.startswith("_")}
            assert ours == public, f"{name}: the stub has {sorted(ours)}, the module {sorted(public)}"
            absent = sorted(m for m in stubbed if not hasattr(obj, m))
            assert not absent, f"{name}: the stub has {absent}, which the module's class lacks"
            for member, function in stubbed.items():
                stub_property = any(isinstance(d, ast.Name) and d.id == "property" for d in function.decorator_list)
                method = inspect.isroutine(inspect.getattr_static(obj, member))
                assert stub_property != method, f"{name}.{member}: a {'property' if stub_property else 'method'} in the stub"
