/**
 * The page's two public reads, GET {prefix}/invoice/{guid} and GET {prefix}/prices.
 *
 * The API prefix is found from the page's own URL ({prefix}/checkout/ or {prefix}/checkout),
 * so the page needs no configuration under any mount prefix or behind a path-rewriting proxy.
 */

/** The API base ("{prefix}/") for a page at `pageUrl`. */
export function apiBase(pageUrl) {
  const url = new URL(pageUrl);
  return new URL(url.pathname.endsWith("/") ? "../" : "./", url);
}

/** An HTTP answer that was not 2xx: its status and the server's one-line text. */
export class HttpError extends Error {
  constructor(status, text) {
    super(`HTTP ${status}: ${text}`);
    this.status = status;
  }
}

/**
 * JSON from `url`, and the server's clock from the Date header (null without one), which the
 * countdown uses so a payer's wrong clock cannot show time that is not there. Cache mode
 * "no-cache": every read goes to the server, which can answer 304 to the ETag of the copy
 * the browser holds; the answer is then that copy.
 */
export async function getJson(url, timeoutMs = 8000) {
  const response = await fetch(url, {
    headers: { accept: "application/json" },
    cache: "no-cache",
    credentials: "same-origin",
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!response.ok) {
    const text = (await response.text()).slice(0, 200);
    throw new HttpError(response.status, text);
  }
  const date = Date.parse(response.headers.get("date") || "");
  return { body: await response.json(), serverTime: Number.isNaN(date) ? null : date };
}

export function invoiceUrl(base, guid) {
  return new URL(`invoice/${encodeURIComponent(guid)}`, base);
}

/** The price snapshot, in `currency` when given (GET /prices?vsCurrency=). */
export function pricesUrl(base, currency = null) {
  const url = new URL("prices", base);
  if (currency) url.searchParams.set("vsCurrency", currency);
  return url;
}

export function qrUrl(base, data) {
  return new URL(`checkout/qr?data=${encodeURIComponent(data)}`, base);
}
