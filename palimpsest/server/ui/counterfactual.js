// Counterfactual: pick a preset or upload/edit a policy; see what this user would lose or keep and how queries re-rank.
import {api, session} from "./api.js";
import {el, num, said, section, utc} from "./dom.js";

export async function renderCounterfactual(view, shared) {
  const {live, presets} = await api("GET", "/v1/policies");
  const editor = el("textarea", {id: "policy-json", rows: 10, spellcheck: "false", "aria-label": "policy as JSON"});
  const picker = el("select", {id: "preset"}, presets.map(p => new Option(p.name, p.name)),
                    new Option("edited / uploaded JSON (below)", ""));
  const other = presets.find(p => p.name !== live.name) || presets[0];
  picker.value = other.name;
  const about = el("p", {class: "hint", id: "preset-about"});
  const describe = () => { const p = presets.find(p => p.name === picker.value); about.textContent = p ? p.description : "the policy in the editor below"; };
  picker.addEventListener("change", describe);
  describe();
  editor.value = JSON.stringify({name: "fast-forgetting", stability_days: {preference: 10, decision: 10, unknown: 3},
                                 archive_floor: 0.2}, null, 2);
  const upload = el("input", {type: "file", accept: ".json,application/json", id: "policy-file"});
  upload.addEventListener("change", async () => {
    if (!upload.files.length) return;
    editor.value = await upload.files[0].text();
    picker.value = "";
    describe();
  });
  editor.addEventListener("input", () => { picker.value = ""; describe(); });
  const queries = el("textarea", {id: "cf-queries", rows: 3, "aria-label": "queries, one per line",
                                  placeholder: "one query per line (the last search's query is filled in)"},
                     shared.query || "");
  const when = el("input", {type: "datetime-local", id: "cf-now", value: shared.now});
  const out = el("div", {id: "cf-out"});
  const form = el("form", {class: "card"},
    el("h2", {}, "Counterfactual: the same log under another retention policy"),
    el("p", {class: "hint"}, `The live policy is “${live.name}”. Nothing is written: retention is re-folded from the log.`),
    el("label", {}, "Policy ", picker), about, el("label", {class: "block"}, "…or upload a policy file (JSON) ", upload),
    el("label", {class: "block"}, "Policy JSON (fields left out keep their defaults)", editor),
    el("label", {class: "block"}, "Queries to compare (one per line)", queries),
    el("label", {}, "at (UTC; empty: now) ", when), " ", el("button", {type: "submit"}, "Compare"));
  view.append(form, out);
  form.addEventListener("submit", async ev => {
    ev.preventDefault();
    const asked = queries.value.split("\n").map(q => q.trim()).filter(Boolean).slice(0, 20);
    const body = {queries: asked.map(query => ({user_id: session.user, query})), now: utc(when.value)};
    if (picker.value) body.policy = presets.find(p => p.name === picker.value);
    else {
      try { body.policy = {name: "uploaded", ...JSON.parse(editor.value)}; } catch (err) {
        out.replaceChildren(el("p", {class: "status error"}, `The policy is not valid JSON: ${err.message}`)); return;
      }
    }
    document.getElementById("status").textContent = "";
    const {users} = await api("POST", "/v1/counterfactual", body);  // every user of the tenant: this one is shown
    out.replaceChildren(...result({policy: body.policy, live: live.name, user: users.find(u => u.user_id === session.user)}));
  });
}

function memoryList(rows) {
  if (!rows.length) return el("p", {class: "hint"}, "none");
  return el("ul", {}, rows.map(r => el("li", {}, el("a", {href: `#/memory/${encodeURIComponent(r.memory_id)}`}, r.turn_id || r.memory_id.slice(0, 8)),
                                        " ", said(r.text))));
}

function result({policy, live, user}) {
  if (!user) return [el("p", {}, "This user has no memories to compare.")];
  const name = policy.name;
  return [
    section(`Archived now: ${user.archived_current} under “${live}”, ${user.archived_other} under “${name}” (of ${user.memories})`,
      el("h4", {}, `Would be archived only under “${name}” (${user.archived_only_under_other.length})`),
      memoryList(user.archived_only_under_other),
      el("h4", {}, `Kept only under “${name}” (${user.kept_only_under_other.length})`),
      memoryList(user.kept_only_under_other)),
    section("Largest retention changes", el("table", {class: "changes"},
      el("thead", {}, el("tr", {}, el("th", {}, "memory"), el("th", {}, live), el("th", {}, name))),
      el("tbody", {}, user.largest_changes.map(c => el("tr", {},
        el("td", {}, el("a", {href: `#/memory/${encodeURIComponent(c.memory_id)}`}, c.memory_id.slice(0, 10))),
        el("td", {}, num(c.current)), el("td", {}, num(c.other))))))),
    ...user.queries.map(q => section(`Ranks for “${q.query}”`, el("table", {class: "ranks"},
      el("thead", {}, el("tr", {}, el("th", {}, live), el("th", {}, name), el("th", {}, "memory"))),
      el("tbody", {}, q.ranks.map(r => el("tr", {class: r.rank_current === r.rank_other ? "" : "moved"},
        el("td", {}, r.rank_current ?? "–"), el("td", {}, r.rank_other ?? "–"), el("td", {}, said(r.text)))))))),
  ];
}
