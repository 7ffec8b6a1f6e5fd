// Timeline: the user's episodes on a time axis and, below, each episode's turns; archived turns greyed, restorable.
import {api, query, userPath} from "./api.js";
import {el, day, minute, num, said, section, svg, utc} from "./dom.js";

export async function renderTimeline(view, shared) {
  const now = utc(shared.now);
  const [{episodes}, {memories}, tiers] = await Promise.all([
    api("GET", userPath("/episodes")), api("GET", userPath("/retention") + query({now})),
    api("GET", userPath("/tiers") + query({now}))]);
  const rows = new Map(memories.map(m => [m.memory_id, m]));
  const archived = memories.filter(m => m.archived).length;
  view.append(el("h2", {}, `Timeline: ${episodes.length} episodes, ${memories.length} memories, ${archived} archived`));
  if (!episodes.length) return view.append(el("p", {}, "No episode yet."));
  view.append(section("Episodes over time", axis(episodes, rows)));
  if (tiers.sessions && tiers.sessions.length) view.append(sessions(tiers));
  let lastDay = "";
  const list = el("div", {class: "episodes"});
  for (const ep of episodes) {
    if (day(ep.start) !== lastDay) list.append(el("h3", {class: "day"}, (lastDay = day(ep.start))));
    list.append(el("article", {class: "card episode", id: `ep-${ep.episode_id}`, tabindex: -1},
      el("h4", {}, said(ep.title)),
      el("p", {class: "hint"}, `${minute(ep.start)} → ${minute(ep.end)} · ${ep.reason} · ${ep.member_ids.length} turns`),
      el("ul", {class: "turns"}, ep.member_ids.map(id => turn(rows.get(id), id, shared)))));
  }
  view.append(list);
}

function turn(row, id, shared) {
  if (!row) return el("li", {class: "hint"}, `${id.slice(0, 8)} (not yet at this time)`);
  const restore = async () => {
    await api("POST", userPath("/archive/restore"), {memory_ids: [id], reason: "restored in the inspector"});
    window.dispatchEvent(new HashChangeEvent("hashchange"));
  };
  return el("li", {class: row.archived ? "turn archived" : "turn", "data-memory-id": id},
    el("a", {href: `#/memory/${encodeURIComponent(id)}`}, row.turn_id || id.slice(0, 8)), " ",
    said(row.text), " ",
    el("span", {class: "hint"}, `R ${num(row.retention, 2)}`),
    row.archived ? [" ", el("span", {class: "badge"}, `archived: ${row.archived}`), " ",
                    el("button", {type: "button", onclick: restore, "aria-label": `restore ${row.turn_id || id}`}, "Restore")] : "");
}

// One bar per episode on a shared time axis; its colour shows how much of it is archived.
function axis(episodes, rows) {
  const W = 900, H = 70, L = 10, R = 10;
  const t = iso => Date.parse(iso);
  const t0 = Math.min(...episodes.map(e => t(e.start))), t1 = Math.max(...episodes.map(e => t(e.end)));
  const x = ms => L + (W - L - R) * (ms - t0) / Math.max(1, t1 - t0);
  const chart = svg("svg", {viewBox: `0 0 ${W} ${H}`, class: "axis", role: "img",
                            "aria-label": `episodes from ${day(new Date(t0).toISOString())} to ${day(new Date(t1).toISOString())}`});
  chart.append(svg("line", {x1: L, x2: W - R, y1: 40, y2: 40, class: "grid"}));
  for (const ep of episodes) {
    const gone = ep.member_ids.filter(id => rows.get(id) && rows.get(id).archived).length / Math.max(1, ep.member_ids.length);
    const x0 = x(t(ep.start)), width = Math.max(6, x(t(ep.end)) - x0);
    const bar = svg("rect", {x: x0, y: 28, width, height: 24, rx: 3, class: gone === 1 ? "ep archived" : "ep",
                             "fill-opacity": (1 - 0.7 * gone).toFixed(2)},
                    svg("title", {}, `${minute(ep.start)} ${ep.title} (${Math.round(gone * 100)}% archived)`));
    bar.addEventListener("click", () => { const card = document.getElementById(`ep-${ep.episode_id}`); card.scrollIntoView(); card.focus(); });
    chart.append(bar);
  }
  for (let i = 0; i <= 4; i++) {
    const ms = t0 + (t1 - t0) * i / 4;
    chart.append(svg("text", {x: x(ms), y: 18, class: "tick", "text-anchor": i === 0 ? "start" : i === 4 ? "end" : "middle"},
                     new Date(ms).toISOString().slice(0, 10)));
  }
  return chart;
}

// The mid-term tier: sessions (pages merged by similarity) with their heat at "now", hottest first.
function sessions(tiers) {
  const hottest = Math.max(...tiers.sessions.map(s => s.heat), 1e-9);
  return section(`Mid-term sessions (${tiers.sessions.length}; ${tiers.evicted_sessions.length} evicted)`,
    el("ul", {class: "sessions"}, tiers.sessions.map(s => el("li", {},
      el("span", {class: "heat", role: "img", "aria-label": `heat ${num(s.heat)}`},
         el("span", {style: `width:${(100 * s.heat / hottest).toFixed(1)}%`})),
      ` heat ${num(s.heat)} · ${s.pages} pages · ${s.visits} visits · `, said(s.keywords.slice(0, 6).join(", "))))));
}
