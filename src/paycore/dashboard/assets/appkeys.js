/**
 * Adding and removing app keys from the keys view (POST /addNewAppKey, /removeAppKey). Both
 * calls are salt-signed by the owner's wallet (docs/management.md, "Salt-signed calls"), and
 * an add also needs the new key's own consent: the key signs
 * `accept-app-key:{owner}:{key}:{salt}`. The page never holds that key: it shows the text
 * with a salt fixed when the form opens, the merchant signs it where the key lives (the
 * shop's server) and pastes the signature, and the wallet then signs the whole body.
 * These calls change paycore's record only (no `chainId`): a wallet contract on chain is
 * not changed from here.
 */

import { h, table, field } from "./dom.js";
import { formatTime } from "./i18n.js";
import { API, HttpError, personalSignParam } from "./session.js";

/** The text the new key signs to agree to act for the owner (both addresses lowercased). */
export function consentText(owner, key, salt) {
  return `accept-app-key:${String(owner).toLowerCase()}:${String(key).trim().toLowerCase()}:${salt}`;
}

/** The unsigned /addNewAppKey body, in the order JSON.stringify writes and the wallet signs. */
export function addBody(owner, key, consent, salt) {
  return { salt, appKeyAddress: String(key).trim(), appKeySignature: String(consent).trim(), ownerAddress: owner };
}

/** The unsigned /removeAppKey body. */
export function removeBody(owner, key, salt) {
  return { salt, appKeyAddress: key, ownerAddress: owner };
}

/** The wallet signs JSON.stringify(body) and the signed body is posted; answers the JSON. */
async function saltSigned(app, path, body) {
  const signature = await app.ethereum().request({
    method: "personal_sign",
    params: [personalSignParam(JSON.stringify(body)), app.session.owner],
  });
  const response = await fetch(new URL(path, API), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...body, signature }),
  });
  const text = await response.text();
  if (!response.ok) throw new HttpError(response.status, text);
  return JSON.parse(text);
}

/** The app keys part of the keys view: the list with a remove button each, and the add form. */
export function appKeysSection(app, keys) {
  const owner = app.session.owner;
  const status = h("p", { role: "status", class: "muted", id: "appkey-status" });
  const salt = Math.floor(Date.now() / 1000);
  const address = field(app.t("appKeyAddress"), { id: "appkey-address", required: true, autocomplete: "off", placeholder: "0x…" });
  const consent = field(app.t("appKeyConsent"), { id: "appkey-consent", required: true, autocomplete: "off", placeholder: "0x…" });
  const text = h("code", { class: "mono", id: "appkey-text" }, consentText(owner, "{key}", salt));
  address.input.addEventListener("input", () => {
    text.textContent = consentText(owner, address.input.value || "{key}", salt);
  });
  const form = h(
    "form",
    { class: "card", "aria-labelledby": "appkey-new" },
    h("h3", { id: "appkey-new" }, app.t("addAppKey")),
    h("p", { class: "muted" }, app.t("appKeyHint")),
    h("p", {}, text),
    h("div", { class: "fields" }, address.wrap, consent.wrap, h("div", {}, h("button", { type: "submit", id: "appkey-add" }, app.t("create")))),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.textContent = app.t("signingIn");
    try {
      const added = await saltSigned(app, "addNewAppKey", addBody(owner, address.input.value, consent.input.value, salt));
      await app.route();
      app.say(app.t("appKeyAdded", { address: added.appKey.address }));
    } catch (error) {
      status.textContent = app.problem(error);
    }
  });
  const remove = (k) => {
    const b = h("button", { type: "button", class: "secondary", dataset: { appkey: k.address } }, app.t("remove"));
    b.addEventListener("click", async () => {
      b.disabled = true;
      status.textContent = app.t("signingIn");
      try {
        await saltSigned(app, "removeAppKey", removeBody(owner, k.address, Math.floor(Date.now() / 1000)));
        await app.route();
        app.say(app.t("appKeyRemoved", { address: k.address }));
      } catch (error) {
        status.textContent = app.problem(error);
        b.disabled = false;
      }
    });
    return b;
  };
  const list = keys.length
    ? table(
        [{ label: app.t("address") }, { label: app.t("colCreated") }, { label: app.t("colAction") }],
        keys.map((k) => [h("span", { class: "mono" }, k.address), k.addedAt ? formatTime(k.addedAt, app.locale) : "-", k.addedAt ? remove(k) : ""]),
      )
    : h("p", { class: "muted" }, app.t("noAppKeys"));
  return [list, status, form];
}
