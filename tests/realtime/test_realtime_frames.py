"""The frame protocol as a pure machine: no socket, no clock, no storage."""

from __future__ import annotations

import hashlib
import json

import pytest

from paycore.realtime import (
    CLOSE_AUTH,
    CLOSE_BAD_FRAME,
    CLOSE_TOO_SLOW,
    Close,
    Conversation,
    Register,
    State,
)
from paycore.realtime.frames import MAX_CLIENT_FRAME, ProtocolMisuse

OWNER = "0xdBB105387e6f362A7b58c1C8DD2aF3Bf16E6Bb22"


def registered() -> Conversation:
    conv = Conversation("ab" * 32)
    conv.receive('{"type":"register","nonce":1,"signature":"0x00"}')
    conv.accept(OWNER)
    return conv


def test_challenge_first_then_a_register_to_verify() -> None:
    conv = Conversation()
    opening = json.loads(conv.opening())
    assert opening == {"type": "challenge", "challenge": conv.challenge}
    assert len(conv.challenge) == 64 and Conversation().challenge != conv.challenge
    step = conv.receive(
        json.dumps({"type": "register", "nonce": 17, "signature": "0xaa", "publicKey": "0x04"})
    )
    assert step == Register(
        nonce="17",
        signature="0xaa",
        public_key="0x04",
        payload=conv.challenge.encode("ascii"),
        plaintext=False,
    )
    assert conv.state is State.VERIFYING
    # What the client signs, with the payload the verifier hashes: the challenge text.
    digest = hashlib.sha256(step.payload).hexdigest()
    assert digest == hashlib.sha256(conv.challenge.encode()).hexdigest()


def test_a_string_nonce_is_passed_on_for_the_verifier_to_judge() -> None:
    step = Conversation().receive('{"type":"register","nonce":"9007199254740993","signature":""}')
    assert isinstance(step, Register) and step.nonce == "9007199254740993"


def test_accept_and_push_frames() -> None:
    conv = Conversation()
    conv.receive('{"type":"register","nonce":1,"signature":"0x00","encryption":"none"}')
    assert json.loads(conv.accept(OWNER, encrypted=False)) == {
        "type": "registered",
        "ownerAddress": OWNER,
        "encryption": "none",
    }
    frame = conv.push(['{"guid":"a"}', '{"guid":"b","value":"1.5"}'])
    assert json.loads(frame) == {
        "ownerAddress": OWNER,
        "events": [{"guid": "a"}, {"guid": "b", "value": "1.5"}],
    }
    assert conv.state is State.REGISTERED


def test_a_resuming_register_signs_its_position_and_pushes_carry_event_ids() -> None:
    conv = Conversation(challenge="ab" * 32)
    step = conv.receive('{"type":"register","nonce":1,"signature":"0x00","after":41}')
    assert isinstance(step, Register) and step.after == 41
    assert step.payload == ("ab" * 32 + ":after=41").encode()
    plain = Conversation(challenge="ab" * 32).receive(
        '{"type":"register","nonce":1,"signature":""}'
    )
    assert isinstance(plain, Register) and plain.after is None and plain.payload == b"ab" * 32
    conv.accept(OWNER)
    assert json.loads(conv.push(['{"guid":"a"}', '{"guid":"b"}'], [42, 45])) == {
        "ownerAddress": OWNER,
        "events": [{"guid": "a"}, {"guid": "b"}],
        "eventIds": [42, 45],
    }
    assert json.loads(conv.resync("too  many")) == {"type": "resync", "message": "too many"}
    assert conv.state is State.REGISTERED


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ('{"type":"register","nonce":1,"signature":"0x","after":-1}', "after must be an event"),
        ('{"type":"register","nonce":1,"signature":"0x","after":"5"}', "after must be an event"),
        ('{"type":"register","nonce":1,"signature":"0x","after":true}', "after must be an event"),
        ("{", "not valid JSON"),
        ("7", "must be a JSON object"),
        (b"{}", "frames are JSON text, not binary"),
        ('{"type":"Register"}', 'expected {"type":"register",...}'),
        ('{"type":"register","nonce":1.5,"signature":"0x"}', "nonce must be an integer"),
        ('{"type":"register","nonce":null,"signature":"0x"}', "nonce must be an integer"),
        ('{"type":"register","nonce":false,"signature":"0x"}', "nonce must be an integer"),
        ('{"type":"register","nonce":1,"signature":5}', "signature must be a string"),
        ('{"type":"register","nonce":1,"signature":"0x","publicKey":1}', "publicKey must be"),
        ('{"type":"register","nonce":1,"signature":"0x","encryption":"rot13"}', "encryption may"),
        (" " * (MAX_CLIENT_FRAME + 1), f"larger than {MAX_CLIENT_FRAME} bytes"),
    ],
)
def test_bad_frames_close_4400(data: str | bytes, message: str) -> None:
    conv = Conversation()
    step = conv.receive(data)
    assert isinstance(step, Close) and step.code == CLOSE_BAD_FRAME
    assert step.message.startswith("bad frame: " + message)
    assert json.loads(step.frame) == {"type": "error", "message": step.message}
    assert conv.state is State.CLOSED and conv.closing == step


def test_rejection_timeout_revocation_and_slowness_close_with_their_codes() -> None:
    conv = Conversation()
    conv.receive('{"type":"register","nonce":1,"signature":"0x00"}')
    assert conv.reject("session signature: unknown session key") == Close(
        CLOSE_AUTH, "session signature: unknown session key"
    )
    assert Conversation().timed_out(2.5) == Close(CLOSE_AUTH, "no register frame within 2.5 s")
    assert registered().revoked("session signature: session key expired").code == CLOSE_AUTH
    assert registered().too_slow(8) == Close(CLOSE_TOO_SLOW, "too slow: more than 8 events waiting")


def test_any_frame_after_registered_is_a_bad_frame() -> None:
    conv = registered()
    step = conv.receive('{"type":"register","nonce":2,"signature":"0x00"}')
    assert step == Close(CLOSE_BAD_FRAME, "no frame is expected after registered")


@pytest.mark.parametrize(
    "misuse",
    [
        lambda c: c.accept(OWNER),  # nothing to accept before a register frame
        lambda c: c.push(["{}"]),  # no pushes before registered
        lambda c: c.reject("x"),
    ],
)
def test_out_of_turn_calls_raise_and_change_nothing(misuse: object) -> None:
    conv = Conversation()
    with pytest.raises(ProtocolMisuse):
        misuse(conv)  # type: ignore[operator]
    assert conv.state is State.CHALLENGED


def test_a_closed_conversation_decides_nothing_more() -> None:
    conv = registered()
    first = conv.too_slow(1)
    with pytest.raises(ProtocolMisuse):
        conv.revoked("later")
    with pytest.raises(ProtocolMisuse):
        conv.receive("{}")
    assert conv.closing == first
    with pytest.raises(ProtocolMisuse):
        conv.opening()


def test_close_reason_fits_a_close_frame_but_the_error_frame_keeps_it_whole() -> None:
    close = Close(CLOSE_AUTH, "é" * 100)
    assert len(close.reason.encode()) <= 123 and close.reason == "é" * 61
    assert json.loads(close.frame)["message"] == "é" * 100
