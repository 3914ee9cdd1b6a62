"""JSON Schemas of the answers of docs/interface.md, for the OpenAPI document. What a
request may carry is declared once, in ``paycore.api.requests``, and its schema derived there.

Names match the wire form.
"""

from __future__ import annotations

from typing import Any

S = dict[str, Any]

STRING: S = {"type": "string"}
INTEGER: S = {"type": "integer"}
NUMBER: S = {"type": "number"}
DECIMAL: S = {"type": "string", "pattern": r"^[0-9]+(\.[0-9]+)?$"}
ADDRESS: S = {"type": "string", "description": "EVM 0x address or Tron base58 address"}
TOKEN_ID: S = {"type": "string", "description": "{chainId}:{tokenAddress}"}
SIGNATURE: S = {"type": "string", "description": "65-byte EIP-191 signature, 0x hex"}
PUBLIC_KEY: S = {"type": "string", "description": "uncompressed SEC1 secp256k1 key, 0x04..."}


#: Only in pages asked for with ``cursor``: the cursor of the older (next) or newer (previous)
#: page, null at that end of the list.
CURSOR: S = {"type": ["string", "null"]}


def obj(required: list[str], **props: S) -> S:
    return {"type": "object", "required": required, "properties": props}


PAYMENT = obj(
    ["txHash", "logIndex", "chainId", "token", "from", "amount", "vsValue", "timestamp"],
    txHash=STRING,
    logIndex=INTEGER,
    chainId=STRING,
    token=STRING,
    amount=DECIMAL,
    vsValue=NUMBER,
    timestamp=INTEGER,
    **{"from": STRING},
)
NULLABLE_STRING: S = {"oneOf": [STRING, {"type": "null"}]}
NULLABLE_INTEGER: S = {"oneOf": [INTEGER, {"type": "null"}]}
REFUND = obj(
    [
        "id",
        "guid",
        "status",
        "chainId",
        "token",
        "to",
        "amount",
        "vsValue",
        "rate",
        "rateSource",
        "createdAt",
        "txHash",
        "logIndex",
        "settledAt",
    ],
    id=STRING,
    guid=STRING,
    status={"type": "string", "enum": ["pending", "confirmed", "cancelled"]},
    chainId=STRING,
    token=STRING,
    to=ADDRESS,
    amount=DECIMAL,
    vsValue=NUMBER,
    rate={**DECIMAL, "description": "vsCurrency per token"},
    rateSource={"type": "string", "enum": ["payment", "now"]},
    createdAt=INTEGER,
    txHash={**NULLABLE_STRING, "description": "the withdrawal that paid it, once confirmed"},
    logIndex=NULLABLE_INTEGER,
    settledAt={**NULLABLE_INTEGER, "description": "confirmed: block time; cancelled: when"},
)
DETECTED = obj(
    [
        "txHash",
        "logIndex",
        "chainId",
        "token",
        "from",
        "amount",
        "blockNumber",
        "confirmations",
        "required",
    ],
    txHash=STRING,
    logIndex=INTEGER,
    chainId=STRING,
    token={**STRING, "description": "the token's address (the native coin: the zero address)"},
    amount=DECIMAL,
    blockNumber=INTEGER,
    confirmations={**INTEGER, "description": "blocks deep now: 1 in the head block"},
    **{"from": STRING},
)
# ``required`` is also the name of obj()'s own parameter.
DETECTED["properties"]["required"] = {**INTEGER, "description": "the chain's confirmations"}
INVOICE = obj(
    [
        "guid",
        "createdAt",
        "deadline",
        "status",
        "value",
        "token",
        "chainId",
        "data",
        "description",
        "address",
        "owner",
        "paidAmount",
        "payments",
        "refundedAmount",
        "refunds",
        "acceptedTokens",
        "detected",
    ],
    guid=STRING,
    createdAt=INTEGER,
    deadline=INTEGER,
    status={"type": "string", "enum": ["init", "partialPaid", "paid", "expired"]},
    value=DECIMAL,
    token=TOKEN_ID,
    chainId=INTEGER,
    data={"type": "object"},
    description=STRING,
    address=ADDRESS,
    owner=ADDRESS,
    paidAmount=DECIMAL,
    payments={"type": "array", "items": PAYMENT},
    refundedAmount={**DECIMAL, "description": "the sum of the confirmed refunds' vsValue"},
    refunds={"type": "array", "items": REFUND},
    acceptedTokens={"type": "array", "items": TOKEN_ID},
    vsCurrency={
        "type": "string",
        "description": "the currency of value, paidAmount and every vsValue (lowercase code)",
    },
    detected={
        "type": "array",
        "items": DETECTED,
        "description": "transfers mined but not yet confirmations deep: provisional, never"
        " counted in paidAmount",
    },
    paymentUrl=STRING,
    redirectUrl={**STRING, "description": "where the checkout page leads back to the shop"},
    redirectAutomatically={
        "type": "boolean",
        "description": "the checkout page follows redirectUrl by itself once paid",
    },
    cancelUrl={**STRING, "description": "the checkout page's link back without paying"},
    tokenInfo={
        "type": "object",
        "description": "symbol and decimals of the accepted tokens paycore knows, by token id",
        "additionalProperties": obj(["symbol", "decimals"], symbol=STRING, decimals=INTEGER),
    },
)
INVOICE_PAGE = obj(
    ["items", "total", "offset", "limit"],
    items={"type": "array", "items": INVOICE},
    total=INTEGER,
    offset=INTEGER,
    limit=INTEGER,
    nextCursor=CURSOR,
    prevCursor=CURSOR,
    # Only in a filtered list (search): true when ``total`` stopped counting at 1,000.
    totalCapped={"type": "boolean"},
)
_STATS_FIGURES = {"revenue": DECIMAL, "invoices": INTEGER, "paid": INTEGER}
STATS = obj(
    ["from", "to", "currency", "tzOffset", "revenue", "days", "byToken", "byStatus"],
    currency=STRING,
    tzOffset=INTEGER,
    revenue=DECIMAL,
    days={
        "type": "array",
        "items": obj(
            ["day", "start", "revenue", "invoices", "paid"],
            day={"type": "string", "format": "date"},
            start=INTEGER,
            **_STATS_FIGURES,
        ),
    },
    byToken={
        "type": "array",
        "items": obj(
            ["chainId", "token", "revenue", "invoices", "paid"],
            chainId=INTEGER,
            token=STRING,
            **_STATS_FIGURES,
        ),
    },
    byStatus=obj(
        ["init", "partialPaid", "paid", "expired"],
        init=INTEGER,
        partialPaid=INTEGER,
        paid=INTEGER,
        expired=INTEGER,
    ),
    **{"from": INTEGER, "to": INTEGER},
)
TRANSACTION = obj(
    ["type", "txHash", "logIndex", "chainId", "token", "from", "amount", "vsValue", "timestamp"],
    type={"type": "string", "enum": ["deposit", "withdraw", "refund"]},
    txHash=STRING,
    logIndex=INTEGER,
    chainId=STRING,
    token=STRING,
    to=STRING,
    amount=DECIMAL,
    vsValue=NUMBER,
    timestamp=INTEGER,
    guid=STRING,
    **{"from": STRING},
)
TRANSACTION_PAGE = obj(
    ["items", "total", "offset", "limit"],
    items={"type": "array", "items": TRANSACTION},
    total=INTEGER,
    offset=INTEGER,
    limit=INTEGER,
    nextCursor=CURSOR,
    prevCursor=CURSOR,
)
PRICES = obj(
    ["vsCurrency", "fetchedAt", "prices"],
    vsCurrency=STRING,
    fetchedAt=INTEGER,
    prices={"type": "object", "additionalProperties": NUMBER},
)
CHALLENGE = obj(
    ["challenge", "difficulty", "expiresInSecs", "algorithm"],
    challenge=STRING,
    difficulty=INTEGER,
    expiresInSecs=INTEGER,
    algorithm=STRING,
)
REGISTERED = obj(
    ["registered", "ownerAddress", "publicKey", "expiresAt"],
    registered={"type": "boolean"},
    ownerAddress=ADDRESS,
    publicKey=PUBLIC_KEY,
    expiresAt=INTEGER,
)
DEREGISTERED = obj(
    ["deregistered", "ownerAddress", "publicKey"],
    deregistered={"type": "boolean"},
    ownerAddress=ADDRESS,
    publicKey=PUBLIC_KEY,
)
PUBKEYS = obj(
    ["ownerAddress", "pubkeys"],
    ownerAddress=ADDRESS,
    pubkeys={
        "type": "array",
        "items": obj(
            ["publicKey", "registeredAt", "expiresAt", "lastSeenNonce"],
            publicKey=PUBLIC_KEY,
            registeredAt=INTEGER,
            expiresAt=INTEGER,
            lastSeenNonce=INTEGER,
        ),
    },
)
WEBHOOK = obj(["ownerAddress", "url"], ownerAddress=ADDRESS, url=STRING, secret=STRING)
REMOVED = obj(["removed"], removed={"type": "boolean"})
OWNER_URL = obj(["ownerAddress", "url"], ownerAddress=ADDRESS, url=STRING)
MERCHANT_PROFILE = obj(
    ["ownerAddress", "name", "logoUrl", "support", "updatedAt"],
    ownerAddress=ADDRESS,
    name=STRING,
    logoUrl=NULLABLE_STRING,
    support=NULLABLE_STRING,
    updatedAt={"type": "integer"},
)
POLL_TOKEN = obj(["ownerAddress", "token"], ownerAddress=ADDRESS, token=STRING)
EVENTS = obj(
    ["ownerAddress", "events"], ownerAddress=ADDRESS, events={"type": "array", "items": INVOICE}
)

# -- smart-wallet helpers (GET takes the same fields as query parameters) ---------------------
UINT_TEXT: S = {"type": ["integer", "string"], "description": "non-negative integer"}
HEX: S = {"type": "string", "pattern": "^0x[0-9a-fA-F]*$"}
DEPOSIT_ADDRESS = obj(
    ["depositAddress", "contractType"],
    depositAddress=ADDRESS,
    contractType=STRING,
    index={"oneOf": [INTEGER, {"type": "null"}]},
)
UNSIGNED_TX = obj(
    ["to", "data", "gas", "gasPrice", "nonce"],
    to=ADDRESS,
    data=HEX,
    gas=HEX,
    gasPrice=HEX,
    nonce=INTEGER,
    value={**HEX, "description": "wei to send: the withdrawal fee (0x0 for a deployment)"},
    chainId=INTEGER,
    **{"from": ADDRESS},
)
INIT_WALLET_TX = {
    **UNSIGNED_TX,
    "properties": {**UNSIGNED_TX["properties"], "walletAddress": ADDRESS},
}
INIT_WITHDRAW_TX = {
    **UNSIGNED_TX,
    "properties": {
        **UNSIGNED_TX["properties"],
        "indexes": {"type": "array", "items": INTEGER},
        "amount": DECIMAL,
        "fee": DECIMAL,
    },
}
TRON_CALL = obj(
    ["transaction", "txID", "from", "to", "data", "callValue", "feeLimit", "chainId"],
    transaction={"type": "object", "description": "the node's transaction, as TronWeb signs it"},
    txID=STRING,
    to=ADDRESS,
    data=HEX,
    callValue=INTEGER,
    feeLimit=INTEGER,
    chainId=INTEGER,
    energyEstimate=INTEGER,
    **{"from": ADDRESS},
)
REFUND_BUILT = obj(
    ["refund", "transaction", "invoice"],
    refund=REFUND,
    transaction={
        "oneOf": [INIT_WITHDRAW_TX, TRON_CALL],
        "description": "the unsigned withdrawal that pays it, as /initWithdraw builds it",
    },
    invoice=INVOICE,
)
REFUND_CANCELLED = obj(["refund", "invoice"], refund=REFUND, invoice=INVOICE)
DEPLOYED = obj(
    ["txHash", "owner", "walletAddress"],
    txHash=HEX,
    owner=ADDRESS,
    walletAddress=ADDRESS,
    **{"from": ADDRESS},
)
BALANCE = obj(
    ["token", "tokenId", "symbol", "decimals", "balance", "walletBalance", "depositBalance"],
    token=STRING,
    tokenId=TOKEN_ID,
    symbol=STRING,
    decimals=INTEGER,
    balance=DECIMAL,
    walletBalance=DECIMAL,
    depositBalance=DECIMAL,
    vsValue={"oneOf": [NUMBER, {"type": "null"}], "description": "null: no price"},
)
BALANCES = {"type": "array", "items": BALANCE}
HISTORY = {"type": "array", "items": TRANSACTION}
FAUCET_SENT = obj(
    ["txHash", "to", "token", "amount"], txHash=HEX, to=ADDRESS, token=STRING, amount=DECIMAL
)

# -- salt-signed management calls and app keys (docs/management.md) ----------------------------
SALT: S = {"type": ["number", "string"], "description": "unix seconds, within the salt window"}
SALTED_SIGNATURE: S = {
    **SIGNATURE,
    "description": "EIP-191 signature of JSON.stringify(body without signature)",
}
OPTIONAL_OWNER: S = {
    **ADDRESS,
    "description": "optional: the owner meant, when the signer is one of its app keys",
}
NULLABLE_TX: S = {"oneOf": [UNSIGNED_TX, {"type": "null"}]}
ON_CHAIN: S = {
    "oneOf": [
        obj(
            ["chainId", "walletAddress", "deployed", "inSync"],
            chainId=INTEGER,
            walletAddress=ADDRESS,
            deployed={"type": "boolean"},
            inSync={"type": "boolean"},
        ),
        {"type": "null"},
    ],
    "description": "the wallet on chainId; null without chainId or a chain backend",
}
CALLBACK_CHANGED = obj(
    ["ownerAddress", "chainId", "url", "previousUrl"],
    ownerAddress=ADDRESS,
    chainId=INTEGER,
    url=STRING,
    previousUrl={**STRING, "description": "empty when no webhook was set"},
)
EMAIL_SETTING = obj(
    ["ownerAddress", "chainId", "emailAddress", "enabled"],
    ownerAddress=ADDRESS,
    chainId=INTEGER,
    emailAddress=STRING,
    enabled={"type": "boolean", "description": "sending is turned on by the operator"},
)
WALLET_INDEX_SET = obj(
    ["ownerAddress", "chainId", "walletIndex", "disabled", "changed", "transaction", "onChain"],
    ownerAddress=ADDRESS,
    chainId=INTEGER,
    walletIndex=INTEGER,
    disabled={"type": "boolean"},
    changed={"type": "boolean", "description": "whether paycore's record changed"},
    transaction=NULLABLE_TX,
    onChain=ON_CHAIN,
)
APP_KEY = obj(
    ["address", "addedAt", "addedBy"],
    address=ADDRESS,
    addedAt={"oneOf": [INTEGER, {"type": "null"}]},
    addedBy={"oneOf": [ADDRESS, {"type": "null"}]},
    onChain={"type": "boolean"},
)
APP_KEYS = {"type": "array", "items": APP_KEY}
APP_KEY_ADDED = obj(
    ["ownerAddress", "appKey", "transaction", "onChain"],
    ownerAddress=ADDRESS,
    appKey=APP_KEY,
    transaction=NULLABLE_TX,
    onChain=ON_CHAIN,
)
APP_KEY_REMOVED = obj(
    ["ownerAddress", "appKeyAddress", "removed", "transaction", "onChain"],
    ownerAddress=ADDRESS,
    appKeyAddress=ADDRESS,
    removed={"type": "boolean", "description": "whether paycore's record was removed"},
    transaction=NULLABLE_TX,
    onChain=ON_CHAIN,
)

# -- staking helpers (Ethereum only) -------------------------------------------------------
UINT_STRING: S = {"type": "string", "pattern": "^[0-9]+$"}
ADDRESS_LIST: S = {"type": "array", "items": ADDRESS}
STAKING_INFO = {
    "type": "object",
    "additionalProperties": obj(
        ["balance", "tokens", "extra"],
        balance={**UINT_STRING, "description": "native coin, base units"},
        tokens={
            "type": "array",
            "items": obj(
                ["balance", "symbol", "decimals", "name"],
                balance=UINT_STRING,
                symbol=STRING,
                decimals=UINT_STRING,
                name=STRING,
            ),
        },
        extra={
            "type": "array",
            "items": obj(
                ["staked", "tokenAllowance"],
                staked=UINT_STRING,
                tokenAllowance=UINT_STRING,
                rewards={**UINT_STRING, "description": "wei; first element only"},
            ),
        },
    ),
}
STAKING_TX = obj(
    ["walletDeepLink", "transaction"],
    walletDeepLink={**STRING, "description": "https://metamask.app.link/send/<to>@<chainId>?..."},
    transaction=obj(
        ["from", "to", "value", "data", "gas", "gasPrice", "nonce", "chainId", "isApprove"],
        to=ADDRESS,
        value=HEX,
        data=HEX,
        gas=HEX,
        gasPrice=HEX,
        nonce=INTEGER,
        chainId=INTEGER,
        isApprove={"type": "boolean", "description": "an ERC20 approve to send before staking"},
        **{"from": ADDRESS},
    ),
)

# -- the webhook delivery log (GET /webhook/deliveries, POST /webhook/redeliver*) -----------------
NULLABLE_DECIMAL: S = {"oneOf": [DECIMAL, {"type": "null"}]}
DELIVERY_ATTEMPT = obj(
    ["attemptedAt", "url", "statusCode", "error", "latencyMs"],
    attemptedAt={**INTEGER, "description": "unix milliseconds"},
    url=STRING,
    statusCode={**NULLABLE_INTEGER, "description": "the receiver's HTTP status, if it answered"},
    error={**NULLABLE_STRING, "description": "why the attempt failed; null on success"},
    latencyMs=INTEGER,
)
DELIVERY = obj(
    [
        "id",
        "webhookId",
        "endpointId",
        "guid",
        "status",
        "attemptCount",
        "createdAt",
        "nextAttemptAt",
        "attempts",
    ],
    id=INTEGER,
    webhookId={**STRING, "description": "the webhook-id header: the same on every attempt"},
    endpointId={**STRING, "description": "the endpoint it goes to; default: /webhook/set's"},
    guid=STRING,
    status={"type": "string", "enum": ["pending", "delivered", "failed"]},
    attemptCount={**INTEGER, "description": "attempts of the current retry schedule"},
    createdAt={**INTEGER, "description": "unix milliseconds"},
    nextAttemptAt={**NULLABLE_INTEGER, "description": "unix milliseconds; null once settled"},
    attempts={"type": "array", "items": DELIVERY_ATTEMPT},
)
DELIVERY_PAGE = obj(
    ["items", "total", "offset", "limit"],
    items={"type": "array", "items": DELIVERY},
    total=INTEGER,
    offset=INTEGER,
    limit=INTEGER,
)
WEBHOOK_ENDPOINT = obj(
    ["id", "ownerAddress", "url", "secret", "types", "enabled", "createdAt"],
    id={**STRING, "description": "ep_...; default: the /webhook/set URL"},
    ownerAddress=ADDRESS,
    url=STRING,
    secret={**STRING, "description": "whsec_...: this endpoint's signing secret"},
    types={"type": "array", "items": STRING, "description": "the event types it is sent"},
    enabled={"type": "boolean"},
    createdAt={**NULLABLE_INTEGER, "description": "unix seconds; null for default"},
)
WEBHOOK_ENDPOINTS = obj(
    ["ownerAddress", "items"],
    ownerAddress=ADDRESS,
    items={"type": "array", "items": WEBHOOK_ENDPOINT},
)
ENDPOINT_REMOVED = obj(["removed", "id"], removed={"type": "boolean"}, id=STRING)
REDELIVERED = obj(
    ["ownerAddress", "since", "redelivered"],
    ownerAddress=ADDRESS,
    since=INTEGER,
    redelivered=INTEGER,
)

# -- payment links (POST /link, GET /links, POST /link/disable) ----------------------------------
PAYMENT_LINK = obj(
    [
        "id",
        "url",
        "owner",
        "createdAt",
        "chainId",
        "description",
        "acceptedTokens",
        "token",
        "vsCurrency",
        "amount",
        "minAmount",
        "maxAmount",
        "deadlineSecs",
        "data",
        "expiresAt",
        "maxUses",
        "uses",
        "disabledAt",
        "state",
    ],
    id=STRING,
    url={**STRING, "description": "where a buyer opens it: GET /link/{id}"},
    owner=ADDRESS,
    createdAt=INTEGER,
    chainId=INTEGER,
    description=STRING,
    acceptedTokens={"type": "array", "items": TOKEN_ID},
    token=TOKEN_ID,
    vsCurrency=STRING,
    amount={**NULLABLE_DECIMAL, "description": "fixed amount; null when the buyer chooses"},
    minAmount=NULLABLE_DECIMAL,
    maxAmount=NULLABLE_DECIMAL,
    deadlineSecs=NULLABLE_INTEGER,
    data={"type": "object"},
    expiresAt=NULLABLE_INTEGER,
    maxUses=NULLABLE_INTEGER,
    uses={**INTEGER, "description": "invoices it has made"},
    disabledAt=NULLABLE_INTEGER,
    state={"type": "string", "enum": ["active", "disabled", "expired", "usedUp"]},
)
PAYMENT_LINK_PAGE = obj(
    ["items", "total", "offset", "limit"],
    items={"type": "array", "items": PAYMENT_LINK},
    total=INTEGER,
    offset=INTEGER,
    limit=INTEGER,
)

# -- batch payouts (docs/payouts.md) ---------------------------------------------------------
PAYOUT = obj(
    ["batchId", "line", "to", "token", "amount", "value", "reference", "transaction", "status"],
    batchId=STRING,
    line={**INTEGER, "description": "the row's line: the CSV's own, or its position from 1"},
    to=ADDRESS,
    token={**ADDRESS, "description": "token contract; the zero address for the native coin"},
    amount=DECIMAL,
    value={**STRING, "description": "the amount in the token's base units"},
    reference=STRING,
    transaction={**INTEGER, "description": "index of the batch transaction that pays it"},
    status={"type": "string", "enum": ["pending", "confirmed", "failed"]},
    txHash={"oneOf": [STRING, {"type": "null"}], "description": "null while pending"},
    updatedAt=INTEGER,
)
PAYOUT_BATCH = obj(
    ["id", "owner", "chainId", "contract", "transactions", "createdAt"],
    id=STRING,
    owner=ADDRESS,
    chainId=INTEGER,
    contract=ADDRESS,
    transactions=INTEGER,
    createdAt=INTEGER,
    counts=obj([], pending=INTEGER, confirmed=INTEGER, failed=INTEGER),
)
PAYOUTS_BUILT = obj(
    ["batch", "approvals", "transactions", "payouts"],
    batch=PAYOUT_BATCH,
    approvals={
        "type": "array",
        "items": UNSIGNED_TX,
        "description": "ERC20 approve calls to sign and send first (allowance short)",
    },
    transactions={
        "type": "array",
        "items": UNSIGNED_TX,
        "description": "the batch contract's pay calls, in order, as few as the gas limit allows",
    },
    payouts={"type": "array", "items": PAYOUT},
)
PAYOUTS_READ = obj(
    ["batch", "payouts"], batch=PAYOUT_BATCH, payouts={"type": "array", "items": PAYOUT}
)
PAYOUTS_CONFIRMED = obj(
    ["batch", "payouts", "results"],
    batch=PAYOUT_BATCH,
    payouts={"type": "array", "items": PAYOUT},
    results={
        "type": "array",
        "items": obj(
            ["txHash", "state"],
            txHash=STRING,
            state={"type": "string", "enum": ["pending", "mined"]},
            transaction=INTEGER,
            success={"type": "boolean"},
            settled=INTEGER,
        ),
    },
)
