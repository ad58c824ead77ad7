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

__all__ = ["IN_PYODIDE", "call_js", "iterate_js", "js_error", "js_module", "to_js", "to_py"]

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


def js_module(name: str) -> Any:
    """A JavaScript module the page registered with ``pyodide.registerJsModule``."""
    _require()
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        raise AerixError("options", f"no JavaScript module {name!r}: boot the page with aerix.mjs first") from None
