"""The safetensors format's facts the loader and the saver share: dtypes as the frameworks name
them, and the error a file or a request the format cannot take raises."""

from __future__ import annotations


class SafetensorError(ValueError):
    """A file that is not a safetensors file this loader will read, or tensors the format
    cannot hold (the message names why)."""

    __module__ = "hipfile.safetensors"


#: Header dtype -> (PyTorch's dtype name, elements of the header's shape a framework element
#: holds: 2 for F4, which PyTorch packs two to a byte).
_TORCH = {
    "BOOL": ("bool", 1), "U8": ("uint8", 1), "I8": ("int8", 1), "I16": ("int16", 1), "U16": ("uint16", 1),
    "F16": ("float16", 1), "BF16": ("bfloat16", 1), "I32": ("int32", 1), "U32": ("uint32", 1),
    "F32": ("float32", 1), "C64": ("complex64", 1), "F64": ("float64", 1), "I64": ("int64", 1),
    "U64": ("uint64", 1), "F8_E4M3": ("float8_e4m3fn", 1), "F8_E5M2": ("float8_e5m2", 1),
    "F8_E4M3FNUZ": ("float8_e4m3fnuz", 1), "F8_E5M2FNUZ": ("float8_e5m2fnuz", 1),
    "F8_E8M0": ("float8_e8m0fnu", 1), "F4": ("float4_e2m1fn_x2", 2),
}
#: Header dtype -> NumPy's (and CuPy's) dtype name.
_NUMPY = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "U16": "uint16", "F16": "float16",
    "I32": "int32", "U32": "uint32", "F32": "float32", "C64": "complex64", "F64": "float64",
    "I64": "int64", "U64": "uint64",
}
