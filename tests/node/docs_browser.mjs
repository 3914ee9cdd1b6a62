// The API reference page ({prefix}/docs) in a real Chromium (Debian's, driven by
// playwright-core). Opens the page once, waits for Swagger UI to list the operations, and
// prints one JSON line: the paths shown, and anything that must not happen (script or
// console errors, Content-Security-Policy refusals, requests to another origin).
//
// argv[2]: JSON {url, chromium, screenshot}
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const config = JSON.parse(process.argv[2]);
const profile = mkdtempSync(join(tmpdir(), "paycore-docs-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: config.chromium,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 1200, height: 900 },
});
const problems = [];
const origin = new URL(config.url).origin;
let result = {};
try {
  const page = await context.newPage();
  page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
  page.on("console", (msg) => {
    // a failed load is reported below with its URL
    if (msg.type() === "error" && !/Failed to load resource/.test(msg.text())) {
      problems.push(`console: ${msg.text()}`);
    }
  });
  page.on("response", (res) => {
    // the browser's own favicon probe asks the host's root, which is not paycore's
    if (res.status() >= 400 && !res.url().endsWith("/favicon.ico")) {
      problems.push(`${res.status()}: ${res.url()}`);
    }
  });
  page.on("request", (req) => {
    const url = new URL(req.url());
    if (url.protocol.startsWith("http") && url.origin !== origin) problems.push(`foreign: ${req.url()}`);
  });
  const answer = await page.goto(config.url, { waitUntil: "load" });
  await page.waitForSelector(".opblock", { timeout: 30000 });
  const paths = await page.$$eval(".opblock .opblock-summary-path", (els) =>
    els.map((el) => el.getAttribute("data-path") || el.textContent.trim()));
  const methods = await page.$$eval(".opblock .opblock-summary-method", (els) =>
    els.map((el) => el.textContent.trim()));
  const title = await page.textContent(".info .title");
  if (config.screenshot) await page.screenshot({ path: config.screenshot, fullPage: false });
  result = { status: answer.status(), csp: answer.headers()["content-security-policy"], paths, methods, title };
} catch (error) {
  problems.push(`driver: ${error.message}`);
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify({ ...result, problems }) + "\n");
