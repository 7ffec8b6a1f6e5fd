// Memory detail: one recorded message and everything the API says about it, one card per section.
// A section is a function (facts) -> element or null; add one to SECTIONS (an explain card, say) and it shows.
import {api, query, userPath} from "./api.js";
import {retentionChart, stackedBar, termLegend} from "./charts.js";
import {el, link, minute, num, said, section, utc} from "./dom.js";

export const SECTIONS = [source, scoreCard, retentionCard, explainCard, notesCard, graphCard, episodeCard, touchesCard,
                         feedbackCard];

export async function renderMemory(view, shared, memoryId) {
  const now = utc(shared.now);
  const [card, notes, graph, episodes, feedback, explained] = await Promise.all([
    api("GET", userPath(`/memories/${encodeURIComponent(memoryId)}`) + query({now})),
    api("GET", userPath("/notes?include_inactive=true")),
    api("GET", userPath("/graph/view")),
    api("GET", userPath("/episodes")),
    api("GET", userPath("/feedback") + query({memory_id: memoryId})),
    // The log's own account (GET /explain); a server without it leaves the card out.
    api("GET", userPath(`/explain/${encodeURIComponent(memoryId)}`) + query({at: now, query: shared.hits.has(memoryId) ? shared.query : ""}))
      .catch(err => (err.status === 404 && err.body && err.body.error === "http_error" ? null : Promise.reject(err))),
  ]);
  const facts = {memoryId, card, hit: shared.hits.get(memoryId), notes: notes.notes, graph: graph.data,
                 episodes: episodes.episodes, signals: feedback.signals, explained, shared, view};
  view.append(el("h2", {}, "Memory ", el("code", {}, memoryId.slice(0, 12))),
              el("div", {class: "detail"}, SECTIONS.map(s => s(facts)).filter(Boolean)));
}

function source({card}) {
  const m = card.memory;
  return section("Source turn",
    el("blockquote", {class: "turn"}, said(m.text)),
    facts([["speaker", m.speaker || m.role], ["when", minute(m.occurred_at)], ["conversation", m.conversation_id],
           ["turn", m.turn_id || "–"],
           ["type", `${m.memory_type}${m.category ? ` · ${m.category}` : ""} (classified by ${m.classifier || "–"})`],
           ["message event", m.memory_id], ["client id", m.client_message_id], ["log seq", m.seq]]));
}

export function facts(pairs) {
  return el("dl", {class: "facts"}, pairs.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v === null || v === undefined ? "–" : String(v))]));
}

function scoreCard({hit, shared}) {
  if (!hit) return null;
  const total = Object.values(hit.terms).reduce((a, b) => a + b, 0);
  return section(`Why it ranked #${hit.rank} for “${shared.query}”`,
    termLegend(Object.keys(hit.terms)), stackedBar(hit.terms, total),
    facts(Object.entries(hit.breakdown).map(([k, v]) => [k, Array.isArray(v) ? v.join(" → ") : v])),
    el("p", {class: "hint"}, "provenance: ", JSON.stringify(hit.provenance)));
}

function retentionCard({card, view, memoryId}) {
  const r = card.retention, arch = card.archived;
  const restore = arch ? el("button", {type: "button", onclick: async () => {
    await api("POST", userPath("/archive/restore"), {memory_ids: [memoryId], reason: "restored in the inspector"});
    location.hash = `#/memory/${encodeURIComponent(memoryId)}`;
    window.dispatchEvent(new HashChangeEvent("hashchange"));
  }}, "Restore") : "";
  return wide(section("Retention over time",
    el("p", {}, r ? `R = ${num(r.retention)} at ${minute(card.curve.now)} (policy ${card.policy}) — ${r.why}`
                  : "The memory did not exist yet at this time."),
    retentionChart(card.curve, arch),
    el("p", {class: "hint"}, `${card.curve.accesses.length} counted accesses (dots); `,
       arch ? `archived ${minute(arch.at)} (${arch.reason}, R ${num(arch.retention)}) ` :
         card.curve.archive_projected ? `would be archived ${minute(card.curve.archive_projected)} if never accessed again`
           : "never archived under this policy", card.restored ? ` · restored ${card.restored}×` : ""),
    restore));
}

function wide(card) {
  card.classList.add("wide");
  return card;
}

function notesCard({notes, memoryId}) {
  const mine = notes.filter(n => n.sources.some(s => s.memory_id === memoryId));
  if (!mine.length) return section("Notes read from it", el("p", {class: "hint"}, "No note was derived from this turn."));
  return section("Notes read from it", el("ul", {}, mine.map(n => el("li", {},
    el("span", {class: `badge ${n.status}`}, `${n.category} v${n.version} · ${n.status}`), " ", said(n.text), " ",
    link(`#/note/${encodeURIComponent(n.note_id)}`, "history")))));
}

function graphCard({graph, memoryId}) {
  const nodes = graph.nodes.filter(n => (n.message_ids || []).includes(memoryId));
  if (!nodes.length) return null;
  return section("Graph memories drawn from it", el("ul", {}, nodes.map(n => el("li", {}, said(n.label),
    el("span", {class: "hint"}, ` (${n.info.split("\n").slice(0, 2).join(", ")})`)))),
    link("#/graph", "open the graph"));
}

function episodeCard({episodes, memoryId}) {
  const ep = episodes.find(e => e.member_ids.includes(memoryId));
  if (!ep) return null;
  return section("Episode", el("p", {}, said(ep.title)),
    facts([["span", `${minute(ep.start)} → ${minute(ep.end)}`], ["boundary", ep.reason], ["turns", ep.turn_ids.join(", ")]]),
    el("p", {class: "hint"}, said(ep.summary)));
}

function touchesCard({card}) {
  const t = card.touches;
  return section("Touches", facts([["total", t.count], ["last", t.last_touched_at ? minute(t.last_touched_at) : "never"],
    ...Object.entries(t.by_reason).map(([k, v]) => [`reason ${k}`, v])]),
    el("p", {class: "hint"}, "Only the reasons the policy counts reinforce (a context, a reply that used it)."));
}

function feedbackCard({signals}) {
  if (!signals.length) return null;
  return section("Feedback naming it", el("ul", {}, signals.map(s => el("li", {},
    `${s.type} (${num(s.confidence, 2)}) `, said(s.user_input || "")))));
}

function explainCard({explained}) {
  if (!explained) return null;
  const rows = (items, cells) => el("table", {class: "events"}, el("tbody", {}, items.map(i => el("tr", {}, cells(i).map(c => el("td", {}, c))))));
  return wide(section("Explain: what the log records about it",
    el("ul", {class: "status-lines"}, (explained.status || []).map(line => el("li", {}, said(line)))),
    el("h4", {}, `Source events (${explained.source_events.length})`),
    rows(explained.source_events, e => [`#${e.seq}`, e.kind, minute(e.at), said(e.summary)]),
    explained.touches.length ? [el("h4", {}, `Touches (${explained.touches.length})`),
      rows(explained.touches, t => [minute(t.at), t.reason, `rank ${t.rank}`, said(t.query || "")])] : "",
    explained.archive.length ? [el("h4", {}, "Archive"), rows(explained.archive, a => [minute(a.at), a.action, a.reason])] : "",
    explained.adjustments.length ? [el("h4", {}, "Adjustments by the learning loop"),
      rows(explained.adjustments, a => [a.kind || a.action || "", a.applies ? "applies" : "not now", JSON.stringify(a)])] : ""));
}
