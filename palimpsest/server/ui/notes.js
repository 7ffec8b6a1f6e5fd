// Notes: the active notes by category, and each note's supersession chain as a timeline with its sources.
import {api, userPath} from "./api.js";
import {el, day, link, minute, num, said, section} from "./dom.js";

export async function renderNotes(view) {
  const {notes} = await api("GET", userPath("/notes?include_inactive=true"));
  const active = notes.filter(n => n.status === "active");
  const chained = new Set(notes.filter(n => n.supersedes || n.superseded_by).map(n => n.note_id));
  const categories = [...new Set(active.map(n => n.category))];
  view.append(el("h2", {}, `Notes (${active.length} active, ${notes.length - active.length} earlier versions)`));
  if (!notes.length) view.append(el("p", {}, "No note was read from this user's turns yet."));
  const card = n => el("li", {class: "note", "data-note-id": n.note_id},
    el("p", {}, said(n.text)),
    el("p", {class: "hint"}, `v${n.version} · since ${day(n.valid_from)} · importance ${num(n.importance, 2)} · `,
       `${n.sources.length} source${n.sources.length === 1 ? "" : "s"}`, n.lifecycle === "core" ? " · core" : ""),
    link(`#/note/${encodeURIComponent(n.note_id)}`, chained.has(n.note_id) ? "History (changed)" : "History",
         {class: "history-link", "aria-label": `history of note: ${n.text.slice(0, 40)}`}));
  const columns = categories.map(cat => section(cat, el("ul", {class: "notes"},
                                                        active.filter(n => n.category === cat).map(card))));
  view.append(el("div", {class: "columns"}, columns));
}

export async function renderHistory(view, shared, noteId) {
  const {chain} = await api("GET", userPath(`/notes/${encodeURIComponent(noteId)}`));
  view.append(el("h2", {}, `Note history: ${chain.length} version${chain.length === 1 ? "" : "s"}`),
              el("p", {}, link("#/notes", "← all notes")));
  const list = el("ol", {class: "chain", "aria-label": "versions, oldest first"});
  chain.forEach((v, i) => {
    const next = chain[i + 1];
    list.append(el("li", {class: `version ${v.status}`, "data-note-id": v.note_id},
      el("div", {class: "when"}, `${minute(v.valid_from)} → ${v.valid_to ? minute(v.valid_to) : "now"}`),
      el("div", {class: "what"},
        el("p", {}, el("span", {class: `badge ${v.status}`}, `v${v.version} · ${v.category} · ${v.status}`), " ", said(v.text)),
        el("p", {class: "hint"}, `decided by ${v.decider}: ${v.reason}`),
        el("ul", {class: "sources"}, v.sources.map(s => el("li", {},
          link(`#/memory/${encodeURIComponent(s.memory_id)}`, s.turn_id || s.memory_id.slice(0, 8)),
          ` ${day(s.occurred_at)} ${s.speaker}: `, said(s.text)))),
        next ? el("p", {class: "hint"}, `superseded by v${next.version}: ${next.reason}`) : "")));
  });
  view.append(section("Versions, oldest first", list));
}
