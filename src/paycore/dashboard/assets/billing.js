/**
 * Recurring billing and batch payouts in the dashboard (docs/subscriptions.md,
 * docs/payouts.md): the owner's plans and subscriptions with their periods, and a batch of
 * payouts from a CSV that the owner's own wallet sends. Every call is session-signed; the
 * wallet sends the unsigned transactions paycore builds, as for a withdrawal.
 */

import { h, table, field } from "./dom.js";
import { formatTime, formatVs, formatAmount } from "./i18n.js";
import { HttpError } from "./session.js";
import { sendTransaction } from "./wallet.js";

const ZERO = "0x0000000000000000000000000000000000000000";
const badge = (app, status) => h("span", { class: `badge ${status}` }, app.t(`status_${status}`));
const short = (text) => (text && text.length > 14 ? `${text.slice(0, 8)}…${text.slice(-4)}` : text || "");

/** The POST /plan body from the form's texts: numbers where the interface wants numbers,
 *  optional days left out when empty, and the accepted tokens as `{chainId}:{address}`
 *  (a bare address is taken on the plan's chain; none at all means the chain's coin). */
export function planBody(values) {
  const chainId = Number(values.chainId);
  const tokens = String(values.tokens || "")
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((t) => (t.includes(":") ? t : `${chainId}:${t}`));
  const body = {
    name: String(values.name || "").trim(),
    amount: String(values.amount || "").trim(),
    chainId,
    acceptedTokens: tokens.length ? tokens : [`${chainId}:${ZERO}`],
    periodUnit: values.periodUnit,
    periodCount: Number(values.periodCount),
  };
  if (values.currency) body.currency = values.currency;
  for (const name of ["trialDays", "graceDays"]) {
    if (String(values[name] ?? "").trim() !== "") body[name] = Number(values[name]);
  }
  return body;
}

/** The bad rows of a refused upload, from the 400's text (`line 3: address: not a ...`),
 *  in its order, and how many more the server did not name (`... and N more`). */
export function badRows(text) {
  const rows = [];
  let more = 0;
  for (const line of String(text || "").split("\n")) {
    const row = /^line (\d+): ([^:]+): (.*)$/.exec(line.trim());
    if (row) rows.push({ line: Number(row[1]), field: row[2], message: row[3] });
    const rest = /^\.\.\. and (\d+) more/.exec(line.trim());
    if (rest) more = Number(rest[1]);
  }
  return { rows, more };
}

/** The transactions of a batch in the order the wallet sends them: the approvals first (the
 *  contract spends the owner's tokens), then the `pay` calls; only the latter are confirmed. */
export function payoutCalls(answer) {
  return [
    ...(answer.approvals || []).map((tx) => ({ kind: "approve", tx })),
    ...(answer.transactions || []).map((tx) => ({ kind: "pay", tx })),
  ];
}

const periodText = (app, plan) => app.t(plan.periodUnit === "day" ? "everyDays" : "everyMonths", { n: plan.periodCount });

function planForm(app) {
  const chains = Object.entries(app.config.chains || {}).filter(([, c]) => c.kind === "evm");
  const currency = (app.config.vsCurrency || "usd").toLowerCase();
  const name = field(app.t("planName"), { required: true, id: "plan-name", maxlength: 100 });
  const amount = field(app.t("linkAmount", { currency: currency.toUpperCase() }), { inputmode: "decimal", required: true, id: "plan-amount" });
  const chain = field(app.t("chain"), { id: "plan-chain", options: chains.map(([id, c]) => [id, `${c.name} (${id})`]) });
  const tokens = field(app.t("planTokens"), { id: "plan-tokens", placeholder: ZERO });
  const unit = field(app.t("periodUnit"), { id: "plan-unit", value: "month", options: [["month", app.t("months")], ["day", app.t("days")]] });
  const count = field(app.t("periodCount"), { type: "number", min: 1, max: 365, value: 1, required: true, id: "plan-count" });
  const trial = field(app.t("trialDays"), { type: "number", min: 0, max: 365, id: "plan-trial", placeholder: "0" });
  const grace = field(app.t("graceDays"), { type: "number", min: 0, max: 90, id: "plan-grace", placeholder: "0" });
  const status = h("p", { role: "status", class: "muted", id: "plan-status" });
  const form = h(
    "form",
    { class: "card", "aria-labelledby": "plan-new" },
    h("h2", { id: "plan-new" }, app.t("newPlan")),
    h(
      "div",
      { class: "fields" },
      [name, amount, chain, tokens, unit, count, trial, grace].map((f) => f.wrap),
      h("div", {}, h("button", { type: "submit", id: "plan-create" }, app.t("create"))),
    ),
    status,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const body = planBody({
        name: name.input.value,
        amount: amount.input.value,
        chainId: chain.input.value,
        tokens: tokens.input.value,
        periodUnit: unit.input.value,
        periodCount: count.input.value,
        trialDays: trial.input.value,
        graceDays: grace.input.value,
        currency,
      });
      await app.session.post("plan", body, { "idempotency-key": crypto.randomUUID() });
      app.say(app.t("planCreated"));
      await app.route();
    } catch (error) {
      status.textContent = app.problem(error);
    }
  });
  return chains.length ? form : null;
}

function subscribeForm(app, plans) {
  if (!plans.length) return null;
  const plan = field(app.t("plan"), { id: "sub-plan", options: plans.map((p) => [p.id, p.name]) });
  const reference = field(app.t("subReference"), { required: true, id: "sub-reference", maxlength: 128 });
  const email = field(app.t("subEmail"), { type: "email", id: "sub-email", autocomplete: "off" });
  const status = h("p", { role: "status", class: "muted", id: "sub-status" });
  const form = h(
    "form",
    { class: "card", "aria-labelledby": "sub-new" },
    h("h2", { id: "sub-new" }, app.t("newSubscription")),
    h("div", { class: "fields" }, plan.wrap, reference.wrap, email.wrap, h("div", {}, h("button", { type: "submit", id: "sub-create" }, app.t("create")))),
    status,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const body = { planId: plan.input.value, reference: reference.input.value.trim() };
      if (email.input.value.trim()) body.email = email.input.value.trim();
      const made = await app.session.post("subscription", body, { "idempotency-key": crypto.randomUUID() });
      app.go(`#/subscription/${encodeURIComponent(made.id)}`);
    } catch (error) {
      status.textContent = app.problem(error);
    }
  });
  return form;
}

async function subscriptionsView(app) {
  const [plans, subs] = await Promise.all([
    app.session.get("plans", { owner: app.session.owner, limit: 50 }),
    app.session.get("subscriptions", { owner: app.session.owner, limit: 50 }),
  ]);
  const byId = Object.fromEntries(plans.items.map((p) => [p.id, p]));
  return h(
    "section",
    { "aria-labelledby": "subscriptions-title" },
    h("h1", { id: "subscriptions-title" }, app.t("navSubscriptions")),
    h("h2", {}, app.t("plans")),
    plans.items.length
      ? table(
          [{ label: app.t("planName") }, { label: app.t("colValue"), num: true }, { label: app.t("period") }, { label: app.t("trialDays") }, { label: app.t("graceDays") }, { label: app.t("colId") }],
          plans.items.map((p) => [
            p.name,
            formatVs(p.amount, p.currency, app.locale),
            periodText(app, p),
            String(p.trialDays),
            String(p.graceDays),
            h("span", { class: "mono" }, short(p.id)),
          ]),
        )
      : h("p", { class: "muted" }, app.t("noPlans")),
    planForm(app),
    h("h2", {}, app.t("subscriptionsTitle")),
    subs.items.length
      ? table(
          [{ label: app.t("subReference") }, { label: app.t("plan") }, { label: app.t("colStatus") }, { label: app.t("nextInvoice") }, { label: app.t("colCreated") }],
          subs.items.map((s) => [
            h("a", { href: `#/subscription/${encodeURIComponent(s.id)}`, class: "subscription-link" }, s.reference),
            (byId[s.planId] || {}).name || short(s.planId),
            badge(app, s.status),
            s.nextInvoiceAt ? formatTime(s.nextInvoiceAt, app.locale) : "–",
            formatTime(s.createdAt, app.locale),
          ]),
        )
      : h("p", { class: "muted" }, app.t("noSubscriptions")),
    subscribeForm(app, plans.items),
  );
}

async function subscriptionView(app, id) {
  const sub = await app.session.get(`subscriptions/${encodeURIComponent(id)}`, { owner: app.session.owner });
  const cancel = h("button", { type: "button", class: "secondary", id: "sub-cancel" }, app.t("cancelSubscription"));
  cancel.addEventListener("click", async () => {
    cancel.disabled = true;
    try {
      await app.session.post("subscription/cancel", { id: sub.id });
      app.say(app.t("subscriptionCancelled"));
      await app.route();
    } catch (error) {
      app.say(app.problem(error));
      cancel.disabled = false;
    }
  });
  const facts = h(
    "dl",
    { class: "facts" },
    h("dt", {}, app.t("colStatus")), h("dd", {}, badge(app, sub.status)),
    h("dt", {}, app.t("plan")), h("dd", {}, `${sub.plan.name} · ${formatVs(sub.plan.amount, sub.plan.currency, app.locale)} · ${periodText(app, sub.plan)}`),
    h("dt", {}, app.t("subEmail")), h("dd", {}, sub.email || "–"),
    h("dt", {}, app.t("colCreated")), h("dd", {}, formatTime(sub.createdAt, app.locale)),
    h("dt", {}, app.t("nextInvoice")), h("dd", {}, sub.nextInvoiceAt ? formatTime(sub.nextInvoiceAt, app.locale) : "–"),
    h("dt", {}, app.t("subscriberPage")), h("dd", {}, h("a", { href: sub.url, rel: "noopener", target: "_blank", id: "subscriber-page" }, app.t("openSubscriberPage"))),
  );
  const periods = sub.periods.length
    ? table(
        [{ label: app.t("period") }, { label: app.t("dueAt") }, { label: app.t("colStatus") }, { label: app.t("colInvoice") }, { label: app.t("checkoutLink") }],
        sub.periods.map((p) => [
          String(p.index + 1),
          formatTime(p.dueAt, app.locale),
          badge(app, p.status),
          h("a", { href: `#/invoice/${encodeURIComponent(p.guid)}`, class: "mono period-invoice" }, short(p.guid)),
          p.invoice && p.invoice.paymentUrl ? h("a", { href: p.invoice.paymentUrl, rel: "noopener", target: "_blank" }, app.t("openCheckout")) : "–",
        ]),
      )
    : h("p", { class: "muted" }, app.t("noPeriods"));
  return h(
    "section",
    { "aria-labelledby": "subscription-title" },
    h("p", {}, h("a", { href: "#/subscriptions" }, app.t("backToSubscriptions"))),
    h("h1", { id: "subscription-title" }, sub.reference),
    h("p", { class: "muted mono" }, sub.id),
    h("div", { class: "card" }, facts, sub.status !== "cancelled" ? h("div", { class: "actions" }, cancel) : null),
    h("h2", {}, app.t("periods")),
    periods,
  );
}

const HASHES = "paycore-dashboard-payout-";

/** Send a built batch through the wallet, approvals first, then confirm the `pay` calls. */
async function sendBatch(app, made, status) {
  const hashes = [];
  const calls = payoutCalls(made);
  for (const [i, call] of calls.entries()) {
    status.textContent = app.t("sendingCall", { i: i + 1, n: calls.length });
    const hash = await sendTransaction(app.ethereum(), app.session.owner, call.tx);
    if (call.kind === "pay") hashes.push(hash);
  }
  sessionStorage.setItem(HASHES + made.batch.id, JSON.stringify(hashes));
  await app.session.post("payouts/confirm", { batchId: made.batch.id, txHashes: hashes });
  app.go(`#/payout/${encodeURIComponent(made.batch.id)}`);
}

function builtBatch(app, made) {
  const status = h("p", { role: "status", class: "muted", id: "payout-send-status" });
  const send = h("button", { type: "button", id: "payout-send" }, app.t("sendWithWallet"));
  send.addEventListener("click", async () => {
    send.disabled = true;
    try {
      await sendBatch(app, made, status);
    } catch (error) {
      status.textContent = app.problem(error);
      send.disabled = false;
    }
  });
  const calls = payoutCalls(made);
  return h(
    "div",
    { class: "card", id: "payout-built" },
    h("h2", {}, app.t("batchBuilt", { n: made.payouts.length })),
    h("p", { class: "muted" }, app.t("batchBuiltText", { n: calls.length })),
    table(
      [{ label: app.t("colType") }, { label: app.t("colTo") }],
      calls.map((c) => [app.t(c.kind === "approve" ? "callApprove" : "callPay"), h("span", { class: "mono" }, c.tx.to)]),
    ),
    payoutRows(app, made.payouts),
    h("div", { class: "actions" }, send),
    status,
  );
}

function payoutRows(app, payouts) {
  return table(
    [{ label: app.t("colLine") }, { label: app.t("colTo") }, { label: app.t("token") }, { label: app.t("colAmount"), num: true }, { label: app.t("subReference") }, { label: app.t("colStatus") }, { label: app.t("colTx") }],
    payouts.map((p) => [
      String(p.line),
      h("span", { class: "mono" }, p.to),
      h("span", { class: "mono" }, short(p.token)),
      formatAmount(p.amount, app.locale),
      p.reference || "–",
      badge(app, p.status),
      p.txHash ? h("span", { class: "mono" }, short(p.txHash)) : "–",
    ]),
  );
}

function refusal(app, error) {
  const { rows, more } = badRows(error instanceof HttpError ? error.body || error.message : "");
  if (!rows.length) return h("p", { class: "notice problem", role: "alert" }, app.problem(error));
  return h(
    "div",
    { class: "notice problem", role: "alert", id: "payout-errors" },
    h("p", {}, app.t("badRows", { n: rows.length + more })),
    h("ul", {}, rows.map((r) => h("li", { dataset: { line: r.line } }, app.t("badRow", { line: r.line, field: r.field, message: r.message })))),
    more ? h("p", {}, app.t("moreBadRows", { n: more })) : null,
  );
}

async function payoutsView(app) {
  const chains = Object.entries(app.config.chains || {}).filter(([, c]) => c.kind === "evm");
  const chain = field(app.t("chain"), { id: "payout-chain", options: chains.map(([id, c]) => [id, `${c.name} (${id})`]) });
  const csvId = "payout-csv";
  const csv = h("textarea", { id: csvId, rows: 8, spellcheck: "false", class: "mono", placeholder: "address,token,amount,reference" });
  const file = field(app.t("csvFile"), { type: "file", accept: ".csv,text/csv,text/plain", id: "payout-file" });
  file.input.addEventListener("change", async () => {
    const chosen = file.input.files && file.input.files[0];
    if (chosen) csv.value = await chosen.text();
  });
  const result = h("div", { id: "payout-result" });
  const form = h(
    "form",
    { class: "card", "aria-labelledby": "payout-new" },
    h("h2", { id: "payout-new" }, app.t("newBatch")),
    h("p", { class: "muted" }, app.t("csvHelp")),
    h("div", {}, h("label", { for: csvId }, app.t("csvRows")), csv),
    h("div", { class: "fields" }, chain.wrap, file.wrap, h("div", {}, h("button", { type: "submit", id: "payout-build" }, app.t("buildBatch")))),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    result.replaceChildren(h("p", { class: "muted", role: "status" }, app.t("building")));
    try {
      const made = await app.session.post("payouts", { chainId: Number(chain.input.value), csv: csv.value }, { "idempotency-key": crypto.randomUUID() });
      result.replaceChildren(builtBatch(app, made));
    } catch (error) {
      result.replaceChildren(refusal(app, error));
    }
  });
  const lookup = field(app.t("batchId"), { id: "payout-lookup", required: true });
  const find = h(
    "form",
    { class: "card", "aria-labelledby": "payout-find" },
    h("h2", { id: "payout-find" }, app.t("findBatch")),
    h("div", { class: "fields" }, lookup.wrap, h("div", {}, h("button", { type: "submit" }, app.t("search")))),
  );
  find.addEventListener("submit", (event) => {
    event.preventDefault();
    app.go(`#/payout/${encodeURIComponent(lookup.input.value.trim())}`);
  });
  return h(
    "section",
    { "aria-labelledby": "payouts-title" },
    h("h1", { id: "payouts-title" }, app.t("navPayouts")),
    h("p", { class: "muted" }, app.t("payoutsText")),
    chains.length ? form : h("p", { class: "notice" }, app.t("noEvmChain")),
    result,
    find,
  );
}

async function payoutView(app, id) {
  const batch = await app.session.get(`payouts/${encodeURIComponent(id)}`, { owner: app.session.owner });
  const saved = JSON.parse(sessionStorage.getItem(HASHES + id) || "[]");
  const hashes = field(app.t("txHashes"), { id: "payout-hashes", value: saved.join(" ") });
  const status = h("p", { role: "status", class: "muted", id: "payout-confirm-status" });
  const confirm = h(
    "form",
    { class: "card", "aria-labelledby": "payout-confirm" },
    h("h2", { id: "payout-confirm" }, app.t("confirmBatch")),
    h("div", { class: "fields" }, hashes.wrap, h("div", {}, h("button", { type: "submit" }, app.t("confirm")))),
    status,
  );
  confirm.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const txHashes = hashes.input.value.split(/[\s,]+/).filter(Boolean);
      sessionStorage.setItem(HASHES + id, JSON.stringify(txHashes));
      await app.session.post("payouts/confirm", { batchId: id, txHashes });
      await app.route();
    } catch (error) {
      status.textContent = app.problem(error);
    }
  });
  const counts = batch.batch.counts || {};
  const pending = (counts.pending || 0) > 0;
  return h(
    "section",
    { "aria-labelledby": "payout-title" },
    h("p", {}, h("a", { href: "#/payouts" }, app.t("backToPayouts"))),
    h("h1", { id: "payout-title" }, app.t("batchTitle", { id: short(batch.batch.id) })),
    h(
      "p",
      { class: "muted", id: "payout-counts" },
      Object.entries(counts).map(([state, n]) => `${app.t(`status_${state}`)}: ${n}`).join(" · "),
    ),
    payoutRows(app, batch.payouts),
    pending ? confirm : null,
  );
}

export const BILLING_VIEWS = {
  subscriptions: subscriptionsView,
  subscription: subscriptionView,
  payouts: payoutsView,
  payout: payoutView,
};
