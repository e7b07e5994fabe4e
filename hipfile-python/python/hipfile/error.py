"""hipFile's exception (upstream's ``hipfile.error``)."""

from hipfile._errors import HipFileException

__all__ = ["HipFileException"]
