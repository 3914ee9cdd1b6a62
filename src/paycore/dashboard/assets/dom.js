/** Small DOM helpers: every text goes in as a text node, never as HTML, so no merchant or
 *  payer string (a description, an order id in `data`) can become markup. */

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

const SVG = "http://www.w3.org/2000/svg";

export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  for (const child of children.flat()) el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return el;
}

/** A table whose cells carry their column's name, so a phone shows each row as label: value. */
export function table(headers, rows, caption) {
  return h(
    "table",
    { class: "rows" },
    caption ? h("caption", { class: "muted" }, caption) : null,
    h("thead", {}, h("tr", {}, headers.map((c) => h("th", { scope: "col", class: c.num ? "num" : null }, c.label)))),
    h(
      "tbody",
      {},
      rows.map((cells) =>
        h("tr", {}, cells.map((cell, i) => h("td", { "data-label": headers[i].label, class: headers[i].num ? "num" : null }, cell))),
      ),
    ),
  );
}

/** A labelled input: the label names it, so screen readers and axe find the pair. */
let fieldCount = 0;
export function field(label, attrs = {}) {
  const id = attrs.id || `f${++fieldCount}`;
  const input = attrs.options
    ? h("select", { id, name: attrs.name }, attrs.options.map(([v, text]) => h("option", { value: v, selected: v === attrs.value }, text)))
    : h("input", { id, ...attrs, options: undefined });
  return { wrap: h("div", {}, h("label", { for: id }, label), input), input };
}
