"""The record of one attempt (`record`), how it is built from a stream's outcome (`build`), and the token counts
(`tokens`) and prices (`pricing`) that go into it."""

from loadlib.records.record import RequestRecord

__all__ = ["RequestRecord"]
