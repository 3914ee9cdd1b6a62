/**
 * The webhooks view's endpoint management: add, change, rotate the secret of and delete the
 * owner's webhook endpoints (docs/interface.md, "Webhook endpoints"), each call signed by the
 * session key. A new secret is shown once, in the page only: the server answers it with the
 * endpoint and the page keeps it nowhere, so the merchant copies it into the shop then.
 */

import { h, table, field } from "./dom.js";

/** The event types from the form's text (names split on commas or white space, repeats
 *  dropped); null when empty, so the body leaves `types` out and the server's default (the
 *  status changes) applies. The server checks the names. */
export function parseTypes(text) {
  const names = [...new Set(String(text || "").split(/[\s,]+/).filter(Boolean))];
  return names.length ? names : null;
}

/** The POST /webhook/endpoints body (`id` absent) or the /webhook/endpoints/update body
 *  (`id` given) from the form's values: the URL trimmed, the types parsed, `enabled` a
 *  boolean. An update sends every field the form shows, so what the merchant sees is what
 *  is stored; an update with no types keeps the stored ones. */
export function endpointBody(values) {
  const body = {};
  if (values.id) body.id = values.id;
  body.url = String(values.url || "").trim();
  const types = parseTypes(values.types);
  if (types) body.types = types;
  body.enabled = values.enabled !== false;
  return body;
}

/** The endpoints part of the webhooks view: the list with each endpoint's actions, the form
 *  that adds or edits one, and the status line that shows a new secret once. */
export function endpointsSection(app, items) {
  const status = h("p", { role: "status", class: "muted", id: "endpoint-status" });
  const secret = h("div", { id: "endpoint-secret" });
  // looked up, not held: an add re-draws the view, and the secret goes into the new one
  const showSecret = (endpoint) => document.getElementById("endpoint-secret")?.replaceWith(secretOf(app, endpoint));
  const url = field(app.t("colUrl"), { type: "url", required: true, id: "endpoint-url", placeholder: "https://" });
  const types = field(app.t("endpointTypes"), { id: "endpoint-types", placeholder: "invoice.paid, invoice.expired" });
  const enabled = h("input", { type: "checkbox", id: "endpoint-enabled", checked: true });
  const editing = h("input", { type: "hidden", id: "endpoint-id" });
  const title = h("h2", { id: "endpoint-form-title" }, app.t("newEndpoint"));
  const submit = h("button", { type: "submit", id: "endpoint-save" }, app.t("create"));
  const cancel = h("button", { type: "button", class: "secondary", id: "endpoint-cancel", hidden: true }, app.t("cancel"));
  const form = h(
    "form",
    { class: "card", "aria-labelledby": "endpoint-form-title" },
    title,
    h("p", { class: "muted" }, app.t("endpointTypesHint")),
    h(
      "div",
      { class: "fields" },
      url.wrap,
      types.wrap,
      h("div", {}, h("label", { for: "endpoint-enabled" }, enabled, " ", app.t("endpointEnabled"))),
      h("div", {}, editing, submit, " ", cancel),
    ),
  );
  const reset = () => {
    editing.value = "";
    url.input.value = "";
    types.input.value = "";
    enabled.checked = true;
    title.textContent = app.t("newEndpoint");
    submit.textContent = app.t("create");
    cancel.hidden = true;
  };
  cancel.addEventListener("click", reset);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.textContent = "";
    const body = endpointBody({ id: editing.value, url: url.input.value, types: types.input.value, enabled: enabled.checked });
    try {
      if (body.id) {
        await app.session.post("webhook/endpoints/update", body);
        await app.route();
        app.say(app.t("endpointSaved", { id: body.id }));
      } else {
        const created = await app.session.post("webhook/endpoints", body, { "idempotency-key": crypto.randomUUID() });
        await app.route();
        showSecret(created);
        app.say(app.t("endpointAdded", { id: created.id }));
      }
    } catch (error) {
      status.textContent = app.problem(error);
    }
  });
  const act = (label, endpoint, run) => {
    const b = h("button", { type: "button", class: "secondary", dataset: { endpoint: endpoint.id, action: label } }, app.t(label));
    b.addEventListener("click", async () => {
      b.disabled = true;
      status.textContent = "";
      try {
        await run();
      } catch (error) {
        status.textContent = app.problem(error);
        b.disabled = false;
      }
    });
    return b;
  };
  const actions = (e) => {
    // `default` is the /webhook/set URL: it is changed with that call, not these
    if (e.id === "default") return h("span", { class: "muted" }, app.t("defaultEndpoint"));
    return h(
      "div",
      { class: "actions" },
      act("edit", e, async () => {
        editing.value = e.id;
        url.input.value = e.url;
        types.input.value = e.types.join(", ");
        enabled.checked = e.enabled;
        title.textContent = app.t("editEndpoint", { id: e.id });
        submit.textContent = app.t("save");
        cancel.hidden = false;
        url.input.focus();
      }),
      act("rotateSecret", e, async () => {
        const rotated = await app.session.post("webhook/endpoints/rotate-secret", { id: e.id });
        showSecret(rotated);
        status.textContent = app.t("secretRotated", { id: e.id });
      }),
      act("delete", e, async () => {
        if (!window.confirm(app.t("deleteEndpointConfirm", { url: e.url }))) {
          throw new Error(app.t("notDeleted"));
        }
        await app.session.post("webhook/endpoints/delete", { id: e.id });
        await app.route();
        app.say(app.t("endpointDeleted", { id: e.id }));
      }),
    );
  };
  const list = items.length
    ? table(
        [{ label: app.t("colId") }, { label: app.t("colUrl") }, { label: app.t("colTypes") }, { label: app.t("colStatus") }, { label: app.t("colAction") }],
        items.map((e) => [
          e.id,
          h("span", { class: "mono" }, e.url),
          e.types.join(", "),
          h("span", { class: `badge ${e.enabled ? "active" : "disabled"}` }, app.t(e.enabled ? "status_active" : "status_disabled")),
          actions(e),
        ]),
      )
    : h("p", { class: "muted" }, app.t("noEndpoints"));
  return [list, secret, status, form];
}

/** The slot that shows a new endpoint's secret once. */
function secretOf(app, endpoint) {
  return h(
    "div",
    { id: "endpoint-secret" },
    h("div", { class: "card" }, h("p", {}, app.t("secretOnce", { id: endpoint.id })), h("code", { class: "mono", dataset: { secret: "" } }, endpoint.secret)),
  );
}
