#!/usr/bin/env python3
"""Runs the examples of the installed PyTorch's own `torch.cuda.gds` documentation (the
docstrings of `GdsFile`, `gds_register_buffer` and `gds_deregister_buffer`, as doctests) over
whichever libcufile.so.0 the process loads, in a temporary directory; one JSON object on stdout:
examples tried and failed per docstring, and the libcufile mapped.

PyTorch marks these examples skipped in its own doctest runs (they need a file system cuFile
accepts); here they run, with `f` the path of a file in DIR.

    torch_gds_examples.py DIR
"""

import doctest
import json
import os
import sys
import tempfile


def main():
    import torch
    import torch.cuda.gds as gds

    out = {"torch": torch.__version__}
    with tempfile.TemporaryDirectory(dir=sys.argv[1] if len(sys.argv) > 1 else None) as d:
        for name in ("GdsFile", "gds_register_buffer", "gds_deregister_buffer"):
            obj = getattr(gds, name)
            finder = doctest.DocTestFinder(recurse=False)
            globs = {"torch": torch, "os": os, "f": os.path.join(d, f"{name}.bin")}
            globs.update({n: getattr(gds, n) for n in gds.__all__})  # the examples call them by name
            runner = doctest.DocTestRunner(verbose=False, optionflags=doctest.ELLIPSIS)
            for test in finder.find(obj, name, globs=globs):
                runner.run(test, out=sys.stderr.write)
            result = runner.summarize(verbose=False)
            out[name] = {"examples": result.attempted, "failed": result.failed}
    with open("/proc/self/maps") as maps:
        seen = {line.split()[-1] for line in maps if "libcufile" in line or "libhipfile" in line}
    out["libcufile"] = sorted(seen)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
