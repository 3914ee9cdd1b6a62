/** What this paycore can do beyond the base interface, read from its OpenAPI document once:
 *  the dashboard uses the server's invoice search and GET /stats where they exist, and
 *  falls back to what every paycore answers where they do not. */

import { API } from "./session.js";

let served = null;
/** The server's operations as the page needs them: the query names GET /invoices declares
 *  (its search filters, where this paycore has them) and whether GET /stats exists. */
export async function capabilities() {
  if (served) return served;
  try {
    const doc = await (await fetch(new URL("openapi.json", API))).json();
    const op = ((doc.paths || {})["/invoices"] || {}).get || {};
    served = { invoiceQuery: new Set((op.parameters || []).map((p) => p.name)), stats: Boolean((doc.paths || {})["/stats"]) };
  } catch {
    served = { invoiceQuery: new Set(), stats: false };
  }
  return served;
}

