// Graph: the user's memory graph in the same SVG component as the standalone graph.html.
import {api, userPath} from "./api.js";
import {el} from "./dom.js";

export async function renderGraph(view) {
  const {data, memories} = await api("GET", userPath("/graph/view"));
  view.append(el("h2", {}, `Memory graph (${memories} graph memories)`));
  if (!data.nodes.length) return view.append(el("p", {}, "No graph memory yet for this user."));
  const host = el("div", {id: "graph", class: "graph-host"});
  view.append(host);
  window.PalimpsestGraph.mount(host, data, {
    onOpen: node => { location.hash = `#/memory/${encodeURIComponent(node.message_ids[0])}`; },
  });
}
