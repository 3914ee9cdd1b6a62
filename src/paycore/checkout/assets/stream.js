/**
 * The invoice's changes pushed to the page: GET {prefix}/invoice/{guid}/events, a public,
 * read-only Server-Sent Events stream whose every message is the public invoice record.
 *
 * Why with a fallback: a server without the stream (an older paycore, a proxy that buffers
 * or cuts long responses) answers 404 or drops the connection; EventSource then closes (an
 * answer that is not text/event-stream) or retries by itself (a lost connection). The page
 * keeps its poll running in both cases, slowly while the stream is open and at the normal
 * pace while it is not, so an update is never lost to a stream that went quiet.
 */

export function eventsUrl(base, guid) {
  return new URL(`invoice/${encodeURIComponent(guid)}/events`, base);
}

/**
 * Follow the stream at `url`: `onInvoice(record)` for each message, `onState(open)` whenever
 * it opens or fails. Returns a function that closes it. Without EventSource: nothing opens.
 */
export function follow(url, onInvoice, onState) {
  if (typeof window.EventSource !== "function") {
    onState(false);
    return () => {};
  }
  let source = new window.EventSource(url.href);
  source.addEventListener("open", () => onState(true));
  source.addEventListener("message", (event) => {
    let record = null;
    try {
      record = JSON.parse(event.data);
    } catch {
      return; // not a record: ignore it, the poll still runs
    }
    if (record && typeof record === "object" && typeof record.status === "string") onInvoice(record);
  });
  source.addEventListener("error", () => {
    onState(false);
    if (source && source.readyState === window.EventSource.CLOSED) {
      source = null; // refused for good (no stream here): polling alone from now on
    }
  });
  return () => {
    if (source) source.close();
    source = null;
  };
}
