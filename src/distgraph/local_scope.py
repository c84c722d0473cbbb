"""DGL's `local_var()` and `local_scope()` for the graph objects that hold node and edge data
(graphs, blocks, pair graphs): data set through the returned graph, or inside the scope, is
not seen by the original graph afterwards; the arrays themselves are shared, so in-place
changes to a tensor are (as in DGL). A leaf module: it imports nothing of the project."""

from __future__ import annotations

import copy
from contextlib import contextmanager
from typing import Iterator, TypeVar

S = TypeVar("S", bound="LocalScope")


def copy_frames(frames: dict) -> dict:
    """`frames` (data dicts, or dicts of them nested by side or type) with every dict copied
    and every array shared."""
    if any(isinstance(v, dict) for v in frames.values()):
        return {k: copy_frames(v) if isinstance(v, dict) else v for k, v in frames.items()}
    return frames.copy()


class LocalScope:
    """Mixin: `_frame_attrs` names the attributes that hold this object's data dicts."""

    _frame_attrs: tuple[str, ...] = ()

    def local_var(self: S) -> S:
        """This graph with data dicts of its own: assignments to its data leave this one's unchanged."""
        out = copy.copy(self)
        for name in self._frame_attrs:
            setattr(out, name, copy_frames(getattr(self, name)))
        return out

    @contextmanager
    def local_scope(self: S) -> Iterator[S]:
        """Data assigned (or removed) inside the `with` block is forgotten at its end."""
        saved = {name: getattr(self, name) for name in self._frame_attrs}
        for name, frames in saved.items():
            setattr(self, name, copy_frames(frames))
        try:
            yield self
        finally:
            for name, frames in saved.items():
                setattr(self, name, frames)
