"""Board tops: the Colorlight 5A-75B rev 7.0 (``top``) and its bitstream build (``build``)."""

from .top import BoardDatapath, BoardTop, CLOCK_TARGETS_HZ

__all__ = ["BoardDatapath", "BoardTop", "CLOCK_TARGETS_HZ"]
