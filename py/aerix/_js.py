"""The edge with JavaScript: the only module that touches ``js`` and ``pyodide.ffi``.

Values are converted once here (``to_js`` / ``to_py``), JavaScript errors become ``AerixError``,
and JavaScript async iterators become Python ones that are closed properly. On CPython this
module imports fine and every function raises a clear error if used.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any, AsyncIterator, Callable

from .errors import AerixError

__all__ = ["IN_PYODIDE", "FetchStream", "call_js", "fetch_stream", "iterate_js", "js_callable", "js_error", "js_listen", "js_module", "js_signal", "to_js", "to_py"]

IN_PYODIDE = sys.platform == "emscripten"

if IN_PYODIDE:  # pragma: no cover - exercised by the page tests
    import js
    from pyodide.ffi import JsException, JsProxy, create_proxy
    from pyodide.ffi import to_js as _to_js
else:
    JsException = JsProxy = ()  # type: ignore[assignment,misc]  # isinstance(x, ()) is always False


def _require() -> None:
    if not IN_PYODIDE:
        raise AerixError("options", "this needs Pyodide: it talks to JavaScript in the page")


def to_js(value: Any) -> Any:
    """A Python value as plain JavaScript (dicts become objects, lists arrays)."""
    _require()
    return _to_js(value, dict_converter=js.Object.fromEntries, create_pyproxies=False)


def to_py(value: Any) -> Any:
    """A JavaScript value as plain Python; ``null`` and ``undefined`` become ``None``."""
    if isinstance(value, JsProxy):
        if str(getattr(value, "typeof", "")) == "function":
            return value
        return value.to_py()
    if value is None or type(value).__name__ == "JsNull":
        return None
    return value


def js_error(e: BaseException) -> AerixError:
    """A JavaScript error as an ``AerixError``: abort, unusable output, or an engine failure."""
    name = str(getattr(e, "name", "") or type(e).__name__)
    message = str(getattr(e, "message", "") or e)
    if name == "AbortError":
        return AerixError("abort", message)
    if name == "EngineBadOutput":
        return AerixError("output", message)
    return AerixError("engine", f"{name}: {message}")


async def iterate_js(iterator: Any) -> AsyncIterator[Any]:
    """Iterate a JavaScript async iterator, converting each value; closing this closes it.

    Pyodide's own ``async for`` over a JS iterator does not call its ``return()`` when the loop
    stops early, and for an engine stream that would leave it generating: so we do.
    """
    _require()
    finished = False
    try:
        while True:
            step = await iterator.next()
            if step.done:
                finished = True
                return
            yield to_py(step.value)
    except JsException as e:
        finished = True
        raise js_error(e) from None
    finally:
        if not finished:
            await getattr(iterator, "return")()


async def call_js(fn: Any, *args: Any) -> Any:
    """Call a JavaScript function with Python arguments (converted), await it, convert its result."""
    _require()
    value = fn(*(a if isinstance(a, JsProxy) else to_js(a) for a in args))
    if inspect.isawaitable(value):
        value = await value
    return to_py(value)


def js_signal(signal: Any) -> tuple[Any, Callable[[], None]]:
    """A signal JavaScript can read (``.aborted``), and how to release it afterwards."""
    _require()
    if signal is None or isinstance(signal, JsProxy):
        return signal, lambda: None
    proxy = create_proxy(signal)
    return proxy, proxy.destroy


def js_listen(target: Any, event: str, fn: Callable[..., Any]) -> None:
    """Call ``fn`` once when ``target`` (an ``EventTarget``, e.g. an ``AbortSignal``) fires ``event``."""
    _require()
    from pyodide.ffi import create_once_callable

    target.addEventListener(event, create_once_callable(fn), to_js({"once": True}))


def js_callable(fn: Callable[..., Any]) -> tuple[Any, Callable[[], None]]:
    """A Python function JavaScript can call (an async one returns a Promise), and its release."""
    _require()
    proxy = create_proxy(fn)
    return proxy, proxy.destroy


def js_module(name: str) -> Any:
    """A JavaScript module the page registered with ``pyodide.registerJsModule``."""
    _require()
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        raise AerixError("options", f"no JavaScript module {name!r}: boot the page with aerix.mjs first") from None


class FetchStream:
    """A ``fetch`` response whose body has not been read: status, headers, then its chunks."""

    def __init__(self, response: Any, controller: Any) -> None:
        self.status = int(response.status)
        self.reason = str(response.statusText or "")
        self.headers = {str(k).lower(): str(v) for k, v in js.Object.fromEntries(response.headers).to_py().items()}
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
