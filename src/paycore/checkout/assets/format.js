/** Text for people: money in the merchant's currency and the time left to pay. */

/**
 * A vsCurrency amount such as "$25.00". The decimal string goes to Intl as a string, so
 * no digit passes through a double; a currency Intl does not know falls back to "25 XYZ".
 */
export function formatVs(decimalText, currency) {
  const code = String(currency || "usd").toUpperCase();
  try {
    return new Intl.NumberFormat(undefined, {
      style: "currency",
      currency: code,
      maximumFractionDigits: 8,
    }).format(decimalText);
  } catch {
    return `${decimalText} ${code}`;
  }
}

const pad = (n) => String(n).padStart(2, "0");

/**
 * Seconds left as "1:02:03" (or "2 d 3 h 4 min" beyond a day, where seconds are noise);
 * machine-readable as an ISO 8601 duration for a <time>-like datetime attribute.
 */
export function formatCountdown(seconds) {
  const left = Math.max(0, Math.floor(seconds));
  const days = Math.floor(left / 86400);
  const hours = Math.floor((left % 86400) / 3600);
  const minutes = Math.floor((left % 3600) / 60);
  const secs = left % 60;
  const text =
    days > 0 ? `${days} d ${hours} h ${minutes} min` : `${hours}:${pad(minutes)}:${pad(secs)}`;
  return { text, iso: `P${days}DT${hours}H${minutes}M${secs}S` };
}
