/**
 * What this browser remembers of one invoice across reloads (localStorage, one entry per
 * invoice): the transactions it sent from a wallet, and the payments it has seen counted.
 *
 * Why: a payer who reloads while a transfer waits for confirmations must see it as sent,
 * not a fresh "Pay" button that would take the money a second time; and a payment that later
 * vanishes from the record (a reorg) can only be named by a page that saw it. Storage may be
 * off or full (private windows): then the page works as before, from memory only.
 */

const PREFIX = "paycore.checkout.";
/** Enough for every payment of an invoice; older entries are dropped first. */
const MAX_ENTRIES = 20;

function key(guid) {
  return `${PREFIX}${guid}`;
}

function storage() {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

/** `{sent: [{tx, chainId, at}], seen: [payment]}` for `guid`; empty lists when nothing is kept. */
export function recall(guid) {
  const store = storage();
  let kept = null;
  try {
    kept = store ? JSON.parse(store.getItem(key(guid)) || "null") : null;
  } catch {
    kept = null;
  }
  const sent = kept && Array.isArray(kept.sent) ? kept.sent.filter((s) => s && typeof s.tx === "string") : [];
  const seen = kept && Array.isArray(kept.seen) ? kept.seen.filter((p) => p && typeof p.txHash === "string") : [];
  return { sent, seen };
}

function keep(guid, memory) {
  const store = storage();
  if (!store) return;
  try {
    store.setItem(
      key(guid),
      JSON.stringify({ sent: memory.sent.slice(-MAX_ENTRIES), seen: memory.seen.slice(-MAX_ENTRIES) }),
    );
  } catch {
    // full or refused: the page still shows the transaction until it is closed
  }
}

/** Remember a transaction sent from this browser's wallet. */
export function rememberSent(guid, tx, chainId, now = Date.now()) {
  const memory = recall(guid);
  if (!memory.sent.some((s) => s.tx.toLowerCase() === tx.toLowerCase())) {
    memory.sent.push({ tx, chainId: String(chainId), at: Math.floor(now / 1000) });
  }
  keep(guid, memory);
  return memory;
}

/** Add the payments of the record just read to those seen before (only what names and
 * shows one). None is forgotten: one that leaves the record stays named as reversed. */
export function rememberSeen(guid, payments) {
  const memory = recall(guid);
  const pick = ({ txHash, logIndex, chainId, token, amount }) => ({ txHash, logIndex, chainId, token, amount });
  const name = (p) => `${p.chainId}:${String(p.txHash).toLowerCase()}:${p.logIndex}`;
  const known = new Set(memory.seen.map(name));
  const fresh = (Array.isArray(payments) ? payments : []).filter((p) => p && !known.has(name(p)));
  if (!fresh.length) return memory;
  memory.seen.push(...fresh.map(pick));
  keep(guid, memory);
  return memory;
}
