"""A throwaway PostgreSQL, for the tests and ``make chaos``: Debian's ``postgresql`` package,
``initdb`` into a temporary folder, one server on a free loopback port with its unix socket in
that folder, no system service or cluster touched. It needs psycopg (to check the server is up).

    from build.pg import missing_reason, throwaway_postgres

    if missing_reason() is None:                     # else why not (not installed, no psycopg)
        with throwaway_postgres() as server:         # stopped, its folder removed, on exit
            dsn = server.new_database()              # postgresql://aerix@127.0.0.1:PORT/aerix_1

The tests' fixtures over it are in tests/unit/pg_server.py (one server per test session, a fresh
database per test). ``AERIX_POSTGRES_BIN`` names the folder of ``initdb`` and ``postgres`` where
they are not Debian's.

Run as root (CI, this machine), ``initdb`` refuses to run: the server then runs as the
``postgres`` user the package made (or ``nobody``), owning the temporary folder. Authentication
is ``trust`` for the superuser ``aerix`` on loopback and the socket; the role ``secret`` (password
``s3cret-pw``) logs in with a password only, for tests of what an error may show.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from build.ports import free_port

__all__ = ["SECRET_PASSWORD", "SECRET_ROLE", "ThrowawayPostgres", "missing_reason", "postgres_bin", "throwaway_postgres"]

SECRET_ROLE, SECRET_PASSWORD = "secret", "s3cret-pw"
_HBA = f"""\
local all aerix trust
host all aerix 127.0.0.1/32 trust
local all {SECRET_ROLE} scram-sha-256
host all {SECRET_ROLE} 127.0.0.1/32 scram-sha-256
"""


def postgres_bin() -> Path | None:
    """The folder holding ``initdb`` and ``postgres`` (the newest Debian version), or None."""
    env = os.environ.get("AERIX_POSTGRES_BIN")  # a build of one's own; or, for a test of the skip, none
    if env:
        found = [Path(env)]
    else:
        on_path = shutil.which("initdb")
        found = [Path(on_path).parent] if on_path else []
        found += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    return next((d for d in reversed(found) if (d / "initdb").exists() and (d / "postgres").exists()), None)


def missing_reason() -> str | None:
    """Why the tests cannot have a PostgreSQL here (None: they can)."""
    if sys.platform == "emscripten":
        return "no PostgreSQL server in Pyodide"
    if postgres_bin() is None:
        return "PostgreSQL is not installed (no initdb in /usr/lib/postgresql/*/bin): apt-get install postgresql"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed: pip install -e '.[test]'"
    return None


class ThrowawayPostgres:
    """One server in a temporary folder; ``start()``, ``new_database()``, ``stop()`` (which
    removes the folder). A context manager too."""

    def __init__(self, bin_dir: Path | None = None) -> None:
        self.bin = bin_dir or postgres_bin()
        if self.bin is None:
            raise RuntimeError(missing_reason() or "no PostgreSQL")
        self.dir = Path(tempfile.mkdtemp(prefix="aerix-pg-"))
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._names = itertools.count(1)
        # initdb and postgres refuse to run as root: run them as an ordinary user owning the folder
        self._user: dict[str, Any] = {}
        if os.geteuid() == 0:
            account = _account()
            os.chown(self.dir, account.pw_uid, account.pw_gid)
            self._user = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}

    def __enter__(self) -> ThrowawayPostgres:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self, *args: str) -> None:
        done = subprocess.run(args, capture_output=True, text=True, timeout=120, **self._user)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed ({done.returncode}): {done.stderr.strip()[-800:]}")

    def start(self) -> None:
        data = self.dir / "data"
        self._run(str(self.bin / "initdb"), "-D", str(data), "-U", "aerix", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
        (data / "pg_hba.conf").write_text(_HBA)
        for attempt in range(5):  # another process may take the free port before the server binds it
            self.port = free_port()
            if self._launch(data):
                break
        else:
            raise RuntimeError(f"PostgreSQL did not start: {self._log()}")
        with self.connect() as conn:
            conn.execute(f"create role {SECRET_ROLE} login password '{SECRET_PASSWORD}'")

    def _launch(self, data: Path) -> bool:
        """Start the server on ``self.port``; whether it accepts connections (within 30 s)."""
        settings = {"listen_addresses": "127.0.0.1", "port": str(self.port), "unix_socket_directories": str(self.dir),
                    "fsync": "off", "synchronous_commit": "off", "full_page_writes": "off", "max_connections": "200"}  # fmt: skip
        args = [str(self.bin / "postgres"), "-D", str(data)] + [a for k, v in settings.items() for a in ("-c", f"{k}={v}")]
        with open(self.dir / "server.log", "ab") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **self._user)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.process.poll() is None:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                with contextlib.suppress(Exception), self.connect():
                    return True
            time.sleep(0.05)
        self._halt()
        return False

    def _log(self) -> str:
        path = self.dir / "server.log"
        return path.read_text(errors="replace")[-1500:] if path.exists() else "(no log)"

    def dsn(self, database: str = "postgres", user: str = "aerix", password: str | None = None) -> str:
        auth = user if password is None else f"{user}:{password}"
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{database}"

    def connect(self, database: str = "postgres") -> Any:
        """A psycopg connection (autocommit) as the superuser."""
        import psycopg

        return psycopg.connect(self.dsn(database), autocommit=True, connect_timeout=5)

    def new_database(self, name: str | None = None) -> str:
        """Create an empty database (``aerix_<n>`` unless named); its DSN."""
        name = name or f"aerix_{next(self._names)}"
        with self.connect() as conn:
            conn.execute(f'create database "{name}" strategy file_copy')
        return self.dsn(name)

    def _halt(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # "fast" shutdown: ends sessions, no waiting for clients
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def stop(self) -> None:
        self._halt()
        shutil.rmtree(self.dir, ignore_errors=True)


def _account() -> Any:
    import pwd  # here: not every platform the unit tests run on has it

    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise RuntimeError("running as root, and neither a 'postgres' nor a 'nobody' user to run PostgreSQL as")


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[ThrowawayPostgres]:
    """A started server, stopped and removed on exit."""
    with ThrowawayPostgres() as server:
        yield server
