/**
 * The dashboard's catalogues, one module per language, keyed alike (English is the
 * reference; a key missing elsewhere falls back to it). The languages are the checkout
 * page's nine, so a shop reads both pages in the same language.
 */

import de from "./messages-de.js";
import en from "./messages-en.js";
import es from "./messages-es.js";
import fr from "./messages-fr.js";
import ja from "./messages-ja.js";
import pt from "./messages-pt.js";
import ru from "./messages-ru.js";
import tr from "./messages-tr.js";
import zh from "./messages-zh.js";

export const MESSAGES = { en, de, es, fr, pt, ru, tr, zh, ja };
