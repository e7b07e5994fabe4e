"""What the upstream-compatible classes share: read-only attributes, and the registration a
``with`` block holds."""

from __future__ import annotations

import operator
import sys


def read_only(attr: str, doc: "str | None" = None) -> property:
    """A property that gives ``self.<attr>``, documented by ``doc``."""
    return property(operator.attrgetter(attr), doc=doc)


class Registration:
    """An object that holds a registration: ``_begin`` takes it for a ``with`` block, ``_end``
    lets it go at the block's end and when the object goes (a failure then is reported on
    stderr, as upstream does, never raised)."""

    def _begin(self) -> None:
        raise NotImplementedError

    def _end(self) -> None:
        raise NotImplementedError

    def __del__(self) -> None:
        try:
            self._end()
        except Exception:
            print(f"Failed to deregister hipFile.{type(self).__name__} at destruction time.", file=sys.stderr)

    def __enter__(self):
        self._begin()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._end()
