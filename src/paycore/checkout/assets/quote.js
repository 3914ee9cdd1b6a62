/**
 * What the payer is asked to send: which token, how much of it, and the link for the QR code.
 *
 * Pure functions of the invoice, the price snapshot and the page's chain table, so they are
 * tested without a browser. The vsCurrency amount due is the invoice value less what has
 * been paid; the token amount is that divided by the token's price, rounded up to at most
 * DISPLAY_PLACES decimals so a person can read and type it.
 */

import { compare, formatUnits, parseDecimal, subtract, tokenUnits } from "./decimal.js";
import { NATIVE, isTron, paymentLink } from "./links.js";

/** Decimal places shown and requested: exact enough (a 1e-8 overpay at most), readable. */
export const DISPLAY_PLACES = 8;

/** "{chainId}:{address}" split; null when it is not that shape. */
export function splitTokenId(tokenId) {
  const at = String(tokenId).indexOf(":");
  if (at < 1) return null;
  const chainId = Number(tokenId.slice(0, at));
  if (!Number.isSafeInteger(chainId)) return null;
  return { chainId, address: tokenId.slice(at + 1) };
}

/**
 * A per-token hint from the merchant's invoice data: either one value for the display token
 * (`data.decimals: 6`) or a map by token id (`data.decimals: {"1:0xA0b8...": 6}`).
 */
export function hint(data, key, tokenId, displayToken) {
  const value = data && typeof data === "object" ? data[key] : undefined;
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "object") return tokenId === displayToken ? value : undefined;
  if (tokenId in value) return value[tokenId];
  const lower = tokenId.toLowerCase();
  const found = Object.keys(value).find((k) => k.toLowerCase() === lower);
  return found === undefined ? undefined : value[found];
}

export function shortAddress(address) {
  return address.length > 14 ? `${address.slice(0, 6)}…${address.slice(-4)}` : address;
}

/**
 * What the server says of a token: the invoice's `tokenInfo` entry (symbol and decimals
 * from paycore's registry, the chain's configuration or its native coin), or null.
 */
export function described(invoice, tokenId) {
  const table = invoice && typeof invoice.tokenInfo === "object" ? invoice.tokenInfo : null;
  if (!table) return null;
  let entry = table[tokenId];
  if (entry === undefined) {
    const lower = String(tokenId).toLowerCase();
    const key = Object.keys(table).find((k) => k.toLowerCase() === lower);
    entry = key === undefined ? undefined : table[key];
  }
  if (!entry || typeof entry !== "object") return null;
  const decimals = Number.isInteger(entry.decimals) && entry.decimals >= 0 && entry.decimals <= 77
    ? entry.decimals
    : null;
  const symbol = typeof entry.symbol === "string" && entry.symbol.trim()
    ? entry.symbol.trim().slice(0, 16)
    : null;
  return { symbol, decimals };
}

/**
 * Symbol and decimals of a token. The server's `tokenInfo` comes first; then, for the coin,
 * the server's chain table, and for another token a merchant's `data` hint. A token's
 * decimals are never guessed, because a wrong guess would request a thousand-fold wrong
 * amount: unknown decimals are null.
 */
export function tokenFacts(tokenId, invoice, chains) {
  const parts = splitTokenId(tokenId) || { chainId: invoice.chainId, address: tokenId };
  const chain = chains[String(parts.chainId)] || {};
  const native = parts.address.toLowerCase() === NATIVE;
  const known = described(invoice, tokenId) || { symbol: null, decimals: null };
  let decimals = known.decimals;
  let symbol = known.symbol;
  if (native) {
    if (decimals === null) {
      decimals = Number.isInteger(chain.decimals) ? chain.decimals : isTron(parts.chainId) ? 6 : 18;
    }
    symbol = symbol || chain.symbol || (isTron(parts.chainId) ? "TRX" : "ETH");
  } else {
    if (decimals === null) {
      const given = Number(hint(invoice.data, "decimals", tokenId, invoice.token));
      decimals = Number.isInteger(given) && given >= 0 && given <= 77 ? given : null;
    }
    if (symbol === null) {
      const named = hint(invoice.data, "symbol", tokenId, invoice.token);
      symbol = typeof named === "string" && named.trim() ? named.trim().slice(0, 16) : null;
    }
    symbol = symbol || shortAddress(parts.address);
  }
  return { id: tokenId, chainId: parts.chainId, address: parts.address, native, symbol, decimals };
}

/** The price of a token from the /prices snapshot (keys compared case-insensitively). */
export function priceOf(prices, tokenId) {
  const table = (prices && prices.prices) || {};
  let raw = table[tokenId];
  if (raw === undefined) {
    const lower = tokenId.toLowerCase();
    const key = Object.keys(table).find((k) => k.toLowerCase() === lower);
    raw = key === undefined ? undefined : table[key];
  }
  if (raw === undefined || raw === null) return null;
  const price = parseDecimal(raw);
  return price && price.units > 0n ? price : null;
}

/** vsCurrency still owed: value less paidAmount, never below zero; null for a tip jar. */
export function vsDue(invoice) {
  const value = parseDecimal(invoice.value);
  if (!value || value.units === 0n) return null;
  const paid = parseDecimal(invoice.paidAmount) || { units: 0n, scale: 0 };
  const left = subtract(value, paid);
  return compare(left, { units: 0n, scale: 0 }) > 0 ? left : { units: 0n, scale: 0 };
}

/**
 * The amount and the payment link for one token.
 * `reason` says why the link holds the address only: "tip" (any amount), "price" (no
 * price), "decimals" (an ERC20 without a decimals hint), "tron-token" (a TRC20), or null.
 */
export function quote(invoice, facts, prices) {
  const due = vsDue(invoice);
  const base = { chainId: facts.chainId, deposit: invoice.address, token: facts.address };
  let amountText = null;
  let baseUnits = null;
  let reason = null;
  const price = priceOf(prices, facts.id);
  if (due === null) {
    reason = "tip";
  } else if (price === null) {
    reason = "price";
  } else {
    const places = facts.decimals === null ? DISPLAY_PLACES : Math.min(facts.decimals, DISPLAY_PLACES);
    const units = tokenUnits(due, price, places);
    amountText = formatUnits(units, places);
    if (facts.decimals !== null) baseUnits = units * 10n ** BigInt(facts.decimals - places);
    else reason = "decimals";
  }
  // A TRC20 amount has no tron: link field wallets agree on, decimals or not.
  if (amountText !== null && isTron(facts.chainId) && !facts.native) reason = "tron-token";
  const link = paymentLink({ ...base, baseUnits, amountText: reason === null ? amountText : null });
  return { due, amountText, baseUnits, uri: link.uri, exact: link.exact, reason };
}
