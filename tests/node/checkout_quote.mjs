// Runs the checkout page's pure modules (the very files the package ships) on tasks read as
// JSON from stdin, and prints their answers as JSON: the Python side checks them against its
// own Decimal arithmetic. BigInts are printed as strings.
import { readFileSync } from "node:fs";

const assets = new URL("../../src/paycore/checkout/assets/", import.meta.url);
const { quote, tokenFacts } = await import(new URL("quote.js", assets));
const { parseDecimal, formatDecimal } = await import(new URL("decimal.js", assets));
const { formatCountdown } = await import(new URL("format.js", assets));
const { apiBase, pricesUrl } = await import(new URL("api.js", assets));
const { chooseLanguage, translator, around } = await import(new URL("i18n.js", assets));
const { MESSAGES } = await import(new URL("messages.js", assets));
const { transferData, paymentTransaction } = await import(new URL("wallet.js", assets));
const { outcome } = await import(new URL("outcome.js", assets));

const plain = (value) =>
  JSON.parse(JSON.stringify(value, (_, v) => (typeof v === "bigint" ? v.toString() : v)));

const run = {
  quote({ invoice, tokenId, prices, chains }) {
    const facts = tokenFacts(tokenId, invoice, chains);
    const offer = quote(invoice, facts, prices);
    return plain({ ...offer, due: offer.due && formatDecimal(offer.due), facts });
  },
  parse({ text }) {
    const value = parseDecimal(text);
    return value && formatDecimal(value);
  },
  countdown({ seconds }) {
    return formatCountdown(seconds);
  },
  apiBase({ url }) {
    return apiBase(url).href;
  },
  pricesUrl({ url, currency }) {
    return pricesUrl(apiBase(url), currency).href;
  },
  language({ asked, preferred }) {
    return chooseLanguage(asked, preferred);
  },
  translate({ language, key, vars }) {
    return translator(language)(key, vars);
  },
  around({ template, name }) {
    return around(template, name);
  },
  catalogues() {
    return MESSAGES;
  },
  outcome({ invoice, seen }) {
    return outcome(invoice, seen);
  },
  transferData({ to, units }) {
    return transferData(to, BigInt(units));
  },
  walletTx({ from, deposit, invoice, tokenId, prices, chains }) {
    const facts = tokenFacts(tokenId, invoice, chains);
    return paymentTransaction(from, deposit, facts, quote(invoice, facts, prices));
  },
};

const { tasks } = JSON.parse(readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(tasks.map((task) => run[task.fn](task))));
