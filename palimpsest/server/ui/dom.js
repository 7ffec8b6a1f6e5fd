// Small DOM helpers: every text goes in as text (never as markup), so stored memories cannot inject anything.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const SVG_NS = "http://www.w3.org/2000/svg";

export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) node.setAttribute(k, v);
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export const day = iso => (iso || "").slice(0, 10);
export const minute = iso => (iso || "").slice(0, 16).replace("T", " ");
export const num = (x, digits = 3) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));

// Text whose language we do not know: let the browser pick direction and a font for each script.
export const said = (text, attrs = {}) => el("span", {class: "said", dir: "auto", ...attrs}, text);

export function section(title, ...children) {
  return el("section", {class: "card"}, el("h3", {}, title), ...children);
}

export function link(href, text, attrs = {}) {
  return el("a", {href, ...attrs}, text);
}

// A datetime-local value (read as UTC) to ISO with offset, or undefined when empty.
export function utc(value) {
  if (!value) return undefined;
  return (value.length === 16 ? value + ":00" : value) + "+00:00";
}
