"""The GET /ws frame protocol as a pure state machine: text in, text out.

The protocol is docs/interface.md §WebSocket frames.

One :class:`Conversation` per socket. It never touches a socket, a clock or storage, in the
style of h11: the connection drivers (``paycore.realtime.connection``) feed it what arrived
and send what it returns, so both adapters speak exactly the same protocol and every rule
below is testable without a server.

    server  {"type":"challenge","challenge":"<64 hex>"}
    client  {"type":"register","nonce":N,"signature":"0x.."}         (optional "publicKey",
                  optional "encryption":"none", optional "after":ID, optional "events":[TYPE])
    server  {"type":"registered","ownerAddress":"0x..","encryption":"none"|"ecies-secp256k1"}
    server  {"ownerAddress":"0x..","events":[Invoice, ...],"eventIds":[ID, ...]}
                                    (repeated, one per batch; "eventTypes" too when subscribed)
    server  {"type":"resync","message":".."}        (instead of a replay that would be too long)

The register signature covers ``sess:{nonce}:{sha256hex(challenge)}``, where the hashed input
is the challenge text exactly as the server sent it (its ASCII bytes, as an HTTP body's bytes
would be): the same session message, nonce counter and verifier as the HTTP scheme. A
register frame with ``"after"`` (resume: send the owner's events after that event id first)
signs ``{challenge}:after={ID}`` instead, so the position is covered by the signature like
every other parameter of a signed request. A register frame with ``"events"`` (the event
types to push instead of the status changes: ``paycore.domain.changes``) appends
``:events={TYPE,TYPE,...}`` (as listed, joined by commas) to what it signs, after any
``:after=``; its push frames then carry ``eventTypes`` beside ``events``.

``eventIds`` is there when the server reads its pushes from the outbox (a SQL store, every
production setup); the in-memory store pushes changes as they are made, without ids, and
answers a resume with a resync frame.

When the key registered an ``encryptionPublicKey`` (and the register frame did not say
``"encryption":"none"``), each push frame is instead the eth-crypto ECIES object of that
text, as encrypted HTTP answers are; the registered frame says which applies.

Every refusal is an error frame ``{"type":"error","message":..}`` followed by a close: 4400
for a frame that is not what the protocol expects at that point, 4401 when the frame is
well-formed but does not authenticate (or the key stops being valid later), 1013 ("try again
later") when the client reads too slowly to keep up with its pushes, or when storage is
down as its register frame comes, 4429 past a socket cap (``paycore.realtime.limits``).
"""

from __future__ import annotations

import enum
import json
import secrets
from collections.abc import Sequence

import attrs

from ..domain.changes import parse_types
from ..errors import InvalidInput

#: A frame that does not fit the protocol at this point.
CLOSE_BAD_FRAME = 4400
#: A register frame that does not authenticate, none in time, or a key no longer valid.
CLOSE_AUTH = 4401
#: RFC 6455's "try again later": the client fell ``ws_queue_size`` events behind, or storage
#: was down when its register frame came.
CLOSE_TRY_LATER = 1013
CLOSE_TOO_SLOW = CLOSE_TRY_LATER
#: Past a socket cap (``paycore.realtime.limits``): too many sockets from this address, or
#: for this owner. The HTTP status a refused upgrade gets, in the 4xxx range RFC 6455
#: leaves to applications.
CLOSE_TOO_MANY = 4429

#: Client frames are a few hundred bytes; anything far larger is not a register frame.
MAX_CLIENT_FRAME = 4096

#: The ``encryption`` values of the registered frame (``x-encryption`` of the HTTP side).
ENCRYPTION_NONE = "none"
ENCRYPTION_ECIES = "ecies-secp256k1"

# A close reason is at most 123 bytes of UTF-8 (RFC 6455 section 5.5: 125 minus the code).
_MAX_REASON = 123


class State(enum.Enum):
    CHALLENGED = "challenged"  # challenge sent; a register frame is due
    VERIFYING = "verifying"  # register frame read; the driver is checking its signature
    REGISTERED = "registered"  # pushes flow; the client has nothing more to say
    CLOSED = "closed"  # an error was decided; nothing more is sent but the close


class ProtocolMisuse(RuntimeError):
    """A driver called the machine out of turn: a bug in paycore, never a client's fault."""


@attrs.frozen
class Register:
    """A well-formed register frame: the driver verifies it as a session signature."""

    nonce: str
    signature: str
    public_key: str | None
    #: What the signature's hash covers: the challenge text's bytes.
    payload: bytes
    #: The client asked for plaintext pushes even if its key has an encryption key.
    plaintext: bool
    #: Resume: replay the owner's events after this event id first (None: from now on).
    after: int | None = None
    #: The event types to push (None: the status changes, ``STATUS_CHANGES``).
    types: tuple[str, ...] | None = None


@attrs.frozen
class Close:
    """Send ``frame`` (the error frame), then close the socket with ``code`` and ``reason``."""

    code: int
    message: str

    @property
    def frame(self) -> str:
        return _dump({"type": "error", "message": self.message})

    @property
    def reason(self) -> str:
        return _truncate_utf8(self.message, _MAX_REASON)


def new_challenge() -> str:
    """32 random bytes as hex: unguessable, so a signed register frame for one socket
    cannot be prepared in advance or replayed on another."""
    return secrets.token_hex(32)


# One transition table, as h11 keeps it: (state, event) -> next state. An event not listed
# for the current state is a driver bug (ProtocolMisuse); client mistakes are events too.
_TRANSITIONS: dict[tuple[State, str], State] = {
    (State.CHALLENGED, "register"): State.VERIFYING,
    (State.CHALLENGED, "bad_frame"): State.CLOSED,
    (State.CHALLENGED, "timeout"): State.CLOSED,
    (State.VERIFYING, "accept"): State.REGISTERED,
    (State.VERIFYING, "reject"): State.CLOSED,
    (State.CHALLENGED, "limit"): State.CLOSED,
    (State.VERIFYING, "limit"): State.CLOSED,
    (State.REGISTERED, "push"): State.REGISTERED,
    (State.REGISTERED, "bad_frame"): State.CLOSED,
    (State.REGISTERED, "revoked"): State.CLOSED,
    (State.REGISTERED, "too_slow"): State.CLOSED,
}


class Conversation:
    """The server's side of one socket's frames. Methods return what to send."""

    def __init__(self, challenge: str | None = None) -> None:
        self.challenge = challenge or new_challenge()
        self.state = State.CHALLENGED
        self.owner: str | None = None
        self.encryption = ENCRYPTION_NONE
        #: The close that ended the conversation, once one has (drivers racing a client
        #: frame against a push read it rather than deciding twice).
        self.closing: Close | None = None

    def _move(self, event: str) -> None:
        try:
            self.state = _TRANSITIONS[(self.state, event)]
        except KeyError:
            raise ProtocolMisuse(f"{event!r} is not allowed in state {self.state.value}") from None

    def opening(self) -> str:
        """The first frame, sent as soon as the socket is accepted."""
        if self.state is not State.CHALLENGED:
            raise ProtocolMisuse("the challenge is only sent first")
        return _dump({"type": "challenge", "challenge": self.challenge})

    def receive(self, data: str | bytes) -> Register | Close:
        """A frame from the client: a register to verify, or the close it earned."""
        if self.state is State.REGISTERED:
            return self._refuse(
                "bad_frame", CLOSE_BAD_FRAME, "no frame is expected after registered"
            )
        if self.state is not State.CHALLENGED:
            raise ProtocolMisuse(f"no client frame is read in state {self.state.value}")
        problem, register = self._parse(data)
        if register is None:
            return self._refuse("bad_frame", CLOSE_BAD_FRAME, f"bad frame: {problem}")
        self._move("register")
        return register

    def _parse(self, data: str | bytes) -> tuple[str, Register | None]:
        if not isinstance(data, str):
            return "frames are JSON text, not binary", None
        if len(data) > MAX_CLIENT_FRAME:
            return f"larger than {MAX_CLIENT_FRAME} bytes", None
        try:
            frame = json.loads(data)
        except ValueError:
            return "not valid JSON", None
        if not isinstance(frame, dict):
            return "must be a JSON object", None
        if frame.get("type") != "register":
            return 'expected {"type":"register",...}', None
        nonce = frame.get("nonce")
        # A JSON number (bool is an int to Python, never to JSON) or the same as a string,
        # for nonces past 2**53 that a JavaScript number cannot carry exactly.
        if isinstance(nonce, bool) or not isinstance(nonce, int | str):
            return "nonce must be an integer", None
        signature = frame.get("signature")
        if not isinstance(signature, str):
            return "signature must be a string", None
        public_key = frame.get("publicKey")
        if public_key is not None and not isinstance(public_key, str):
            return "publicKey must be a string", None
        encryption = frame.get("encryption")
        if encryption not in (None, ENCRYPTION_NONE):
            return 'encryption may only be "none"', None
        after = frame.get("after")
        if after is not None and (
            isinstance(after, bool) or not isinstance(after, int) or not 0 <= after < 2**63
        ):
            return "after must be an event id (a non-negative integer)", None
        types = frame.get("events")
        if types is not None:
            try:
                parse_types(types, "events")
            except InvalidInput as exc:
                return f"events {exc.reason}", None
        signed = self.challenge if after is None else f"{self.challenge}:after={after}"
        if types is not None:
            signed += ":events=" + ",".join(types)
        return "", Register(
            nonce=str(nonce),
            signature=signature,
            public_key=public_key,
            payload=signed.encode("ascii"),
            plaintext=encryption == ENCRYPTION_NONE,
            after=after,
            types=None if types is None else tuple(types),
        )

    def timed_out(self, seconds: float) -> Close:
        """No register frame arrived within ``seconds`` of the challenge."""
        return self._refuse("timeout", CLOSE_AUTH, f"no register frame within {seconds:g} s")

    def accept(self, owner: str, *, encrypted: bool = False) -> str:
        """The register frame verified: the registered frame to send."""
        self._move("accept")
        self.owner = owner
        self.encryption = ENCRYPTION_ECIES if encrypted else ENCRYPTION_NONE
        return _dump({"type": "registered", "ownerAddress": owner, "encryption": self.encryption})

    def reject(self, reason: str) -> Close:
        """The register frame did not verify; ``reason`` is the AuthError text."""
        return self._refuse("reject", CLOSE_AUTH, reason)

    def revoked(self, reason: str) -> Close:
        """The key was deregistered or expired while the socket was open."""
        return self._refuse("revoked", CLOSE_AUTH, reason)

    def unavailable(self, reason: str) -> Close:
        """The register frame could not be checked because storage is down: 1013, come back
        later (the HTTP side's 503); the frame may be valid, so this is not a 4401."""
        return self._refuse("reject", CLOSE_TRY_LATER, reason)

    def too_many(self, reason: str) -> Close:
        """A socket cap is reached: too many from the client's address (a server that
        could not answer the upgrade with 429), or for the owner that just registered."""
        return self._refuse("limit", CLOSE_TOO_MANY, reason)

    def too_slow(self, limit: int) -> Close:
        return self._refuse(
            "too_slow", CLOSE_TOO_SLOW, f"too slow: more than {limit} events waiting"
        )

    def push(
        self,
        events: Sequence[str],
        ids: Sequence[int] | None = None,
        types: Sequence[str] | None = None,
    ) -> str:
        """One push frame for ``events`` (each an Invoice already encoded as JSON text),
        with their outbox ``ids`` when known (a client resumes after the last one), and
        their ``types`` for a socket that subscribed to types.

        Events arrive pre-encoded so that a change is serialised once for every socket it
        goes to; several waiting events for a socket go out as one frame, the poll shape.
        """
        self._move("push")
        assert self.owner is not None  # REGISTERED implies accept() set it
        head = f'{{"ownerAddress":{json.dumps(self.owner)},"events":[{",".join(events)}]'
        if ids is not None:
            head += f',"eventIds":[{",".join(str(i) for i in ids)}]'
        if types is not None:
            head += f',"eventTypes":{_dump(list(types))}'
        return head + "}"

    def resync(self, message: str) -> str:
        """Instead of a replay past its cap: the client reads current state (GET, poll)."""
        self._move("push")
        return _dump({"type": "resync", "message": " ".join(message.split())})

    def _refuse(self, event: str, code: int, message: str) -> Close:
        self._move(event)
        self.closing = Close(code, " ".join(message.split()))
        return self.closing


def encode_event(payload: object) -> str:
    """An Invoice wire record as the JSON text pushes carry (compact, UTF-8 kept)."""
    return _dump(payload)


def _dump(data: object) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def _truncate_utf8(text: str, limit: int) -> str:
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    return raw[:limit].decode("utf-8", "ignore")
