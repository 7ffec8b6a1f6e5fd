// The inspector's shell: sign-in with a key, the user picker, and a hash router over the views.
import {api, session} from "./api.js";
import {renderCounterfactual} from "./counterfactual.js";
import {renderMemory} from "./detail.js";
import {renderGraph} from "./graph.js";
import {renderHistory, renderNotes} from "./notes.js";
import {renderSearch} from "./search.js";
import {renderTimeline} from "./timeline.js";

// What the views share: the last search (its hits carry the score breakdown a detail view shows) and "now".
export const shared = {hits: new Map(), query: "", now: ""};

const ROUTES = {
  search: renderSearch, memory: renderMemory, notes: renderNotes, note: renderHistory, timeline: renderTimeline,
  graph: renderGraph, counterfactual: renderCounterfactual,
};
const $ = id => document.getElementById(id);

function status(text, kind = "") {
  $("status").textContent = text;
  $("status").className = `status ${kind}`;
}

function signedOut(message = "") {
  session.key = null;
  session.user = null;
  $("who").hidden = true;
  $("tabs").hidden = true;
  $("view").replaceChildren();
  $("login").hidden = false;
  status(message, message ? "error" : "");
  $("key").focus();
}

async function signIn(key) {
  const who = await api("GET", "/v1/whoami", undefined, key);
  session.key = key;
  const {users} = await api("GET", "/v1/users");
  $("tenant").textContent = who.tenant;
  const picker = $("user");
  picker.replaceChildren(...users.map(u => new Option(u, u)));
  if (!users.includes(session.user)) session.user = users[0] || null;
  picker.value = session.user || "";
  $("login").hidden = true;
  $("who").hidden = false;
  $("tabs").hidden = false;
  status(users.length ? "" : `tenant ${who.tenant} has no users yet: add messages through the API first`);
}

async function route() {
  if (!session.key) return;
  const [name, ...rest] = (location.hash.replace(/^#\/?/, "") || "search").split("/");
  const render = ROUTES[name] || renderSearch;
  const arg = rest.length ? decodeURIComponent(rest.join("/")) : undefined;
  for (const a of document.querySelectorAll("#tabs a")) {
    const current = a.dataset.view === name || (name === "memory" && a.dataset.view === "search") ||
      (name === "note" && a.dataset.view === "notes");
    if (current) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  const view = $("view");
  view.replaceChildren();
  delete view.dataset.ready;
  if (!session.user) return;
  status("loading…");
  try {
    await render(view, shared, arg);
    status("");
  } catch (err) {
    if (err.status === 401) return signedOut("The key was refused (unknown or revoked); sign in again.");
    status(err.message, "error");
  }
  view.dataset.ready = name;  // rendered (or failed and said why): what a test waits for
}

$("login-form").addEventListener("submit", async ev => {
  ev.preventDefault();
  const key = $("key").value.trim();
  try {
    await signIn(key);
    $("key").value = "";
    await route();
    $("main").focus();
  } catch (err) {
    signedOut(err.status === 401 ? "That key was refused: unknown or revoked. Nothing is shown without a valid key."
      : err.message);
  }
});
$("signout").addEventListener("click", () => signedOut("Signed out; the key was removed from this tab."));
$("user").addEventListener("change", ev => { session.user = ev.target.value; shared.hits.clear(); route(); });
window.addEventListener("hashchange", route);
// A failed request from a form or button of a view: say what and why in the status line.
window.addEventListener("unhandledrejection", ev => {
  ev.preventDefault();
  if (ev.reason && ev.reason.status === 401) return signedOut("The key was refused (unknown or revoked); sign in again.");
  status(ev.reason && ev.reason.message || String(ev.reason), "error");
});

(async () => {
  if (!session.key) return signedOut();
  try { await signIn(session.key); await route(); } catch (err) { signedOut(err.status === 401 ? "The stored key was refused; sign in again." : err.message); }
})();
