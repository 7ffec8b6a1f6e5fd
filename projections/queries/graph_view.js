/* The memory-graph view: one SVG component shared by `palimpsest graph --out graph.html` (inlined) and the
   inspector at /ui (served as a file). No dependencies, no network.

   PalimpsestGraph.mount(root, data, {onOpen}) draws data = {nodes: [{id, label, kind, info, message_ids}],
   edges: [{source, target, type, relation}], nodeColours, edgeColours} into root and returns a controller
   {fit, zoomBy, select, nodes}. The layout is a deterministic force simulation; on load (and on every
   resize until the user zooms or pans) the view is fitted so that every node and its label is inside the SVG.
   Nodes and labels keep their pixel size while zooming, so a label stays readable at any zoom. Keyboard: Tab
   reaches every node (Enter opens its details); with the graph focused, + and - zoom, arrows pan, 0 fits. */
(function () {
  "use strict";
  var FONT_PX = 12, MAX_LABEL = 28, MARGIN = 12, LABEL_GAP = 4;
  var FONT = '"Noto Sans", "Noto Sans CJK SC", "Noto Sans SC", "PingFang SC", "Microsoft YaHei", system-ui, sans-serif';

  function short(label, max) {
    var chars = Array.from(label || "");
    return chars.length > max ? chars.slice(0, max - 1).join("") + "\u2026" : chars.join("") || "(unnamed)";
  }

  function esc(text) {
    return String(text).replace(/[&<>"']/g, function (c) { return "&#" + c.charCodeAt(0) + ";"; });
  }

  function radius(n) { return n.kind === "memory" || n.kind === "conclusion" ? 5 : 7; }

  function textWidth(text) {
    var ctx = textWidth.ctx || (textWidth.ctx = document.createElement("canvas").getContext("2d"));
    ctx.font = FONT_PX + "px " + FONT;
    return Math.ceil(ctx.measureText(text).width);
  }

  /* Force layout in abstract units: repulsion between all pairs, springs along edges, a pull to the centre.
     Deterministic: the start is a circle in input order. */
  function simulate(nodes, links) {
    var n = nodes.length;
    nodes.forEach(function (node, i) {
      var a = 2 * Math.PI * i / Math.max(1, n), r = 40 + 10 * Math.sqrt(n);
      node.x = r * Math.cos(a); node.y = r * Math.sin(a); node.vx = 0; node.vy = 0;
    });
    var steps = Math.max(40, Math.min(300, Math.floor(4e7 / Math.max(1, n * n))));
    for (var step = 0; step < steps; step++) {
      var cool = 1 - step / steps;
      for (var i = 0; i < n; i++) for (var j = i + 1; j < n; j++) {
        var a = nodes[i], b = nodes[j], dx = a.x - b.x, dy = a.y - b.y;
        if (dx === 0 && dy === 0) { dx = 0.01 * (i - j); dy = 0.01; }
        var d2 = Math.max(dx * dx + dy * dy, 25), f = 900 / d2;
        a.vx += dx * f; a.vy += dy * f; b.vx -= dx * f; b.vy -= dy * f;
      }
      links.forEach(function (l) {
        var dx = l.t.x - l.s.x, dy = l.t.y - l.s.y, d = Math.sqrt(dx * dx + dy * dy) || 1, f = (d - 50) * 0.03;
        l.s.vx += dx / d * f; l.s.vy += dy / d * f; l.t.vx -= dx / d * f; l.t.vy -= dy / d * f;
      });
      nodes.forEach(function (node) {
        node.vx -= node.x * 0.01; node.vy -= node.y * 0.01;
        node.x += Math.max(-20, Math.min(20, node.vx)) * cool; node.y += Math.max(-20, Math.min(20, node.vy)) * cool;
        node.vx *= 0.5; node.vy *= 0.5;
      });
    }
  }

  /* The scale and offset that put every node box (circle plus label to its right) inside w x h pixels. */
  function fitTransform(nodes, w, h) {
    if (!nodes.length || w <= 0 || h <= 0) return {k: 1, tx: w / 2, ty: h / 2};
    var xs = nodes.map(function (n) { return n.x; }), ys = nodes.map(function (n) { return n.y; });
    var span = Math.max(Math.max.apply(null, xs) - Math.min.apply(null, xs), 1);
    var spanY = Math.max(Math.max.apply(null, ys) - Math.min.apply(null, ys), 1);
    var k = Math.min((w - 2 * MARGIN) / span, (h - 2 * MARGIN - FONT_PX) / spanY, 4);
    for (var tries = 0; tries < 60; tries++) {  // shrink until the widest label fits too
      var left = Infinity, right = -Infinity, top = Infinity, bottom = -Infinity;
      nodes.forEach(function (n) {
        left = Math.min(left, n.x * k - n.r); right = Math.max(right, n.x * k + n.r + LABEL_GAP + n.labelWidth);
        top = Math.min(top, n.y * k - Math.max(n.r, FONT_PX / 2)); bottom = Math.max(bottom, n.y * k + Math.max(n.r, FONT_PX / 2));
      });
      if ((right - left <= w - 2 * MARGIN && bottom - top <= h - 2 * MARGIN) || k < 1e-4) break;
      k *= 0.9;
    }
    return {k: k, tx: (w - (right - left)) / 2 - left, ty: (h - (bottom - top)) / 2 - top};
  }

  /* Push apart nodes whose label boxes overlap at scale k (a few passes; small graphs only). */
  function untangle(nodes, k) {
    if (nodes.length > 400) return;
    var hgt = (FONT_PX + 7) / k, passes = nodes.length > 150 ? 20 : 80;
    for (var pass = 0; pass < passes; pass++) {
      var moved = false;
      for (var i = 0; i < nodes.length; i++) for (var j = i + 1; j < nodes.length; j++) {
        var a = nodes[i], b = nodes[j];  // a node's box: from its circle's left edge to its label's end
        var aw = (a.r + LABEL_GAP + a.labelWidth) / k, bw = (b.r + LABEL_GAP + b.labelWidth) / k;
        var ox = Math.min(a.x + aw, b.x + bw) - Math.max(a.x - a.r / k, b.x - b.r / k), oy = hgt - Math.abs(a.y - b.y);
        if (ox <= 0 || oy <= 0) continue;
        var push = oy / 2 + 0.5 / k, dir = a.y < b.y || (a.y === b.y && i < j) ? -1 : 1;
        a.y += dir * push; b.y -= dir * push; moved = true;
      }
      if (!moved) return;
    }
  }

  function mount(root, data, opts) {
    opts = opts || {};
    root.classList.add("pg-root");
    root.innerHTML = '<div class="pg-toolbar" role="toolbar" aria-label="Graph controls"></div>' +
      '<div class="pg-main"><svg class="pg-svg" tabindex="0" role="group" aria-label="Memory graph: Tab to a node, ' +
      'Enter for details, + and - to zoom, arrows to pan, 0 to fit"><g class="pg-edges"></g><g class="pg-nodes"></g>' +
      '</svg><aside class="pg-details" aria-live="polite"><p class="pg-hint">Click a node (or Tab to it and press ' +
      'Enter) to see its details.</p></aside></div>';
    var toolbar = root.querySelector(".pg-toolbar"), svg = root.querySelector(".pg-svg");
    var details = root.querySelector(".pg-details"), NS = svg.namespaceURI;
    var edgeLayer = svg.querySelector(".pg-edges"), nodeLayer = svg.querySelector(".pg-nodes");
    var make = function (tag, attrs) {
      var el = document.createElementNS(NS, tag);
      for (var key in attrs) el.setAttribute(key, attrs[key]);
      return el;
    };
    var narrow = svg.getBoundingClientRect().width < 600;  // a phone: shorter labels (the full one is in details)
    var nodes = data.nodes.map(function (n) {
      var label = short(n.label, narrow ? MAX_LABEL / 2 : MAX_LABEL);
      return Object.assign({}, n, {short: label, r: radius(n), labelWidth: textWidth(label)});
    });
    var byId = new Map(nodes.map(function (n) { return [n.id, n]; }));
    var links = data.edges.filter(function (e) { return byId.has(e.source) && byId.has(e.target); })
      .map(function (e) { return Object.assign({}, e, {s: byId.get(e.source), t: byId.get(e.target)}); });
    simulate(nodes, links);
    var view = {k: 1, tx: 0, ty: 0}, touched = false, selected = null;
    var size = function () { var r = svg.getBoundingClientRect(); return {w: r.width, h: r.height}; };

    var settledFor = null;
    function settle(s) {  // untangle the labels at the scale this size fits them to (the size is remembered)
      for (var round = 0; round < 5; round++) untangle(nodes, fitTransform(nodes, s.w, s.h).k);
      settledFor = s;
    }

    links.forEach(function (l) {
      l.el = make("line", {stroke: data.edgeColours[l.type] || "#999", "stroke-width": 1.5, "class": "pg-edge"});
      var tip = make("title", {}); tip.textContent = l.type + ": " + l.relation + " (" + l.s.label + " \u2192 " + l.t.label + ")";
      l.el.appendChild(tip); edgeLayer.appendChild(l.el);
    });
    nodes.forEach(function (n) {
      n.el = make("g", {"class": "pg-node", tabindex: 0, role: "button", "data-id": n.id, "data-kind": n.kind,
                        "aria-label": n.kind + ": " + n.label});
      n.el.appendChild(make("circle", {r: n.r, fill: data.nodeColours[n.kind] || "#999"}));
      var text = make("text", {x: n.r + LABEL_GAP, dy: "0.35em", "class": "pg-label"});
      text.textContent = n.short;
      var tip = make("title", {}); tip.textContent = n.label;
      n.el.appendChild(tip); n.el.appendChild(text);
      n.el.addEventListener("click", function (ev) { ev.stopPropagation(); select(n.id); });
      n.el.addEventListener("keydown", function (ev) {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); ev.stopPropagation(); select(n.id); }
      });
      nodeLayer.appendChild(n.el);
    });

    function place() {
      links.forEach(function (l) {
        l.el.setAttribute("x1", l.s.x * view.k + view.tx); l.el.setAttribute("y1", l.s.y * view.k + view.ty);
        l.el.setAttribute("x2", l.t.x * view.k + view.tx); l.el.setAttribute("y2", l.t.y * view.k + view.ty);
      });
      nodes.forEach(function (n) {
        n.el.setAttribute("transform", "translate(" + (n.x * view.k + view.tx).toFixed(1) + "," +
                          (n.y * view.k + view.ty).toFixed(1) + ")");
      });
    }
    function fit() {
      var s = size();
      if (s.w <= 0 || s.h <= 0) return;
      // A first size, or a much smaller one (a hidden tab shown, a phone turned): the labels need more room.
      if (!settledFor || s.w < settledFor.w * 0.9 || s.h < settledFor.h * 0.9) settle(s);
      view = fitTransform(nodes, s.w, s.h); touched = false; place();
    }
    function zoomBy(factor, cx, cy) {
      var s = size();
      cx = cx === undefined ? s.w / 2 : cx; cy = cy === undefined ? s.h / 2 : cy;
      view.tx = cx - (cx - view.tx) * factor; view.ty = cy - (cy - view.ty) * factor; view.k *= factor;
      touched = true; place();
    }
    function panBy(dx, dy) { view.tx += dx; view.ty += dy; touched = true; place(); }

    // -- filters: edge types (checkboxes coloured like the edges) and one relation name ----------------------------
    var types = Array.from(new Set(links.map(function (l) { return l.type; }))).sort();
    var relations = Array.from(new Set(links.map(function (l) { return l.relation; }))).sort();
    var shown = new Set(types), relation = "";
    var html = '<span class="pg-count">' + nodes.length + " nodes, " + links.length + ' edges</span>' +
      '<fieldset class="pg-types"><legend>Edge types</legend>' + types.map(function (t) {
        return '<label><input type="checkbox" checked value="' + esc(t) + '"><b style="background:' +
          esc(data.edgeColours[t] || "#999") + '"></b>' + esc(t) + "</label>";
      }).join("") + "</fieldset>" +
      '<label class="pg-rel">Relation <select><option value="">all relations</option>' +
      relations.map(function () { return "<option></option>"; }).join("") + "</select></label>" +
      '<span class="pg-zoom"><button type="button" data-zoom="in" aria-label="Zoom in">+</button>' +
      '<button type="button" data-zoom="out" aria-label="Zoom out">\u2212</button>' +
      '<button type="button" data-zoom="fit">Fit</button></span>' +
      '<span class="pg-kinds">' + Object.keys(data.nodeColours).map(function (k) {
        return '<span><i style="background:' + esc(data.nodeColours[k]) + '"></i>' + esc(k) + "</span>";
      }).join("") + "</span>";
    toolbar.innerHTML = html;
    Array.from(toolbar.querySelectorAll("option")).slice(1).forEach(function (o, i) {  // text set as text: no markup
      o.value = relations[i]; o.textContent = relations[i];
    });
    function applyFilter() {
      var live = new Set();
      links.forEach(function (l) {
        var on = shown.has(l.type) && (!relation || l.relation === relation);
        l.el.style.display = on ? "" : "none";
        if (on) { live.add(l.s.id); live.add(l.t.id); }
      });
      var all = shown.size === types.length && !relation;
      nodes.forEach(function (n) { n.el.classList.toggle("pg-dim", !all && !live.has(n.id)); });
    }
    toolbar.querySelectorAll(".pg-types input").forEach(function (box) {
      box.addEventListener("change", function () {
        if (box.checked) shown.add(box.value); else shown.delete(box.value);
        applyFilter();
      });
    });
    toolbar.querySelector(".pg-rel select").addEventListener("change", function (ev) {
      relation = ev.target.value; applyFilter();
    });
    toolbar.querySelectorAll("[data-zoom]").forEach(function (b) {
      b.addEventListener("click", function () {
        var z = b.getAttribute("data-zoom");
        if (z === "fit") fit(); else zoomBy(z === "in" ? 1.25 : 0.8);
      });
    });

    // -- details of the selected node -----------------------------------------------------------------------------
    function select(id) {
      var n = byId.get(id);
      if (!n) return;
      if (selected) selected.el.classList.remove("pg-selected");
      selected = n; n.el.classList.add("pg-selected");
      links.forEach(function (l) { l.el.classList.toggle("pg-near", l.s === n || l.t === n); });
      details.innerHTML = "";
      var h = document.createElement("h3"); h.textContent = n.label; details.appendChild(h);
      var kind = document.createElement("p"); kind.className = "pg-kind"; kind.textContent = n.kind; details.appendChild(kind);
      if (n.info) { var pre = document.createElement("pre"); pre.textContent = n.info; details.appendChild(pre); }
      if (opts.onOpen && n.message_ids && n.message_ids.length) {
        var open = document.createElement("button"); open.type = "button"; open.className = "pg-open";
        open.textContent = "Open the source memory";
        open.addEventListener("click", function () { opts.onOpen(n); });
        details.appendChild(open);
      }
      var near = links.filter(function (l) { return l.s === n || l.t === n; });
      if (near.length) {
        var title = document.createElement("h4"); title.textContent = "Connections (" + near.length + ")";
        var list = document.createElement("ul");
        near.forEach(function (l) {
          var other = l.s === n ? l.t : l.s, li = document.createElement("li"), b = document.createElement("button");
          b.type = "button"; b.textContent = (l.s === n ? "\u2192 " : "\u2190 ") + l.relation + ": " + other.label;
          b.addEventListener("click", function () { select(other.id); other.el.focus(); });
          li.appendChild(b); list.appendChild(li);
        });
        details.appendChild(title); details.appendChild(list);
      }
      if (opts.onSelect) opts.onSelect(n);
    }

    // -- pan (drag the background), zoom (wheel, buttons, keys) ---------------------------------------------------
    var drag = null;
    svg.addEventListener("pointerdown", function (ev) {
      if (ev.target.closest && ev.target.closest(".pg-node")) return;
      drag = {x: ev.clientX, y: ev.clientY}; svg.classList.add("pg-panning");
    });
    window.addEventListener("pointermove", function (ev) {
      if (!drag) return;
      panBy(ev.clientX - drag.x, ev.clientY - drag.y); drag = {x: ev.clientX, y: ev.clientY};
    });
    window.addEventListener("pointerup", function () { drag = null; svg.classList.remove("pg-panning"); });
    svg.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var r = svg.getBoundingClientRect();
      zoomBy(ev.deltaY < 0 ? 1.15 : 1 / 1.15, ev.clientX - r.left, ev.clientY - r.top);
    }, {passive: false});
    svg.addEventListener("keydown", function (ev) {
      var keys = {"+": function () { zoomBy(1.25); }, "=": function () { zoomBy(1.25); },
                  "-": function () { zoomBy(0.8); }, "0": fit, ArrowLeft: function () { panBy(40, 0); },
                  ArrowRight: function () { panBy(-40, 0); }, ArrowUp: function () { panBy(0, 40); },
                  ArrowDown: function () { panBy(0, -40); }};
      if (keys[ev.key]) { ev.preventDefault(); keys[ev.key](); }
    });
    if (window.ResizeObserver) new ResizeObserver(function () { if (!touched) fit(); }).observe(svg);
    fit();
    return {fit: fit, zoomBy: zoomBy, select: select, nodes: nodes};
  }

  window.PalimpsestGraph = {mount: mount, font: FONT};
})();
