// "Sign in with TronLink" in a real Chromium: a TronLink stand-in (window.tronLink and
// window.tronWeb) whose signMessageV2 is forwarded to this script, which signs with TronWeb
// holding the Tron owner's key. The walk: the sign-in screen offers TronLink only, sign in,
// the invoices list shows the owner's invoices, a reload keeps the session, sign out.
//
// argv[2]: JSON {base, chromium, ownerKey, artifacts}
// Prints one JSON line: what the page showed, what TronLink was asked, every request made.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { TronWeb } from "tronweb";

const config = JSON.parse(process.argv[2]);
// No Tron node is reachable there: signing a message needs none.
const tronWeb = new TronWeb({ fullHost: "http://127.0.0.1:9", privateKey: config.ownerKey });
const owner = TronWeb.address.fromPrivateKey(config.ownerKey);
const origin = new URL(config.base).origin;
mkdirSync(config.artifacts, { recursive: true });

const profile = mkdtempSync(join(tmpdir(), "paycore-dashboard-tronlink-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: config.chromium,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 1100, height: 860 },
  locale: "en-US",
  timezoneId: "UTC",
});
const problems = [];
const requests = [];
const tronCalls = [];
const result = {};
await context.exposeFunction("__tronSign", async (message) => {
  tronCalls.push({ method: "signMessageV2", message });
  return tronWeb.trx.signMessageV2(message);
});
await context.exposeFunction("__tronRequest", async (args) => {
  tronCalls.push(args);
  return { code: 200, message: "The site is already in the whitelist" };
});
await context.addInitScript((address) => {
  const injected = {
    defaultAddress: { base58: address },
    trx: { signMessageV2: (message) => window.__tronSign(message) },
  };
  window.tronWeb = injected;
  window.tronLink = { ready: true, tronWeb: injected, request: (args) => window.__tronRequest(args) };
}, owner);
const page = await context.newPage();
page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
page.on("console", (msg) => {
  if (msg.type() === "error" && !/Failed to load resource/.test(msg.text())) problems.push(`console: ${msg.text()}`);
});
page.on("request", (req) => {
  const url = new URL(req.url());
  if (url.protocol.startsWith("http") && url.origin !== origin) problems.push(`foreign: ${req.url()}`);
  requests.push({ method: req.method(), url: req.url(), body: req.postData() || "" });
});
page.on("response", (res) => {
  if (res.status() >= 400 && !/merchant\/profile/.test(res.url()) && !res.url().endsWith("/favicon.ico")) {
    problems.push(`${res.status()}: ${res.url()}`);
  }
});
const viewIs = (name) => page.waitForSelector(`#view[data-view="${name}"]`, { timeout: 30000 });
const links = () => page.$$eval("a.invoice-link", (els) => els.map((el) => el.getAttribute("href")));

try {
  await page.goto(`${config.base}/dashboard`, { waitUntil: "load" });
  await viewIs("signin");
  result.buttons = await page.$$eval("#view button", (els) => els.map((el) => [el.id, el.textContent]));
  await page.screenshot({ path: join(config.artifacts, "signin.png") });
  await page.click("#sign-in-tron");
  await viewIs("invoices");
  await page.waitForSelector("a.invoice-link");
  result.ownerShown = await page.textContent("#owner");
  result.session = await page.evaluate(() => JSON.parse(sessionStorage.getItem("paycore-dashboard-session")));
  result.listed = await links();
  await page.screenshot({ path: join(config.artifacts, "invoices.png") });
  await page.reload({ waitUntil: "load" });
  await viewIs("invoices");
  await page.waitForSelector("a.invoice-link");
  result.listedAfterReload = await links();
  await page.click("#sign-out");
  await viewIs("signin");
  result.signedOut = await page.evaluate(() => sessionStorage.getItem("paycore-dashboard-session"));
} catch (error) {
  problems.push(`walk: ${error.stack || error}`);
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
result.owner = owner;
result.tronCalls = tronCalls;
result.requests = requests;
result.problems = problems;
process.stdout.write(JSON.stringify(result) + "\n");
