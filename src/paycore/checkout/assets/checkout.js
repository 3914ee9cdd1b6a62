/**
 * The checkout page: read the invoice named by ?invoice=<guid>, show what to pay and where,
 * and follow its status until it is paid or expired: pushed by the invoice's public event
 * stream where the server has one (stream.js), and by polling the public read, slowly while
 * the stream is open and every 2.5 s (the interface recommends 2 to 5) while it is not.
 *
 * Why not GET /ws: the WebSocket is owner-scoped (it needs a session key), and a payer has
 * none. What could make a payer lose money is guarded here: a transaction sent from this
 * browser is remembered across reloads (memory.js) and shown as sent, then detected and
 * confirming, with the pay controls put away until the payer explicitly chooses to pay
 * again; every outcome that is not plain "paid" is explained (outcome.js).
 */

import { HttpError, apiBase, getJson, invoiceUrl, pricesUrl, qrUrl } from "./api.js";
import { formatDecimal, parseDecimal } from "./decimal.js";
import { formatAmount, formatCountdown, formatVs } from "./format.js";
import { LANGUAGES, around, chooseLanguage, translator } from "./i18n.js";
import { isTron } from "./links.js";
import { recall, rememberSeen, rememberSent } from "./memory.js";
import { outcome } from "./outcome.js";
import { quote, shortAddress, tokenFacts, vsDue } from "./quote.js";
import { eventsUrl, follow } from "./stream.js";
import { injectedTronWeb, payWithTronLink, tronPayment, tronProblem } from "./tron.js";
import { payWithWallet, walletProblem } from "./wallet.js";

const config = readConfig();
const base = apiBase(window.location.href);
const POLL_MS = config.pollMs || 2500;
/** While the event stream is open a poll is only a safety net. */
const STREAM_POLL_MS = 30000;
const MAX_BACKOFF_MS = 30000;
const PRICES_EVERY_MS = config.pricesMs || 60000;
/** Seconds between "paid" and following redirectUrl by itself: long enough to read and stop. */
const REDIRECT_SECONDS = 5;
/** Sooner while there are no prices at all: the amount in tokens waits on them. */
const PRICES_RETRY_MS = 10000;
/** Clock differences below this are Date-header rounding, not a wrong clock. */
const SKEW_TOLERANCE_MS = 3000;
const FINAL = new Set(["paid", "expired"]);

const STATUS_KEYS = {
  init: "statusInit",
  partialPaid: "statusPartialPaid",
  paid: "statusPaid",
  expired: "statusExpired",
};

const REASON_KEYS = {
  tip: "reasonTip",
  price: "reasonPrice",
  decimals: "reasonDecimals",
  "tron-token": "reasonTronToken",
  other: "reasonOther",
};

/** Each language's own name, for the switcher. */
const LANGUAGE_NAMES = {
  en: "English",
  de: "Deutsch",
  es: "Español",
  fr: "Français",
  pt: "Português",
  ru: "Русский",
  tr: "Türkçe",
  zh: "中文",
  ja: "日本語",
};

const OUTCOME_KEYS = {
  overpaid: "outcomeOverpaid",
  late: "outcomeLate",
  paid: "outcomeLate",
  expiredPartial: "outcomeExpiredPartial",
  reversed: "outcomeReversed",
};

const params = new URL(window.location.href).searchParams;
let lang = chooseLanguage(params.get("lang"), navigator.languages || [navigator.language]);
let t = translator(lang.language);
/** vsCurrency money and token amounts in the payer's locale. */
const money = (decimalText, code) => formatVs(decimalText, code, lang.locale);
const amount = (decimalText) => formatAmount(decimalText, lang.locale);

const state = {
  guid: null,
  invoice: null,
  prices: null,
  pricesAt: 0,
  pricesLoading: null,
  chosen: null,
  skewMs: 0,
  failures: 0,
  pollTimer: null,
  clockTimer: null,
  lastUri: null,
  redirectTimer: null,
  redirectLeft: null,
  stayed: false,
  /** What this browser sent and saw for the invoice (memory.js). */
  memory: { sent: [], seen: [] },
  /** The payer chose to send another payment while one is in flight. */
  payAgain: false,
  walletBusy: false,
  streaming: false,
  closeStream: null,
  problem: null,
};
const view = params.get("view");

const $ = (id) => document.getElementById(id);

function readConfig() {
  try {
    return JSON.parse(document.getElementById("paycore-config").textContent || "{}");
  } catch {
    return {};
  }
}

/** index.html's static text in the chosen language: each element names its key in data-i18n. */
function translateStatic() {
  document.documentElement.lang = lang.locale;
  for (const element of document.querySelectorAll("[data-i18n]")) {
    element.textContent = t(element.dataset.i18n);
    delete element.dataset.label;
  }
}

/** The language switcher: each language in its own name; a choice re-renders in place and
 * goes into the URL (?lang=), so a reload or a shared link keeps it. */
function renderLanguages() {
  const select = $("language");
  select.replaceChildren(
    ...LANGUAGES.map((code) => {
      const option = document.createElement("option");
      option.value = code;
      option.lang = code;
      option.textContent = LANGUAGE_NAMES[code] || code;
      option.selected = code === lang.language;
      return option;
    }),
  );
}

function switchLanguage(code) {
  if (!LANGUAGES.includes(code)) return;
  lang = chooseLanguage(code, []);
  t = translator(lang.language);
  window.history.replaceState(null, "", withParams({ lang: code }));
  translateStatic();
  renderLanguages();
  renderMerchant(config.merchant);
  if (state.guid) $("invoice-id").textContent = t("invoiceId", { id: state.guid });
  if (state.problem) showProblem(...state.problem);
  else if (state.invoice) {
    state.lastUri = null; // the QR code's text alternative is in words
    render();
  } else $("loading").textContent = t("loading");
}

function setState(name) {
  $("checkout").dataset.state = name;
}

/** A page that cannot show an invoice: the message `key` of the catalogue, with `vars`. */
function showProblem(key, vars = {}) {
  state.problem = [key, vars];
  setState("problem");
  $("loading").hidden = true;
  $("invoice").hidden = true;
  $("problem").hidden = false;
  $("problem-text").textContent = t(key, vars);
  document.title = t("unavailableTitle");
}

async function main() {
  translateStatic();
  renderLanguages();
  renderMerchant(config.merchant);
  const guid = params.get("invoice");
  if (!guid) {
    showProblem("noGuid");
    return;
  }
  state.guid = guid.trim();
  $("invoice-id").textContent = t("invoiceId", { id: state.guid });
  if (!/^[A-Za-z0-9-]{1,100}$/.test(state.guid)) {
    showProblem("notFound", { guid: state.guid.slice(0, 100) });
    return;
  }
  state.memory = recall(state.guid);
  refreshPrices();
  await refreshInvoice();
  if (state.invoice && !FINAL.has(state.invoice.status)) openStream();
}

/** Follow the invoice's event stream; polling goes on by itself if there is none. */
function openStream() {
  state.closeStream = follow(
    eventsUrl(base, state.guid),
    (record) => {
      if (record.guid === state.guid) apply(record, null);
    },
    (open) => {
      const was = state.streaming;
      state.streaming = open;
      if (was && !open) schedule(POLL_MS); // the stream went quiet: poll at once at the normal pace
    },
  );
}

function closeStream() {
  if (state.closeStream) state.closeStream();
  state.closeStream = null;
  state.streaming = false;
}

/** The shop's name, logo and support contact, when its owner set them (POST
 * /merchant/profile; the server puts them in the page's configuration). The logo is an https
 * URL whose origin alone the page's Content-Security-Policy allows; the contact becomes a
 * mailto: or https link, nothing else. */
function renderMerchant(merchant) {
  if (!merchant || typeof merchant !== "object" || typeof merchant.name !== "string") return;
  $("merchant").hidden = false;
  $("merchant-name").textContent = merchant.name;
  const logo = httpsUrl(merchant.logoUrl);
  if (logo) {
    $("merchant-logo").alt = t("merchantLogo", { name: merchant.name });
    $("merchant-logo").src = logo;
    $("merchant-logo").hidden = false;
  }
  const support = typeof merchant.support === "string" ? merchant.support : "";
  const href = /^[^@\s/:]+@[^@\s/]+$/.test(support) ? `mailto:${support}` : httpsUrl(support);
  if (href) {
    $("merchant-support-link").href = href;
    $("merchant-support-link").textContent = support;
    $("merchant-support").hidden = false;
  }
}

/** An absolute https URL as text, or null. */
function httpsUrl(raw) {
  const url = webUrl(raw);
  return url && url.startsWith("https:") ? url : null;
}

/** Read the price snapshot (one request at a time); re-render once it is in. */
function refreshPrices() {
  if (state.pricesLoading) return state.pricesLoading;
  state.pricesAt = Date.now();
  state.pricesLoading = getJson(pricesUrl(base, invoiceCurrency()))
    .then(({ body }) => {
      state.prices = body;
      if (state.invoice) render();
    })
    .catch(() => {
      // Without prices the page still shows the address and the vsCurrency amount.
    })
    .finally(() => {
      state.pricesLoading = null;
    });
  return state.pricesLoading;
}

/** A record read or pushed: the page shows it (and the prices of its currency). */
async function apply(body, serverTime) {
  if (serverTime !== null) {
    const skew = serverTime - Date.now();
    state.skewMs = Math.abs(skew) > SKEW_TOLERANCE_MS ? skew : 0;
  }
  state.failures = 0;
  $("connection").textContent = "";
  // The first render waits for the first prices, so the QR code is drawn once, complete.
  if (!state.invoice && state.pricesLoading) await state.pricesLoading;
  state.invoice = body;
  const wanted = invoiceCurrency();
  if (wanted && state.prices && state.prices.vsCurrency !== wanted) {
    state.prices = null; // a table in another currency would misstate every amount
    await refreshPrices();
  }
  render();
  if (FINAL.has(body.status)) {
    closeStream();
    window.clearTimeout(state.pollTimer);
  }
}

function schedule(delay) {
  window.clearTimeout(state.pollTimer);
  if (state.invoice && FINAL.has(state.invoice.status)) return;
  state.pollTimer = window.setTimeout(refreshInvoice, delay);
}

/** One read of the invoice; schedules the next while the invoice can still change. The
 * browser revalidates with the last ETag (cache "no-cache"), so an unchanged record costs
 * a 304 where the server sends one. */
async function refreshInvoice() {
  window.clearTimeout(state.pollTimer);
  try {
    const { body, serverTime } = await getJson(invoiceUrl(base, state.guid));
    await apply(body, serverTime);
  } catch (error) {
    if (error instanceof HttpError && error.status === 404) {
      closeStream();
      showProblem("notFound", { guid: state.guid });
      return;
    }
    state.failures += 1;
    const message = t("connectionLost");
    if (state.invoice) $("connection").textContent = message;
    else $("loading").textContent = message;
  }
  if (state.invoice && FINAL.has(state.invoice.status)) return;
  const pricesAge = Date.now() - state.pricesAt;
  if (pricesAge > (state.prices ? PRICES_EVERY_MS : PRICES_RETRY_MS)) refreshPrices();
  const delay = Math.min(POLL_MS * 2 ** state.failures, MAX_BACKOFF_MS);
  schedule(state.streaming ? STREAM_POLL_MS : delay);
}

/** The invoice's own vsCurrency when its record names one; otherwise the server default. */
function invoiceCurrency() {
  const named = state.invoice && state.invoice.vsCurrency;
  return typeof named === "string" && named ? named.toLowerCase() : null;
}

function currency() {
  return invoiceCurrency() || (state.prices && state.prices.vsCurrency) || config.vsCurrency || "usd";
}

function chainName(chainId) {
  const chain = (config.chains || {})[String(chainId)];
  return chain && chain.name ? t("chainNamed", { name: chain.name, id: chainId }) : t("chainBare", { id: chainId });
}

/** Accepted tokens a payer can send to this address: those on the invoice's own chain. */
function choices(invoice) {
  const chains = config.chains || {};
  const own = invoice.acceptedTokens.filter((t) => t.startsWith(`${invoice.chainId}:`));
  return (own.length ? own : [invoice.token]).map((id) => tokenFacts(id, invoice, chains));
}

function render() {
  const invoice = state.invoice;
  const status = STATUS_KEYS[invoice.status] ? invoice.status : "init";
  state.problem = null;
  setState(status);
  $("loading").hidden = true;
  $("problem").hidden = true;
  $("invoice").hidden = false;
  $("invoice").dataset.status = invoice.status;
  $("description").textContent = invoice.description || "";
  $("description").hidden = !invoice.description;

  const moving = FINAL.has(invoice.status) ? [] : inflight(invoice);
  let badge = t(STATUS_KEYS[status]);
  let text = t(`${STATUS_KEYS[status]}Text`);
  if (moving.length) {
    const confirming = moving.filter((m) => m.detected);
    badge = confirming.length ? t("statusDetected", progress(confirming)) : t("statusSent");
    text = t("inflightNote");
  }
  $("status-badge").textContent = badge;
  $("status-text").textContent = text;
  document.title = `${badge}: ${invoice.description || t("title")}`;

  renderAmounts(invoice);
  renderOutcome(invoice);
  state.memory = rememberSeen(state.guid, invoice.payments);
  renderInflight(invoice, moving);
  renderPayments(invoice);
  const options = choices(invoice);
  if (!options.some((o) => o.id === state.chosen)) {
    state.chosen = (options.find((o) => o.id === invoice.token) || options[0]).id;
  }
  renderChoices(options);
  const offer = renderPayment(invoice, options.find((o) => o.id === state.chosen));
  renderQuoteNote(invoice, offer);
  renderReturn(invoice);
  renderReceipt(invoice);
  renderButtons();
  tick();
  if (!state.clockTimer) state.clockTimer = window.setInterval(tick, 1000);
}

/** Transfers on their way: the server's provisional `detected` list (mined, not yet
 * confirmed; absent from a server without it) and the transactions this browser sent that
 * the record does not count yet. Each is `{tx, chainId, detected}` (detected: the entry). */
function inflight(invoice) {
  const lower = (hash) => String(hash).toLowerCase();
  const counted = new Set((Array.isArray(invoice.payments) ? invoice.payments : []).map((p) => lower(p.txHash)));
  const detected = (Array.isArray(invoice.detected) ? invoice.detected : []).filter(
    (d) => d && typeof d.txHash === "string" && !counted.has(lower(d.txHash)),
  );
  const moving = detected.map((d) => ({ tx: d.txHash, chainId: d.chainId, detected: d }));
  for (const sent of state.memory.sent) {
    const hash = lower(sent.tx);
    if (counted.has(hash) || moving.some((m) => lower(m.tx) === hash)) continue;
    moving.push({ tx: sent.tx, chainId: sent.chainId || invoice.chainId, detected: null });
  }
  return moving;
}

/** "n of m" of the least confirmed detected transfer. */
function progress(confirming) {
  const least = confirming.reduce((a, b) => (Number(a.detected.confirmations) <= Number(b.detected.confirmations) ? a : b));
  const m = Math.max(1, Number(least.detected.required) || 1);
  return { n: Math.min(m, Math.max(0, Number(least.detected.confirmations) || 0)), m };
}

/** The transfers on their way, and the one way to pay again: a button that says how much
 * is still due. Until it is pressed the ways to pay are put away (data-inflight). */
function renderInflight(invoice, moving) {
  const checkout = $("checkout");
  checkout.dataset.inflight = moving.length ? "true" : "false";
  if (!moving.length) state.payAgain = false;
  checkout.dataset.again = state.payAgain ? "true" : "false";
  $("inflight").hidden = moving.length === 0;
  if (!moving.length) return;
  const chains = config.chains || {};
  $("inflight-list").replaceChildren(
    ...moving.map((item) => {
      const li = document.createElement("li");
      li.dataset.tx = item.tx;
      li.dataset.stage = item.detected ? "confirming" : "sent";
      const words = document.createElement("span");
      if (item.detected) {
        const d = item.detected;
        const facts = tokenFacts(`${d.chainId}:${d.token}`, invoice, chains);
        const { n, m } = progress([item]);
        words.textContent = t("inflightDetectedItem", { amount: `${amountOf(d.amount)} ${facts.symbol}`, n, m });
      } else {
        words.textContent = t("inflightSentItem");
      }
      li.append(words, " ", txElement({ txHash: item.tx, chainId: item.chainId }, shortAddress(String(item.tx))));
      return li;
    }),
  );
  const due = vsDue(invoice);
  const again = $("pay-again");
  again.hidden = state.payAgain;
  again.textContent = due === null ? t("payAgainAny") : t("payAgain", { due: money(formatDecimal(due), currency()) });
}

/** What happened beyond the status (outcome.js), in words, with whom to contact. */
function renderOutcome(invoice) {
  const found = outcome(invoice, state.memory.seen);
  const box = $("outcome");
  box.hidden = found === null;
  $("checkout").dataset.outcome = found ? found.kind : "";
  if (!found) return;
  const key = OUTCOME_KEYS[found.kind];
  $("outcome-title").textContent = t(`${key}Title`);
  const vars = {};
  for (const name of ["excess", "value", "paid", "missing"]) {
    if (found[name] !== undefined) vars[name] = money(found[name], currency());
  }
  if (found.kind === "reversed") {
    const facts = tokenFacts(`${found.chainId}:${found.token}`, invoice, config.chains || {});
    vars.amount = `${amountOf(found.amount)} ${facts.symbol}`;
    vars.tx = shortAddress(found.txHash);
  }
  const [before, after] = around(t(key, vars), "contact");
  $("outcome-text").replaceChildren(before, contactElement(), after);
}

/** The merchant's support contact as a link (the profile's), else the words "the merchant". */
function contactElement() {
  const link = $("merchant-support-link");
  if ($("merchant-support").hidden || !link.href) return t("contactMerchant");
  const copy = document.createElement("a");
  copy.href = link.href;
  copy.textContent = link.textContent;
  return copy;
}

/** The wallet buttons: off while a wallet is asked, and while a payment is in flight unless
 * the payer chose to pay again. */
function renderButtons() {
  const blocked = state.walletBusy || ($("checkout").dataset.inflight === "true" && !state.payAgain);
  for (const id of ["wallet-pay", "tronlink-pay"]) $(id).disabled = blocked;
}

function payAgain() {
  state.payAgain = true;
  render();
  const button = $("wallet-pay-line").hidden ? $("copy-address") : $("wallet-pay");
  button.focus();
}

function renderAmounts(invoice) {
  const value = parseDecimal(invoice.value);
  const tip = !value || value.units === 0n;
  $("amount-vs").textContent = tip ? t("anyAmount") : money(invoice.value, currency());
  const paid = parseDecimal(invoice.paidAmount);
  const anyPaid = paid !== null && paid.units > 0n;
  $("paid-row").hidden = !anyPaid;
  if (anyPaid) $("paid-vs").textContent = money(formatDecimal(paid), currency());
}

/** What has arrived, so a payer can match it with the transaction in their wallet. */
function renderPayments(invoice) {
  const payments = Array.isArray(invoice.payments) ? invoice.payments : [];
  $("payments").hidden = payments.length === 0;
  const chains = config.chains || {};
  $("payment-list").replaceChildren(
    ...payments.map((payment) => {
      const item = document.createElement("li");
      const facts = tokenFacts(`${payment.chainId}:${payment.token}`, invoice, chains);
      const amount = document.createElement("span");
      amount.className = "payment-amount";
      amount.textContent = `${amountOf(payment.amount)} ${facts.symbol}`;
      const worth = document.createElement("span");
      const vs = parseDecimal(payment.vsValue);
      worth.textContent = vs ? money(formatDecimal(vs), currency()) : "";
      item.append(amount, worth, txElement(payment, shortAddress(String(payment.txHash))));
      return item;
    }),
  );
}

function renderChoices(options) {
  const box = $("token-choices");
  const ids = options.map((o) => o.id).join(",");
  if (box.dataset.ids !== ids) {
    box.dataset.ids = ids;
    box.replaceChildren(
      ...options.map((option, i) => {
        const label = document.createElement("label");
        label.className = "choice";
        const input = document.createElement("input");
        input.type = "radio";
        input.name = "token";
        input.value = option.id;
        input.id = `token-${i}`;
        input.addEventListener("change", () => {
          state.chosen = option.id;
          render();
        });
        const name = document.createElement("span");
        name.textContent = option.symbol;
        label.append(input, name);
        label.title = option.id;
        return label;
      }),
    );
  }
  for (const input of box.querySelectorAll("input")) input.checked = input.value === state.chosen;
  $("tokens").hidden = options.length < 2;
}

function renderPayment(invoice, facts) {
  const offer = quote(invoice, facts, state.prices);
  const due = offer.due === null ? null : formatDecimal(offer.due);
  $("amount-token-label").textContent = t(invoice.status === "partialPaid" ? "stillToSend" : "send");
  let amountText;
  if (offer.amountText !== null) amountText = `${amount(offer.amountText)} ${facts.symbol}`;
  else if (offer.reason === "tip") amountText = t("anyAmountOf", { symbol: facts.symbol });
  else amountText = t("noPrice", { symbol: facts.symbol, due: money(due, currency()) });
  $("amount-token").textContent = amountText;
  renderContract(facts);
  $("copy-amount").hidden = offer.amountText === null;
  $("copy-amount").dataset.copy = offer.amountText || "";

  renderNetwork(chainName(invoice.chainId));
  $("network-warning").textContent = t("networkWarning", { network: chainName(invoice.chainId) });
  $("address").textContent = invoice.address;
  $("copy-address").dataset.copy = invoice.address;

  const reason = offer.exact ? null : offer.reason || "other";
  $("qr-note").textContent = reason
    ? t(REASON_KEYS[reason], { token: facts.symbol })
    : t("qrExact", { amount: amountText });
  $("qr-note").dataset.reason = reason || "exact";
  if (state.lastUri !== offer.uri) {
    state.lastUri = offer.uri;
    $("qr").src = qrUrl(base, offer.uri).href;
    $("qr").alt = reason
      ? t("qrAltAddress", { address: invoice.address })
      : t("qrAltPayment", { amount: amountText, address: invoice.address });
    $("wallet-link").href = offer.uri;
  }
  state.offer = { facts, offer };
  const wallet = window.ethereum;
  $("wallet-pay-line").hidden = !(
    wallet && typeof wallet.request === "function" && offer.exact && !isTron(invoice.chainId) && !FINAL.has(invoice.status)
  );
  $("tronlink-pay-line").hidden = !(
    isTron(invoice.chainId) &&
    injectedTronWeb(window) &&
    tronPayment(invoice.address, facts, offer.baseUnits) &&
    !FINAL.has(invoice.status)
  );
  return offer;
}

/** The token's contract beside its symbol: shortened, copyable, linked to the explorer
 * where the chain has one, so the payer can check which token they are sending. */
function renderContract(facts) {
  $("contract-row").hidden = facts.native;
  if (facts.native) return;
  $("contract-label").textContent = t("tokenContract", { symbol: facts.symbol });
  const code = document.createElement("code");
  code.className = "contract-address";
  code.textContent = shortAddress(facts.address);
  code.title = facts.address;
  const href = explorerLink(facts.chainId, "explorerAddress", "{address}", facts.address);
  let shown = code;
  if (href) {
    shown = document.createElement("a");
    shown.className = "contract-link";
    shown.href = href;
    shown.rel = "noopener noreferrer";
    shown.target = "_blank";
    shown.append(code);
  }
  $("contract").replaceChildren(shown);
  $("copy-contract").dataset.copy = facts.address;
}

/** "Pay with TronLink": the exact TRX or TRC20 payment, through the injected TronLink. */
async function tronLinkPay() {
  const invoice = state.invoice;
  if (!invoice || !state.offer || state.walletBusy) return;
  const { facts, offer } = state.offer;
  const payment = tronPayment(invoice.address, facts, offer.baseUnits);
  if (!payment) return;
  await followWallet(() => payWithTronLink(window, payment), tronProblem);
}

/** "Pay with wallet": the exact payment the QR code holds, through the injected wallet. */
async function walletPay() {
  const invoice = state.invoice;
  if (!invoice || !state.offer || state.walletBusy) return;
  const { facts, offer } = state.offer;
  await followWallet(
    () => payWithWallet(window.ethereum, invoice.chainId, invoice.address, facts, offer),
    walletProblem,
  );
}

/** Send through a wallet (`send` returns the transaction's hash or id), say what happened,
 * and look at the invoice at once: the watcher, not the wallet, makes it paid. */
async function followWallet(send, problemOf) {
  const invoice = state.invoice;
  const status = $("wallet-status");
  if (state.walletBusy) return;
  state.walletBusy = true;
  renderButtons();
  status.hidden = false;
  status.textContent = t("walletConfirm");
  try {
    const hash = String(await send());
    // Remembered before anything else: a reload from here on shows it as sent.
    state.memory = rememberSent(state.guid, hash, invoice.chainId);
    state.payAgain = false;
    status.dataset.tx = hash;
    status.textContent = t("walletSent", { tx: shortAddress(hash) });
    refreshInvoice(); // look now: the watcher may see it at the next block
  } catch (error) {
    const problem = problemOf(error);
    status.textContent =
      problem === "rejected"
        ? t("walletRejected")
        : problem === "network"
          ? t("walletNetwork", { network: chainName(invoice.chainId) })
          : problem === "chain"
            ? t("walletChain", { current: String(error.current), network: chainName(invoice.chainId) })
            : t("walletFailed", { reason: String((error && error.message) || error).slice(0, 160) });
  } finally {
    state.walletBusy = false;
    if (state.invoice) render();
  }
}

/** A transaction hash, linked to the chain's block explorer when one is configured. */
function txElement(payment, shown) {
  const hash = String(payment.txHash);
  const code = document.createElement("code");
  code.className = "payment-tx";
  code.textContent = shown;
  code.title = hash;
  const href = explorerLink(payment.chainId, "explorerTx", "{tx}", hash);
  if (!href) return code;
  const link = document.createElement("a");
  link.className = "tx-link";
  link.href = href;
  link.rel = "noopener noreferrer";
  link.target = "_blank";
  // The link's name is the hash it shows (WCAG 2.5.3, label in name: an aria-label of
  // other words fails it); what it does is its description.
  link.title = `${t("viewTx")} ${hash}`;
  code.removeAttribute("title");
  link.append(code);
  return link;
}

/** The explorer's page for `value` (a tx hash or an address) on `chainId`, or null. Tron's
 * explorers name transactions without the 0x the wire may carry. */
function explorerLink(chainId, key, placeholder, value) {
  const chain = (config.chains || {})[String(chainId)] || {};
  const template = chain[key];
  if (typeof template !== "string" || !/^https?:\/\//.test(template)) return null;
  const bare = chain.kind === "tron" && placeholder === "{tx}" ? value.replace(/^0x/i, "") : value;
  return template.replace(placeholder, encodeURIComponent(bare));
}

/** How long the quote holds: the token amount follows the price table, re-read each minute. */
function renderQuoteNote(invoice, offer) {
  const note = $("quote-note");
  const fetched = state.prices && Number(state.prices.fetchedAt);
  const show = offer.amountText !== null && !FINAL.has(invoice.status) && fetched > 0;
  note.hidden = !show;
  if (!show) return;
  const time = new Intl.DateTimeFormat(lang.locale, { timeStyle: "short" }).format(new Date(fetched * 1000));
  note.textContent = t("quoteNote", { time });
}

/** Back to the shop once paid or expired (and, when asked for, by itself after a countdown
 * once paid); a way back without paying while it is open. Only the invoice's own URLs,
 * checked http(s) by the server and again here, ever become a link. */
function renderReturn(invoice) {
  const back = webUrl(invoice.redirectUrl);
  const cancel = webUrl(invoice.cancelUrl);
  const final = FINAL.has(invoice.status);
  $("return").hidden = !(final && back);
  if (back) $("back-to-shop").href = back;
  $("cancel-line").hidden = final || !cancel;
  if (cancel) $("cancel-link").href = cancel;
  $("receipt-line").hidden = invoice.status !== "paid" || view === "receipt";
  $("receipt-link").href = withParams({ view: "receipt" });
  // The receipt view never leaves by itself: it is there to be read and printed.
  const auto = invoice.status === "paid" && back && invoice.redirectAutomatically === true && view !== "receipt";
  if (auto && !state.stayed && state.redirectTimer === null) startRedirect(back);
}

function startRedirect(target) {
  state.redirectLeft = REDIRECT_SECONDS;
  const show = () => {
    $("redirect-text").textContent = t("redirecting", { seconds: state.redirectLeft });
    $("redirect-text").dataset.seconds = String(state.redirectLeft);
  };
  $("redirect-note").hidden = false;
  show();
  state.redirectTimer = window.setInterval(() => {
    state.redirectLeft -= 1;
    if (state.redirectLeft > 0) {
      show();
      return;
    }
    window.clearInterval(state.redirectTimer);
    window.location.assign(target);
  }, 1000);
}

function stayHere() {
  state.stayed = true;
  window.clearInterval(state.redirectTimer);
  $("redirect-note").hidden = true;
}

/** An absolute http(s) URL as text, or null. */
function webUrl(raw) {
  if (typeof raw !== "string" || !raw) return null;
  try {
    const url = new URL(raw);
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
  } catch {
    return null;
  }
}

/** This page's URL with some query parameters set (null removes one). */
function withParams(changes) {
  const url = new URL(window.location.href);
  for (const [name, value] of Object.entries(changes)) {
    if (value === null) url.searchParams.delete(name);
    else url.searchParams.set(name, value);
  }
  return url.href;
}

/** ?view=receipt of a paid invoice: what was paid, to whom, when, by which transactions;
 * laid out to print (the print stylesheet drops the buttons). */
function renderReceipt(invoice) {
  const show = view === "receipt" && invoice.status === "paid";
  $("receipt").hidden = !show;
  $("checkout").dataset.view = show ? "receipt" : "pay";
  if (!show) return;
  $("invoice").hidden = true;
  $("title").textContent = t("receiptTitle");
  // the section's own heading names what was bought (the page's h1 says "receipt" already)
  $("receipt-title").textContent = invoice.description || t("receiptTitle");
  document.title = `${t("receiptTitle")}: ${invoice.description || t("title")}`;
  const named = config.merchant && typeof config.merchant.name === "string" ? config.merchant.name : null;
  $("receipt-merchant").textContent = named ? `${named} (${invoice.owner})` : invoice.owner;
  $("receipt-amount").textContent = money(invoice.paidAmount, currency());
  $("receipt-network").textContent = chainName(invoice.chainId);
  const payments = Array.isArray(invoice.payments) ? invoice.payments : [];
  const last = Math.max(0, ...payments.map((p) => Number(p.timestamp) || 0));
  $("receipt-date").textContent = last
    ? new Intl.DateTimeFormat(lang.locale, { dateStyle: "long", timeStyle: "long", timeZone: "UTC" }).format(
      new Date(last * 1000),
    )
    : "";
  const chains = config.chains || {};
  $("receipt-payments").replaceChildren(
    ...payments.map((payment) => {
      const item = document.createElement("li");
      const facts = tokenFacts(`${payment.chainId}:${payment.token}`, invoice, chains);
      const what = document.createElement("span");
      what.textContent = `${amountOf(payment.amount)} ${facts.symbol}`;
      item.append(what, txElement(payment, String(payment.txHash)));
      return item;
    }),
  );
  $("back-to-payment").href = withParams({ view: null });
}

/** An amount the server sent as decimal text, in the locale; as sent when it is not one. */
function amountOf(text) {
  const value = parseDecimal(text);
  return value ? amount(formatDecimal(value)) : String(text);
}

/** "Deposit address on <network>" with the network's <span> where the language puts it. */
function renderNetwork(name) {
  const span = $("network");
  span.textContent = name;
  const [before, after] = around(t("depositOn"), "network");
  $("address-label").replaceChildren(before, span, after);
}

/** Once a second: the countdown, and an early read when the deadline has just passed. */
function tick() {
  const invoice = state.invoice;
  if (!invoice) return;
  const countdown = $("countdown");
  if (FINAL.has(invoice.status)) {
    countdown.textContent = t(invoice.status === "paid" ? "statusPaid" : "statusExpired");
    window.clearInterval(state.clockTimer);
    state.clockTimer = null;
    return;
  }
  const left = (invoice.deadline * 1000 - (Date.now() + state.skewMs)) / 1000;
  const { text, iso } = formatCountdown(left, (parts) => t("countdownDays", parts));
  countdown.textContent = text;
  countdown.setAttribute("datetime", iso);
  countdown.dataset.seconds = String(Math.max(0, Math.floor(left)));
  if (left <= 0 && !state.expiryAsked) {
    state.expiryAsked = true; // the read applies the expiry (the interface's lazy expiry)
    refreshInvoice();
  }
}

async function copy(button) {
  const text = button.dataset.copy;
  if (!text) return;
  let done = false;
  try {
    await navigator.clipboard.writeText(text);
    done = true;
  } catch {
    done = legacyCopy(text);
  }
  const original = button.dataset.label || button.textContent;
  button.dataset.label = original;
  button.textContent = t(done ? "copied" : "selectCopy");
  $("copied").textContent = done ? t("copiedText", { text }) : t("copyFailed");
  window.setTimeout(() => {
    button.textContent = original;
  }, 2000);
}

/** For browsers without the async clipboard (a plain-HTTP page not on localhost). */
function legacyCopy(text) {
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.className = "visually-hidden";
  document.body.append(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand("copy");
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

for (const id of ["copy-address", "copy-amount", "copy-contract"]) {
  $(id).addEventListener("click", (event) => copy(event.currentTarget));
}
$("stay").addEventListener("click", stayHere);
$("wallet-pay").addEventListener("click", walletPay);
$("tronlink-pay").addEventListener("click", tronLinkPay);
$("print").addEventListener("click", () => window.print());
$("pay-again").addEventListener("click", payAgain);
$("language").addEventListener("change", (event) => switchLanguage(event.currentTarget.value));

main();
