"""Debian's Chromium, headless, launched the one way every aerix tool launches it.

Playwright drives the browser the machine has (`apt-get install chromium`); `playwright install`
is never run. Without the networking flags Chromium keeps calling Google's hosts, which this
offline machine refuses, and hangs.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["ARGS", "CHROMIUM", "GPU_ARGS", "launch"]

CHROMIUM = os.environ.get("AERIX_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # Shared memory in /tmp, not /dev/shm: a container's /dev/shm can be 64 MB, and a renderer
    # that runs out of it dies ("Target crashed"). CI saw such a crash once; its cause is not known.
    "--disable-dev-shm-usage",
]


# For `make gpu-check` on a machine with a GPU: WebGPU in headless Chromium (Vulkan on Linux).
GPU_ARGS = ["--enable-unsafe-webgpu", "--enable-features=Vulkan,WebGPU", "--use-angle=vulkan", "--ignore-gpu-blocklist", "--enable-gpu"]


def launch(playwright: Any, executable: str | None = None, extra: list[str] | None = None, gpu: bool = False) -> Any:
    """A headless browser from ``sync_playwright()`` (or the async one, awaited by the caller);
    ``gpu``: with the GPU and WebGPU on instead of ``--disable-gpu``."""
    args = [a for a in ARGS if not (gpu and a == "--disable-gpu")] + (GPU_ARGS if gpu else []) + (extra or [])
    return playwright.chromium.launch(executable_path=executable or CHROMIUM, headless=True, args=args)
