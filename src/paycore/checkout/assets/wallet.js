/**
 * "Pay with wallet": the exact payment the QR code holds, sent through a browser wallet
 * (EIP-1193, window.ethereum) instead of typed or scanned.
 *
 * Why only when the link is exact: the wallet is asked for one transaction with the amount
 * in base units; an amount the page cannot state exactly (no price, unknown decimals, a
 * tip jar) is left to the payer as before. The page does not trust the wallet's word that
 * it paid: the invoice turns paid only when the chain watcher sees the transfer.
 */

import { NATIVE } from "./links.js";

/** ERC20 transfer(address,uint256) selector. */
const TRANSFER = "0xa9059cbb";

const word = (hex) => hex.replace(/^0x/i, "").toLowerCase().padStart(64, "0");

/** Calldata of `transfer(to, units)`. */
export function transferData(to, units) {
  return TRANSFER + word(to) + word(BigInt(units).toString(16));
}

/** A chain id as EIP-1193 writes it: "0x7a69" for 31337. */
export function hexChainId(chainId) {
  return `0x${Number(chainId).toString(16)}`;
}

/**
 * The transaction for `offer` (quote.js) of `facts`' token to `deposit`: the coin as value,
 * a token as a call of its transfer. It names its chain (`chainId`), so a wallet that is on
 * another chain refuses it instead of sending it there. Null when the amount is not exact
 * in base units.
 */
export function paymentTransaction(from, deposit, facts, offer) {
  if (!offer.exact || offer.baseUnits === null || offer.baseUnits <= 0n) return null;
  const chainId = hexChainId(facts.chainId);
  if (facts.address.toLowerCase() === NATIVE) {
    return { from, to: deposit, value: `0x${offer.baseUnits.toString(16)}`, chainId };
  }
  return { from, to: facts.address, value: "0x0", data: transferData(deposit, offer.baseUnits), chainId };
}

/** The error raised when the wallet is still on another chain after it was asked to switch. */
export class WrongChain extends Error {
  constructor(current) {
    super(`the wallet is on chain ${current}`);
    this.current = current;
  }
}

/** An error a wallet raised, as a short code the page words: "rejected", "network",
 * "chain" (still on another chain after the switch) or "failed". */
export function walletProblem(error) {
  if (error instanceof WrongChain) return "chain";
  const code = error && typeof error === "object" ? error.code : undefined;
  if (code === 4001) return "rejected"; // EIP-1193: the user rejected the request
  if (code === 4902) return "network"; // the wallet does not know the chain
  return "failed";
}

/** The wallet's chain as a number (EIP-1193 answers hex text), or the answer as text. */
async function walletChain(provider) {
  const answer = await provider.request({ method: "eth_chainId" });
  const text = String(answer).toLowerCase();
  return /^0x[0-9a-f]+$/.test(text) ? Number.parseInt(text, 16) : text;
}

/**
 * Connect, make sure the wallet is on `chainId`, and send the payment; returns the hash.
 * A wallet on another chain is asked to switch (wallet_switchEthereumChain); one that does
 * not know the chain raises 4902 and the payer is told to add it themselves, since the page
 * has no public RPC URL of its own to offer in wallet_addEthereumChain. After a switch the
 * chain is read again: a wallet that said it switched but did not gets nothing to send
 * (WrongChain), and the transaction itself names the chain for wallets that check it.
 */
export async function payWithWallet(provider, chainId, deposit, facts, offer) {
  const accounts = await provider.request({ method: "eth_requestAccounts" });
  const from = Array.isArray(accounts) && accounts[0];
  if (!from) throw Object.assign(new Error("no account"), { code: 4001 });
  const wanted = Number(chainId);
  if ((await walletChain(provider)) !== wanted) {
    await provider.request({ method: "wallet_switchEthereumChain", params: [{ chainId: hexChainId(wanted) }] });
    const now = await walletChain(provider);
    if (now !== wanted) throw new WrongChain(now);
  }
  const tx = paymentTransaction(from, deposit, facts, offer);
  if (tx === null) throw new Error("no exact amount");
  return provider.request({ method: "eth_sendTransaction", params: [tx] });
}
