// Charts drawn as plain SVG/HTML: a hit's score terms as a stacked bar, a memory's retention curve over time.
import {day, el, num, svg} from "./dom.js";

export const TERM_COLOURS = {
  dense: "#2e86ab", bm25: "#e4572e", episode: "#3bb273", note: "#c9a227", graph: "#7768ae", retention: "#5c677d",
  neighbour: "#a5a5a5", speaker: "#d1495b", time: "#00798c", clause: "#edae49", session: "#6c757d",
  conversation: "#8d6a9f", facts: "#b5651d", context: "#4f772d", subwords: "#c44569",
};

export function termLegend(names) {
  return el("p", {class: "legend"}, names.map(n => el("span", {}, el("i", {style: `background:${TERM_COLOURS[n] || "#999"}`}), n)));
}

// One bar per hit, segments in the order of the terms, scaled to the longest total of the list.
export function stackedBar(terms, scaleMax) {
  const total = Object.values(terms).reduce((a, b) => a + b, 0);
  const label = Object.entries(terms).map(([k, v]) => `${k} ${num(v, 4)}`).join(", ");
  const bar = el("div", {class: "bar", role: "img", "aria-label": `score terms: ${label || "none"}`});
  for (const [name, value] of Object.entries(terms)) {
    const width = scaleMax > 0 ? (100 * value / scaleMax) : 0;
    bar.append(el("span", {class: "seg", "data-term": name, title: `${name}: ${num(value, 5)}`,
                           style: `width:${width.toFixed(2)}%;background:${TERM_COLOURS[name] || "#999"}`}));
  }
  return el("div", {class: "bar-row"}, bar, el("span", {class: "bar-total"}, num(total, 4)));
}

const H = 240, PAD = {l: 40, r: 12, t: 14, b: 34};

// R(t) from the curve endpoint: the line, the floor, "now", each counted access and the archival date.
// The drawing is as wide as the window allows (at most 900 units), so its text stays readable on a phone.
export function retentionChart(curve, archived) {
  const W = Math.max(320, Math.min(900, window.innerWidth - 60)), ticks = W < 600 ? 2 : 4;
  const t = iso => Date.parse(iso);
  const t0 = t(curve.start), t1 = t(curve.end);
  const rMax = Math.max(1.05, ...curve.points.map(p => p[1])) * 1.05;
  const x = ms => PAD.l + (W - PAD.l - PAD.r) * (ms - t0) / Math.max(1, t1 - t0);
  const y = r => H - PAD.b - (H - PAD.t - PAD.b) * r / rMax;
  const chart = svg("svg", {viewBox: `0 0 ${W} ${H}`, class: "curve", role: "img",
                            "aria-label": `retention curve from ${day(curve.start)} to ${day(curve.end)}`});
  for (const r of [0, 0.5, 1, 1.5, 2].filter(r => r <= rMax)) {
    chart.append(svg("line", {x1: PAD.l, x2: W - PAD.r, y1: y(r), y2: y(r), class: "grid"}),
                 svg("text", {x: PAD.l - 6, y: y(r) + 4, "text-anchor": "end", class: "tick"}, r.toFixed(1)));
  }
  for (let i = 0; i <= ticks; i++) {
    const ms = t0 + (t1 - t0) * i / ticks;
    chart.append(svg("text", {x: x(ms), y: H - PAD.b + 16, "text-anchor": i === 0 ? "start" : i === ticks ? "end" : "middle",
                              class: "tick"}, new Date(ms).toISOString().slice(0, 10)));
  }
  chart.append(svg("line", {x1: PAD.l, x2: W - PAD.r, y1: y(curve.floor), y2: y(curve.floor), class: "floor"}),
               svg("text", {x: W - PAD.r, y: y(curve.floor) - 4, "text-anchor": "end", class: "tick"},
                   `archival floor ${curve.floor}`));
  const marker = (iso, cls, text, row) => {
    const mx = x(t(iso));
    if (mx < PAD.l - 1 || mx > W - PAD.r + 1) return;
    chart.append(svg("line", {x1: mx, x2: mx, y1: PAD.t, y2: H - PAD.b, class: cls}),
                 svg("text", {x: mx > W * 0.6 ? mx - 3 : mx + 3, y: PAD.t + 10 + 14 * row, class: `tick ${cls}-label`,
                              "text-anchor": mx > W * 0.6 ? "end" : "start"}, text));
  };
  marker(curve.now, "now", `now ${day(curve.now)}`, 0);
  if (archived) marker(archived.at, "archived", `archived ${day(archived.at)}`, 1);
  else if (curve.archive_projected) marker(curve.archive_projected, "projected", `archival ${day(curve.archive_projected)}`, 1);
  chart.append(svg("polyline", {class: "line", points: curve.points.map(([iso, r]) => `${x(t(iso)).toFixed(1)},${y(r).toFixed(1)}`).join(" ")}));
  for (const a of curve.accesses) {
    chart.append(svg("circle", {cx: x(t(a.at)), cy: y(a.retention), r: 4.5, class: "access"},
                     svg("title", {}, `counted access ${a.at.slice(0, 16)}: R → ${num(a.retention)}`)));
  }
  return chart;
}
