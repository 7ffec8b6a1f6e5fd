// Search playground: query, k, "now" (time travel), scope; ranked hits with their score terms; the assembled context.
import {api, userPath} from "./api.js";
import {stackedBar, termLegend} from "./charts.js";
import {el, link, minute, num, said, section, utc} from "./dom.js";

export async function renderSearch(view, shared) {
  const form = el("form", {class: "card search-form", id: "search-form"},
    el("h2", {}, "Search playground"),
    el("div", {class: "row"},
      el("label", {class: "grow"}, "Query ", el("input", {name: "query", id: "q", required: true, value: shared.query,
                                                          placeholder: "What does Maya drink? / 周末去哪里爬山？"})),
      el("label", {}, "k ", el("input", {name: "k", type: "number", min: 1, max: 100, value: 10, class: "small"})),
      el("label", {}, "now (UTC) ", el("input", {name: "now", id: "now", type: "datetime-local", value: shared.now})),
      el("label", {}, "scope ", el("select", {name: "scope"}, ["active", "archive", "all"].map(s => new Option(s, s)))),
      el("label", {}, "context budget ", el("input", {name: "budget", type: "number", min: 16, max: 20000, value: 300,
                                                      class: "small"}))),
    el("div", {class: "row"},
      el("label", {}, el("input", {type: "checkbox", name: "context", checked: true}),
         " also assemble the context (a context counts as an access: it reinforces the memories it uses)"),
      el("button", {type: "submit"}, "Search")),
    el("p", {class: "hint"}, "Empty “now” asks at the current time; an earlier time asks as of then (later memories ",
       "absent, later accesses not counted). Every search is recorded as a touch event, as for any client."));
  const results = el("div", {id: "results", class: "split"});
  view.append(form, results);
  form.addEventListener("submit", async ev => {
    ev.preventDefault();
    const data = new FormData(form);
    shared.query = data.get("query");
    shared.now = data.get("now");
    const now = utc(shared.now);
    const asks = [api("POST", userPath("/search"), {query: shared.query, k: Number(data.get("k")), scope: data.get("scope"), now})];
    if (data.get("context")) asks.push(api("POST", userPath("/context"), {query: shared.query, now,
                                                                           token_budget: Number(data.get("budget"))}));
    const [found, context] = await Promise.all(asks);
    results.replaceChildren(hitList(found.hits, shared), context ? contextCard(context) : "");
  });
  if (shared.query) form.requestSubmit();
  else form.querySelector("#q").focus();
}

function hitList(hits, shared) {
  shared.hits = new Map(hits.map(h => [h.memory_id, h]));
  if (!hits.length) return section("Hits", el("p", {}, "No memory matches (at this time, in this scope)."));
  const names = [...new Set(hits.flatMap(h => Object.keys(h.terms)))];
  const max = Math.max(...hits.map(h => Object.values(h.terms).reduce((a, b) => a + b, 0)));
  const list = el("ol", {class: "hits"}, hits.map(h => el("li", {class: "hit", "data-memory-id": h.memory_id},
    el("div", {class: "hit-head"},
      el("span", {class: "rank"}, `#${h.rank}`),
      el("span", {class: "meta"}, `${minute(h.occurred_at)} · ${h.speaker || h.role}`, h.turn_id ? ` · turn ${h.turn_id}` : "",
         h.breakdown.archived ? el("span", {class: "badge"}, `archived: ${h.breakdown.archived}`) : ""),
      link(`#/memory/${encodeURIComponent(h.memory_id)}`, "Details", {class: "detail-link",
                                                                       "aria-label": `details of hit ${h.rank}`})),
    el("p", {class: "hit-text"}, said(h.text)),
    stackedBar(h.terms, max),
    h.breakdown.ranker_probability !== undefined
      ? el("p", {class: "hint"}, `fused ${num(h.breakdown.rrf, 4)}; the learned ranker re-ordered the top rows (p = ${num(h.breakdown.ranker_probability)})`)
      : "",
    h.breakdown.feedback_factor !== undefined
      ? el("p", {class: "hint"}, `the learning loop scales its score ×${num(h.breakdown.feedback_factor)}`) : "")));
  return section(`Hits (${hits.length})`, termLegend(names), list);
}

function contextCard(ctx) {
  const share = Math.min(100, 100 * ctx.tokens / Math.max(1, ctx.budget));
  return section("Assembled context",
    el("p", {class: "tokens"}, `${ctx.tokens} / ${ctx.budget} tokens`),
    el("div", {class: "meter", role: "meter", "aria-valuemin": 0, "aria-valuemax": ctx.budget, "aria-valuenow": ctx.tokens,
               "aria-label": "tokens used of the budget"}, el("span", {style: `width:${share.toFixed(1)}%`})),
    el("pre", {class: "context", dir: "auto", id: "context-text"}, ctx.text || "(empty)"),
    el("ul", {class: "items"}, ctx.items.map(i => el("li", {},
      i.provenance && i.provenance.note_id ? link(`#/note/${encodeURIComponent(i.provenance.note_id)}`, "note")
        : link(`#/memory/${encodeURIComponent(i.memory_id)}`, i.turn_id || "memory"),
      ` · ${i.tokens} tokens · `, said(i.line.slice(0, 90))))));
}
