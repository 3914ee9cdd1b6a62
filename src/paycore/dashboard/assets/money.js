/**
 * Money: balances at the owner's wallet and deposit addresses per chain and token, the
 * withdrawal, the refund, and a chart of deposits per day. paycore builds each transaction
 * unsigned (GET /initWithdraw, POST /refund); the owner's wallet signs and sends it.
 */

import { h, s, table, field } from "./dom.js";
import { formatAmount, formatTime, formatVs } from "./i18n.js";
import { capabilities } from "./capabilities.js";
import { sendTransaction } from "./wallet.js";

const DAY = 86400;

/** The deposits' worth per UTC day over the last `days` days, oldest first: [{day, value}]. */
export function perDay(items, now, days = 14) {
  const today = Math.floor(now / DAY);
  const sums = new Map();
  for (let d = today - days + 1; d <= today; d++) sums.set(d, 0);
  for (const item of items) {
    if (item.type !== "deposit") continue;
    const d = Math.floor(item.timestamp / DAY);
    if (sums.has(d)) sums.set(d, sums.get(d) + Number(item.vsValue || 0));
  }
  return [...sums].map(([day, value]) => ({ day, value }));
}

/** A bar chart drawn as SVG by the page itself (no chart library, no CDN), with a text
 *  alternative listing each day's figure for those who cannot see it. */
function chart(app, series, label, currency) {
  const width = 700;
  const height = 180;
  const max = Math.max(1, ...series.map((p) => p.value));
  const band = width / series.length;
  const svg = s(
    "svg",
    { viewBox: `0 0 ${width} ${height + 20}`, role: "img", "aria-label": label },
    s("line", { class: "axis", x1: 0, y1: height, x2: width, y2: height }),
    series.map((p, i) => {
      const bar = Math.round((p.value / max) * (height - 10));
      return s(
        "g",
        {},
        s("rect", { class: "bar", x: i * band + 3, y: height - bar, width: band - 6, height: bar }, s("title", {}, `${new Date(p.day * DAY * 1000).toISOString().slice(0, 10)}: ${p.value}`)),
        series.length <= 31 || i % Math.ceil(series.length / 31) === 0
          ? s("text", { x: i * band + band / 2, y: height + 14, "text-anchor": "middle" }, new Date(p.day * DAY * 1000).toISOString().slice(8, 10))
          : s("g", {}),
      );
    }),
  );
  return h(
    "figure",
    { class: "card chart" },
    h("figcaption", {}, label),
    svg,
    h("details", {}, h("summary", {}, app.t("chartTable")), h("ul", {}, series.map((p) => h("li", {}, `${new Date(p.day * DAY * 1000).toISOString().slice(0, 10)}: ${formatVs(String(p.value), currency, app.locale)}`)))),
  );
}

const RANGES = [7, 14, 30, 90];

/** The range picker, the chart and, where the server has GET /stats, revenue by token and
 *  invoice counts by status. Without it the chart sums the deposits of GET /transactions. */
async function figures(app, transactions) {
  const asked = Number(new URLSearchParams(location.hash.split("?")[1] || "").get("days"));
  const days = RANGES.includes(asked) ? asked : 14;
  const picker = field(app.t("rangeLabel"), {
    id: "range",
    value: String(days),
    options: RANGES.map((n) => [String(n), app.t("lastDays", { n })]),
  });
  picker.input.addEventListener("change", () => app.go(`#/money?days=${picker.input.value}`));
  const top = h("div", { class: "fields range" }, picker.wrap);
  const currency = app.config.vsCurrency || "usd";
  const now = Date.now() / 1000;
  if (!(await capabilities()).stats) {
    return [top, chart(app, perDay(transactions, now, days), app.t("chartLabel", { n: days }), currency)];
  }
  const end = (Math.floor(now / DAY) + 1) * DAY;
  const stats = await app.session.get("stats", { owner: app.session.owner, from: end - days * DAY, to: end });
  const series = stats.days.map((d) => ({ day: Math.floor(d.start / DAY), value: Number(d.revenue) }));
  const money = (v) => formatVs(v, stats.currency, app.locale);
  return [
    top,
    chart(app, series, app.t("chartRevenue", { n: days, total: money(stats.revenue) }), stats.currency),
    h("h2", {}, app.t("byStatus")),
    table(
      ["init", "partialPaid", "paid", "expired"].map((st) => ({ label: app.t(`status_${st}`), num: true })),
      [["init", "partialPaid", "paid", "expired"].map((st) => String(stats.byStatus[st] ?? 0))],
    ),
    h("h2", {}, app.t("byToken")),
    stats.byToken.length
      ? table(
          [{ label: app.t("token") }, { label: app.t("colValue"), num: true }, { label: app.t("navInvoices"), num: true }, { label: app.t("status_paid"), num: true }],
          stats.byToken.map((row) => [h("span", { class: "mono" }, row.token), money(row.revenue), String(row.invoices), String(row.paid)]),
        )
      : h("p", { class: "muted" }, app.t("noInvoices")),
  ];
}

function withdrawForm(app, chainId, row) {
  const id = `${chainId}-${row.token}`;
  const to = field(app.t("withdrawTo"), { value: app.session.owner, id: `to-${id}`, class: "mono" });
  const amount = field(app.t("colAmount"), { value: row.balance, inputmode: "decimal", id: `amount-${id}` });
  const status = h("p", { role: "status", class: "muted" });
  const form = h(
    "form",
    { class: "withdraw", "aria-label": app.t("withdrawOf", { symbol: row.symbol }) },
    h("div", { class: "fields" }, to.wrap, amount.wrap, h("div", {}, h("button", { type: "submit" }, app.t("withdraw")))),
    status,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button");
    button.disabled = true;
    try {
      status.textContent = app.t("building");
      const tx = await app.session.get("initWithdraw", {
        ownerAddress: app.session.owner,
        chainId,
        token: row.token,
        amount: amount.input.value.trim(),
        to: to.input.value.trim(),
      });
      status.textContent = app.t("confirmInWallet", { fee: tx.fee });
      const hash = await sendTransaction(app.ethereum(), app.session.owner, tx);
      status.textContent = app.t("sent", { tx: hash });
      status.dataset.tx = hash;
    } catch (error) {
      status.textContent = app.problem(error);
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

export async function moneyView(app) {
  const chains = Object.entries(app.config.chains || {}).filter(([, c]) => c.kind === "evm");
  const sections = [];
  for (const [chainId, chain] of chains) {
    let rows;
    try {
      rows = await app.session.get("getBalances", { ownerAddress: app.session.owner, chainId });
    } catch (error) {
      sections.push(h("h2", {}, `${chain.name} (${chainId})`), h("p", { class: "notice problem" }, app.problem(error)));
      continue;
    }
    const held = rows.filter((r) => Number(r.balance) > 0);
    sections.push(
      h("h2", {}, `${chain.name} (${chainId})`),
      held.length
        ? table(
            [{ label: app.t("token") }, { label: app.t("walletBalance"), num: true }, { label: app.t("depositBalance"), num: true }, { label: app.t("colValue"), num: true }, { label: app.t("withdraw") }],
            held.map((r) => [
              r.symbol,
              formatAmount(r.walletBalance, app.locale),
              formatAmount(r.depositBalance, app.locale),
              r.vsValue === null ? "—" : formatVs(String(r.vsValue), app.config.vsCurrency, app.locale),
              withdrawForm(app, chainId, r),
            ]),
          )
        : h("p", { class: "muted" }, app.t("noBalance")),
    );
  }
  const recent = await app.session.get("transactions", { owner: app.session.owner, cursor: "first", limit: 200 });
  return h(
    "section",
    { "aria-labelledby": "money-title" },
    h("h1", { id: "money-title" }, app.t("navMoney")),
    ...(await figures(app, recent.items)),
    ...sections,
    h("h2", {}, app.t("transactions")),
    recent.items.length
      ? table(
          [{ label: app.t("colTime") }, { label: app.t("colType") }, { label: app.t("colAmount"), num: true }, { label: app.t("colTx") }],
          recent.items.slice(0, 20).map((x) => [formatTime(x.timestamp, app.locale), app.t(`tx_${x.type}`), formatAmount(x.amount, app.locale), h("span", { class: "mono" }, x.txHash)]),
        )
      : h("p", { class: "muted" }, app.t("noTransactions")),
  );
}

/** The refund form of a paid invoice: token units (or everything left), in a token it was
 *  paid in; paycore records the refund pending and the wallet sends the payout. */
export function refundForm(app, inv, symbol) {
  const tokens = [...new Set(inv.payments.map((p) => `${p.chainId}:${p.token}`))];
  const token = field(app.t("token"), { id: "refund-token", options: tokens.map((id) => [id, symbol(id)]) });
  const amount = field(app.t("refundAmount"), { inputmode: "decimal", id: "refund-amount", placeholder: app.t("everythingLeft") });
  const status = h("p", { role: "status", class: "muted", id: "refund-status" });
  const form = h(
    "form",
    { class: "card", "aria-labelledby": "refund-title" },
    h("h2", { id: "refund-title" }, app.t("refund")),
    h("div", { class: "fields" }, token.wrap, amount.wrap, h("div", {}, h("button", { type: "submit", id: "refund-submit" }, app.t("refund")))),
    status,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button");
    button.disabled = true;
    try {
      const body = { guid: inv.guid, token: token.input.value };
      if (amount.input.value.trim()) body.amount = amount.input.value.trim();
      status.textContent = app.t("building");
      const made = await app.session.post("refund", body, { "idempotency-key": crypto.randomUUID() });
      status.textContent = app.t("confirmInWallet", { fee: made.transaction.fee });
      const hash = await sendTransaction(app.ethereum(), app.session.owner, made.transaction);
      status.textContent = app.t("sent", { tx: hash });
      status.dataset.tx = hash;
    } catch (error) {
      status.textContent = app.problem(error);
      button.disabled = false;
    }
  });
  return form;
}

export { formatTime };
