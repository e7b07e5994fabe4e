"""hipFile's errors as Python exceptions (upstream's ``hipfile.error``)."""

from __future__ import annotations

from hipfile._held import read_only


class HipFileException(Exception):
    """A hipFile error: ``hipfile_err`` is hipFile's code (an :class:`hipfile.OpError` value),
    ``hip_err`` the HIP runtime's error where the code is ``HIP_DRIVER_ERROR`` (else 0).

    Operating-system errors are :class:`OSError` with their ``errno`` instead.
    """

    def __init__(self, hipfile_err: int, hip_err: int) -> None:
        self._hipfile_err = hipfile_err
        self._hip_err = hip_err

    hipfile_err = read_only("_hipfile_err", "hipFile's code (5000 and up).")
    hip_err = read_only("_hip_err", "The HIP runtime's error for ``HIP_DRIVER_ERROR``, else 0.")

    def __str__(self) -> str:
        from hipfile import _hipfile
        from hipfile.enums import OpError

        try:
            text = _hipfile.op_error_message(int(self._hipfile_err))
        except TypeError:
            text = "unknown hipFile error"
        message = f"{int(self._hipfile_err)} - {text}"
        if int(self._hipfile_err) == OpError.HIP_DRIVER_ERROR:
            message += f" {self._hip_err}"
        return message
