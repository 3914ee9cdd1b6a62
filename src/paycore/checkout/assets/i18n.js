/**
 * The page's words in the payer's language, and numbers in the payer's locale.
 *
 * Why a catalogue in the page and not on the server: the page is the same few static files for
 * everyone (cacheable, no template engine), and the choice depends on the browser: `?lang=`
 * first (a merchant links a page in the shop's language), then navigator.languages, then
 * English. Every visible string of the page comes from here: index.html's static text names
 * its key in a data-i18n attribute and is filled in at start.
 */

import { MESSAGES } from "./messages.js";

export const LANGUAGES = Object.keys(MESSAGES);
export const FALLBACK = "en";

/** A BCP 47 tag Intl accepts, or null: "pt-br" -> "pt-BR". */
function canonical(tag) {
  if (typeof tag !== "string" || !/^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8}){0,3}$/.test(tag.trim())) return null;
  try {
    return Intl.getCanonicalLocales(tag.trim())[0] || null;
  } catch {
    return null;
  }
}

/**
 * The catalogue language and the formatting locale: the first of `asked` (the ?lang= value)
 * and then `preferred` (navigator.languages) whose language has a catalogue. The locale keeps
 * the region the payer asked for ("de-CH" formats as Swiss German), the language picks words.
 */
export function chooseLanguage(asked, preferred = []) {
  for (const raw of [asked, ...(Array.isArray(preferred) ? preferred : [])]) {
    const tag = canonical(raw);
    if (!tag) continue;
    const language = tag.split("-")[0].toLowerCase();
    if (language in MESSAGES) return { language, locale: tag };
  }
  return { language: FALLBACK, locale: FALLBACK };
}

/**
 * `t(key, vars)` for one language: "{name}" placeholders are filled from `vars`; a key the
 * catalogue lacks falls back to English, so a new message never shows as a bare key.
 */
export function translator(language) {
  const own = MESSAGES[language] || MESSAGES[FALLBACK];
  return (key, vars = {}) => {
    const template = own[key] ?? MESSAGES[FALLBACK][key] ?? key;
    return template.replace(/\{(\w+)\}/g, (whole, name) => (name in vars ? String(vars[name]) : whole));
  };
}

/**
 * A template split around one placeholder, so an element (such as the network's <span>) can
 * sit where the language puts it: "Deposit address on {network}" -> ["Deposit address on ", ""].
 */
export function around(template, name) {
  const at = template.indexOf(`{${name}}`);
  if (at < 0) return [template, ""];
  return [template.slice(0, at), template.slice(at + name.length + 2)];
}
