"""Cancellation, composed once: an ``Abort`` following the caller's signal, whatever it is."""

from __future__ import annotations

import gc
import weakref

from aerix.abort import Abort, is_aborted


class Flag:
    """A signal that cannot call back: only ``.aborted`` (and a ``reason``) to read."""

    def __init__(self) -> None:
        self.aborted = False
        self.reason: object = None


class FakeEventTarget:
    """What a JavaScript ``AbortSignal`` offers Python: ``.aborted`` and the ``abort`` event."""

    def __init__(self) -> None:
        self.aborted = False
        self.reason: object = None
        self.listeners: list[tuple[str, object]] = []
        self.removed: list[tuple[str, object]] = []

    def addEventListener(self, event, fn):  # noqa: N802 - the DOM's name
        self.listeners.append((event, fn))

    def removeEventListener(self, event, fn):  # noqa: N802 - the DOM's name
        self.removed.append((event, fn))
        self.listeners.remove((event, fn))

    def abort(self, reason):
        self.aborted, self.reason = True, reason
        for event, fn in list(self.listeners):
            if event == "abort":
                fn("the event")


def recorder():
    seen = []
    return seen, lambda name: (lambda reason: seen.append((name, reason)))


def test_an_abort_keeps_its_first_reason():
    signal = Abort()
    assert not signal.aborted and signal.reason is None
    signal.abort("first")
    signal.abort("second")
    assert (signal.aborted, signal.reason) == (True, "first")
    assert is_aborted(signal) and not is_aborted(None) and not is_aborted(Abort())


def test_callbacks_run_once_in_order_and_an_unsubscribed_one_not_at_all():
    signal = Abort()
    seen, callback = recorder()
    signal.on_abort(callback("a"))
    unsubscribe_b = signal.on_abort(callback("b"))
    signal.on_abort(callback("c"))
    unsubscribe_b()
    unsubscribe_b()  # twice is fine
    signal.abort("stop")
    signal.abort("again")
    assert seen == [("a", "stop"), ("c", "stop")]


def test_subscribing_to_an_aborted_signal_calls_back_at_once():
    signal = Abort()
    signal.abort("gone")
    seen, callback = recorder()
    unsubscribe = signal.on_abort(callback("late"))
    assert seen == [("late", "gone")]
    unsubscribe()  # nothing left to remove: does nothing


def test_following_nothing_never_aborts_by_itself():
    child = Abort.following(None)
    assert not child.aborted
    child.close()
    child.abort("by hand")
    assert (child.aborted, child.reason) == (True, "by hand")


def test_following_an_abort_aborts_with_it_and_calls_back_at_once():
    parent = Abort()
    child = Abort.following(parent)
    seen, callback = recorder()
    child.on_abort(callback("engine"))
    assert not child.aborted and seen == []
    parent.abort("user pressed stop")
    # no read of child.aborted needed: the callback ran when the parent aborted
    assert seen == [("engine", "user pressed stop")]
    assert (child.aborted, child.reason) == (True, "user pressed stop")


def test_a_child_aborting_leaves_its_parent_alone():
    parent = Abort()
    child = Abort.following(parent)
    child.abort("only this run")
    assert child.aborted and not parent.aborted


def test_following_an_aborted_parent_starts_aborted():
    parent = Abort()
    parent.abort("before the run")
    child = Abort.following(parent)
    assert (child.aborted, child.reason) == (True, "before the run")
    seen, callback = recorder()
    child.on_abort(callback("engine"))
    assert seen == [("engine", "before the run")]
    flag = Flag()
    flag.aborted, flag.reason = True, "already"
    assert (Abort.following(flag).aborted, Abort.following(flag).reason) == (True, "already")


def test_a_chain_of_followers_aborts_from_its_root():
    root = Abort()
    grandchild = Abort.following(Abort.following(root))
    seen, callback = recorder()
    grandchild.on_abort(callback("tool"))
    root.abort("stop")
    assert grandchild.aborted and seen == [("tool", "stop")]


def test_following_a_plain_object_is_seen_at_the_next_read():
    flag = Flag()
    child = Abort.following(flag)
    seen, callback = recorder()
    child.on_abort(callback("engine"))
    flag.aborted, flag.reason = True, ValueError("why")
    assert seen == []  # a plain object cannot call back ...
    assert child.aborted  # ... so the next read sees it, and calls back then
    assert seen == [("engine", "why")] and child.reason == "why"


def test_following_an_event_target_listens_to_its_abort_event():
    target = FakeEventTarget()
    child = Abort.following(target)
    assert [event for event, _ in target.listeners] == ["abort"]
    seen, callback = recorder()
    child.on_abort(callback("engine"))
    target.abort("from the page")
    assert seen == [("engine", "from the page")]
    assert (child.aborted, child.reason) == (True, "from the page")


def test_close_removes_the_listener_from_an_event_target_once():
    target = FakeEventTarget()
    child = Abort.following(target)
    (listener,) = target.listeners
    child.close()
    child.close()
    assert target.listeners == [] and target.removed == [listener]
    target.abort("after the run")
    assert not child.aborted  # closed: it follows nothing any more


def test_close_stops_following_an_abort_and_a_plain_object():
    parent, flag = Abort(), Flag()
    by_abort, by_flag = Abort.following(parent), Abort.following(flag)
    by_abort.close()
    by_flag.close()
    parent.abort("late")
    flag.aborted = True
    assert not by_abort.aborted and not by_flag.aborted


def test_a_long_lived_parent_keeps_nothing_of_closed_followers():
    parent = Abort()
    child = Abort.following(parent)
    child.on_abort(lambda reason: None)
    child.close()
    gone = weakref.ref(child)
    del child
    gc.collect()
    assert gone() is None
    parent.abort("still works")
    assert parent.aborted


def test_an_aborted_follower_keeps_its_state_after_close():
    parent = Abort()
    child = Abort.following(parent)
    parent.abort("stop")
    child.close()
    assert (child.aborted, child.reason) == (True, "stop")
