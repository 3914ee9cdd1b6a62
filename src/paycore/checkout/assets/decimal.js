/**
 * Exact decimal arithmetic on BigInt, for the amounts a payer is asked to send.
 *
 * Why not Number: an 18-decimal wei amount does not fit a double, and a rounding error in the
 * amount or the QR code could leave a payer one wei short and the invoice partially paid.
 * A decimal is `{ units, scale }`, meaning units / 10 ** scale.
 */

/** Largest exponent accepted, so "1e999999" cannot make us build a huge BigInt. */
const MAX_EXPONENT = 100;

/**
 * A decimal from a decimal string ("12.5", "1e-7") or a JSON number; null if it is neither.
 * @param {string | number} input
 * @returns {{units: bigint, scale: number} | null}
 */
export function parseDecimal(input) {
  if (typeof input === "number" && !Number.isFinite(input)) return null;
  const text = String(input).trim();
  const match = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!match) return null;
  const [, sign, whole, fraction = "", exponent = "0"] = match;
  if (whole === "" && fraction === "") return null;
  const shift = Number(exponent);
  if (Math.abs(shift) > MAX_EXPONENT) return null;
  let units = BigInt((whole || "0") + fraction);
  let scale = fraction.length - shift;
  if (scale < 0) {
    units *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return { units: sign === "-" ? -units : units, scale };
}

/** Both decimals at one scale, so their units can be compared or subtracted. */
function align(a, b) {
  const scale = Math.max(a.scale, b.scale);
  return [
    a.units * 10n ** BigInt(scale - a.scale),
    b.units * 10n ** BigInt(scale - b.scale),
    scale,
  ];
}

/** a - b, exactly. */
export function subtract(a, b) {
  const [x, y, scale] = align(a, b);
  return { units: x - y, scale };
}

/** -1, 0 or 1 as a is below, equal to or above b. */
export function compare(a, b) {
  const [x, y] = align(a, b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * How much of a token buys `vsAmount` at `price` (vsCurrency per whole token), in units of
 * 10 ** -places, rounded UP: a payer who sends the shown amount must never fall short.
 * @returns {bigint | null} null when the price is not positive
 */
export function tokenUnits(vsAmount, price, places) {
  if (price.units <= 0n) return null;
  if (vsAmount.units <= 0n) return 0n;
  const numerator = vsAmount.units * 10n ** BigInt(places + price.scale);
  const denominator = price.units * 10n ** BigInt(vsAmount.scale);
  const quotient = numerator / denominator;
  return numerator % denominator === 0n ? quotient : quotient + 1n;
}

/** The plain decimal text of units / 10 ** places, without trailing zeros or an exponent. */
export function formatUnits(units, places) {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(places + 1, "0");
  const whole = digits.slice(0, digits.length - places);
  const fraction = places > 0 ? digits.slice(digits.length - places).replace(/0+$/, "") : "";
  return (negative ? "-" : "") + whole + (fraction ? "." + fraction : "");
}

/** A decimal as plain text (the inverse of parseDecimal for what it produces). */
export function formatDecimal(value) {
  return formatUnits(value.units, value.scale);
}
