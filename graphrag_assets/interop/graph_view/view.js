/* graphrag-assets graph view.
 *
 * GraphView.mount(element, data) draws, with SVG and no library:
 *   - the community map: every community a circle (area ~ members, colour = level), nested in its parent;
 *   - the selected community's entity graph (positions come with the data), its report, and the
 *     chain of parent communities;
 *   - a search box: type part of an entity's name, pick it, and its deepest community opens.
 * `data` is what graphrag_assets.interop.graph_view.data.view_data returns. mount() returns
 * {selectCommunity(number), selectEntity(index)} for pages that drive the view themselves.
 * Text from the index is only ever set with textContent, never parsed as HTML.
 */
(function (global) {
  "use strict";

  var SVG_NS = "http://www.w3.org/2000/svg";
  var LEVEL_COLOURS = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#e15759", "#9c755f"];
  var TYPE_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#ff7f0e"];
  var MAX_RESULTS = 20;
  var MAX_ENTITY_LABELS = 40;

  function svg(tag, attrs, parent) {
    var node = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(node);
    return node;
  }

  function html(tag, attrs, text, parent) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (parent) parent.appendChild(node);
    return node;
  }

  function levelColour(level) { return LEVEL_COLOURS[Math.max(level, 0) % LEVEL_COLOURS.length]; }

  function typeColour(type) {
    var h = 0, s = String(type || "");
    for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0;
    return TYPE_COLOURS[h % TYPE_COLOURS.length];
  }

  /* Wheel zooms around the pointer, dragging pans, a double click resets (listeners are added once). */
  function zoomable(svgNode, box) {
    var view = box.slice(), drag = null;
    function apply() { svgNode.setAttribute("viewBox", view.join(" ")); }
    function point(evt) {
      var rect = svgNode.getBoundingClientRect();
      return [view[0] + (evt.clientX - rect.left) / rect.width * view[2],
              view[1] + (evt.clientY - rect.top) / rect.height * view[3]];
    }
    svgNode.addEventListener("wheel", function (evt) {
      evt.preventDefault();
      var p = point(evt), f = evt.deltaY > 0 ? 1.2 : 1 / 1.2;
      view = [p[0] - (p[0] - view[0]) * f, p[1] - (p[1] - view[1]) * f, view[2] * f, view[3] * f];
      apply();
    }, { passive: false });
    svgNode.addEventListener("mousedown", function (evt) { drag = { x: evt.clientX, y: evt.clientY, view: view.slice(), moved: false }; });
    svgNode.addEventListener("mousemove", function (evt) {
      if (!drag) return;
      var rect = svgNode.getBoundingClientRect();
      var dx = (evt.clientX - drag.x) / rect.width * view[2], dy = (evt.clientY - drag.y) / rect.height * view[3];
      if (Math.abs(evt.clientX - drag.x) + Math.abs(evt.clientY - drag.y) > 3) drag.moved = true;
      if (drag.moved) { view = [drag.view[0] - dx, drag.view[1] - dy, view[2], view[3]]; apply(); }
    });
    svgNode.addEventListener("click", function (evt) { if (drag && drag.moved) evt.stopPropagation(); drag = null; }, true);
    svgNode.addEventListener("mouseleave", function () { drag = null; });
    svgNode.addEventListener("dblclick", function () { view = box.slice(); apply(); });
    apply();
    return { reset: function () { view = box.slice(); apply(); } };
  }

  function mount(root, data, options) {
    options = options || {};
    var entities = data.entities, communities = data.communities;
    var byNumber = {};
    communities.forEach(function (c) { byNumber[c.community] = c; });
    var levels = communities.reduce(function (m, c) { return Math.max(m, c.level + 1); }, 0);
    var state = { community: null, entity: null };

    root.textContent = "";
    root.classList.add("gv");
    var header = html("header", { "class": "gv-header" }, null, root);
    html("h1", {}, data.title, header);
    html("span", { "class": "gv-stats" },
      entities.title.length + " entities · " + data.relationships.length + " relationships · " +
      communities.length + " communities in " + levels + " level" + (levels === 1 ? "" : "s"), header);
    var searchBox = html("div", { "class": "gv-search" }, null, header);
    var search = html("input", { id: "entity-search", type: "search", placeholder: "Find an entity…", autocomplete: "off" }, null, searchBox);
    var results = html("ul", { id: "search-results" }, null, searchBox);

    var body = html("div", { "class": "gv-body" }, null, root);
    var mapPane = html("section", { "class": "gv-map" }, null, body);
    var legend = html("div", { "class": "gv-legend" }, null, mapPane);
    for (var l = 0; l < levels; l++) {
      var item = html("span", { "class": "gv-legend-item" }, null, legend);
      html("span", { "class": "gv-swatch", style: "background:" + levelColour(l) }, null, item);
      item.appendChild(document.createTextNode("level " + l));
    }
    var map = svg("svg", { id: "community-map", preserveAspectRatio: "xMidYMid meet" }, mapPane);
    var detail = html("section", { "class": "gv-detail" }, null, body);
    var crumbs = html("nav", { id: "breadcrumb" }, null, detail);
    var heading = html("h2", { id: "community-title" }, "Pick a community on the map, or search for an entity.", detail);
    var graph = svg("svg", { id: "entity-graph", preserveAspectRatio: "xMidYMid meet" }, detail);
    var entityInfo = html("div", { id: "entity-info" }, null, detail);
    var reportTitle = html("h3", { id: "report-title" }, null, detail);
    var reportMeta = html("div", { id: "report-meta" }, null, detail);
    var reportText = html("div", { id: "report-text" }, null, detail);
    var graphZoom = zoomable(graph, [-1.05, -1.05, 2.1, 2.1]);

    /* --- community map --- */
    var circles = {};
    var ordered = communities.slice().sort(function (a, b) { return a.level - b.level || b.size - a.size; });
    var mapLayer = svg("g", {}, map), labelLayer = svg("g", { "class": "gv-labels" }, map);
    ordered.forEach(function (c) {
      var node = svg("circle", {
        "class": "community level-" + c.level, cx: c.x, cy: c.y, r: c.r,
        fill: levelColour(c.level), "data-community": c.community
      }, mapLayer);
      var label = "Community " + c.community + " (level " + c.level + ", " + c.size + " entities)" +
        (c.report && c.report.title ? ": " + c.report.title : "");
      svg("title", {}, node).textContent = label;
      node.addEventListener("click", function (evt) { evt.stopPropagation(); selectCommunity(c.community); });
      circles[c.community] = node;
      if (c.level === 0 && c.r >= 0.12) {
        var size = Math.min(0.045, c.r / 5);
        var text = svg("text", { x: c.x, y: c.y - c.r + 1.6 * size, "font-size": size.toFixed(3), "text-anchor": "middle" }, labelLayer);
        text.textContent = shorten((c.report && c.report.title) || c.title, Math.max(12, Math.round(c.r * 70)));
      }
    });
    zoomable(map, [-1.02, -1.02, 2.04, 2.04]);

    function shorten(text, n) { text = String(text || ""); return text.length > n ? text.slice(0, n - 1) + "…" : text; }

    /* --- selection --- */
    function selectCommunity(number, entityIndex) {
      var c = byNumber[number];
      if (!c) return;
      if (state.community !== null && circles[state.community]) circles[state.community].classList.remove("selected");
      state.community = number;
      circles[number].classList.add("selected");
      drawCrumbs(c);
      heading.textContent = "Community " + c.community + " · level " + c.level + " · " + c.size + " entities";
      drawEntityGraph(c);
      drawReport(c);
      if (options.onCommunity) options.onCommunity(c);
      showEntity(entityIndex === undefined ? null : entityIndex);
    }

    function drawCrumbs(c) {
      crumbs.textContent = "";
      var chain = [];
      for (var cur = c; cur; cur = byNumber[cur.parent]) chain.unshift(cur);
      chain.forEach(function (step, i) {
        if (i) html("span", { "class": "gv-sep" }, "›", crumbs);
        var button = html("button", { type: "button", "class": "gv-crumb level-" + step.level }, "Community " + step.community, crumbs);
        button.style.borderColor = levelColour(step.level);
        button.addEventListener("click", function () { selectCommunity(step.community); });
      });
    }

    function drawEntityGraph(c) {
      graph.textContent = "";
      var at = {};
      c.members.forEach(function (e, i) { at[e] = i; });
      var edges = svg("g", { "class": "gv-edges" }, graph), nodes = svg("g", {}, graph), labels = svg("g", { "class": "gv-labels" }, graph);
      var maxWeight = 0;
      data.relationships.forEach(function (r) { if (r[0] in at && r[1] in at) maxWeight = Math.max(maxWeight, r[2]); });
      data.relationships.forEach(function (r) {
        if (!(r[0] in at && r[1] in at)) return;
        var a = at[r[0]], b = at[r[1]];
        svg("line", {
          "class": "relationship", x1: c.layout[2 * a], y1: c.layout[2 * a + 1], x2: c.layout[2 * b], y2: c.layout[2 * b + 1],
          "stroke-width": (0.6 + 2.4 * (maxWeight > 0 ? r[2] / maxWeight : 0)).toFixed(2)
        }, edges);
      });
      var maxDegree = c.members.reduce(function (m, e) { return Math.max(m, entities.degree[e] || 0); }, 1);
      var base = Math.min(0.07, 0.55 / Math.sqrt(Math.max(c.members.length, 1)));
      var byDegree = c.members.slice().sort(function (x, y) { return (entities.degree[y] || 0) - (entities.degree[x] || 0); });
      var labelled = {}, spots = {};
      byDegree.slice(0, MAX_ENTITY_LABELS).forEach(function (e) { labelled[e] = true; });
      c.members.forEach(function (e, i) {
        var x = c.layout[2 * i], y = c.layout[2 * i + 1];
        var r = base * (0.5 + 0.5 * Math.sqrt((entities.degree[e] || 0) / maxDegree));
        var node = svg("circle", { "class": "entity", cx: x, cy: y, r: r.toFixed(4), fill: typeColour(entities.type[e]), "data-entity": e }, nodes);
        svg("title", {}, node).textContent = entities.title[e] + (entities.type[e] ? " (" + entities.type[e] + ")" : "");
        node.addEventListener("click", function () { showEntity(e); });
        if (labelled[e]) spots[e] = { x: x, y: y - r - 0.01 };
      });
      placeLabels(labels, byDegree.filter(function (e) { return labelled[e]; }), spots, Math.max(0.025, Math.min(0.05, base * 0.8)));
      graphZoom.reset();
    }

    /* Labels of the best-connected entities first; one that would cover a placed label is left
       out (its title is on hover), and one that would run past the drawing is moved inside it. */
    function placeLabels(layer, order, spots, size) {
      var placed = [], edge = 1.05;
      order.forEach(function (e) {
        var spot = spots[e];
        var text = svg("text", { x: spot.x, y: spot.y, "font-size": size.toFixed(3), "text-anchor": "middle" }, layer);
        text.textContent = shorten(entities.title[e], 28);
        var box = text.getBBox();
        var shift = Math.max(0, -edge - box.x) - Math.max(0, box.x + box.width - edge);
        if (shift) { text.setAttribute("x", spot.x + shift); box = text.getBBox(); }
        var clash = placed.some(function (p) {
          return box.x < p.x + p.width && p.x < box.x + box.width && box.y < p.y + p.height && p.y < box.y + box.height;
        });
        if (clash) layer.removeChild(text); else placed.push(box);
      });
    }

    function drawReport(c) {
      if (options.onCommunity) return;  // the page shows the report itself (serve: in its detail pane)
      var report = c.report;
      reportTitle.textContent = report ? report.title : "No report for this community";
      reportMeta.textContent = report && report.rank !== null && report.rank !== undefined ? "rank " + report.rank : "";
      GraphMarkdown.render(reportText, report ? GraphMarkdown.withoutTitle(report.full_content || report.summary, report.title) : "");
    }

    function showEntity(index) {
      Array.prototype.forEach.call(graph.querySelectorAll("circle.entity.selected"), function (n) { n.classList.remove("selected"); });
      state.entity = index;
      entityInfo.textContent = "";
      if (index === null) return;
      var node = graph.querySelector('circle.entity[data-entity="' + index + '"]');
      if (node) node.classList.add("selected");
      html("strong", {}, entities.title[index], entityInfo);
      var facts = [entities.type[index], "degree " + entities.degree[index]].filter(Boolean).join(" · ");
      html("span", { "class": "gv-facts" }, " " + facts, entityInfo);
      html("p", {}, entities.description[index] || "", entityInfo);
    }

    function selectEntity(index) {
      var number = entities.community[index];
      if (number === -1 || !(number in byNumber)) {
        if (state.community !== null && circles[state.community]) circles[state.community].classList.remove("selected");
        state.community = null;
        crumbs.textContent = "";
        graph.textContent = "";
        heading.textContent = entities.title[index] + " is in no community";
        drawReport({ report: null });
        showEntity(index);
        return;
      }
      selectCommunity(number, index);
    }

    /* --- search --- */
    search.addEventListener("input", function () {
      results.textContent = "";
      var q = search.value.trim().toLowerCase();
      if (!q) return;
      var hits = [];
      entities.title.forEach(function (t, i) {
        var at = String(t).toLowerCase().indexOf(q);
        if (at >= 0) hits.push([at === 0 ? 0 : 1, -(entities.degree[i] || 0), i]);
      });
      hits.sort(function (a, b) { return a[0] - b[0] || a[1] - b[1] || a[2] - b[2]; });
      hits.slice(0, MAX_RESULTS).forEach(function (h) {
        var li = html("li", {}, null, results);
        var button = html("button", { type: "button", "class": "search-result", "data-entity": h[2] }, entities.title[h[2]], li);
        button.addEventListener("click", function () { results.textContent = ""; search.value = entities.title[h[2]]; selectEntity(h[2]); });
      });
      if (!hits.length) html("li", { "class": "gv-none" }, "no entity matches", results);
    });

    var largest = communities.filter(function (c) { return c.level === 0; })
      .sort(function (a, b) { return b.size - a.size || a.community - b.community; })[0];
    if (largest) selectCommunity(largest.community);
    return { selectCommunity: selectCommunity, selectEntity: selectEntity };
  }

  global.GraphView = { mount: mount };
})(window);
