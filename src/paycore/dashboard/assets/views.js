/**
 * The dashboard's sections, each over the existing HTTP interface (docs/interface.md),
 * every call signed by the session key. A view is `async (app, ...args) => Element`.
 */

import { h, table, field } from "./dom.js";
import { formatTime, formatVs, formatAmount } from "./i18n.js";
import { API, HttpError, personalSignParam } from "./session.js";
import { capabilities } from "./capabilities.js";
import { moneyView, refundForm } from "./money.js";
import { BILLING_VIEWS } from "./billing.js";
import { endpointsSection } from "./endpoints.js";
import { appKeysSection } from "./appkeys.js";

/** A token's symbol: the invoice's tokenInfo, else the merchant's `data.symbol` hint (the
 *  checkout page's convention: one value, or a map by token id), else its short address. */
export function tokenSymbol(inv, tokenId) {
  const known = ((inv.tokenInfo || {})[tokenId] || {}).symbol;
  if (known) return known;
  const hint = (inv.data || {}).symbol;
  if (typeof hint === "string" && tokenId === inv.token) return hint;
  if (hint && typeof hint === "object" && typeof hint[tokenId] === "string") return hint[tokenId];
  return tokenId.split(":")[1].slice(0, 10) + "…";
}

const badge = (app, status) => h("span", { class: `badge ${status}` }, app.t(`status_${status}`));
const PAGE = 20;
/** Pages a text search walks when the server has no search of its own (GET /invoices). */
const SEARCH_PAGES = 40;

/** Whether an invoice matches a text: its id, description or any value of its `data`
 *  (an order id), case-insensitively. */
export function matches(invoice, text) {
  const needle = text.trim().toLowerCase();
  if (!needle) return true;
  const hay = [invoice.guid, invoice.description, JSON.stringify(invoice.data || {})].join("\n").toLowerCase();
  return hay.includes(needle);
}

/** A date input's day as unix seconds at 00:00 UTC, or null when empty. */
const daySeconds = (value) => (value ? Math.floor(Date.parse(value + "T00:00:00Z") / 1000) : null);

function invoiceRows(app, items) {
  return table(
    [
      { label: app.t("colCreated") },
      { label: app.t("colDescription") },
      { label: app.t("colStatus") },
      { label: app.t("colValue"), num: true },
      { label: app.t("colPaid"), num: true },
    ],
    items.map((inv) => [
      formatTime(inv.createdAt, app.locale),
      h("a", { href: `#/invoice/${encodeURIComponent(inv.guid)}`, class: "invoice-link" }, inv.description || inv.guid),
      badge(app, inv.status),
      formatVs(inv.value, inv.vsCurrency, app.locale),
      formatVs(inv.paidAmount, inv.vsCurrency, app.locale),
    ]),
  );
}

async function invoicesView(app) {
  const hashQuery = new URLSearchParams(location.hash.split("?")[1] || "");
  const text = hashQuery.get("q") || "";
  const status = hashQuery.get("status") || "";
  const from = hashQuery.get("from") || "";
  const to = hashQuery.get("to") || "";
  const cursor = hashQuery.get("cursor") || "first";
  const names = (await capabilities()).invoiceQuery;
  // The server's search (GET /invoices with q, status, createdFrom, createdTo), where this
  // paycore has it; its text takes 3 characters at least, a shorter one is matched here.
  const server = names.has("q") && names.has("createdFrom");
  const serverText = server && text.trim().length >= 3;

  let items = [];
  let page = null;
  let walked = 0;
  if (server || (!text && !status)) {
    const query = { owner: app.session.owner, cursor, limit: PAGE };
    if (serverText) query.q = text.trim();
    if (server && status) query.status = status;
    if (server && from) query.createdFrom = daySeconds(from);
    if (server && to) query.createdTo = daySeconds(to) + 86400; // the whole last day
    page = await app.session.get("invoices", query);
    items = page.items.filter((inv) => (serverText || matches(inv, text)) && (!status || inv.status === status));
  } else {
    // no search on the server: walk the owner's pages, newest first, and match here
    let next = "first";
    for (let i = 0; i < SEARCH_PAGES && next && items.length < PAGE; i++) {
      const got = await app.session.get("invoices", { owner: app.session.owner, cursor: next, limit: 50 });
      walked += got.items.length;
      items.push(...got.items.filter((inv) => matches(inv, text) && (!status || inv.status === status)));
      next = got.nextCursor;
    }
  }

  const search = field(app.t("searchLabel"), { type: "search", name: "q", value: text, id: "search" });
  const statusSel = field(app.t("colStatus"), {
    id: "status-filter",
    name: "status",
    value: status,
    options: [["", app.t("statusAny")], ...["init", "partialPaid", "paid", "expired"].map((s) => [s, app.t(`status_${s}`)])],
  });
  const fromField = field(app.t("fromDate"), { type: "date", id: "created-from", value: from });
  const toField = field(app.t("toDateIncluded"), { type: "date", id: "created-to", value: to });
  const form = h(
    "form",
    { role: "search", class: "card", "aria-label": app.t("searchLabel") },
    h(
      "div",
      { class: "fields" },
      search.wrap,
      statusSel.wrap,
      server ? fromField.wrap : null,
      server ? toField.wrap : null,
      h("div", {}, h("button", { type: "submit" }, app.t("search"))),
    ),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const q = new URLSearchParams();
    if (search.input.value.trim()) q.set("q", search.input.value.trim());
    if (statusSel.input.value) q.set("status", statusSel.input.value);
    if (server && fromField.input.value) q.set("from", fromField.input.value);
    if (server && toField.input.value) q.set("to", toField.input.value);
    app.go(`#/invoices${q.toString() ? "?" + q : ""}`);
  });

  const nav = h("div", { class: "actions" });
  if (page && (page.prevCursor || page.nextCursor)) {
    const to = (c) => {
      const q = new URLSearchParams(hashQuery);
      q.set("cursor", c);
      return `#/invoices?${q}`;
    };
    if (page.prevCursor) nav.append(h("a", { class: "button", href: to(page.prevCursor), rel: "prev" }, app.t("newer")));
    if (page.nextCursor) nav.append(h("a", { class: "button", href: to(page.nextCursor), rel: "next" }, app.t("older")));
  }
  const summary = page
    ? app.t(page.totalCapped ? "invoicesCountCapped" : "invoicesCount", { total: page.total })
    : app.t("searchedCount", { n: walked, found: items.length });
  return h(
    "section",
    { "aria-labelledby": "invoices-title" },
    h("h1", { id: "invoices-title" }, app.t("navInvoices")),
    form,
    h("p", { class: "muted", id: "invoices-summary", role: "status" }, summary),
    items.length ? invoiceRows(app, items) : h("p", { class: "notice" }, app.t("noInvoices")),
    nav,
  );
}

function timeline(app, inv, deliveries) {
  const events = [[inv.createdAt, app.t("evCreated")]];
  for (const p of inv.payments || []) events.push([p.timestamp, app.t("evPayment", { amount: formatAmount(p.amount, app.locale), tx: p.txHash.slice(0, 12) })]);
  for (const r of inv.refunds || []) {
    events.push([r.createdAt, app.t("evRefund", { amount: formatAmount(r.amount, app.locale) })]);
    if (r.settledAt) events.push([r.settledAt, app.t(r.status === "cancelled" ? "evRefundCancelled" : "evRefundConfirmed")]);
  }
  if (inv.status === "expired") events.push([inv.deadline, app.t("status_expired")]);
  for (const d of deliveries) {
    for (const a of d.attempts || []) {
      events.push([Math.floor(a.attemptedAt / 1000), app.t("evWebhook", { code: a.statusCode ?? a.error ?? "-" })]);
    }
  }
  events.sort((a, b) => a[0] - b[0]);
  return h("ol", { class: "timeline" }, events.map(([at, text]) => h("li", {}, h("span", { class: "muted" }, formatTime(at, app.locale)), " ", text)));
}

/** Cancel a pending refund whose payout will not be sent (POST /refund/cancel): what it
 *  held becomes refundable again. Only for a transaction that will never be mined. */
function cancelRefund(app, refund) {
  const button = h("button", { type: "button", class: "secondary", dataset: { refund: refund.id } }, app.t("cancelRefund"));
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await app.session.post("refund/cancel", { refundId: refund.id });
      app.say(app.t("refundCancelled"));
      await app.route();
    } catch (error) {
      app.say(app.problem(error));
      button.disabled = false;
    }
  });
  return button;
}

async function invoiceView(app, guid) {
  const inv = await app.session.get(`invoice/${encodeURIComponent(guid)}`);
  let deliveries = [];
  try {
    deliveries = (await app.session.get("webhook/deliveries", { owner: app.session.owner, guid, limit: 50 })).items;
  } catch {
    deliveries = [];
  }
  const symbol = (tokenId) => tokenSymbol(inv, tokenId);
  const facts = h(
    "dl",
    { class: "facts" },
    h("dt", {}, app.t("colStatus")), h("dd", {}, badge(app, inv.status)),
    h("dt", {}, app.t("colValue")), h("dd", {}, formatVs(inv.value, inv.vsCurrency, app.locale)),
    h("dt", {}, app.t("colPaid")), h("dd", {}, formatVs(inv.paidAmount, inv.vsCurrency, app.locale)),
    h("dt", {}, app.t("refunded")), h("dd", {}, formatVs(inv.refundedAmount, inv.vsCurrency, app.locale)),
    h("dt", {}, app.t("colCreated")), h("dd", {}, formatTime(inv.createdAt, app.locale)),
    h("dt", {}, app.t("deadline")), h("dd", {}, formatTime(inv.deadline, app.locale)),
    h("dt", {}, app.t("address")), h("dd", { class: "mono" }, inv.address),
    h("dt", {}, app.t("data")), h("dd", { class: "mono" }, JSON.stringify(inv.data || {})),
    h("dt", {}, app.t("checkoutLink")), h("dd", {}, h("a", { href: inv.paymentUrl, rel: "noopener", target: "_blank" }, app.t("openCheckout"))),
  );
  const payments = (inv.payments || []).length
    ? table(
        [{ label: app.t("colTime") }, { label: app.t("colAmount"), num: true }, { label: app.t("colFrom") }, { label: app.t("colTx") }],
        inv.payments.map((p) => [
          formatTime(p.timestamp, app.locale),
          `${formatAmount(p.amount, app.locale)} ${symbol(`${p.chainId}:${p.token}`)}`,
          h("span", { class: "mono" }, p.from),
          h("span", { class: "mono" }, p.txHash),
        ]),
      )
    : h("p", { class: "muted" }, app.t("noPayments"));
  const refunds = (inv.refunds || []).length
    ? table(
        [{ label: app.t("colCreated") }, { label: app.t("colAmount"), num: true }, { label: app.t("colTo") }, { label: app.t("colStatus") }, { label: app.t("colAction") }],
        inv.refunds.map((r) => [
          formatTime(r.createdAt, app.locale),
          `${formatAmount(r.amount, app.locale)} ${symbol(`${r.chainId}:${r.token}`)}`,
          h("span", { class: "mono" }, r.to),
          badge(app, r.status),
          r.status === "pending" ? cancelRefund(app, r) : "",
        ]),
      )
    : h("p", { class: "muted" }, app.t("noRefunds"));
  const canRefund = (inv.payments || []).length && (inv.status === "paid" || inv.status === "expired");
  return h(
    "section",
    { "aria-labelledby": "invoice-title" },
    h("p", {}, h("a", { href: "#/invoices" }, app.t("backToInvoices"))),
    h("h1", { id: "invoice-title" }, inv.description || inv.guid),
    h("p", { class: "muted mono" }, inv.guid),
    h("div", { class: "card" }, facts),
    h("h2", {}, app.t("payments")),
    payments,
    h("h2", {}, app.t("refunds")),
    refunds,
    canRefund ? refundForm(app, inv, symbol) : null,
    h("h2", {}, app.t("timeline")),
    timeline(app, inv, deliveries),
  );
}

async function webhooksView(app) {
  const [endpoints, deliveries] = await Promise.all([
    app.session.get("webhook/endpoints", { owner: app.session.owner }),
    app.session.get("webhook/deliveries", { owner: app.session.owner, limit: 50 }),
  ]);
  const redeliver = (d) => {
    const button = h("button", { type: "button", class: "secondary", dataset: { delivery: d.id } }, app.t("redeliver"));
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        await app.session.post("webhook/redeliver", { id: d.id });
        app.say(app.t("redelivered", { id: d.id }));
        await app.route();
      } catch (error) {
        app.say(app.problem(error));
        button.disabled = false;
      }
    });
    return button;
  };
  const attempts = (d) =>
    h(
      "details",
      {},
      h("summary", {}, app.t("attempts", { n: d.attempts.length })),
      h("ul", {}, d.attempts.map((a) => h("li", {}, `${formatTime(Math.floor(a.attemptedAt / 1000), app.locale)} · ${a.statusCode ?? "-"} · ${a.error ?? "ok"} · ${a.latencyMs} ms`))),
    );
  return h(
    "section",
    { "aria-labelledby": "webhooks-title" },
    h("h1", { id: "webhooks-title" }, app.t("navWebhooks")),
    h("h2", {}, app.t("endpoints")),
    endpointsSection(app, endpoints.items),
    h("h2", {}, app.t("deliveries")),
    deliveries.items.length
      ? table(
          [{ label: app.t("colId") }, { label: app.t("colInvoice") }, { label: app.t("colStatus") }, { label: app.t("colCreated") }, { label: app.t("attemptsTitle") }, { label: app.t("colAction") }],
          deliveries.items.map((d) => [
            String(d.id),
            h("a", { href: `#/invoice/${encodeURIComponent(d.guid)}`, class: "mono" }, d.guid.slice(0, 8)),
            badge(app, d.status),
            formatTime(Math.floor(d.createdAt / 1000), app.locale),
            attempts(d),
            redeliver(d),
          ]),
        )
      : h("p", { class: "muted" }, app.t("noDeliveries")),
  );
}

async function linksView(app) {
  const links = await app.session.get("links", { owner: app.session.owner, limit: 50 });
  const chains = Object.entries(app.config.chains || {});
  const description = field(app.t("colDescription"), { required: true, id: "link-description" });
  const amount = field(app.t("linkAmount", { currency: (app.config.vsCurrency || "usd").toUpperCase() }), { inputmode: "decimal", required: true, id: "link-amount" });
  const chain = field(app.t("chain"), { id: "link-chain", options: chains.map(([id, c]) => [id, `${c.name} (${id})`]) });
  const form = h(
    "form",
    { class: "card", "aria-labelledby": "link-new" },
    h("h2", { id: "link-new" }, app.t("newLink")),
    h("div", { class: "fields" }, description.wrap, amount.wrap, chain.wrap, h("div", {}, h("button", { type: "submit" }, app.t("create")))),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const chainId = Number(chain.input.value);
      await app.session.post(
        "link",
        { description: description.input.value, amount: amount.input.value.trim(), chainId, acceptedTokens: [`${chainId}:0x0000000000000000000000000000000000000000`] },
        { "idempotency-key": crypto.randomUUID() },
      );
      app.say(app.t("linkCreated"));
      await app.route();
    } catch (error) {
      app.say(app.problem(error));
    }
  });
  const disable = (link) => {
    if (link.state !== "active") return "";
    const b = h("button", { type: "button", class: "secondary" }, app.t("disable"));
    b.addEventListener("click", async () => {
      try {
        await app.session.post("link/disable", { id: link.id });
        await app.route();
      } catch (error) {
        app.say(app.problem(error));
      }
    });
    return b;
  };
  return h(
    "section",
    { "aria-labelledby": "links-title" },
    h("h1", { id: "links-title" }, app.t("navLinks")),
    chains.length ? form : null,
    links.items.length
      ? table(
          [{ label: app.t("colDescription") }, { label: app.t("colValue"), num: true }, { label: app.t("colStatus") }, { label: app.t("uses") }, { label: app.t("colUrl") }, { label: app.t("colAction") }],
          links.items.map((l) => [
            l.description,
            l.amount === null ? app.t("buyerChooses") : formatVs(l.amount, l.vsCurrency, app.locale),
            badge(app, l.state),
            String(l.uses),
            h("a", { href: l.url, class: "mono", rel: "noopener", target: "_blank" }, l.url),
            disable(l),
          ]),
        )
      : h("p", { class: "muted" }, app.t("noLinks")),
  );
}

async function profileView(app) {
  let profile = { name: "", logoUrl: "", support: "" };
  try {
    profile = await app.session.get("merchant/profile", { owner: app.session.owner });
  } catch (error) {
    if (error.status !== 404) throw error;
  }
  const name = field(app.t("profileName"), { value: profile.name || "", required: true, id: "profile-name" });
  const logo = field(app.t("profileLogo"), { value: profile.logoUrl || "", type: "url", id: "profile-logo" });
  const support = field(app.t("profileSupport"), { value: profile.support || "", id: "profile-support" });
  const form = h(
    "form",
    { class: "card" },
    h("div", { class: "fields" }, name.wrap, logo.wrap, support.wrap),
    h("div", { class: "actions" }, h("button", { type: "submit" }, app.t("save"))),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const body = { name: name.input.value };
      if (logo.input.value.trim()) body.logoUrl = logo.input.value.trim();
      if (support.input.value.trim()) body.support = support.input.value.trim();
      await app.session.post("merchant/profile", body);
      app.say(app.t("saved"));
    } catch (error) {
      app.say(app.problem(error));
    }
  });
  return h(
    "section",
    { "aria-labelledby": "profile-title" },
    h("h1", { id: "profile-title" }, app.t("navProfile")),
    h("p", { class: "muted" }, app.t("profileText")),
    form,
    emailForm(app),
  );
}

/** Where deposit and withdrawal notices of a chain go (POST /setEmailNotifications). The call
 *  is salt-signed: the wallet signs JSON.stringify of the body with the current time as its
 *  salt (docs/interface.md, "Salt-signed calls"); sending stays off until the operator
 *  approves the address. */
function emailForm(app) {
  const chains = Object.entries(app.config.chains || {}).filter(([, c]) => c.kind === "evm");
  if (!chains.length) return null;
  const email = field(app.t("emailLabel"), { type: "email", id: "notify-email", autocomplete: "email" });
  const chain = field(app.t("chain"), { id: "notify-chain", options: chains.map(([id, c]) => [id, `${c.name} (${id})`]) });
  const status = h("p", { role: "status", class: "muted", id: "notify-status" });
  const form = h(
    "form",
    { class: "card", "aria-labelledby": "notify-title" },
    h("h2", { id: "notify-title" }, app.t("notifyTitle")),
    h("p", { class: "muted" }, app.t("notifyText")),
    h("div", { class: "fields" }, email.wrap, chain.wrap, h("div", {}, h("button", { type: "submit", id: "notify-save" }, app.t("save")))),
    status,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const body = { emailAddress: email.input.value.trim(), chainId: Number(chain.input.value), salt: Math.floor(Date.now() / 1000) };
      status.textContent = app.t("signingIn");
      const signature = await app.ethereum().request({
        method: "personal_sign",
        params: [personalSignParam(JSON.stringify(body)), app.session.owner],
      });
      const response = await fetch(new URL("setEmailNotifications", API), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ...body, signature }),
      });
      const text = await response.text();
      if (!response.ok) throw new HttpError(response.status, text);
      const stored = JSON.parse(text);
      status.textContent = app.t(stored.enabled ? "notifyOn" : "notifyPending", { email: stored.emailAddress });
      status.dataset.saved = stored.emailAddress;
    } catch (error) {
      status.textContent = app.problem(error);
    }
  });
  return form;
}

async function keysView(app) {
  const [sessions, appKeys] = await Promise.all([
    app.session.get("auth/pubkeys", { owner: app.session.owner }),
    fetch(new URL("getAppKeys", API), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ownerAddress: app.session.owner }) }).then((r) => (r.ok ? r.json() : [])),
  ]);
  return h(
    "section",
    { "aria-labelledby": "keys-title" },
    h("h1", { id: "keys-title" }, app.t("navKeys")),
    h("h2", {}, app.t("sessionKeys")),
    table(
      [{ label: app.t("colKey") }, { label: app.t("colCreated") }, { label: app.t("expires") }],
      sessions.pubkeys.map((k) => [
        h("span", { class: "mono" }, `${k.publicKey.slice(0, 18)}…${k.publicKey === app.session.publicKey ? " " + app.t("thisBrowser") : ""}`),
        formatTime(k.registeredAt, app.locale),
        formatTime(k.expiresAt, app.locale),
      ]),
    ),
    h("h2", {}, app.t("appKeys")),
    appKeysSection(app, appKeys),
  );
}

async function exportView(app) {
  const from = field(app.t("fromDate"), { type: "date", id: "export-from" });
  const to = field(app.t("toDate"), { type: "date", id: "export-to" });
  const format = field(app.t("format"), { id: "export-format", options: [["csv", "CSV"], ["jsonl", "JSON lines"]] });
  const status = h("p", { role: "status", class: "muted", id: "export-status" });
  const form = h(
    "form",
    { class: "card" },
    h("div", { class: "fields" }, from.wrap, to.wrap, format.wrap, h("div", {}, h("button", { type: "submit", id: "export-download" }, app.t("download")))),
    status,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const seconds = (input) => (input.value ? Math.floor(Date.parse(input.value + "T00:00:00Z") / 1000) : null);
    const kind = format.input.value;
    try {
      status.textContent = app.t("loading");
      const response = await app.session.call("GET", "export", {
        raw: true,
        query: { owner: app.session.owner, format: kind, from: seconds(from.input), to: seconds(to.input) },
      });
      const blob = await response.blob();
      const rows = (await blob.text()).split("\n").filter((l) => l.trim()).length - (kind === "csv" ? 1 : 0);
      const link = h("a", { href: URL.createObjectURL(blob), download: `paycore-export.${kind === "csv" ? "csv" : "jsonl"}` });
      document.body.append(link);
      link.click();
      link.remove();
      status.textContent = app.t("exported", { n: rows });
    } catch (error) {
      status.textContent = app.problem(error);
    }
  });
  return h("section", { "aria-labelledby": "export-title" }, h("h1", { id: "export-title" }, app.t("navExport")), h("p", { class: "muted" }, app.t("exportText")), form);
}

export const VIEWS = {
  invoices: invoicesView,
  invoice: invoiceView,
  money: moneyView,
  webhooks: webhooksView,
  links: linksView,
  profile: profileView,
  keys: keysView,
  export: exportView,
  ...BILLING_VIEWS,
};
