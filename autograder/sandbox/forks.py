"""An item's own fork of the child: opened for the item's first request, ended when the next item comes
(child.py says what each holds and why)."""
import secrets
import time

from . import protocol
from .errors import SandboxError


def flags_of(message: dict) -> list:
    """The child's tamper flags, as short strings."""
    flags = message.get("flags")
    return [str(f)[:200] for f in flags[:20]] if isinstance(flags, list) else []


class ItemForks:
    """The part of a Sandbox that keeps one fork of the child per item (a mixin: it uses the Sandbox's channel,
    _send, _guard and _end_child)."""

    def _no_fork(self):
        self.item, self.setup = "", {}  # the item whose checks come now, and what its fork is handed
        self.fork_open = False  # whether a fork of the child holds the item now
        self.fork_flags = []    # what the fork's guard caught while it set up: its first answer carries them
        self.census = None      # the tests' census of the last fork (child.census), when they asked for it

    def use_item(self, item: str, setup: dict = None, seconds: float = None):
        """The checks of `item` come next: from the next request on, a fork of the child of its own answers
        them, handed `setup` ({"imports", "units", "bind"}: the stand-ins, see child.py). The fork of the
        item before is ended first, and with it everything it started."""
        if item == self.item and self.setup == (setup or {}):
            return
        self._close_fork(seconds)
        self.item, self.setup = item, dict(setup or {})

    def _open_fork(self, deadline: float, doing: str, measured: bool = False):
        """Have the child fork a process for the current item and hand it the item's key and stand-ins.
        measured: its first call's memory is measured (the fork keeps nothing the notebook charged that it could
        cut or reuse: namespaces.lock_for_measurement)."""
        nonce = secrets.token_hex(16)
        self._send(protocol.request({"fork": self.item or "none", "nonce": nonce}), deadline, doing)
        self._guard(lambda: self.channel.template_message("forked", deadline, nonce), doing)
        key, nonce = secrets.token_bytes(32), secrets.token_hex(16)
        self._send(protocol.request({**self.setup, "key": key.hex(), "nonce": nonce, "measured": measured}),
                   deadline, doing)
        self.channel.key = key  # the fork's messages are signed with the item's own key
        ready = self._guard(lambda: self.channel.item_ready(deadline, nonce), doing)
        self.fork_open = True
        self.fork_flags = flags_of(ready) + self._forgery()
        self.census = ready.get("census") if isinstance(ready.get("census"), dict) else None

    def _close_fork(self, seconds: float = None):
        """End the item's fork; the child ends what it started and puts /tmp back. A child that does not say
        so in time is ended too (the next request runs the notebook again)."""
        if not self.fork_open or self.channel is None:
            self.fork_open = False
            return
        self.fork_open = False
        seconds = self.limits.FORK_END_SECONDS if seconds is None else min(seconds, self.limits.FORK_END_SECONDS)
        deadline = time.monotonic() + max(seconds, 0.1)
        doing = "ending the checks of an exercise"
        try:
            self._send(protocol.request({"end": True}), deadline, doing)
            done = self._guard(lambda: self.channel.template_message("item_done", deadline), doing)
        except SandboxError:
            return  # _fail ended the child
        self.channel.key = self.channel.template_key
        self.flags = list(dict.fromkeys(self.flags + flags_of(done)))  # the template's own: every item is set aside
        if done.get("clean") is not True:  # what the item started could not be ended
            self._end_child()

    def _fork_ended(self, doing: str):
        """The child said the item's fork died while a request waited for it: the child itself lives on."""
        ended, self.channel.fork_ended = self.channel.fork_ended, None
        self.fork_open = False
        self.channel.key = self.channel.template_key
        status = ended.get("status") if isinstance(ended.get("status"), int) else None
        raise SandboxError("crashed", "the exercise's process ended", doing, status, self.channel.err.tail(), None, True)
