// The checkout page in a real Chromium (Debian's, driven by playwright-core; no browser is
// downloaded). Driven step by step from Python (tests/checkout/checkout_browser_driver.py):
// this script prints one JSON line per step and, where the server side has to act (record a
// deposit, pay on a chain), waits for a line on stdin before it looks again. Nothing here
// reloads the page: the status must change by itself.
//
// argv[2]: JSON {scenario, base, guid, artifacts, chromium}
//   scenario "deposits": the whole page, deposits recorded by the test (tests/checkout)
//   scenario "pay-link": the test pays the links the page shows, on anvil (tests/chains/evm)
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const config = JSON.parse(process.argv[2]);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const emit = (step, data = {}) => process.stdout.write(JSON.stringify({ step, ...data }) + "\n");
/** Wait for the server side: a line "next", optionally followed by a word for this step. */
async function proceed() {
  const { value, done } = await lines.next();
  const [word, arg = ""] = done ? [] : value.trim().split(" ");
  if (word !== "next") throw new Error(`expected "next" on stdin, got ${value}`);
  return arg;
}

const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const profile = mkdtempSync(join(tmpdir(), "paycore-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: config.chromium,
  headless: true,
  args: ARGS,
  viewport: { width: 1000, height: 860 },
  locale: "en-US",
  timezoneId: "UTC",
});
const problems = [];
const foreign = [];
/** The last requests of all pages, printed if a step fails, to see what the page was doing. */
const recent = [];
const origin = new URL(config.base).origin;

/** Collect what must not happen: script errors, console errors, off-origin requests. */
function watch(page, { expect404 = false } = {}) {
  page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
  page.on("console", (msg) => {
    // Chromium logs the answer to a missing invoice's read as a failed resource
    if (msg.type() !== "error" || (expect404 && /status of 404/.test(msg.text()))) return;
    // A server without the invoice's event stream answers it 404, one with all its streams
    // taken answers 503: either way the page polls instead.
    const stream = /\/invoice\/[^/]+\/events$/.test(msg.location()?.url || "");
    if (stream && (/status of 503/.test(msg.text()) || config.allowNoStream)) return;
    problems.push(`console: ${msg.text()}`);
  });
  page.on("request", (request) => {
    const url = request.url();
    recent.push(`${new Date().toISOString()} ${request.method()} ${url}`);
    if (recent.length > 30) recent.shift();
    if (!url.startsWith(origin) && !url.startsWith("data:")) foreign.push(url);
  });
  page.on("requestfinished", (request) => {
    recent.push(`${new Date().toISOString()} done ${request.url()}`);
    if (recent.length > 30) recent.shift();
  });
  page.on("requestfailed", (request) => {
    recent.push(`${new Date().toISOString()} failed ${request.url()} ${request.failure()?.errorText}`);
    // a poll or an image still loading when the page moves on is cancelled, not failed
    const why = request.failure()?.errorText || "";
    if (!why.includes("ERR_ABORTED")) problems.push(`failed: ${request.url()} ${why}`);
  });
}

const text = (page, selector) => page.locator(selector).innerText();
const attr = (page, selector, name) => page.locator(selector).getAttribute(name);

async function snapshot(page) {
  return {
    state: await attr(page, "#checkout", "data-state"),
    status: await attr(page, "#invoice", "data-status"),
    badge: await text(page, "#status-badge"),
    statusText: await text(page, "#status-text"),
    title: await page.title(),
    description: await text(page, "#description"),
    amountVs: await text(page, "#amount-vs"),
    paidVisible: await page.locator("#paid-row").isVisible(),
    paidVs: await page.locator("#paid-vs").textContent(),
    tokenLabel: await page.locator("#amount-token-label").textContent(),
    amountToken: await page.locator("#amount-token").textContent(),
    address: await page.locator("#address").textContent(),
    network: await page.locator("#network").textContent(),
    qrVisible: await page.locator("#qr").isVisible(),
    qrSrc: await attr(page, "#qr", "src"),
    qrAlt: await attr(page, "#qr", "alt"),
    qrNote: await page.locator("#qr-note").textContent(),
    qrReason: await attr(page, "#qr-note", "data-reason"),
    qrWidth: await page.locator("#qr").evaluate((img) => img.naturalWidth),
    walletHref: await attr(page, "#wallet-link", "href"),
    countdown: await text(page, "#countdown"),
    seconds: Number(await attr(page, "#countdown", "data-seconds")),
    choices: await page.locator("#token-choices label").allInnerTexts(),
    marker: await page.evaluate(() => window.__paycoreMarker ?? null),
    paymentsVisible: await page.locator("#payments").isVisible(),
    payments: await page.locator("#payment-list li").allInnerTexts(),
  };
}

async function rendered(page) {
  await page.locator("#invoice").waitFor({ state: "visible" });
  await page.waitForFunction(() => {
    const img = document.getElementById("qr");
    return img.complete && img.naturalWidth > 0 && document.getElementById("countdown").textContent;
  });
}

const waitStatus = (page, status, timeout = 15000) =>
  page.waitForFunction((s) => document.getElementById("invoice").dataset.status === s, status, {
    timeout,
    polling: 100,
  });

/** Open the invoice's page and wait until it shows everything; mark it to detect reloads. */
async function openInvoice(guid, path = "/checkout/", query = "", where = context) {
  const page = await where.newPage();
  watch(page);
  await page.goto(`${config.base}${path}?invoice=${guid}${query}`);
  await rendered(page);
  // Set once: still there after each status change proves the page was never reloaded.
  await page.evaluate(() => {
    window.__paycoreMarker = "no reload";
  });
  return page;
}

const shot = (page, name, fullPage = true) =>
  page.screenshot({ path: join(config.artifacts, `checkout-${name}.png`), fullPage });

/** axe-core's source, run in the page through the DevTools protocol: a <script> tag would
 * need the page's Content-Security-Policy loosened, and the test must see the page as served. */
const AXE = readFileSync(new URL("../../node_modules/axe-core/axe.min.js", import.meta.url), "utf8");
const VIEWPORTS = { desktop: { width: 1000, height: 860 }, phone: { width: 390, height: 844 } };
/** Accessibility result of each state/viewport/scheme: the ids of axe's violations, with
 * the first offending element of each, so a failing test says what to fix. */
const audits = {};

/** Languages every state is audited in: a Latin script, a long-worded one, a CJK one. */
const AUDIT_LANGUAGES = ["en", "de", "ja"];

/** Switch the page's language with its own switcher (no reload); wait for the words. */
async function chooseLanguage(page, code) {
  await page.locator("#language").selectOption(code);
  await page.waitForFunction((c) => document.documentElement.lang.startsWith(c), code);
}

/** The page as it is now, on a desktop and a phone, light and dark: a screenshot of each,
 * named state-<state>-<viewport>-<scheme>.png, and axe-core's WCAG 2.1 AA check of each.
 * With `languages`, each language in turn (chosen on the page's switcher), named
 * state-<state>-<language>-<viewport>-<scheme>; the page is left in English. */
async function audit(page, state, languages = null) {
  if (languages) {
    for (const code of languages) {
      await chooseLanguage(page, code);
      await auditOne(page, `${state}-${code}`);
    }
    await chooseLanguage(page, "en");
    return;
  }
  await auditOne(page, state);
}

async function auditOne(page, state) {
  const before = page.viewportSize();
  for (const [viewport, size] of Object.entries(VIEWPORTS)) {
    await page.setViewportSize(size);
    for (const scheme of ["light", "dark"]) {
      await page.emulateMedia({ colorScheme: scheme });
      const name = `${state}-${viewport}-${scheme}`;
      await page.screenshot({ path: join(config.artifacts, `state-${name}.png`), fullPage: true });
      if (!(await page.evaluate(() => typeof window.axe === "object"))) await page.evaluate(AXE);
      const found = await page.evaluate(async () => {
        const result = await window.axe.run(document, {
          runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] },
          resultTypes: ["violations"],
        });
        return result.violations.map((v) => `${v.id}: ${v.nodes[0]?.target?.join(" ")} ${v.nodes[0]?.failureSummary ?? ""}`);
      });
      audits[name] = found;
    }
  }
  await page.emulateMedia({ colorScheme: "light" });
  await page.setViewportSize(before);
}

async function deposits() {
  const page = await openInvoice(config.guid);
  const first = await snapshot(page);
  await page.waitForTimeout(2500); // the countdown ticks each second, so it moved at least 1
  const later = await snapshot(page);
  await shot(page, "init");
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, "init-mobile");
  await page.emulateMedia({ colorScheme: "dark" });
  await shot(page, "init-mobile-dark");
  await page.setViewportSize({ width: 1000, height: 860 });
  await shot(page, "init-dark");
  await page.emulateMedia({ colorScheme: "light" });
  await audit(page, "awaiting", AUDIT_LANGUAGES);
  // The check can fail: a button without a name, added for one run, is found.
  const control = await page.evaluate(async () => {
    const bad = document.createElement("button");
    document.getElementById("invoice").append(bad);
    const result = await window.axe.run(document, { resultTypes: ["violations"] });
    bad.remove();
    return result.violations.map((v) => v.id);
  });
  audits.control = control;

  // Another token: the amount and the code follow; a token without a price says so.
  await page.getByLabel("USDT", { exact: true }).check();
  await page.waitForFunction(() => document.getElementById("amount-token").textContent.includes("USDT"));
  await rendered(page);
  const usdt = await snapshot(page);
  await page.locator("#token-choices input").nth(2).check();
  await page.waitForFunction(() => document.getElementById("qr-note").dataset.reason === "price");
  const unpriced = await snapshot(page);
  await page.getByLabel("ETH", { exact: true }).check();
  await page.waitForFunction(() => document.getElementById("amount-token").textContent.includes("ETH"));
  await rendered(page);
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin });
  await page.locator("#copy-address").click();
  await page.waitForFunction(() => document.getElementById("copy-address").textContent !== "Copy address");
  const copied = {
    button: await text(page, "#copy-address"),
    clipboard: await page.evaluate(() => navigator.clipboard.readText()),
    announced: await page.locator("#copied").textContent(),
  };
  emit("rendered", { first, later, usdt, unpriced, copied });

  await proceed(); // the server records a part payment
  let started = Date.now();
  await waitStatus(page, "partialPaid");
  await rendered(page);
  const partial = { ...(await snapshot(page)), waitedMs: Date.now() - started };
  await shot(page, "partial");
  emit("partial", { partial, url: page.url() });
  await audit(page, "partial", AUDIT_LANGUAGES);

  await proceed(); // the server records the rest
  started = Date.now();
  await waitStatus(page, "paid");
  const paid = { ...(await snapshot(page)), waitedMs: Date.now() - started };
  await shot(page, "paid");
  emit("paid", { paid, url: page.url() });
  await audit(page, "paid", AUDIT_LANGUAGES);
  const receipt = await context.newPage();
  watch(receipt);
  await receipt.goto(`${config.base}/checkout/?invoice=${config.guid}&view=receipt`);
  await receipt.locator("#receipt").waitFor({ state: "visible" });
  await audit(receipt, "receipt", AUDIT_LANGUAGES);
  await receipt.close();

  // Bad links: a clear message on the page, no invoice section.
  const missing = await context.newPage();
  watch(missing, { expect404: true });
  await missing.goto(`${config.base}/checkout/?invoice=00000000-0000-4000-8000-000000000000`);
  await missing.locator("#problem").waitFor({ state: "visible" });
  await shot(missing, "not-found", false);
  const notFound = {
    text: await text(missing, "#problem-text"),
    invoiceVisible: await missing.locator("#invoice").isVisible(),
  };
  await missing.goto(`${config.base}/checkout/`);
  await missing.locator("#problem").waitFor({ state: "visible" });
  const noGuid = await text(missing, "#problem-text");
  await missing.goto(`${config.base}/checkout/?invoice=${encodeURIComponent("../prices")}`);
  await missing.locator("#problem").waitFor({ state: "visible" });
  const badGuid = await text(missing, "#problem-text");
  emit("errors", { notFound, noGuid, badGuid });

  // The page without the trailing slash; its countdown runs out and it shows expired.
  const expiringGuid = await proceed(); // the server creates an invoice due in seconds
  const expiring = await openInvoice(expiringGuid, "/checkout");
  const before = await snapshot(expiring);
  await waitStatus(expiring, "expired", 20000);
  const expired = await snapshot(expiring);
  await shot(expiring, "expired");
  await audit(expiring, "expired", AUDIT_LANGUAGES);
  emit("expired", { before, expired, audits });
}

/** Pay what the page asks for, as a wallet would from its link: an ERC20 part first, then
 * the rest in the coin, chosen on the page after the part payment shows. */
async function payLink() {
  const page = await openInvoice(config.guid);
  emit("rendered", { first: await snapshot(page) });
  await shot(page, "anvil-init");

  await proceed(); // the test paid the token link on anvil and let the watcher see it
  await waitStatus(page, "partialPaid", 30000);
  await rendered(page);
  const partial = await snapshot(page);
  await page.getByLabel(config.coin, { exact: true }).check();
  await page.waitForFunction(() => document.getElementById("wallet-link").href.includes("?value="));
  await rendered(page);
  emit("partial", { partial, coin: await snapshot(page) });
  await shot(page, "anvil-partial");

  await proceed(); // the test paid the coin link
  await waitStatus(page, "paid", 30000);
  emit("paid", { paid: await snapshot(page) });
  await shot(page, "anvil-paid");
}

/** The page in other languages: ?lang=de and ?lang=ja, and Spanish from the browser's own
 * language list (a context whose locale is es-ES, no ?lang=). Desktop and phone, light and dark. */
async function languages() {
  const results = {};
  const spanish = await chromium.launch({ executablePath: config.chromium, headless: true, args: ARGS });
  const esContext = await spanish.newContext({ locale: "es-ES", timezoneId: "UTC", viewport: { width: 1000, height: 860 } });
  try {
    for (const [name, open] of [
      ["de", () => openInvoice(config.guid, "/checkout/", "&lang=de")],
      ["ja", () => openInvoice(config.guid, "/checkout/", "&lang=ja")],
      ["es", () => openInvoice(config.guid, "/checkout/", "", esContext)],
    ]) {
      const page = await open();
      results[name] = {
        ...(await snapshot(page)),
        htmlLang: await page.evaluate(() => document.documentElement.lang),
        heading: await text(page, "#title"),
        copyAddressText: await text(page, "#copy-address"),
        countdownLabel: await text(page, "#countdown-label"),
        addressLabel: await text(page, "#address-label"),
        legend: await page.locator("#tokens legend").textContent(),
      };
      await shot(page, `lang-${name}`);
      await page.emulateMedia({ colorScheme: "dark" });
      await page.setViewportSize({ width: 390, height: 844 });
      await shot(page, `lang-${name}-mobile-dark`);
      await page.close();
    }
  } finally {
    await esContext.close();
    await spanish.close();
  }
  emit("languages", results);
}

/** Back to the shop: the cancel link and the network warning while unpaid; once paid, the
 * button, the automatic redirect's countdown and the redirect itself; then the receipt view,
 * on screen and as printed. config.redirect is where the invoice's redirectUrl points. */
async function returning() {
  const page = await openInvoice(config.guid);
  const open = {
    cancelVisible: await page.locator("#cancel-link").isVisible(),
    cancelHref: await attr(page, "#cancel-link", "href"),
    returnVisible: await page.locator("#return").isVisible(),
    warning: await text(page, "#network-warning"),
    quoteVisible: await page.locator("#quote-note").isVisible(),
    quote: await page.locator("#quote-note").textContent(),
  };
  emit("open", { open });

  await proceed(); // the test records the whole payment
  await waitStatus(page, "paid");
  await page.locator("#redirect-note").waitFor({ state: "visible" });
  const paid = {
    ...(await snapshot(page)),
    returnVisible: await page.locator("#return").isVisible(),
    backHref: await attr(page, "#back-to-shop", "href"),
    cancelVisible: await page.locator("#cancel-link").isVisible(),
    redirectText: await text(page, "#redirect-text"),
    receiptHref: await attr(page, "#receipt-link", "href"),
    txHref: await page.locator("#payment-list a.tx-link").first().getAttribute("href"),
    quoteVisible: await page.locator("#quote-note").isVisible(),
  };
  await shot(page, "paid-return");
  const started = Date.now();
  const ours = problems.length;
  await page.waitForURL((url) => url.href === config.redirect, { timeout: 15000 });
  const redirectedAfterMs = Date.now() - started;
  await page.waitForTimeout(500);
  // What the shop's page does is not the checkout's: here a JSON read, whose missing
  // /favicon.ico Chromium reports as a console error.
  problems.splice(ours);
  emit("paid", { paid, redirectedAfterMs, landed: page.url() });
  await page.close();

  // The same page, but the payer stays: no redirect once "Stay on this page" is pressed.
  const stay = await openInvoice(config.guid);
  await stay.locator("#redirect-note").waitFor({ state: "visible" });
  await stay.locator("#stay").click();
  await stay.waitForTimeout(6500);
  const stayed = { url: stay.url(), noteVisible: await stay.locator("#redirect-note").isVisible() };
  await stay.close();

  const receipt = await context.newPage();
  watch(receipt);
  await receipt.goto(`${config.base}/checkout/?invoice=${config.guid}&view=receipt&lang=de`);
  await receipt.locator("#receipt").waitFor({ state: "visible" });
  const shown = {
    invoiceVisible: await receipt.locator("#invoice").isVisible(),
    title: await text(receipt, "#title"),
    heading: await text(receipt, "#receipt-title"),
    merchant: await text(receipt, "#receipt-merchant"),
    amount: await text(receipt, "#receipt-amount"),
    network: await text(receipt, "#receipt-network"),
    date: await text(receipt, "#receipt-date"),
    payments: await receipt.locator("#receipt-payments li").allInnerTexts(),
    txHrefs: await receipt.locator("#receipt-payments a").evaluateAll((as) => as.map((a) => a.href)),
    printVisible: await receipt.locator("#print").isVisible(),
  };
  await shot(receipt, "receipt");
  await receipt.emulateMedia({ colorScheme: "dark" });
  await receipt.setViewportSize({ width: 390, height: 844 });
  await shot(receipt, "receipt-mobile-dark");
  await receipt.emulateMedia({ media: "print", colorScheme: "light" });
  shown.printButtonPrinted = await receipt.locator("#print").isVisible();
  await receipt.pdf?.({ path: join(config.artifacts, "checkout-receipt.pdf") }).catch(() => null);
  await shot(receipt, "receipt-print");
  emit("receipt", { stayed, shown });
}

/** "Pay with wallet" with an injected EIP-1193 provider: a test wallet that starts on another
 * chain, switches when asked, and forwards every eth_* call to anvil (config.rpc), whose
 * unlocked dev account config.payer signs. Nothing reaches anvil from the page itself. */
async function walletPay() {
  const calls = [];
  let chain = "0x1";
  await context.exposeFunction("__paycoreTestWallet", async (method, params) => {
    calls.push(method);
    if (method === "eth_requestAccounts" || method === "eth_accounts") return { result: [config.payer] };
    if (method === "eth_chainId") return { result: chain };
    if (method === "wallet_switchEthereumChain") {
      chain = params[0].chainId;
      return { result: null };
    }
    const answer = await fetch(config.rpc, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: calls.length, method, params }),
    });
    const body = await answer.json();
    return body.error ? { error: body.error } : { result: body.result };
  });
  await context.addInitScript(() => {
    window.ethereum = {
      request: ({ method, params }) =>
        window.__paycoreTestWallet(method, params ?? []).then((r) => {
          if (r.error) throw Object.assign(new Error(r.error.message), { code: r.error.code });
          return r.result;
        }),
    };
  });
  const page = await openInvoice(config.guid);
  const before = {
    buttonVisible: await page.locator("#wallet-pay").isVisible(),
    button: await text(page, "#wallet-pay"),
    amountToken: await text(page, "#amount-token"),
  };
  await shot(page, "wallet-init");
  await page.locator("#wallet-pay").click();
  await page.waitForFunction(() => document.getElementById("wallet-status").dataset.tx);
  const sent = {
    tx: await attr(page, "#wallet-status", "data-tx"),
    status: await text(page, "#wallet-status"),
    calls: [...calls],
    chain,
  };
  await shot(page, "wallet-sent");
  emit("sent", { before, sent });

  await proceed(); // the watcher saw the transfer
  await waitStatus(page, "paid", 30000);
  const paid = await snapshot(page);
  await shot(page, "wallet-paid");
  emit("paid", { paid, buttonVisible: await page.locator("#wallet-pay").isVisible() });
}

/** "Pay with TronLink" with an injected fake TronLink (window.tronLink and window.tronWeb)
 * that records every call and answers with a transaction id, and the merchant's identity:
 * name, logo (served here for its https origin, config.logo) and support contact. */
async function tronLink() {
  await context.route(new URL(config.logo).origin + "/**", (route) =>
    route.fulfill({
      contentType: "image/svg+xml",
      body: '<svg xmlns="http://www.w3.org/2000/svg" width="48" height="48"><rect width="48" height="48" fill="#c05"/></svg>',
    }),
  );
  await context.route("https://elsewhere.example/**", (route) =>
    route.fulfill({ contentType: "image/svg+xml", body: '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>' }),
  );
  await context.addInitScript((payer) => {
    const calls = [];
    window.__tronCalls = calls;
    const record = (name, args) =>
      calls.push({ name, args: JSON.parse(JSON.stringify(args, (_k, v) => (typeof v === "bigint" ? `bigint ${v}` : v))), types: args.map((a) => typeof a) });
    const tronWeb = {
      defaultAddress: { base58: payer },
      trx: {
        sendTransaction: async (...args) => {
          record("sendTransaction", args);
          return { result: true, txid: "11".repeat(32), transaction: { txID: "11".repeat(32) } };
        },
        sign: async (...args) => {
          record("sign", args);
          return { ...args[0], signature: ["5e"] };
        },
        sendRawTransaction: async (...args) => {
          record("sendRawTransaction", args);
          return { result: true, txid: args[0].txID, transaction: args[0] };
        },
      },
      transactionBuilder: {
        triggerSmartContract: async (...args) => {
          record("triggerSmartContract", args);
          return { result: { result: true }, transaction: { txID: "22".repeat(32), raw_data: {} } };
        },
      },
    };
    window.tronWeb = tronWeb;
    window.tronLink = {
      ready: true,
      tronWeb,
      request: async (...args) => {
        record("request", args);
        return { code: 200, message: "The site is already in the whitelist" };
      },
    };
  }, config.payer);

  const page = await openInvoice(config.guid);
  await page.locator("#merchant-logo").waitFor({ state: "visible" });
  await page.waitForFunction(() => document.getElementById("merchant-logo").naturalWidth > 0);
  // Any other image origin stays blocked by the page's policy.
  const blocked = await page.evaluate(
    () =>
      new Promise((resolve) => {
        document.addEventListener("securitypolicyviolation", (e) =>
          resolve({ uri: e.blockedURI, directive: e.effectiveDirective }),
        );
        const img = document.createElement("img");
        img.alt = "";
        img.src = "https://elsewhere.example/pixel.svg";
        document.body.append(img);
      }),
  );
  const merchant = {
    name: await text(page, "#merchant-name"),
    logoSrc: await attr(page, "#merchant-logo", "src"),
    logoAlt: await attr(page, "#merchant-logo", "alt"),
    support: await text(page, "#merchant-support"),
    supportHref: await attr(page, "#merchant-support-link", "href"),
    blocked,
  };
  const before = {
    tronVisible: await page.locator("#tronlink-pay").isVisible(),
    tronButton: await text(page, "#tronlink-pay"),
    walletVisible: await page.locator("#wallet-pay").isVisible(),
    amountToken: await text(page, "#amount-token"),
  };
  await audit(page, "tronlink");
  await page.locator("#tronlink-pay").click();
  await page.waitForFunction(() => document.getElementById("wallet-status").dataset.tx);
  const trx = {
    tx: await attr(page, "#wallet-status", "data-tx"),
    status: await text(page, "#wallet-status"),
    calls: await page.evaluate(() => window.__tronCalls.splice(0)),
    blocked: await page.locator("#tronlink-pay").isDisabled(),
  };

  // A second payment is the payer's explicit choice.
  await page.locator("#pay-again").click();
  await page.getByLabel("USDT", { exact: true }).check();
  await page.waitForFunction(() => document.getElementById("amount-token").textContent.includes("USDT"));
  const usdtAmount = await text(page, "#amount-token");
  await page.locator("#tronlink-pay").click();
  await page.waitForFunction((old) => document.getElementById("wallet-status").dataset.tx !== old, trx.tx);
  const usdt = {
    amountToken: usdtAmount,
    tx: await attr(page, "#wallet-status", "data-tx"),
    calls: await page.evaluate(() => window.__tronCalls.splice(0)),
  };
  await shot(page, "tronlink-sent");
  emit("sent", { merchant, before, trx, usdt });

  await proceed(); // the watcher saw the token transfer
  await waitStatus(page, "paid", 30000);
  const paid = await snapshot(page);
  await shot(page, "tronlink-paid");
  const receipt = await context.newPage();
  watch(receipt);
  await receipt.goto(`${config.base}/checkout/?invoice=${config.guid}&view=receipt`);
  await receipt.locator("#receipt").waitFor({ state: "visible" });
  const receiptMerchant = await text(receipt, "#receipt-merchant");
  await audit(receipt, "tronlink-receipt");
  emit("paid", {
    paid,
    tronVisible: await page.locator("#tronlink-pay").isVisible(),
    receiptMerchant,
    audits,
  });
}

/** A fake EIP-1193 wallet in every page of `where`: it answers from page-side state
 * (window.__wallet) and records every request. `chain` is where it starts; a "misreporting"
 * wallet says yes to wallet_switchEthereumChain but stays where it is. eth_sendTransaction
 * answers the next hash of `hashes` (the test records the deposit under that hash). */
async function fakeWallet(where, { chain = "0x1", misreport = false, hashes = [] }) {
  await where.addInitScript(
    ({ chain, misreport, hashes, payer }) => {
      const wallet = { chain, misreport, hashes: [...hashes], calls: [], sent: [] };
      window.__wallet = wallet;
      window.ethereum = {
        request: async ({ method, params = [] }) => {
          wallet.calls.push(method);
          if (method === "eth_requestAccounts" || method === "eth_accounts") return [payer];
          if (method === "eth_chainId") return wallet.chain;
          if (method === "wallet_switchEthereumChain") {
            if (!wallet.misreport) wallet.chain = params[0].chainId;
            return null;
          }
          if (method === "eth_sendTransaction") {
            wallet.sent.push(params[0]);
            return wallet.hashes.shift();
          }
          throw Object.assign(new Error(`unsupported ${method}`), { code: 4200 });
        },
      };
    },
    { chain, misreport, hashes, payer: config.payer },
  );
}

const walletOf = (page) => page.evaluate(() => ({ calls: [...window.__wallet.calls], sent: [...window.__wallet.sent], chain: window.__wallet.chain }));

/** The parts of the page a payment in flight changes. */
async function flight(page) {
  return {
    ...(await snapshot(page)),
    inflight: await attr(page, "#checkout", "data-inflight"),
    inflightVisible: await page.locator("#inflight").isVisible(),
    inflightItems: await page.locator("#inflight-list li").evaluateAll((lis) => lis.map((li) => ({ tx: li.dataset.tx, stage: li.dataset.stage, text: li.innerText }))),
    payAgain: await page.locator("#pay-again").isVisible() ? await text(page, "#pay-again") : null,
    payVisible: await page.locator("#pay").isVisible(),
    walletVisible: await page.locator("#wallet-pay").isVisible(),
    walletDisabled: await page.locator("#wallet-pay").isDisabled(),
    walletStatus: await page.locator("#wallet-status").textContent(),
  };
}

/** A EUR and a JPY invoice, quoted in their own currency and paid with the wallet button. */
async function currencies() {
  await fakeWallet(context, { chain: "0x7a69", hashes: config.hashes });
  const results = {};
  for (const [name, guid] of Object.entries(config.guids)) {
    const page = await openInvoice(guid);
    await page.waitForFunction(() => document.getElementById("amount-token").textContent.includes("ETH"));
    const before = await snapshot(page);
    await shot(page, `currency-${name}`);
    await page.locator("#wallet-pay").click();
    await page.waitForFunction(() => window.__wallet.sent.length === 1);
    const { sent } = await walletOf(page);
    emit("sent", { name, before, tx: sent[0] });
    await proceed(); // the test records the deposit the wallet sent
    await waitStatus(page, "paid");
    results[name] = await snapshot(page);
    await shot(page, `currency-${name}-paid`);
    await page.close();
  }
  emit("paid", { results });
}

/** No second payment by accident: a wallet that misreports its chain switch gets nothing to
 * send; a sent payment is remembered across a reload and puts the ways to pay away until
 * the payer explicitly asks to pay again. */
async function safety() {
  await fakeWallet(context, { chain: "0x1", misreport: true, hashes: config.hashes });
  let page = await openInvoice(config.guid);
  await page.locator("#wallet-pay").click();
  await page.waitForFunction(() => /chain 1\b/.test(document.getElementById("wallet-status").textContent));
  const refused = { ...(await walletOf(page)), status: await text(page, "#wallet-status"), disabled: await page.locator("#wallet-pay").isDisabled() };
  await page.evaluate(() => {
    window.__wallet.misreport = false;
  });
  await page.locator("#wallet-pay").click();
  await page.waitForFunction(() => document.getElementById("checkout").dataset.inflight === "true");
  const sent = { ...(await flight(page)), wallet: await walletOf(page) };
  await shot(page, "sent");
  await page.reload();
  await page.locator("#inflight").waitFor({ state: "visible" });
  const reloaded = await flight(page);
  await shot(page, "sent-reloaded");
  await audit(page, "sent", AUDIT_LANGUAGES);
  await page.locator("#pay-again").click();
  await page.locator("#pay").waitFor({ state: "visible" });
  const again = { ...(await flight(page)), focused: await page.evaluate(() => document.activeElement?.id) };
  emit("sent", { refused, sent, reloaded, again, audits });

  await proceed(); // the test records the transfer the wallet sent
  await waitStatus(page, "paid");
  const paid = await flight(page);
  await page.reload();
  await waitStatus(page, "paid");
  const reloadedPaid = await flight(page);
  // What this browser remembers is per invoice: another invoice's page knows of no payment.
  const other = await openInvoice(config.other);
  emit("paid", { paid, reloaded: reloadedPaid, other: await flight(other) });
}

/** Every outcome that is not plain paid, each on its own page: what the payer reads, and
 * axe-core's audit of it in three languages. config.guids: {kind: guid}; "reversed" is
 * opened first with its part payment, and the test takes that payment back after "seen". */
async function outcomes() {
  const found = {};
  const reversed = await openInvoice(config.guids.reversed);
  await waitStatus(reversed, "partialPaid");
  emit("seen", {});
  await proceed(); // the test reorgs the payment away
  await reversed.waitForFunction(() => document.getElementById("checkout").dataset.outcome === "reversed", null, { timeout: 15000 });
  const pages = { reversed };
  for (const kind of Object.keys(config.guids)) {
    const page = pages[kind] || (await openInvoice(config.guids[kind]));
    await page.waitForFunction((k) => document.getElementById("checkout").dataset.outcome === k, kind, { timeout: 15000 });
    found[kind] = {
      ...(await snapshot(page)),
      outcome: await attr(page, "#checkout", "data-outcome"),
      title: await text(page, "#outcome-title"),
      text: await text(page, "#outcome-text"),
      contactHref: await page.locator("#outcome-text a").getAttribute("href").catch(() => null),
    };
    await chooseLanguage(page, "de");
    found[kind].de = await text(page, "#outcome-text");
    await chooseLanguage(page, "en");
    await shot(page, `outcome-${kind}`);
    await audit(page, `outcome-${kind}`, AUDIT_LANGUAGES);
    found[kind].after = await attr(page, "#checkout", "data-outcome"); // polls later: still said
    await page.close();
  }
  emit("outcomes", { found, audits });
}

/** What the buyer sends to and how the page holds up: the token's contract beside its
 * symbol, the language switcher, the primary action first on a phone, a long word that
 * must not widen the page, and a receipt that stays put with redirectAutomatically on. */
async function trust() {
  await fakeWallet(context, { chain: "0x7a69" });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin });
  const page = await openInvoice(config.guid);
  await page.getByLabel("USDT", { exact: true }).check();
  await page.waitForFunction(() => document.getElementById("amount-token").textContent.includes("USDT"));
  await audit(page, "token", AUDIT_LANGUAGES); // the contract's link and copy button included
  const widths = {};
  const layout = {};
  for (const [name, size] of Object.entries(VIEWPORTS)) {
    await page.setViewportSize(size);
    widths[name] = await page.evaluate(() => ({ document: document.documentElement.scrollWidth, viewport: window.innerWidth }));
    layout[name] = await page.evaluate(() => {
      const box = (id) => document.getElementById(id).getBoundingClientRect();
      return { wallet: box("wallet-pay").toJSON(), qr: box("qr").toJSON(), height: window.innerHeight };
    });
    await shot(page, `trust-${name}`, false);
  }
  await page.setViewportSize(VIEWPORTS.desktop);
  const contract = {
    label: await text(page, "#contract-label"),
    shown: await text(page, "#contract"),
    href: await page.locator("#contract a").getAttribute("href"),
    title: await page.locator("#contract code").getAttribute("title"),
  };
  await page.locator("#copy-contract").click();
  contract.clipboard = await page.evaluate(() => navigator.clipboard.readText());
  await page.getByLabel("ETH", { exact: true }).check();
  await page.waitForFunction(() => document.getElementById("amount-token").textContent.includes("ETH"));
  contract.nativeRowVisible = await page.locator("#contract-row").isVisible();
  await page.locator("#language").selectOption("ja");
  await page.waitForFunction(() => document.documentElement.lang === "ja");
  const switched = {
    url: page.url(),
    badge: await text(page, "#status-badge"),
    options: await page.locator("#language option").evaluateAll((os) => os.map((o) => o.textContent)),
    marker: await page.evaluate(() => window.__paycoreMarker ?? null),
  };
  await page.close();
  emit("open", { widths, layout, contract, switched, audits });

  await proceed(); // the test pays the invoice in full
  const receipt = await context.newPage();
  watch(receipt);
  await receipt.goto(`${config.base}/checkout/?invoice=${config.guid}&view=receipt`);
  await receipt.locator("#receipt").waitFor({ state: "visible" });
  await receipt.waitForTimeout(7000); // longer than the automatic redirect's countdown
  const stayed = {
    url: receipt.url(),
    receiptVisible: await receipt.locator("#receipt").isVisible(),
    noteVisible: await receipt.locator("#redirect-note").isVisible(),
    width: await receipt.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
  };
  await receipt.emulateMedia({ media: "print" });
  await shot(receipt, "trust-receipt-print");
  emit("receipt", { stayed });
}

/** How the page follows an invoice: the event stream where the server has one (an update
 * arrives without a read), else polling. Counts the page's reads of the invoice and notes
 * the stream's answer and every read's status (200, or 304 to a revalidation). */
async function following() {
  const page = await context.newPage();
  watch(page, { expect404: false });
  const reads = [];
  let stream = null;
  page.on("response", (response) => {
    const url = response.url();
    if (/\/invoice\/[^/?]+\/events$/.test(url)) stream = { status: response.status(), type: response.headers()["content-type"] || "" };
    else if (/\/invoice\/[^/?]+$/.test(url)) reads.push({ at: Date.now(), status: response.status() });
  });
  await page.goto(`${config.base}/checkout/?invoice=${config.guid}`);
  await rendered(page);
  await page.waitForTimeout(6000); // idle: what does the page do meanwhile?
  const idle = reads.length;
  emit("idle", { stream, idleReads: idle, statuses: reads.map((r) => r.status) });
  await proceed(); // the test records the whole payment
  const started = Date.now();
  const before = reads.length;
  await waitStatus(page, "paid", 15000);
  emit("paid", { latencyMs: Date.now() - started, readsWhileWaiting: reads.length - before, stream, badge: await text(page, "#status-badge") });
}

/** "Payment detected, confirming (n of m)": the wallet sends, the watcher sees the transfer
 * mined (the record's provisional `detected` list) and deeper, a reload in between, then it
 * is confirmed and counted. The worker's passes are the test's, between the steps. */
async function confirming() {
  await fakeWallet(context, { chain: "0x7a69", hashes: config.hashes });
  const page = await openInvoice(config.guid);
  await page.locator("#wallet-pay").click();
  await page.waitForFunction(() => document.getElementById("checkout").dataset.inflight === "true");
  emit("sent", { sent: await flight(page), tx: (await walletOf(page)).sent[0] });

  await proceed(); // mined: 1 of 3
  const stage = (s) =>
    page.waitForFunction((want) => document.querySelector("#inflight-list li")?.dataset.stage === want, s, { timeout: 15000 });
  await stage("confirming");
  const first = await flight(page);
  await page.reload();
  await stage("confirming");
  const reloaded = await flight(page);
  await shot(page, "confirming");
  await audit(page, "confirming", AUDIT_LANGUAGES);
  // Another browser, which sent nothing (the payer scanned the QR code with a phone):
  // the server's detected list alone shows the payment on its way.
  const elsewhere = await chromium.launch({ executablePath: config.chromium, headless: true, args: ARGS });
  let stranger;
  try {
    const fresh = await elsewhere.newContext({ locale: "en-US", timezoneId: "UTC", viewport: VIEWPORTS.desktop });
    const other = await openInvoice(config.guid, "/checkout/", "", fresh);
    await other.locator("#inflight").waitFor({ state: "visible" });
    stranger = await flight(other);
  } finally {
    await elsewhere.close();
  }
  emit("confirming", { first, reloaded, stranger, audits });

  await proceed(); // one block deeper: 2 of 3
  await page.waitForFunction(() => document.getElementById("status-badge").textContent.includes("2 of 3"), null, { timeout: 15000 });
  const deeper = await flight(page);
  emit("deeper", { deeper });

  await proceed(); // confirmed: the payment is counted, the detected list is empty
  await waitStatus(page, "paid");
  emit("paid", { paid: await flight(page) });
}

const SCENARIOS = {
  confirming,
  following,
  currencies,
  safety,
  outcomes,
  trust,
  deposits,
  "pay-link": payLink,
  languages,
  returning,
  "wallet-pay": walletPay,
  tronlink: tronLink,
};

try {
  await SCENARIOS[config.scenario || "deposits"]();
  emit("done", { problems, foreign });
} catch (error) {
  emit("crash", { message: String(error && error.stack ? error.stack : error), problems, recent });
  process.exitCode = 1;
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
