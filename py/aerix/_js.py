"""The edge with JavaScript: the only module that touches ``js`` and ``pyodide.ffi``.

A value crosses once and is converted once, here, on the Python side: JavaScript to Python
through :func:`from_js`, Python to JavaScript through :func:`to_js`. Everything else is built
on those two: :func:`js_facing` (a Python function JavaScript calls), :func:`call_js` and
:func:`iterate_js` (JavaScript functions Python calls). The JavaScript side converts nothing.

Abort reaches JavaScript one way: the run's :class:`~aerix.abort.Abort` becomes a real
``AbortSignal`` per generation or per JS call (:func:`js_abort_signal`), and a caller's
``AbortSignal`` is followed through its ``abort`` event (:func:`js_listen`). JavaScript errors
become ``AerixError``; JavaScript async iterators become Python ones that are closed properly.
On CPython this module imports fine and every function that needs the page raises a clear error.
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
from typing import Any, AsyncGenerator, AsyncIterator, Awaitable, Callable

from .abort import Abort
from .errors import KINDS, AerixError

__all__ = ["IN_PYODIDE", "blob_bytes", "call_js", "call_js_now", "fetch_stream", "FetchStream", "from_js", "iterate_js", "js_abort_signal", "js_callable", "js_error", "js_facing", "js_listen", "js_module", "marked", "to_js", "unmarked"]

IN_PYODIDE = sys.platform == "emscripten"

if IN_PYODIDE:  # pragma: no cover - exercised by the page tests
    import js
    from pyodide.ffi import JsException, JsProxy, create_proxy
    from pyodide.ffi import to_js as _to_js
else:
    JsException = JsProxy = ()  # isinstance(x, ()) is always False


def _require() -> None:
    if not IN_PYODIDE:
        raise AerixError("options", "this needs Pyodide: it talks to JavaScript in the page")


# -- the two conversions -----------------------------------------------------------------------


def to_js(value: Any) -> Any:
    """A Python value as plain JavaScript: dicts become objects, lists arrays, ``None``
    ``undefined``, ``bytes`` a ``Uint8Array`` (a copy); a JavaScript value inside (a ``JsProxy``)
    goes as it is. Anything else is refused rather than proxied, so nothing leaks."""
    _require()
    return _to_js(value, dict_converter=js.Object.fromEntries, create_pyproxies=False)


def from_js(value: Any) -> Any:
    """A JavaScript value as plain Python: plain objects become dicts, arrays lists, ``null`` and
    ``undefined`` ``None``, a ``Uint8Array`` (any typed array or ``ArrayBuffer``) ``bytes`` (nested
    ones too). Functions and instances of classes (an ``AbortSignal``, a ``Blob``) stay proxies,
    to be called or listened to (:func:`blob_bytes` reads a ``Blob``); Python values pass."""
    if isinstance(value, JsProxy):
        if str(getattr(value, "typeof", "")) == "function":
            return value  # to_py would drop the `this` of a method
        value = value.to_py()
    return _none_for_null(value)


def _none_for_null(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _none_for_null(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_none_for_null(v) for v in value]
    if isinstance(value, memoryview):  # what to_py makes of a typed array: a copy, kept as bytes
        return value.tobytes()
    return None if type(value).__name__ == "JsNull" else value


async def blob_bytes(value: Any) -> Any:
    """A JavaScript ``Blob`` (or ``File``) as the ``bytes`` it holds; any other value as it is."""
    if isinstance(value, JsProxy) and callable(getattr(value, "arrayBuffer", None)):
        try:
            buffer = await value.arrayBuffer()
        except JsException as e:
            raise js_error(e) from None
        return bytes(js.Uint8Array.new(buffer).to_bytes())
    return value


# -- Python called from JavaScript -------------------------------------------------------------


def js_facing(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as JavaScript calls it: each argument through :func:`from_js`, the result through
    :func:`to_js` (a coroutine's once awaited; an async iterator's item by item, and closing the
    converted iterator closes ``fn``'s). Return only data: a Python object is refused."""

    @functools.wraps(fn)
    def call(*args: Any) -> Any:
        try:
            result = fn(*(from_js(a) for a in args))
        except AerixError as e:
            raise marked(e) from None
        if hasattr(result, "__anext__"):
            return _items_to_js(result)
        if inspect.isawaitable(result):
            return _awaited_to_js(result)
        return to_js(result)

    return call


# An AerixError crosses into JavaScript as Pyodide's PythonError, whose message is the whole
# traceback; its last line carries this mark, which aerix.mjs (and js_error, on the way back)
# reads to give JavaScript an Error named "AerixError" with `kind`, `reason` and the message alone.
_MARK = re.compile(r"\[aerix:([a-z]+)(?::([A-Za-z0-9_]+))?\] (.*)")


def marked(e: AerixError) -> AerixError:
    """``e`` with its kind (and reason) marked in its message, for JavaScript to read back."""
    if _MARK.match(e.message):
        return e
    mark = f"[aerix:{e.kind}{':' + e.reason if e.reason else ''}] {e.message}"
    return AerixError(e.kind, mark, reason=e.reason, events=e.events, problem=e.problem)


def unmarked(text: str) -> tuple[str, str | None, str] | None:
    """``(kind, reason, message)`` from the last marked line of ``text``, or ``None``."""
    for line in reversed(text.splitlines()):
        found = _MARK.search(line)
        if found:
            return found.group(1), found.group(2), found.group(3)
    return None


async def _awaited_to_js(awaitable: Awaitable[Any]) -> Any:
    try:
        return to_js(await awaitable)
    except AerixError as e:
        raise marked(e) from None


async def _items_to_js(stream: AsyncIterator[Any]) -> AsyncGenerator[Any, None]:
    try:
        async for item in stream:
            yield to_js(item)
    except AerixError as e:
        raise marked(e) from None
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()


def js_callable(fn: Callable[..., Any]) -> tuple[Any, Callable[[], None]]:
    """``js_facing(fn)`` as a JavaScript function (an async one returns a Promise), and its release."""
    _require()
    proxy = create_proxy(js_facing(fn))
    return proxy, proxy.destroy


# -- JavaScript called from Python -------------------------------------------------------------


async def call_js(fn: Any, *args: Any) -> Any:
    """Call a JavaScript function: arguments through :func:`to_js`, the result (awaited if it is
    a Promise) through :func:`from_js`."""
    _require()
    try:
        value = fn(*(to_js(a) for a in args))
        if inspect.isawaitable(value):
            value = await value
    except JsException as e:
        if unmarked(str(getattr(e, "message", "") or e)) is not None:
            raise js_error(e) from None  # our own error came back through JavaScript: as it was
        raise
    return from_js(value)


def call_js_now(fn: Any, *args: Any) -> Any:
    """Call a JavaScript function that answers at once (no Promise), converting both ways."""
    _require()
    return from_js(fn(*(to_js(a) for a in args)))


async def iterate_js(fn: Any, *args: Any) -> AsyncGenerator[Any, None]:
    """Call a JavaScript function that returns an async iterator (arguments through
    :func:`to_js`) and iterate it, each value through :func:`from_js`; closing this closes it.

    Pyodide's own ``async for`` over a JS iterator does not call its ``return()`` when the loop
    stops early, and for an engine stream that would leave it generating: so we do.
    """
    _require()
    try:
        iterator = fn(*(to_js(a) for a in args))
    except JsException as e:
        raise js_error(e) from None
    finished = False
    try:
        while True:
            step = await iterator.next()
            if step.done:
                finished = True
                return
            yield from_js(step.value)
    except JsException as e:
        finished = True
        raise js_error(e) from None
    finally:
        if not finished:
            await getattr(iterator, "return")()


def js_error(e: BaseException) -> AerixError:
    """A JavaScript error as an ``AerixError``: abort, unusable output, or an engine failure."""
    name = str(getattr(e, "name", "") or type(e).__name__)
    message = str(getattr(e, "message", "") or e)
    found = unmarked(message)
    if found is not None:  # our own error, back from JavaScript (a JS tool did not catch it)
        kind, reason, text = found
        return AerixError(kind if kind in KINDS else "engine", text, reason=reason)  # type: ignore[arg-type]
    if name == "AbortError":
        return AerixError("abort", message)
    if name == "EngineBadOutput":
        return AerixError("output", message)
    return AerixError("engine", f"{name}: {message}")


def js_module(name: str) -> Any:
    """A JavaScript module the page registered with ``pyodide.registerJsModule``."""
    _require()
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        raise AerixError("options", f"no JavaScript module {name!r}: boot the page with aerix.mjs first") from None


# -- abort, both ways --------------------------------------------------------------------------


def js_abort_signal(signal: Any) -> tuple[Any, Callable[[], None]]:
    """A JavaScript ``AbortSignal`` that aborts when ``signal`` (the run's ``Abort``) does, and
    what stops it following.

    Made per generation or per JS call and released when that ends, so the run's ``Abort`` keeps
    nothing of it: a plain callback aborts an ``AbortController``, no proxy is made. A ``signal``
    that is not an ``Abort`` (a direct caller of a model: ``None``, an ``AbortSignal``, any object
    with ``.aborted``) is composed into one here, and that one is closed on release."""
    _require()
    own = None if isinstance(signal, Abort) else Abort.following(signal)
    source = signal if own is None else own
    controller = js.AbortController.new()

    def abort(reason: str | None) -> None:
        # a reason goes as the DOMException an AbortSignal's reason is by default (name "AbortError")
        controller.abort(None if reason is None else js.DOMException.new(reason, "AbortError"))

    unsubscribe = source.on_abort(abort)

    def release() -> None:
        unsubscribe()
        if own is not None:
            own.close()

    return controller.signal, release


def js_listen(target: Any, event: str, fn: Callable[..., Any]) -> Callable[[], None]:
    """Call ``fn`` when ``target`` (an ``EventTarget``, e.g. an ``AbortSignal``) fires ``event``;
    returns what removes the listener (once; calling it again does nothing).

    A JavaScript target gets a proxy of ``fn``, destroyed on removal; any other object with
    ``addEventListener`` / ``removeEventListener`` (a fake in tests) gets ``fn`` itself."""
    proxy = create_proxy(fn) if isinstance(target, JsProxy) else None
    listener = fn if proxy is None else proxy
    target.addEventListener(event, listener)
    removed = False

    def remove() -> None:
        nonlocal removed
        if removed:
            return
        removed = True
        target.removeEventListener(event, listener)
        if proxy is not None:
            proxy.destroy()

    return remove


# -- the page's fetch (the OpenAI path's transport) --------------------------------------------


class FetchStream:
    """A ``fetch`` response whose body has not been read: status, headers, then its chunks."""

    def __init__(self, response: Any, controller: Any) -> None:
        self.status = int(response.status)
        self.reason = str(response.statusText or "")
        self.headers = {str(k).lower(): str(v) for k, v in from_js(js.Object.fromEntries(response.headers)).items()}
        self._response = response
        self._controller = controller
        self._reader: Any = None

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives, one ``Uint8Array`` at a time, as bytes."""
        body = self._response.body
        if body is None:
            return
        self._reader = body.getReader()
        while True:
            try:
                step = await self._reader.read()
            except JsException as e:
                raise js_error(e) from None
            if step.done:
                return
            yield step.value.to_bytes()

    async def close(self) -> None:
        """Stop the download: the reader is cancelled and the request aborted, so the server sees it go."""
        try:
            if self._reader is not None:
                await self._reader.cancel()
            elif self._response.body is not None and not self._response.bodyUsed:
                await self._response.body.cancel()
        except JsException:
            pass  # already finished or failed: nothing left to stop
        finally:
            self._controller.abort()


async def fetch_stream(method: str, url: str, headers: dict[str, str], body: bytes, fetch: Any = None) -> FetchStream:
    """Start a request with ``fetch`` (the page's, or the one given); return once headers are in."""
    _require()
    controller = js.AbortController.new()
    init = to_js({"method": method, "headers": headers, "body": body.decode("utf-8") if body else None})
    init.signal = controller.signal
    try:
        response = await (js.fetch(url, init) if fetch is None else fetch(url, init))
    except JsException as e:
        raise js_error(e) from None
    return FetchStream(response, controller)
