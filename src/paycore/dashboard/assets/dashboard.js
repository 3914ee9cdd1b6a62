/**
 * The dashboard's shell: sign-in with the wallet, the section router (#/invoices, ...), and
 * the shared state the views use. The views themselves are in views.js and money.js.
 */

import { load, signIn, signInTron, tronWebOf, HttpError } from "./session.js";
import { h } from "./dom.js";
import { LANGUAGES, pickLanguage, translator } from "./i18n.js";
import { VIEWS } from "./views.js";

const config = JSON.parse(document.getElementById("paycore-config").textContent || "{}");
const { language, locale } = pickLanguage();
const t = translator(language);
document.documentElement.lang = language;

const app = {
  config,
  locale,
  t,
  session: load(),
  ethereum: () => window.ethereum,
  /** TronLink, when injected: a Tron owner signs in with it (its TronWeb signs). */
  tronLink: () => tronWebOf(window),
  view: document.getElementById("view"),
  /** A short message read out by screen readers (the toast is a polite live region). */
  say(text) {
    const toast = document.getElementById("toast");
    toast.textContent = text;
    clearTimeout(app.sayTimer);
    app.sayTimer = setTimeout(() => (toast.textContent = ""), 6000);
  },
  /** The server's one-line refusal, or the wallet's, as a sentence for the owner. */
  problem(error) {
    if (error instanceof HttpError) {
      if (error.status === 401) return t("problemSession", { text: error.message });
      return t("problemServer", { status: error.status, text: error.message });
    }
    if (error && error.code === 4001) return t("problemRejected");
    if (error && error.message === "no-wallet") return t("noWallet");
    return t("problemOther", { text: (error && error.message) || String(error) });
  },
  go(hash) {
    if (location.hash === hash) route();
    else location.hash = hash;
  },
};

for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);

/** The language switcher: each language in its own name; the choice goes into ?lang= so a
 *  reload keeps it (the page reloads to apply it: its views are built in one language). */
const switcher = h(
  "select",
  { id: "language", "aria-label": t("language") },
  LANGUAGES.map((code) => h("option", { value: code, lang: code, selected: code === language }, t("languageName", {}, code))),
);
switcher.addEventListener("change", () => {
  const url = new URL(location.href);
  url.searchParams.set("lang", switcher.value);
  location.replace(url.toString());
});
document.querySelector(".who").prepend(switcher);
document.querySelector("nav").setAttribute("aria-label", t("navLabel"));

function chrome() {
  const signedIn = Boolean(app.session);
  document.getElementById("nav").hidden = !signedIn;
  const owner = document.getElementById("owner");
  owner.hidden = !signedIn;
  owner.textContent = signedIn ? app.session.owner : "";
  if (signedIn) owner.title = t("signedInAs", { owner: app.session.owner });
  document.getElementById("sign-out").hidden = !signedIn;
}

function signInView() {
  const status = h("p", { class: "notice", role: "status", hidden: true });
  const buttons = [];
  /** A sign-in button: `how` makes the session (the EVM wallet's or TronLink's). */
  const button = (id, label, how) => {
    const el = h("button", { type: "button", id }, label);
    el.addEventListener("click", async () => {
      for (const b of buttons) b.disabled = true;
      status.hidden = false;
      status.className = "notice";
      status.textContent = t("signingIn");
      try {
        app.session = await how();
        chrome();
        app.go(location.hash && location.hash !== "#/" ? location.hash : "#/invoices");
        if (location.hash === "#/invoices") route();
      } catch (error) {
        status.className = "notice problem";
        status.textContent = app.problem(error);
        for (const b of buttons) b.disabled = false;
      }
    });
    buttons.push(el);
    return el;
  };
  if (app.ethereum()) button("sign-in", t("signIn"), () => signIn(app.ethereum()));
  if (app.tronLink()) button("sign-in-tron", t("signInTron"), () => signInTron(window));
  return h(
    "section",
    { class: "card signin", "aria-labelledby": "signin-title" },
    h("h1", { id: "signin-title" }, t("signInTitle")),
    h("p", {}, t("signInText")),
    h("p", { class: "muted" }, t("signInKeyNote")),
    buttons.length ? h("div", { class: "actions" }, buttons) : h("p", { class: "notice problem" }, t("noWallet")),
    status,
  );
}

let rendering = 0;
async function route() {
  chrome();
  const ticket = ++rendering;
  const [name, ...args] = (location.hash.replace(/^#\/?/, "").split("?")[0] || "invoices").split("/").map(decodeURIComponent);
  for (const a of document.querySelectorAll("nav a")) {
    if (a.getAttribute("href") === `#/${name}`) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  let content;
  if (!app.session) {
    document.title = t("signInTitle");
    content = signInView();
  } else {
    const view = VIEWS[name] || VIEWS.invoices;
    content = h("p", { class: "notice", role: "status" }, t("loading"));
    app.view.replaceChildren(content);
    try {
      content = await view(app, ...args);
    } catch (error) {
      if (error instanceof HttpError && error.status === 401 && /session signature/.test(error.message)) {
        app.session.forget(); // expired or deregistered elsewhere: sign in again
        app.session = null;
        return route();
      }
      content = h("p", { class: "notice problem", role: "alert" }, app.problem(error));
    }
  }
  if (ticket !== rendering) return;
  app.view.replaceChildren(content);
  const heading = app.view.querySelector("h1");
  if (heading) document.title = `${heading.textContent} · ${t("title")}`;
  app.view.dataset.view = app.session ? name : "signin";
}
app.route = route;

document.getElementById("sign-out").addEventListener("click", async () => {
  const session = app.session;
  app.session = null;
  try {
    await session.signOut();
    app.say(t("signedOut"));
  } catch (error) {
    app.say(app.problem(error));
  }
  route();
});

window.addEventListener("hashchange", route);
route();
