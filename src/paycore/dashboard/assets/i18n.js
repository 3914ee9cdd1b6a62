/**
 * The dashboard's words: the checkout page's approach and languages (its chooseLanguage:
 * `?lang=` first, then the browser's languages, then English) over the dashboard's own
 * catalogue, and the checkout's number formats (format.js), imported from the checkout's
 * files so both pages format money alike.
 */

import { chooseLanguage } from "../../checkout/assets/i18n.js";
import { MESSAGES } from "./messages.js";

export { formatAmount, formatVs } from "../../checkout/assets/format.js";

export function pickLanguage() {
  const asked = new URL(location.href).searchParams.get("lang");
  return chooseLanguage(asked, navigator.languages || [navigator.language]);
}

/** `t(key, vars)`: "{name}" placeholders filled from `vars`; English when a key is missing. */
export const LANGUAGES = Object.keys(MESSAGES);

export function translator(language) {
  const own = MESSAGES[language] || MESSAGES.en;
  return (key, vars = {}, other = null) => {
    const catalogue = other ? MESSAGES[other] || own : own;
    const template = catalogue[key] ?? MESSAGES.en[key] ?? key;
    return template.replace(/\{(\w+)\}/g, (whole, name) => (name in vars ? String(vars[name]) : whole));
  };
}

/** A unix time as the locale writes a date and time. */
export function formatTime(seconds, locale) {
  if (seconds === null || seconds === undefined) return "";
  return new Intl.DateTimeFormat(locale, { dateStyle: "medium", timeStyle: "short" }).format(new Date(seconds * 1000));
}
