"""hipFile's enumerations (upstream's ``hipfile.enums``)."""

from __future__ import annotations

import re
from enum import IntEnum

from hipfile import _hipfile


def _upper_snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


#: hipFile's codes (``hipFileOpError_t``), named as upstream's Python module names them.
OpError = IntEnum(  # type: ignore[misc]
    "OpError",
    [("SUCCESS", 0)] + [(_upper_snake(name), code) for name, code in _hipfile.op_error_codes()],
    module=__name__,
)
OpError.__doc__ = "hipFile's error codes (``hipFileOpError_t``): ``SUCCESS`` is 0, the others 5001 and up."


class FileHandleType(IntEnum):
    """How a file is named to ``hipFileHandleRegister`` (``hipFileFileHandleType_t``)."""

    OPAQUE_FD = 1
    OPAQUE_WIN32 = 2
    USERSPACE_FS = 3
