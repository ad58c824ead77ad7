"""The PostgreSQL store's connections: up to ``size`` of them, lent one call at a time, made in
one event loop (:class:`aerix.stores.postgres.PostgresStore` drops a pool whose loop is not the
running one)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["Pool"]


class Pool:
    """Up to ``size`` connections made in ``loop``, lent one call at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop, size: int, connect: Any) -> None:
        self.loop = loop
        self._connect = connect
        self._idle: list[AsyncConnection[Any]] = []
        self._free = asyncio.Semaphore(size)

    async def take(self) -> AsyncConnection[Any]:
        await self._free.acquire()
        try:
            conn = await self._reuse() or await self._connect()
        except BaseException:
            self._free.release()
            raise
        return conn

    async def _reuse(self) -> AsyncConnection[Any] | None:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed and not conn.broken:
                return conn
            await conn.close()
        return None

    def give(self, conn: AsyncConnection[Any]) -> None:
        self._free.release()
        if conn.closed or conn.broken:
            conn.pgconn.finish()
        else:
            self._idle.append(conn)

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.close()

    def drop(self) -> None:
        """Close the idle connections without their loop (the socket only)."""
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.pgconn.finish()
