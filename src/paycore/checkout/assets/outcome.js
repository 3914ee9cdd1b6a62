/**
 * What became of an invoice beyond its four statuses, so the page can say it in words:
 * paid more than asked, paid after the deadline, part paid and then expired, or a payment
 * the network took back (a reorg removed its block).
 *
 * Why the page works this out and not the server: every fact is already on the public record
 * (value, paidAmount, the payments and their times, the deadline); a payment that vanished is
 * only known to a page that saw it before, so the page keeps the keys it has seen (memory.js).
 */

import { compare, formatDecimal, parseDecimal, subtract } from "./decimal.js";

const ZERO = { units: 0n, scale: 0 };

/** The key of one payment as the server names a transfer. */
export function paymentKey(payment) {
  return `${payment.chainId}:${String(payment.txHash).toLowerCase()}:${payment.logIndex}`;
}

/**
 * The outcome of `invoice` as `{kind, ...amounts}` (amounts as decimal text), or null when
 * the status says it all. `seen` is the payments this browser saw on earlier reads:
 * one of them missing now is a reversed payment. Kinds: "overpaid" {excess, value},
 * "late" {paid}, "expiredPartial" {paid, value, missing}, "reversed" {amount, txHash}.
 */
export function outcome(invoice, seen = []) {
  const payments = Array.isArray(invoice.payments) ? invoice.payments : [];
  const value = parseDecimal(invoice.value) || ZERO;
  const paid = parseDecimal(invoice.paidAmount) || ZERO;
  const tip = value.units === 0n;
  if (invoice.status === "paid") {
    // paid is paid, whatever was reversed on the way
    if (tip || compare(paid, value) <= 0) return null;
    return { kind: "overpaid", excess: formatDecimal(subtract(paid, value)), value: formatDecimal(value) };
  }
  const now = new Set(payments.map(paymentKey));
  const gone = seen.filter((p) => p && !now.has(paymentKey(p)));
  if (gone.length) {
    const last = gone[gone.length - 1];
    return { kind: "reversed", amount: String(last.amount), txHash: String(last.txHash), token: last.token, chainId: last.chainId };
  }
  if (invoice.status === "expired" && paid.units > 0n) {
    const late = payments.some((p) => Number(p.timestamp) > Number(invoice.deadline));
    if (tip || compare(paid, value) >= 0) return { kind: late ? "late" : "paid", paid: formatDecimal(paid) };
    return {
      kind: "expiredPartial",
      paid: formatDecimal(paid),
      value: formatDecimal(value),
      missing: formatDecimal(subtract(value, paid)),
    };
  }
  return null;
}
