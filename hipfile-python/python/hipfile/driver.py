"""The driver (upstream's ``hipfile.driver``)."""

from __future__ import annotations

from hipfile import _hipfile
from hipfile._open import open_driver


class Driver:
    """hipFile's driver: ``open()`` is ``hipFileDriverOpen``, ``close()`` ``hipFileDriverClose``;
    as a context manager it holds one use of the driver. The driver is the process's (the C
    API's, where the process has a GPU runtime)."""

    @staticmethod
    def use_count() -> int:
        """``hipFileUseCount``: how many opens are not yet closed."""
        return _hipfile.use_count()

    def open(self) -> None:
        """Opens the driver (one more use)."""
        open_driver()

    def close(self) -> None:
        """Closes one use of the driver."""
        _hipfile.driver_close()

    def __enter__(self) -> "Driver":
        self.open()
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        self.close()
