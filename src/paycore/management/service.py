"""The salt-signed management calls and app keys of docs/interface.md, and the operator's
e-mail switch. docs/management.md is the merchant-facing account of the same decisions.

Who may call. A salt-signed body carries no owner (docs/interface.md §Salt-signed calls):
the owner is found from the signer. An app key acts for the owner whose key it is (an
address is the app key of one owner at most, and becomes one only with its own consent,
``appKeySignature``) -- unless it is also an owner paycore knows, when the body must say
which with ``ownerAddress`` (400 otherwise); any other signer acts for itself, provided paycore
knows it as an owner (it has invoices, a session key, a webhook, an e-mail setting, an allocated
deposit index, app keys, or a deployed wallet on the chain named in the body). A body may add
``ownerAddress`` -- it is signed along with the rest -- to say outright which owner it means;
the signer must then be that owner or one of its app keys. Everyone else gets 403.

Chain and storage. paycore's records are what paycore authorises with; the wallet contract's
are what the chain authorises with. Every call changes paycore's records at once, and, when
the body names a chain where the owner's wallet is deployed and differs, also returns the
unsigned transaction that makes the wallet agree (``transaction``) plus where the wallet
stands (``onChain``). A change the wallet would refuse (estimateGas reverts) is refused
whole with 409, so paycore never records what the chain cannot follow.

Order of work in each call: fields are checked first (a typo does not burn the signature),
then the signature (salt window, once only), then who the signer acts for, then the chain
(RPC, outside any storage transaction), then one storage transaction that re-checks the
rules it relies on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import attrs

from ..auth import verify_app_key_consent, verify_salted
from ..auth.salted import salt_seconds
from ..chains.admin import (
    ADD_APP_KEY,
    DISABLE_INDEX,
    ENABLE_INDEX,
    REMOVE_APP_KEY,
    ChainSync,
    WalletAdminBackend,
)
from ..domain.reading import read
from ..domain.records import Json, WebhookConfig
from ..domain.tokens import NATIVE, normalize_owner, to_checksum
from ..errors import Conflict, Forbidden, InvalidInput, NotFound
from ..webhooks.config import new_secret, validate_url
from ..webhooks.netguard import check_webhook_url
from .records import MAX_APP_KEYS, AppKey, AppKeyAdd, EmailSetting
from .requests import (
    AppKeyChange,
    AppKeysQuery,
    ChangeCallbackUrl,
    NewAppKey,
    SetEmailNotifications,
    WalletIndexChange,
)

if TYPE_CHECKING:
    from ..chains import ChainBackend
    from ..config import Settings
    from ..storage import Storage

T = TypeVar("T")

#: Wallet indexes are stored as signed 64-bit integers; paycore hands them out from 0 up.
MAX_WALLET_INDEX = 2**63 - 1
MAX_EMAIL = 254
_EMAIL = re.compile(
    r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}"
    r"@(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$"
)


@attrs.frozen
class Actor:
    """Who signed a management call and whom it acts for."""

    signer: str
    owner: str
    #: The signer's app key record; ``None`` when the signer is the owner itself.
    app_key: AppKey | None = None

    @property
    def is_owner(self) -> bool:
        return self.app_key is None


# -- fields ---------------------------------------------------------------------------------


def chain_field(settings: Settings, chain_id: int | None) -> int | None:
    """``chainId``, when given: a chain this deployment is configured for."""
    if chain_id is not None:
        settings.chain(chain_id)
    return chain_id


def _evm_address(raw: str, name: str) -> str:
    """An EVM address field (app keys sign EVM messages, so they are EVM accounts)."""
    address = to_checksum(raw, name)
    if address == NATIVE:
        raise InvalidInput(name, "must not be the zero address")
    return address


def validate_email(raw: object, field: str = "emailAddress") -> str:
    """A plain ``local@domain`` address, or ``""`` (which clears the setting). No display
    names, comments or quoted parts: the address goes into a header as it is, so anything
    that could carry a line break or a second recipient is refused."""
    if not isinstance(raw, str):
        raise InvalidInput(field, "required, a string (empty to stop notices)")
    email = raw.strip()
    if email == "":
        return ""
    if len(email) > MAX_EMAIL or not _EMAIL.fullmatch(email) or ".." in email:
        raise InvalidInput(field, "must be a plain e-mail address like name@example.com")
    return email


def _salted(
    cls: type[T], request: T | Mapping[str, Any], signed: Mapping[str, Any] | None
) -> tuple[T, Mapping[str, Any]]:
    """The typed request and the body as signed. Given only the body (a host app calling
    the service directly), both come from it: the typed request layer reads the fields."""
    if isinstance(request, Mapping):
        return read(cls, request), request
    if signed is None:
        raise TypeError("a typed request needs the body as signed beside it")
    return request, signed


# -- who signed -----------------------------------------------------------------------------


def _admin_backend(
    chains: Mapping[int, ChainBackend], chain_id: int | None
) -> WalletAdminBackend | None:
    if chain_id is None:
        return None
    backend = chains.get(chain_id)
    return backend if isinstance(backend, WalletAdminBackend) else None


def _sync(
    chains: Mapping[int, ChainBackend],
    chain_id: int | None,
    actor: Actor,
    action: str,
    argument: str | int,
) -> ChainSync | None:
    backend = _admin_backend(chains, chain_id)
    if backend is None or chain_id is None:
        return None
    return backend.wallet_admin(chain_id, actor.owner, actor.signer, action, argument)


def _has_work(sync: ChainSync | None) -> bool:
    """Whether the wallet needs a transaction: it is deployed and differs."""
    return sync is not None and sync.transaction is not None


def _chain_wire(sync: ChainSync | None) -> Json:
    return {
        "transaction": None if sync is None else sync.transaction,
        "onChain": None if sync is None else sync.to_wire(),
    }


# -- app keys -------------------------------------------------------------------------------


def _check_add(actor: Actor, address: str, existing: AppKey | None, count: int) -> None:
    if existing is not None and existing.owner != actor.owner:
        raise Conflict(f"Conflict: {address} is already an app key of another owner")
    if existing is None and count == 0 and not actor.is_owner:
        raise Forbidden("the owner adds the first app key")
    if existing is None and count >= MAX_APP_KEYS:
        raise Conflict(f"Conflict: an owner has at most {MAX_APP_KEYS} app keys")


# -- the service ----------------------------------------------------------------------------


class Management:
    """``Gateway.management``: the salt-signed management calls, app keys and the
    operator's e-mail switch, over the gateway's storage held here privately. The HTTP
    handlers and the CLI call these methods; the module docstring gives the rules.

    Built from what it uses: the storage, the settings (the configured chains, the salt
    window, the webhook address rule), the chain backends by chain id (the wallets' own
    records; the mapping is read at each call, so a backend added later is seen) and the
    clock in whole unix seconds."""

    def __init__(
        self,
        storage: Storage,
        settings: Settings,
        chains: Mapping[int, ChainBackend],
        now: Callable[[], int],
    ) -> None:
        self._storage = storage
        self._settings = settings
        self._chains = chains
        self._now = now

    def authenticate(
        self, claimed: str | None, signed: Mapping[str, Any], chain_id: int | None
    ) -> Actor:
        """The signer of a salt-signed body and the owner it acts for (module docstring).

        Missing salt or signature: 400; stale salt, bad or reused signature: 401 (both from
        ``verify_salted``); a signer that is neither a known owner nor an app key: 403.
        """
        # Checked before the signature: a malformed address is the client's 400 to fix, which
        # a 401 about the signature would hide.
        owner = None if claimed is None else normalize_owner(claimed, "ownerAddress")
        signer = verify_salted(self._storage, self._settings, signed, now=self._now())
        with self._storage.transaction() as tx:
            key = tx.get_app_key(signer)
            if owner is not None and owner != signer:
                if key is None or key.owner != owner:
                    raise Forbidden(f"{signer} is neither {owner} nor one of its app keys")
                return Actor(signer, owner, key)
            known = tx.owner_is_known(signer)
        backend = _admin_backend(self._chains, chain_id)
        if not known and backend is not None and chain_id is not None:
            known = backend.wallet_deployed(chain_id, signer)
        if owner is None and key is not None:
            if known:
                # Whom would it act for? Guessing either way lets one owner's record decide
                # what another's signature does (docs/management.md §Whom a call acts for).
                raise InvalidInput(
                    "ownerAddress",
                    f"required: the signer {signer} is an owner and an app key of "
                    f"{key.owner}; name the owner this call is for",
                )
            return Actor(signer, key.owner, key)
        if not known:
            raise Forbidden(
                f"the signer {signer} is neither an owner known to paycore nor an app key of one"
            )
        return Actor(signer, signer)

    def change_callback_url(
        self,
        request: ChangeCallbackUrl | Mapping[str, Any],
        signed: Mapping[str, Any] | None = None,
    ) -> Json:
        """Point the owner's webhook (the one /webhook/set and /auth/register-callback set) at
        ``newCallbackUrl``. The signing secret stays, so receivers need not rotate it; deliveries
        queued from now on go to the new URL, and so do retries of earlier ones, since a
        delivery reads the owner's current URL when it is attempted."""
        typed, body = _salted(ChangeCallbackUrl, request, signed)
        chain_id = chain_field(self._settings, typed.chain_id)
        url = validate_url(typed.new_callback_url, "newCallbackUrl")
        actor = self.authenticate(typed.owner_address, body, chain_id)
        check_webhook_url(
            url, allow_private=self._settings.webhook_allow_private, field="newCallbackUrl"
        )
        with self._storage.transaction() as tx:
            current = tx.get_webhook(actor.owner)
            tx.put_webhook(
                WebhookConfig(actor.owner, url, current.secret if current else new_secret())
            )
        return {
            "ownerAddress": actor.owner,
            "chainId": chain_id,
            "url": url,
            "previousUrl": current.url if current else "",
        }

    def set_email_notifications(
        self,
        request: SetEmailNotifications | Mapping[str, Any],
        signed: Mapping[str, Any] | None = None,
    ) -> Json:
        """Store where the owner's deposit and withdrawal notices on ``chainId`` go.

        Sending stays off until the operator turns it on (:func:`enable_email`). A new address
        turns it off again -- the operator approved the old one, not this one -- while sending
        the same address again changes nothing. An empty ``emailAddress`` removes the setting.
        """
        typed, body = _salted(SetEmailNotifications, request, signed)
        chain_id = typed.chain_id
        chain_field(self._settings, chain_id)
        email = validate_email(typed.email_address)
        actor = self.authenticate(typed.owner_address, body, chain_id)
        now = self._now()
        with self._storage.transaction() as tx:
            current = tx.get_email(actor.owner, chain_id)
            if email == "":
                tx.delete_email(actor.owner, chain_id)
                return EmailSetting(actor.owner, chain_id, "").to_wire()
            if current is not None and current.email == email:
                return current.to_wire()
            setting = EmailSetting(actor.owner, chain_id, email, enabled=False, updated_at=now)
            tx.put_email(setting)
        return setting.to_wire()

    def enable_email(
        self, owner: str, chain_id: int | None = None, *, enabled: bool = True
    ) -> list[EmailSetting]:
        """The operator's switch (docs/interface.md: sending is enabled by the operator, not
        the owner): turn sending on (or off) for ``owner``'s stored addresses, on one chain or
        all. ``paycore email enable OWNER`` runs this. Raises NotFound when the owner has set
        no address there, since enabling nothing is surely a typo."""
        owner = normalize_owner(owner, "owner")
        with self._storage.transaction() as tx:
            changed = tx.enable_emails(owner, chain_id, enabled, self._now())
        if not changed:
            where = "" if chain_id is None else f" on chain {chain_id}"
            raise NotFound(f"{owner} has set no e-mail address{where}")
        return changed

    def claim_email_notices(
        self, owner: str, chain_id: int, notices: Sequence[tuple[str, int | None]]
    ) -> tuple[EmailSetting, list[str]] | None:
        """For the e-mail notifier: ``owner``'s enabled setting on ``chain_id`` and, of the
        ``(key, unix time or None)`` notices, the keys claimed now -- each once across
        processes, none timed before sending was enabled. None when sending is off there."""
        with self._storage.transaction() as tx:
            setting = tx.get_email(owner, chain_id)
            if setting is None or not setting.enabled:
                return None
            since = setting.enabled_at or 0
            claimed = [
                key
                for key, at in notices
                if (at is None or at >= since) and tx.claim_notice(key, self._now())
            ]
        return setting, claimed

    def set_wallet_index(
        self,
        request: WalletIndexChange | Mapping[str, Any],
        signed: Mapping[str, Any] | None = None,
        *,
        disabled: bool,
    ) -> Json:
        """Leave a deposit index out of withdrawals (or put it back).

        paycore's record takes effect at once: /initWithdraw never collects an index disabled
        here, and never one disabled on chain either, since the wallet would skip it. The
        returned transaction sets the same flag in the wallet contract, so that withdrawals
        built by anything else than paycore skip the index too.
        """
        typed, body = _salted(WalletIndexChange, request, signed)
        chain_id = typed.chain_id
        chain_field(self._settings, chain_id)
        index = typed.wallet_index
        if index > MAX_WALLET_INDEX:
            raise InvalidInput("walletIndex", f"must be at most {MAX_WALLET_INDEX}")
        actor = self.authenticate(typed.owner_address, body, chain_id)
        sync = _sync(
            self._chains, chain_id, actor, DISABLE_INDEX if disabled else ENABLE_INDEX, index
        )
        with self._storage.transaction() as tx:
            changed = tx.set_wallet_index_disabled(
                actor.owner, chain_id, index, disabled, self._now()
            )
        return {
            "ownerAddress": actor.owner,
            "chainId": chain_id,
            "walletIndex": index,
            "disabled": disabled,
            "changed": changed,
            **_chain_wire(sync),
        }

    def disabled_indexes(self, owner: str, chain_id: int) -> set[int]:
        """The indexes paycore's records leave out of ``owner``'s withdrawals on ``chain_id``."""
        with self._storage.transaction() as tx:
            return set(tx.disabled_wallet_indexes(owner, chain_id))

    def add_app_key(
        self, request: NewAppKey | Mapping[str, Any], signed: Mapping[str, Any] | None = None
    ) -> Json:
        """/addNewAppKey: let ``appKeyAddress`` act for the owner, with its consent.

        The key itself signs ``accept-app-key:{owner}:{appKey}:{salt}`` (EIP-191,
        ``appKeySignature``): without it anyone could name another merchant's wallet as an
        app key of theirs and have that merchant's own calls act for them.

        The owner adds the first key; after that the owner or any of its app keys may add more,
        up to MAX_APP_KEYS (409 beyond) -- the wallet contract's own rules. A key already in
        paycore's records is accepted again only to get the transaction for a chain where the
        wallet lacks it.
        """
        typed, body = _salted(NewAppKey, request, signed)
        address = _evm_address(typed.app_key_address, "appKeyAddress")
        chain_id = chain_field(self._settings, typed.chain_id)
        salt = salt_seconds(body)
        actor = self.authenticate(typed.owner_address, body, chain_id)
        if address == actor.owner:
            raise InvalidInput("appKeyAddress", "is the owner itself, which needs no app key")
        verify_app_key_consent(actor.owner, address, salt, typed.app_key_signature)
        with self._storage.transaction() as tx:
            existing = tx.get_app_key(address)
            count = len(tx.app_keys_of(actor.owner))
        _check_add(actor, address, existing, count)
        sync = _sync(self._chains, chain_id, actor, ADD_APP_KEY, address)
        if existing is not None and not _has_work(sync):
            raise Conflict(f"Conflict: {address} is already an app key of {actor.owner}")
        record = AppKey(address, actor.owner, self._now(), actor.signer)
        with self._storage.transaction() as tx:
            outcome = tx.add_app_key(record, MAX_APP_KEYS)
            if outcome is AppKeyAdd.EXISTS:
                record = tx.get_app_key(address) or record
            elif outcome is not AppKeyAdd.ADDED:
                _check_add(actor, address, tx.get_app_key(address), MAX_APP_KEYS)
        return {"ownerAddress": actor.owner, "appKey": record.to_wire(), **_chain_wire(sync)}

    def remove_app_key(
        self, request: AppKeyChange | Mapping[str, Any], signed: Mapping[str, Any] | None = None
    ) -> Json:
        """/removeAppKey: the owner only (docs/interface.md §App keys: only the owner removes them),
        so a leaked app key cannot lock out the others. 404 when the key is neither in
        paycore's records nor, on the chain named, in the wallet."""
        typed, body = _salted(AppKeyChange, request, signed)
        address = _evm_address(typed.app_key_address, "appKeyAddress")
        chain_id = chain_field(self._settings, typed.chain_id)
        actor = self.authenticate(typed.owner_address, body, chain_id)
        if not actor.is_owner:
            raise Forbidden("only the owner removes app keys")
        with self._storage.transaction() as tx:
            existing = tx.get_app_key(address)
        recorded = existing is not None and existing.owner == actor.owner
        sync = _sync(self._chains, chain_id, actor, REMOVE_APP_KEY, address)
        if not recorded and not _has_work(sync):
            raise NotFound(f"app key {address} not found")
        with self._storage.transaction() as tx:
            removed = tx.remove_app_key(actor.owner, address)
        return {
            "ownerAddress": actor.owner,
            "appKeyAddress": address,
            "removed": removed,
            **_chain_wire(sync),
        }

    def get_app_keys(self, request: AppKeysQuery) -> list[Json]:
        """/getAppKeys: the owner's app keys, oldest first. Public: the same keys are readable
        from the wallet contract by anyone. With ``chainId`` each record says whether the wallet
        there holds the key (``onChain``), and keys only the wallet holds are listed after them
        with ``addedAt`` and ``addedBy`` null."""
        owner = normalize_owner(request.owner_address, "ownerAddress")
        chain_id = chain_field(self._settings, request.chain_id)
        with self._storage.transaction() as tx:
            records = [key.to_wire() for key in tx.app_keys_of(owner)]
        backend = _admin_backend(self._chains, chain_id)
        if backend is None or chain_id is None:
            return records
        on_chain = backend.app_keys_on_chain(chain_id, owner)
        held = set(on_chain or ())
        for record in records:
            record["onChain"] = record["address"] in held
        listed = {record["address"] for record in records}
        extra = [
            {"address": a, "addedAt": None, "addedBy": None, "onChain": True}
            for a in on_chain or ()
            if a not in listed
        ]
        return records + extra


class HoldsManagement(Protocol):
    """What :func:`enable_email` is handed: anything that holds the management service
    (a ``Gateway`` does)."""

    @property
    def management(self) -> Management: ...


def enable_email(
    gateway: HoldsManagement, owner: str, chain_id: int | None = None, *, enabled: bool = True
) -> list[EmailSetting]:
    """``Gateway.management.enable_email``, kept where operators' scripts know it."""
    return gateway.management.enable_email(owner, chain_id, enabled=enabled)
