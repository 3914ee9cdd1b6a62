"""One storage transaction per request: a storage whose units of work join the request's.

A session-signed request used to cost two transactions: the nonce was spent and committed,
then the handler opened a transaction of its own -- two commits, which on a real database
means two durable flushes. :class:`RequestUnits` wraps the gateway's storage; the gateway's
services hold the wrapper. While a request holds a unit open (:meth:`RequestUnits.unit`,
which the HTTP dispatcher opens for the routes marked ``one_transaction``), every
``transaction()`` and ``spend_nonce`` in that context runs in the unit's one transaction,
so the spent nonce and the request's work commit together, once.

Inside a unit:

- a joined ``with storage.transaction()`` block does not commit at its end; the unit commits
  when the request is done, and an exception that leaves the unit rolls all of it back;
- an exception inside a joined block taints the unit even if a caller catches it, and a
  tainted unit rolls back and raises :class:`TaintedUnit`: the half-done block cannot be
  undone on its own (savepoints could, at two round trips a block, which is what joining
  saves);
- what may only happen after a commit (telling notifiers) goes to :meth:`after_commit` and
  runs once the unit has committed, in order, and not at all if it rolls back.

Inside :meth:`RequestUnits.recording` the unit writes nothing: a signed creation's spend and
invoice are recorded, for the caller to make as one statement (on an event loop, or on a
sync host's request thread).

Outside a unit the wrapper is the wrapped storage. The unit lives in a context variable, so
each thread or task of a server has its own.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import attrs

from ..domain.records import Invoice, SessionKey
from .contract import Storage, StorageTx, spend_then_read, spend_then_read_of
from .invoice_read import InvoiceRead, WouldBlock


class TaintedUnit(RuntimeError):
    """A block inside a request's transaction failed and its error was caught: the unit
    rolled back rather than commit half of that block."""


@attrs.define
class _Unit:
    tx: StorageTx
    tainted: bool = False
    after: list[Callable[[], None]] = attrs.field(factory=list)


@attrs.define
class _Along:
    """An invoice to read with the next nonce spent on its own, and what that read found."""

    guid: str
    spent: bool = False
    #: The read to hand out once: set when the spend went through.
    read: InvoiceRead | None = None
    ready: bool = False
    #: A spend made beforehand (awaited on an event loop): the message it spent (address,
    #: nonce, digest) and the key it returned, handed to the first ``spend_nonce`` of that
    #: very message instead of spending again.
    made: tuple[str, int, str] | None = None
    key: SessionKey | None = None


@attrs.define
class Recorded:
    """A signed creation's writes, recorded instead of made (:meth:`RequestUnits.recording`):
    the nonce spent on the key expected for it, one invoice inserted, what to run once they
    are committed; ``complete`` when the request's unit ended with exactly those."""

    message: tuple[str, int, str]
    key: SessionKey
    spent: bool = False
    invoice: Invoice | None = None
    after: list[Callable[[], None]] = attrs.field(factory=list)
    ended: bool = False

    @property
    def complete(self) -> bool:
        return self.ended and self.spent and self.invoice is not None

    def run_after(self) -> None:
        for call in self.after:
            call()


class _RecordingTx:
    """The unit's transaction while recording: the spend of the recorded message and one
    invoice's insert are kept; any other call raises ``WouldBlock`` (nothing was made, and
    the request is answered the ordinary way)."""

    def __init__(self, recorded: Recorded) -> None:
        self._recorded = recorded

    def spend_nonce(
        self, address: str, nonce: int, digest: str, *, window: int, strict: bool = False,
        now: int,
    ) -> SessionKey:  # fmt: skip
        recorded = self._recorded
        if recorded.spent or (address, nonce, digest) != recorded.message:
            raise WouldBlock
        recorded.spent = True
        highest = nonce if strict else max(recorded.key.last_seen_nonce, nonce)
        return attrs.evolve(recorded.key, last_seen_nonce=highest)

    def insert_invoice(self, invoice: Invoice) -> None:
        if self._recorded.invoice is not None:
            raise WouldBlock
        self._recorded.invoice = invoice

    def __getattr__(self, name: str) -> None:
        raise WouldBlock


#: Session keys a process remembers as last spent (:meth:`RequestUnits.known_key`), at most.
KNOWN_KEYS = 4096


class RequestUnits:
    """A ``Storage`` whose transactions join the one a request holds open, if any."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        #: The store's one call for a signed read's spend and read, if it has one.
        self._spend_then_read = spend_then_read_of(storage)
        self._open: ContextVar[_Unit | None] = ContextVar(
            f"paycore-request-unit-{id(self)}", default=None
        )
        self._along: ContextVar[_Along | None] = ContextVar(
            f"paycore-read-along-{id(self)}", default=None
        )
        self._recording: ContextVar[Recorded | None] = ContextVar(
            f"paycore-recording-{id(self)}", default=None
        )
        #: address -> the key as its last spend returned it (``known_key``).
        self._keys: dict[str, SessionKey] = {}

    def known_key(self, address: str) -> SessionKey | None:
        """The session key ``address`` as this process's last spend of it returned it, if
        it remembers one: what a signed creation made in one statement expects
        (:meth:`recording`), which that statement checks, so a key changed since then is
        refused there with nothing written."""
        return self._keys.get(address)

    def remember_key(self, key: SessionKey | None) -> SessionKey | None:
        """Keep ``key`` (a spend's result, if any) as :meth:`known_key`'s answer; return it."""
        if key is not None:
            if len(self._keys) >= KNOWN_KEYS and key.address not in self._keys:
                self._keys.clear()
            self._keys[key.address] = key
        return key

    @contextmanager
    def recording(self, message: tuple[str, int, str], key: SessionKey) -> Iterator[Recorded]:
        """Inside, a request's unit records its writes instead of making them
        (:class:`Recorded`): the spend of ``message`` returns ``key`` (as the spend would
        return it), one ``insert_invoice`` is kept, and any other storage call -- in the
        unit or outside it -- raises ``WouldBlock``. The caller then makes the recorded
        writes at once (``Storage.spend_nonce_then_insert_invoice_async`` on a loop,
        ``spend_nonce_then_insert_invoice`` on a thread: one statement on PostgreSQL),
        guarded on ``key``, and only then sends the answer and runs ``Recorded.after``."""
        recorded = Recorded(message, key)
        token = self._recording.set(recorded)
        try:
            yield recorded
        finally:
            self._recording.reset(token)

    def _refuse_while_recording(self) -> None:
        if self._recording.get() is not None:
            raise WouldBlock

    @contextmanager
    def reading_along(self, guid: str) -> Iterator[None]:
        """Inside, the first ``spend_nonce`` made outside a unit is the store's
        ``spend_nonce_then_read`` of ``guid``, and the first ``read_invoice(guid)`` after it
        gets that read instead of reading again: a signed read's two storage calls, one
        round trip. Only what the request itself reads first: a later read (after a lazy
        expiry wrote) reads anew. Inside :meth:`prefetched_spend` it adds nothing: the
        spend and the read are made already."""
        current = self._along.get()
        if current is not None and current.made is not None:
            yield
            return
        token = self._along.set(_Along(guid))
        try:
            yield
        finally:
            self._along.reset(token)

    @contextmanager
    def prefetched(self, guid: str, read: InvoiceRead | None) -> Iterator[None]:
        """Inside, the first ``read_invoice(guid)`` made outside a unit returns ``read``,
        read beforehand (awaited on an event loop: ``Storage.read_invoice_async``), instead
        of reading: the sync rules run on it as on their own read. Only that first read:
        a later one (after a lazy expiry wrote) reads anew."""
        token = self._along.set(_Along(guid, spent=True, read=read, ready=True))
        try:
            yield
        finally:
            self._along.reset(token)

    @contextmanager
    def prefetched_spend(
        self,
        message: tuple[str, int, str],
        key: SessionKey | None,
        guid: str,
        read: InvoiceRead | None,
    ) -> Iterator[None]:
        """Inside, the first ``spend_nonce`` of ``message`` (address, nonce, digest) made
        outside a unit returns ``key`` -- what ``spend_nonce_then_read`` returned for it
        just before, awaited on an event loop -- and, when it spent, the first
        ``read_invoice(guid)`` returns ``read``: the sync rules (the refusal's text, lazy
        expiry, the answer) run on them as on their own calls, and the nonce is spent once.
        Any other message spends as usual."""
        along = _Along(guid, spent=True, read=read, made=message, key=key)
        token = self._along.set(along)
        try:
            yield
        finally:
            self._along.reset(token)

    @contextmanager
    def unit(self) -> Iterator[None]:
        """Run everything inside in one transaction, committed when the block ends; a unit
        opened inside another joins it."""
        if self._open.get() is not None:
            yield
            return
        recorded = self._recording.get()
        if recorded is not None:
            unit = _Unit(typing.cast(StorageTx, _RecordingTx(recorded)))
            with self._opened(unit):
                yield
            recorded.after = unit.after
            recorded.ended = True
            return
        with self._storage.transaction() as tx:
            unit = _Unit(tx)
            with self._opened(unit):
                yield
        for call in unit.after:
            call()

    @contextmanager
    def _opened(self, unit: _Unit) -> Iterator[None]:
        """``unit`` is the open one inside; a tainted one raises as it closes."""
        token = self._open.set(unit)
        try:
            yield
        finally:
            self._open.reset(token)
        if unit.tainted:
            raise TaintedUnit("a failed storage block's error was caught inside a request")

    def after_commit(self, call: Callable[[], None]) -> bool:
        """Run ``call`` once the open unit commits; ``False`` (nothing kept) with no unit
        open, when the caller's own transaction has committed already."""
        unit = self._open.get()
        if unit is None:
            return False
        unit.after.append(call)
        return True

    @contextmanager
    def transaction(self) -> Iterator[StorageTx]:
        unit = self._open.get()
        if unit is None:
            self._refuse_while_recording()
            with self._storage.transaction() as tx:
                yield tx
            return
        try:
            yield unit.tx
        except BaseException:
            unit.tainted = True
            raise

    def spend_nonce(
        self,
        address: str,
        nonce: int,
        digest: str,
        *,
        window: int,
        strict: bool = False,
        now: int,
    ) -> SessionKey | None:
        if self._open.get() is None:
            self._refuse_while_recording()
            along = self._along.get()
            if along is not None and along.made == (address, nonce, digest):
                along.made = None  # handed out once
                along.ready = along.key is not None
                return self.remember_key(along.key)
            if along is not None and not along.spent and self._spend_then_read is not None:
                along.spent = True
                key, along.read = self._spend_then_read.spend_nonce_then_read(
                    address, nonce, digest, window=window, strict=strict, now=now,
                    guid=along.guid,
                )  # fmt: skip
                along.ready = key is not None
                return self.remember_key(key)
            return self.remember_key(
                self._storage.spend_nonce(
                    address, nonce, digest, window=window, strict=strict, now=now
                )
            )
        with self.transaction() as tx:
            return self.remember_key(
                tx.spend_nonce(address, nonce, digest, window=window, strict=strict, now=now)
            )

    def spend_nonce_then_read(
        self,
        address: str,
        nonce: int,
        digest: str,
        *,
        window: int,
        strict: bool = False,
        now: int,
        guid: str,
    ) -> tuple[SessionKey | None, InvoiceRead | None]:
        """The store's own outside a unit (if it has one); else the two calls, inside a
        unit in its transaction."""
        self._refuse_while_recording()
        if self._open.get() is None and self._spend_then_read is not None:
            return self._spend_then_read.spend_nonce_then_read(
                address, nonce, digest, window=window, strict=strict, now=now, guid=guid
            )
        return spend_then_read(
            self, address, nonce, digest, window=window, strict=strict, now=now, guid=guid
        )

    def read_invoice(self, guid: str) -> InvoiceRead | None:
        """Outside a unit the store's own one-statement read; inside one, the same read
        in the unit's transaction (it sees what the request wrote)."""
        if self._open.get() is None:
            self._refuse_while_recording()
            along = self._along.get()
            if along is not None and along.ready and along.guid == guid:
                along.ready = False
                found, along.read = along.read, None
                return found
            return self._storage.read_invoice(guid)
        with self.transaction() as tx:
            return tx.read_invoice(guid)

    def close(self) -> None:
        self._storage.close()
