"""The demo's MCP server: a made-up town library, served with PyPI's `mcp` SDK over Streamable HTTP
on this machine only, for the demo page's "MCP tools" box (docs/mcp.md#the-demo).

    python -m build.demo_mcp [--port 8643]

`make demo` starts it (`McpServer`, below) and serves the site with `mcp={"library": its URL}`,
so the page reaches it as `/mcp/library`. Its tools are harmless and deterministic (the data is
made up, fixed here) and their inputs nested, as a real server's are:

- `lookup_book {book: {title, author?}}`: a book of the catalogue, its shelf and copies in;
- `library_hours {branch, day?}`: a branch's opening hours, on a day or the week.

The bundled model was never trained on these tools; aerix-general may use them.
"""

# no `from __future__ import annotations`: the SDK reads the tools' annotations, Book is local to run()
import argparse
import socket
import subprocess
import sys
import time
from pathlib import Path

from build.ports import free_port

ROOT = Path(__file__).resolve().parent.parent

BOOKS = {
    "the left hand of darkness": {"author": "Ursula K. Le Guin", "shelf": "F LEG", "copies": 3, "in": 1},
    "a wizard of earthsea": {"author": "Ursula K. Le Guin", "shelf": "F LEG", "copies": 2, "in": 2},
    "the book of tea": {"author": "Kakuzo Okakura", "shelf": "394.15 OKA", "copies": 1, "in": 0},
    "invisible cities": {"author": "Italo Calvino", "shelf": "F CAL", "copies": 2, "in": 1},
}
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
HOURS = {  # per branch, Monday to Sunday; None: closed
    "central": ("09:00-20:00",) * 5 + ("10:00-17:00", "12:00-16:00"),
    "harbour": ("10:00-18:00",) * 4 + ("10:00-20:00", "10:00-14:00", None),
    "hillside": (None, "13:00-19:00", "13:00-19:00", None, "13:00-19:00", "09:00-13:00", None),
}


def lookup_book(title: str, author: str | None = None) -> dict:
    """A book of the catalogue by its title (any case), checked against the author if one is given."""
    found = BOOKS.get(" ".join(title.lower().split()))
    if found is None or (author and author.lower() not in found["author"].lower()):
        known = ", ".join(t.title() for t in BOOKS)
        raise ValueError(f"no book {title!r}{f' by {author}' if author else ''} in the catalogue; it has: {known}")
    return {"title": title.strip(), **found}


def library_hours(branch: str, day: str | None = None) -> str:
    """A branch's opening hours on `day` (Monday to Sunday), or the whole week."""
    hours = HOURS.get(branch.strip().lower())
    if hours is None:
        raise ValueError(f"no branch {branch!r}; the branches are: {', '.join(HOURS)}")
    shown = [f"{d.title()} {h or 'closed'}" for d, h in zip(DAYS, hours)]
    if day is None:
        return f"{branch.strip().title()}: " + "; ".join(shown)
    if day.strip().lower() not in DAYS:
        raise ValueError(f"no day {day!r}; say Monday to Sunday")
    return f"{branch.strip().title()}, {shown[DAYS.index(day.strip().lower())]}"


def run(port: int) -> None:
    """Serve the tools on 127.0.0.1:`port` at /mcp until killed (needs PyPI's `mcp`)."""
    from pydantic import BaseModel, Field

    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("aerix-demo-library", log_level="WARNING")

    class Book(BaseModel):
        title: str = Field(description="The book's title, e.g. Invisible Cities.")
        author: str | None = Field(default=None, description="Its author, if you know it.")

    @server.tool(name="lookup_book")
    def _lookup_book(book: Book) -> dict:
        """Find a book in the town library's catalogue: its author, shelf mark and copies in."""
        try:
            return lookup_book(book.title, book.author)
        except ValueError as e:
            raise ToolError(str(e)) from None

    @server.tool(name="library_hours")
    def _library_hours(branch: str = Field(description="central, harbour or hillside"), day: str | None = Field(default=None, description="Monday to Sunday; none for the week")) -> str:
        """The opening hours of a branch of the town library."""
        try:
            return library_hours(branch, day)
        except ValueError as e:
            raise ToolError(str(e)) from None

    server.run("streamable-http", host="127.0.0.1", port=port)


def start_listening(args: list[str], port: int, what: str, *, cwd: Path | None = None, within_s: float = 30.0) -> "subprocess.Popen[bytes]":
    """`args` in a subprocess, once it listens on loopback `port` (the tests' MCP servers start so
    too); RuntimeError, the process killed, if it exits first (with its stderr's end) or does not
    listen within `within_s`."""
    process = subprocess.Popen(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the {what} exited: {process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    process.wait(10)
    process.stderr.close()  # type: ignore[union-attr]
    raise RuntimeError(f"the {what} did not listen on port {port} within {within_s:g} s")


class McpServer:
    """This server in a subprocess on a loopback port (0: a free one): its `url`, and `stop()`."""

    def __init__(self, port: int = 0, *, within_s: float = 30.0) -> None:
        port = port or free_port()
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.process = start_listening([sys.executable, "-m", "build.demo_mcp", "--port", str(port)], port, "demo MCP server", cwd=ROOT, within_s=within_s)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process.wait(10)
        if self.process.stderr:
            self.process.stderr.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8643)
    run(ap.parse_args().port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
