"""Stopping cleanly on Ctrl-C and SIGTERM.

Every `aqmlab` command runs inside `handling()` (see `cli.main`), so a new command gets
this without a line of its own:

* the first SIGINT or SIGTERM raises `Interrupted` (a `KeyboardInterrupt`) in the main
  thread: `finally` blocks and context managers run, so worker processes are stopped,
  finished runs are indexed and temporary folders removed; the command then ends
  with one line on stderr, ``aqmlab: interrupted (SIGINT): <what was kept>``, and the
  exit code 128 + the signal number (130 for SIGINT, 143 for SIGTERM);
* a second signal while that cleanup runs forces: the child processes are killed and
  the process exits at once with the same code (what is half-written then is in
  temporary names that the next start removes).

A signal's exception can be swallowed when it is raised inside a finalizer or a weakref
callback (Python prints "Exception ignored in ..." and goes on): while a command runs,
such an exception is kept instead of printed, and raised again at the next `check()`
(the loops of long work call it, and `cli.main` does when the command returns).

A command says what an interruption keeps with `note()` ("finished runs are kept in
..."); sections that must not be cut short (writing an index) run in `deferred()`,
which holds a first signal until the section ends. The Rust core polls for signals
while it runs, so a long simulation stops within a percent of its simulated time.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator, Optional

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C (SIGINT) or SIGTERM received by an `aqmlab` command."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


class _State:
    def __init__(self) -> None:
        self.active = False
        self.received: list[int] = []
        self.deferred = 0
        self.pending: Optional[int] = None
        self.note: Optional[str] = None
        self.spare: set[int] = set()
        self.swallowed: Optional[int] = None


_state = _State()


def _children() -> list[int]:
    """This process's children (from /proc; empty where there is none)."""
    me = os.getpid()
    out = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for d in entries:
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me:
            out.append(int(d))
    return out


def _force(signum: int) -> None:
    for pid in _children():
        if pid in _state.spare:
            continue
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    name = signal.Signals(signum).name
    try:
        os.write(2, f"aqmlab: interrupted again ({name}): stopped at once; what was half-written is removed when the command is started again\n".encode())
    finally:
        os._exit(128 + signum)


def _handler(signum: int, frame: object) -> None:
    _state.received.append(signum)
    if len(_state.received) > 1:
        _force(signum)
    if _state.deferred:
        _state.pending = signum
        return
    raise Interrupted(signum)


def _raise(signum: int, frame: object) -> None:
    raise Interrupted(signum)


def install() -> bool:
    """Make SIGINT and SIGTERM raise `Interrupted` (main thread only); False if they
    cannot be (another thread)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    for s in SIGNALS:
        signal.signal(s, _handler)
    _state.active = True
    return True


def _unraisable(args: "sys.UnraisableHookArgs") -> None:
    if isinstance(args.exc_value, Interrupted):
        _state.swallowed = args.exc_value.signum  # raised again at the next check()
        return
    sys.__unraisablehook__(args)


@contextmanager
def handling() -> Iterator[None]:
    """Handle SIGINT and SIGTERM as described above for the duration of a command."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in SIGNALS}
    old_hook = sys.unraisablehook
    saved = (_state.active, list(_state.received), _state.deferred, _state.pending, _state.note, set(_state.spare), _state.swallowed)
    _state.received.clear()
    _state.deferred, _state.pending, _state.note, _state.swallowed = 0, None, None, None
    install()
    sys.unraisablehook = _unraisable
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        sys.unraisablehook = old_hook
        _state.active, _state.received[:], _state.deferred, _state.pending, _state.note, _state.spare, _state.swallowed = saved


def check() -> None:
    """Raise a signal whose exception was swallowed (see the module doc); called in
    the loops of long work."""
    if _state.swallowed is not None and not _state.deferred:
        s, _state.swallowed = _state.swallowed, None
        raise Interrupted(s)


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within a library call (no `handling()` around it), make SIGTERM raise
    `Interrupted` too, so that its `finally` blocks run; a no-op where SIGTERM is
    already handled or outside the main thread."""
    if _state.active or threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextmanager
def deferred() -> Iterator[None]:
    """A section a first signal must not cut short: the signal is held and raised when
    the section ends (a second one still forces)."""
    _state.deferred += 1
    try:
        yield
    finally:
        _state.deferred -= 1
        if not _state.deferred and _state.pending is not None:
            s, _state.pending = _state.pending, None
            raise Interrupted(s)


def note(text: Optional[str]) -> None:
    """What an interruption of the current command keeps, for its one-line message."""
    _state.note = text


def spare(pid: int) -> None:
    """A child that a forced exit must leave alone (one that cleans up after us)."""
    _state.spare.add(pid)


def message(e: KeyboardInterrupt) -> str:
    """The one line printed when a command was interrupted."""
    name = e.name if isinstance(e, Interrupted) else "SIGINT"
    return f"aqmlab: interrupted ({name}): {_state.note or 'stopped; nothing written'}"


def exit_code(e: KeyboardInterrupt) -> int:
    return e.exit_code if isinstance(e, Interrupted) else 128 + signal.SIGINT


def die_with_parent(expected_parent: Optional[int] = None, sig: int = signal.SIGKILL) -> None:
    """Ask Linux to send `sig` to this process when its parent dies
    (prctl(PR_SET_PDEATHSIG)), and exit now if the parent is already gone (it died
    between our start and this call). Elsewhere a no-op."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    PR_SET_PDEATHSIG = 1
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if expected_parent is not None and os.getppid() != expected_parent:
        os._exit(1)
