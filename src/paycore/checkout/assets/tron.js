/**
 * "Pay with TronLink": the exact payment of a Tron invoice, sent through the wallet TronLink
 * injects (window.tronLink and window.tronWeb) instead of typed or scanned.
 *
 * Why here and not in the tron: link: that link has no field wallets agree on for a TRC20
 * amount, so a token payment was address-only; through TronLink the page states the token
 * contract, the recipient and the amount in base units itself. The amount comes from the
 * token's decimals (bigint base units, never a float); one that does not fit a JavaScript
 * number exactly is refused for TRX, and passed as decimal text for a token. As with the
 * EIP-1193 wallet, the page does not take the wallet's word: the invoice turns paid only when
 * the chain watcher sees the transfer.
 */

/** TRC20 transfer, as TronWeb's triggerSmartContract names it. */
export const TRANSFER = "transfer(address,uint256)";
/** Most TRX a token transfer may burn for energy: 100 TRX, TronLink's own default. */
export const FEE_LIMIT_SUN = 100_000_000;

/** The injected TronWeb, when TronLink (or a wallet speaking its API) is present. */
export function injectedTronWeb(win) {
  const tronWeb = (win.tronLink && win.tronLink.tronWeb) || win.tronWeb;
  return tronWeb && tronWeb.trx && tronWeb.transactionBuilder ? tronWeb : null;
}

/** An error TronLink raised, as the short code the page words: "rejected" or "failed". */
export function tronProblem(error) {
  const text = String((error && (error.message || error.error)) || error || "");
  if (error && (error.code === 4001 || error.code === 4000)) return "rejected";
  if (/declined|reject|cancel/i.test(text)) return "rejected";
  return "failed";
}

/** What will be sent: {kind: "trx", to, sun} or {kind: "trc20", contract, to, units}. Null
 * when the amount is not known exactly in base units. */
export function tronPayment(deposit, facts, baseUnits) {
  if (typeof baseUnits !== "bigint" || baseUnits <= 0n) return null;
  if (facts.native) {
    if (baseUnits > BigInt(Number.MAX_SAFE_INTEGER)) return null;
    return { kind: "trx", to: deposit, sun: baseUnits };
  }
  return { kind: "trc20", contract: facts.address, to: deposit, units: baseUnits };
}

/**
 * Ask TronLink for the account, then send the payment; returns the transaction id.
 * `win` is the window (TronLink's objects live there); `payment` is tronPayment's.
 */
export async function payWithTronLink(win, payment) {
  if (win.tronLink && typeof win.tronLink.request === "function") {
    const answer = await win.tronLink.request({ method: "tron_requestAccounts" });
    if (answer && typeof answer === "object" && answer.code !== undefined && answer.code !== 200) {
      throw Object.assign(new Error(answer.message || "not connected"), { code: answer.code });
    }
  }
  const tronWeb = injectedTronWeb(win);
  const from = tronWeb && tronWeb.defaultAddress && tronWeb.defaultAddress.base58;
  if (!from) throw Object.assign(new Error("no account"), { code: 4001 });
  if (payment.kind === "trx") {
    const sent = await tronWeb.trx.sendTransaction(payment.to, Number(payment.sun));
    return txidOf(sent);
  }
  const built = await tronWeb.transactionBuilder.triggerSmartContract(
    payment.contract,
    TRANSFER,
    { feeLimit: FEE_LIMIT_SUN, callValue: 0 },
    [
      { type: "address", value: payment.to },
      { type: "uint256", value: payment.units.toString() },
    ],
    from,
  );
  if (!built || !built.transaction || (built.result && built.result.result === false)) {
    throw new Error("the token transfer could not be built");
  }
  const signed = await tronWeb.trx.sign(built.transaction);
  return txidOf(await tronWeb.trx.sendRawTransaction(signed));
}

/** The id of a broadcast transaction; an error when the node refused it. */
function txidOf(sent) {
  if (!sent || sent.result === false || sent.code) {
    throw new Error(String((sent && (sent.message || sent.code)) || "not broadcast").slice(0, 160));
  }
  const txid = sent.txid || (sent.transaction && sent.transaction.txID);
  if (!txid) throw new Error("no transaction id");
  return String(txid);
}
