// The merchant dashboard ({prefix}/dashboard) in a real Chromium, as a merchant uses it, with an
// injected EIP-1193 wallet: window.ethereum forwards each request to this script, which signs
// with the test owner's key (ethers) and sends transactions to anvil. The walk: sign in, find
// an invoice by its order id, refund part of it, withdraw the rest, redeliver a webhook,
// download the export, visit every view (screenshots, axe-core), reload, sign out.
//
// argv[2]: JSON {base, chromium, artifacts, ownerKey, rpcUrl, orderId, refundAmount}
// Prints one JSON line at the end: what the page showed and did, every request it made.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { JsonRpcProvider, Wallet, getBytes } from "ethers";

const config = JSON.parse(process.argv[2]);
const AXE = readFileSync(new URL("../../node_modules/axe-core/axe.min.js", import.meta.url), "utf8");
const provider = new JsonRpcProvider(config.rpcUrl, undefined, { staticNetwork: true });
const owner = new Wallet(config.ownerKey, provider);
const origin = new URL(config.base).origin;

const profile = mkdtempSync(join(tmpdir(), "paycore-dashboard-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: config.chromium,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 1100, height: 860 },
  locale: "en-US",
  timezoneId: "UTC",
  acceptDownloads: true,
});
const problems = [];
const requests = [];
const walletCalls = [];
const audits = {};
const result = {};

await context.exposeFunction("__paycoreWallet", async (text) => {
  const { method, params } = JSON.parse(text);
  walletCalls.push(method);
  try {
    switch (method) {
      case "eth_requestAccounts":
      case "eth_accounts":
        return JSON.stringify({ result: [owner.address] });
      case "eth_chainId":
        return JSON.stringify({ result: "0x" + (await provider.getNetwork()).chainId.toString(16) });
      case "wallet_switchEthereumChain":
        return JSON.stringify({ result: null });
      case "personal_sign":
        return JSON.stringify({ result: await owner.signMessage(getBytes(params[0])) });
      case "eth_sendTransaction": {
        const p = params[0];
        const sent = await owner.sendTransaction({ to: p.to, data: p.data, value: p.value, gasLimit: p.gas, gasPrice: p.gasPrice });
        await sent.wait();
        return JSON.stringify({ result: sent.hash });
      }
      default:
        return JSON.stringify({ error: { code: 4200, message: `unsupported ${method}` } });
    }
  } catch (error) {
    return JSON.stringify({ error: { code: -32000, message: error.message } });
  }
});
await context.addInitScript(() => {
  window.ethereum = {
    request: async ({ method, params = [] }) => {
      const answer = JSON.parse(await window.__paycoreWallet(JSON.stringify({ method, params })));
      if (answer.error) throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
      return answer.result;
    },
  };
});

const page = await context.newPage();
page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
page.on("console", (msg) => {
  if (msg.type() === "error" && !/Failed to load resource/.test(msg.text())) problems.push(`console: ${msg.text()}`);
});
page.on("request", (req) => {
  const url = new URL(req.url());
  if (url.protocol.startsWith("http") && url.origin !== origin) problems.push(`foreign: ${req.url()}`);
  requests.push({ method: req.method(), url: req.url(), headers: req.headers(), body: req.postData() || "" });
});
page.on("response", (res) => {
  // 404 of the merchant profile before it is set is an answer the page expects
  // and so is the 400 of the payout upload with a bad row, which the walk sends on purpose
  const expected = /merchant\/profile/.test(res.url()) || (res.status() === 400 && /\/payouts$/.test(res.url()));
  if (res.status() >= 400 && !expected && !res.url().endsWith("/favicon.ico")) {
    problems.push(`${res.status()}: ${res.url()}`);
  }
});

const VIEWPORTS = { desktop: { width: 1100, height: 860 }, phone: { width: 390, height: 844 } };

/** Screenshots of the view on a desktop and a phone, light and dark, and axe-core's check. */
async function audit(name) {
  for (const [viewport, size] of Object.entries(VIEWPORTS)) {
    await page.setViewportSize(size);
    for (const scheme of ["light", "dark"]) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.screenshot({ path: join(config.artifacts, `dashboard-${name}-${viewport}-${scheme}.png`), fullPage: true });
      if (!(await page.evaluate(() => typeof window.axe === "object"))) await page.evaluate(AXE);
      audits[`${name}-${viewport}-${scheme}`] = await page.evaluate(async () => {
        const found = await window.axe.run(document, {
          runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] },
          resultTypes: ["violations"],
        });
        return found.violations.map((v) => `${v.id}: ${v.nodes[0]?.target?.join(" ")} ${v.nodes[0]?.failureSummary ?? ""}`);
      });
    }
  }
  await page.emulateMedia({ colorScheme: "light" });
  await page.setViewportSize(VIEWPORTS.desktop);
}

const viewIs = (name) => page.waitForSelector(`#view[data-view="${name}"]`, { timeout: 30000 });

try {
  const answer = await page.goto(`${config.base}/dashboard`, { waitUntil: "load" });
  result.csp = answer.headers()["content-security-policy"];
  await viewIs("signin");
  await audit("signin");
  // The check can fail: a button without a name, added for one run, is found.
  result.axeControl = await page.evaluate(async () => {
    const bad = document.createElement("button");
    document.getElementById("view").append(bad);
    const found = await window.axe.run(document, { resultTypes: ["violations"] });
    bad.remove();
    return found.violations.map((v) => v.id);
  });
  await page.click("#sign-in");
  await viewIs("invoices");
  result.session = await page.evaluate(() => JSON.parse(sessionStorage.getItem("paycore-dashboard-session")));
  result.ownerShown = await page.textContent("#owner");
  result.listed = await page.$$eval("a.invoice-link", (els) => els.length);
  await audit("invoices");

  // Find the invoice by its order id.
  await page.fill("#search", config.orderId);
  await page.click("form[role=search] button[type=submit]");
  await page.waitForFunction(() => location.hash.includes("q="));
  await viewIs("invoices");
  await page.waitForSelector("a.invoice-link");
  result.found = await page.$$eval("a.invoice-link", (els) => els.map((el) => el.getAttribute("href")));
  result.searchSummary = await page.textContent("#invoices-summary");
  await audit("search");
  await page.click("a.invoice-link");
  await viewIs("invoice");
  await audit("invoice");

  // Refund part of it: paycore builds the payout, the wallet sends it.
  await page.fill("#refund-amount", config.refundAmount);
  await page.click("#refund-submit");
  await page.waitForSelector("#refund-status[data-tx]", { timeout: 60000 });
  result.refundTx = await page.getAttribute("#refund-status", "data-tx");

  // Withdraw the rest from the money view.
  await page.click('nav a[href="#/money"]');
  await viewIs("money");
  await page.waitForSelector("form.withdraw");
  result.withdrawForms = await page.$$eval("form.withdraw", (els) => els.map((el) => el.getAttribute("aria-label")));
  await audit("money");
  const withdraw = page.locator("form.withdraw").first();
  result.withdrawAmount = await withdraw.locator("input").nth(1).inputValue();
  await withdraw.locator("button").click();
  await withdraw.locator("p[data-tx]").waitFor({ timeout: 60000 });
  result.withdrawTx = await withdraw.locator("p[data-tx]").getAttribute("data-tx");

  // Redeliver a webhook.
  await page.click('nav a[href="#/webhooks"]');
  await viewIs("webhooks");
  await audit("webhooks");
  result.attemptsShown = (await page.textContent("td details summary")).trim();
  await page.click("td details summary");
  result.attemptsText = await page.textContent("td details ul");
  const redeliver = page.locator("button[data-delivery]").first();
  result.redelivered = await redeliver.getAttribute("data-delivery");
  await redeliver.click();
  await page.waitForFunction(() => document.getElementById("toast").textContent.includes("queued again"));

  // Add a webhook endpoint (its secret shown once), rotate its secret, edit it, delete it.
  const hookUrl = (await page.textContent("td .mono")).trim() + "?second=1";
  await page.fill("#endpoint-url", hookUrl);
  await page.fill("#endpoint-types", "invoice.paid");
  await page.click("#endpoint-save");
  await page.waitForSelector("#endpoint-secret [data-secret]");
  result.endpointSecret = (await page.textContent("#endpoint-secret [data-secret]")).trim();
  const del = page.locator('button[data-action="delete"]');
  result.endpointId = await del.first().getAttribute("data-endpoint");
  result.endpointRows = await page.locator("button[data-endpoint]").count();
  await audit("webhooks-endpoint");
  await page.click(`button[data-action="rotateSecret"][data-endpoint="${result.endpointId}"]`);
  await page.waitForFunction((before) => {
    const shown = document.querySelector("#endpoint-secret [data-secret]");
    return shown && shown.textContent.trim() !== before;
  }, result.endpointSecret);
  result.rotatedSecret = (await page.textContent("#endpoint-secret [data-secret]")).trim();
  await page.click(`button[data-action="edit"][data-endpoint="${result.endpointId}"]`);
  await page.fill("#endpoint-types", "invoice.paid, invoice.expired");
  await page.uncheck("#endpoint-enabled");
  await page.click("#endpoint-save");
  await page.waitForFunction(() => document.getElementById("toast").textContent.includes("saved") || document.getElementById("endpoint-status")?.textContent);
  result.endpointProblem = await page.textContent("#endpoint-status");
  result.endpointTypesShown = (await page.locator("tr", { has: page.locator(`button[data-endpoint="${result.endpointId}"]`) }).locator("td").nth(2).textContent()).trim();
  page.once("dialog", (dialog) => dialog.accept());
  await page.click(`button[data-action="delete"][data-endpoint="${result.endpointId}"]`);
  await page.waitForFunction(() => document.getElementById("toast").textContent.includes("deleted"));
  result.endpointRowsAfter = await page.locator("button[data-endpoint]").count();

  // Download the export as JSON lines.
  await page.click('nav a[href="#/export"]');
  await viewIs("export");
  await audit("export");
  await page.selectOption("#export-format", "jsonl");
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#export-download")]);
  const saved = join(config.artifacts, "dashboard-export.jsonl");
  await download.saveAs(saved);
  result.exportFile = saved;
  result.exportStatus = await page.textContent("#export-status");

  // E-mail notices: the wallet signs the salted body, paycore stores the address.
  await page.click('nav a[href="#/profile"]');
  await viewIs("profile");
  await page.fill("#notify-email", config.email);
  await page.click("#notify-save");
  await page.waitForSelector("#notify-status[data-saved]", { timeout: 30000 });
  result.notify = await page.textContent("#notify-status");

  for (const name of ["links", "profile", "keys"]) {
    await page.click(`nav a[href="#/${name}"]`);
    await viewIs(name);
    await audit(name);
  }
  // An app key: the new key (here, one the driver makes) signs the page's consent text, the
  // wallet signs the body; then the owner removes it.
  const appKey = Wallet.createRandom();
  await page.fill("#appkey-address", appKey.address);
  const consentText = (await page.textContent("#appkey-text")).trim();
  await page.fill("#appkey-consent", await appKey.signMessage(consentText));
  await page.click("#appkey-add");
  await page.waitForSelector(`button[data-appkey="${appKey.address}"]`, { timeout: 30000 });
  result.appKey = appKey.address;
  result.appKeyConsentText = consentText;
  await audit("keys-appkey");
  await page.click(`button[data-appkey="${appKey.address}"]`);
  await page.waitForFunction(() => document.getElementById("toast").textContent.includes("removed"), null, { timeout: 30000 });
  result.appKeyRowsAfter = await page.locator("button[data-appkey]").count();
  // Subscriptions: a plan and a subscriber made through the forms; the one the test made
  // before (its first period invoiced by the worker) shows its period, then is cancelled.
  await page.click('nav a[href="#/subscriptions"]');
  await viewIs("subscriptions");
  await page.fill("#plan-name", "Gold");
  await page.fill("#plan-amount", "9.90");
  await page.fill("#plan-tokens", config.token);
  await page.fill("#plan-grace", "3");
  await page.click("#plan-create");
  await page.waitForFunction(() => [...document.querySelectorAll("#view td")].some((td) => td.textContent === "Gold"), null, { timeout: 30000 });
  await audit("subscriptions");
  await page.selectOption("#sub-plan", { label: "Gold" });
  await page.fill("#sub-reference", "customer-42");
  await page.click("#sub-create");
  await viewIs("subscription");
  result.newSubscription = await page.textContent("h1");
  await page.click('a[href="#/subscriptions"]');
  await viewIs("subscriptions");
  result.subscriptionsListed = await page.$$eval("a.subscription-link", (els) => els.map((el) => el.textContent));
  await page.click(`a.subscription-link >> text=${config.subscriber}`);
  await viewIs("subscription");
  await audit("subscription");
  result.periodInvoices = await page.$$eval("a.period-invoice", (els) => els.map((el) => el.getAttribute("href")));
  result.subscriberPage = await page.getAttribute("#subscriber-page", "href");
  await page.click("#sub-cancel");
  await page.waitForFunction(() => document.getElementById("toast").textContent.includes("cancelled"));
  await viewIs("subscription");
  await page.waitForSelector("#sub-cancel", { state: "detached" });
  result.cancelledBadge = await page.textContent(".facts .badge");

  // Payouts: an upload with a bad row is refused with its line; a good one is built, sent by
  // the wallet and confirmed, and the batch shows each row's state.
  await page.click('nav a[href="#/payouts"]');
  await viewIs("payouts");
  await page.fill("#payout-csv", `address,token,amount,reference\n${config.payoutTo},ETH,0.01,r-1\n0x12,ETH,1,r-2\n`);
  await page.click("#payout-build");
  await page.waitForSelector("#payout-errors", { timeout: 30000 });
  result.badLines = await page.$$eval("#payout-errors li", (els) => els.map((el) => [el.dataset.line, el.textContent]));
  await audit("payouts");
  await page.fill("#payout-csv", `address,token,amount,reference\n${config.payoutTo},ETH,0.01,r-1\n`);
  await page.click("#payout-build");
  await page.waitForSelector("#payout-built", { timeout: 30000 });
  await audit("payouts-built");
  await page.click("#payout-send");
  await viewIs("payout");
  await audit("payout");
  result.payoutCounts = await page.textContent("#payout-counts");
  result.payoutBadges = await page.$$eval("#view td .badge", (els) => els.map((el) => el.className));
  result.payoutBatch = await page.evaluate(() => decodeURIComponent(location.hash.split("/")[2]));

  // A language with other words and another script: the page follows ?lang=.
  await page.goto(`${config.base}/dashboard#/invoices`, { waitUntil: "load" });
  await viewIs("invoices");
  await page.selectOption("#language", "ja");
  await page.waitForFunction(() => document.documentElement.lang === "ja");
  await viewIs("invoices");
  result.japaneseTitle = await page.textContent("h1");
  await audit("invoices-ja");

  // A reload keeps the session; sign-out deregisters the key.
  await page.goto(`${config.base}/dashboard?lang=en#/invoices`, { waitUntil: "load" });
  await viewIs("invoices");
  result.afterReload = await page.textContent("#owner");
  await page.click("#sign-out");
  await viewIs("signin");
  result.afterSignOut = await page.evaluate(() => sessionStorage.getItem("paycore-dashboard-session"));
} catch (error) {
  problems.push(`driver: ${error.message}`);
  try {
    await page.screenshot({ path: join(config.artifacts, "dashboard-failure.png"), fullPage: true });
    result.failedAt = await page.evaluate(() => document.getElementById("view").innerText.slice(0, 500));
  } catch {}
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify({ ...result, problems, audits, requests, walletCalls }) + "\n");
