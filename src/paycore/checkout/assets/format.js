/** Text for people: money in the merchant's currency, token amounts, and the time left to pay. */

/**
 * A vsCurrency amount such as "$25.00" (en-US), "25,00 €" (de) or "¥3,000" (ja): in the
 * currency's own minor unit (two decimals for USD and EUR, none for JPY), as people read
 * prices. The decimal string goes to Intl as a string, so no digit passes through a double;
 * a currency Intl does not know falls back to "25 XYZ". `locale` is the page's chosen
 * locale (undefined: the browser's).
 */
export function formatVs(decimalText, currency, locale = undefined) {
  const code = String(currency || "usd").toUpperCase();
  try {
    return new Intl.NumberFormat(locale, { style: "currency", currency: code }).format(decimalText);
  } catch {
    return `${decimalText} ${code}`;
  }
}

/**
 * A token amount in the locale's digits and separators, every digit kept ("0,0125" in de).
 * Why keep all digits: this is what the payer types into a wallet, so it must not be rounded.
 * Without grouping, so a long amount reads as one number when copied by hand.
 */
export function formatAmount(decimalText, locale = undefined) {
  const text = String(decimalText);
  const places = text.includes(".") ? text.length - text.indexOf(".") - 1 : 0;
  try {
    return new Intl.NumberFormat(locale, {
      minimumFractionDigits: 0,
      maximumFractionDigits: Math.min(Math.max(places, 0), 100),
      useGrouping: false,
    }).format(text);
  } catch {
    return text;
  }
}

const pad = (n) => String(n).padStart(2, "0");

/**
 * Seconds left as "1:02:03" (or "2 d 3 h 4 min" beyond a day, where seconds are noise;
 * `days` words that in the page's language from {d, h, m}); machine-readable as an ISO 8601
 * duration for a <time>-like datetime attribute.
 */
export function formatCountdown(seconds, days = ({ d, h, m }) => `${d} d ${h} h ${m} min`) {
  const left = Math.max(0, Math.floor(seconds));
  const d = Math.floor(left / 86400);
  const hours = Math.floor((left % 86400) / 3600);
  const minutes = Math.floor((left % 3600) / 60);
  const secs = left % 60;
  const text = d > 0 ? days({ d, h: hours, m: minutes }) : `${hours}:${pad(minutes)}:${pad(secs)}`;
  return { text, iso: `P${d}DT${hours}H${minutes}M${secs}S` };
}
