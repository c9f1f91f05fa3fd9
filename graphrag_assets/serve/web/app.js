/* graphrag-assets serve: the page at /.
 *
 * Ask (the answer streams from POST api/query as server-sent events; its [Data: …] citations
 * become buttons, and the passages it cites are listed with their character offsets in the original
 * document; a cited source opens with the cited characters marked), browse communities by level, and draw the community map or an entity's
 * neighbourhood with the graph view of `export --format html` (GraphView.mount, view.js).
 * Every URL is relative to <base>, which the server sets to / or /p/NAME/, so one page serves
 * every project. Text from the index is only ever set with textContent, never parsed as HTML.
 */
(function () {
  "use strict";

  var REFERENCES_SHOWN = 8;  // references of one kind listed before "all N"
  var KINDS = { Reports: "reports", Entities: "entities", Relationships: "relationships", Claims: "claims", Sources: "sources" };
  var SHORT = { Reports: "report", Entities: "entity", Relationships: "rel.", Claims: "claim", Sources: "source" };
  var KIND_TITLES = { reports: "Reports", entities: "Entities", relationships: "Relationships", claims: "Claims", sources: "Sources" };
  var CITATION = /\[Data:([^\]]*)\]/g;
  var CITED_KIND = /(Reports|Entities|Relationships|Claims|Sources)\s*\(([^)]*)\)/g;
  var PAGE = 50;

  var state = { mapData: null, view: null, communityLevel: null, communityOffset: 0, citations: [] };

  function $(id) { return document.getElementById(id); }

  function el(tag, attrs, text, parent) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (parent) parent.appendChild(node);
    return node;
  }

  function api(path, options) {
    return fetch(path, options).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (body) {
        if (!response.ok) throw new Error((body.error && body.error.message) || response.status + " " + response.statusText);
        return body;
      });
    });
  }

  /* --- citations: text with [Data: Kind (ids)] groups turned into buttons --- */
  function renderCited(container, text) {
    container.textContent = "";
    renderCitedRun(container, text);
  }

  /* appends a run of text with its citations (also markdown's inline text) */
  function renderCitedRun(container, text) {
    var last = 0;
    text.replace(CITATION, function (match, inner, at) {
      container.appendChild(document.createTextNode(text.slice(last, at)));
      var group = el("span", { "class": "cite-group" }, null, container);
      group.appendChild(document.createTextNode("["));
      var found = false;
      inner.replace(CITED_KIND, function (_, kind, ids) {
        ids.split(",").forEach(function (raw) {
          var ref = raw.trim();
          if (!/^[0-9a-f-]+$/i.test(ref)) return;  // "+more" and the like cite nothing
          found = true;
          var button = el("button", { type: "button", "class": "cite", "data-kind": KINDS[kind], "data-ref": ref,
            title: kind + " " + ref }, SHORT[kind] + " " + ref, group);
          button.addEventListener("click", function () { showRecord(KINDS[kind], ref, button); });
        });
        return "";
      });
      if (!found) group.appendChild(document.createTextNode(inner));
      group.appendChild(document.createTextNode("]"));
      last = at + match.length;
      return match;
    });
    container.appendChild(document.createTextNode(text.slice(last)));
  }

  /* --- server-sent events from a fetch response --- */
  function readEvents(response, onEvent) {
    var reader = response.body.getReader(), decoder = new TextDecoder(), buffer = "";
    function pump() {
      return reader.read().then(function (chunk) {
        if (chunk.done) return;
        buffer += decoder.decode(chunk.value, { stream: true });
        var cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          var block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          var event = "message", data = [];
          block.split("\n").forEach(function (line) {
            if (line.indexOf("event:") === 0) event = line.slice(6).trim();
            else if (line.indexOf("data:") === 0) data.push(line.slice(5).replace(/^ /, ""));
          });
          if (data.length) onEvent(event, JSON.parse(data.join("\n")));
        }
        return pump();
      });
    }
    return pump();
  }

  /* --- ask --- */
  function ask(evt) {
    evt.preventDefault();
    var question = $("question").value.trim();
    if (!question) return;
    var body = { question: question, method: $("method").value, stream: true, context_only: $("context-only").checked };
    var level = $("community-level").value;
    if (level !== "") body.community_level = Number(level);
    if ($("response-type").value.trim()) body.response_type = $("response-type").value.trim();

    var answer = $("answer"), text = "", chunks = 0;
    answer.textContent = "";
    answer.setAttribute("data-chunks", "0");
    answer.classList.add("streaming");
    answer.removeAttribute("data-done");
    $("answer-meta").textContent = "asking (" + body.method + " search)…";
    $("references").textContent = "";
    state.citations = [];
    $("warnings").textContent = "";
    $("context").hidden = true;
    $("ask").disabled = true;

    fetch("api/query", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) })
      .then(function (response) {
        if (!response.ok) {
          return response.json().then(function (b) { throw new Error(b.error ? b.error.message : response.statusText); });
        }
        return readEvents(response, function (event, data) {
          if (event === "token") {
            text += data.text;
            chunks += 1;
            answer.setAttribute("data-chunks", String(chunks));
            renderCited(answer, text);
          } else if (event === "result") {
            showResult(data);
          } else if (event === "error") {
            throw new Error(data.error.message);
          }
        });
      })
      .catch(function (error) {
        $("answer-meta").textContent = "";
        el("p", { "class": "error" }, error.message, answer);
      })
      .then(function () {
        answer.classList.remove("streaming");
        $("ask").disabled = false;
      });
  }

  function showResult(result) {
    var answer = $("answer");
    renderCited(answer, result.answer || (result.context_only ? "(context only: no answer was written)" : ""));
    answer.setAttribute("data-done", "true");
    var usage = result.usage || {};
    var parts = [result.method + " search", result.llm_used ? usage.chat_calls + " model call(s)" : "no language model",
      (usage.seconds || 0).toFixed(2) + " s", "build " + (result.build.run_id || result.build.published_at || "unversioned")];
    $("answer-meta").textContent = parts.join(" · ");
    (result.warnings || []).forEach(function (w) { el("li", {}, w, $("warnings")); });
    state.citations = result.citations || [];
    renderReferences(result.references || {});
    renderCitations(state.citations);
    if (result.context_only || result.context_text) {
      $("context-text").textContent = result.context_text || "";
      $("context").hidden = !result.context_text;
      $("context").open = !!result.context_only;
    }
  }

  function renderReferences(refs) {
    var box = $("references");
    box.textContent = "";
    Object.keys(KIND_TITLES).forEach(function (kind) {
      var list = refs[kind] || [];
      if (!list.length) return;
      el("h3", {}, KIND_TITLES[kind] + " (" + list.length + ")", box);
      var ul = el("ul", { "class": "records", "data-kind": kind }, null, box);
      // cited records first; past REFERENCES_SHOWN the rest wait behind a button (a local search
      // context can hold 50 relationships, which made the page thousands of pixels long)
      list = list.filter(function (r) { return r.cited; }).concat(list.filter(function (r) { return !r.cited; }));
      var shown = Math.max(REFERENCES_SHOWN, list.filter(function (r) { return r.cited; }).length);
      if (list.length > shown) {
        var more = el("button", { type: "button", "class": "more", "data-kind": kind },
          "all " + list.length + " " + KIND_TITLES[kind].toLowerCase(), box);
        more.addEventListener("click", function () {
          Array.prototype.forEach.call(ul.children, function (li) { li.hidden = false; });
          more.remove();
        });
      }
      list.forEach(function (r, i) {
        var li = el("li", {}, null, ul);
        li.hidden = i >= shown;
        var b = el("button", { type: "button", "class": "reference", "data-kind": kind, "data-ref": r.citation }, null, li);
        el("span", { "class": "num" }, r.citation, b);
        el("span", { "class": "grow" }, r.title, b);
        el("span", { "class": "tag" + (r.cited ? " cited" : "") }, r.cited ? "cited" : "context", b);
        b.addEventListener("click", function () { showRecord(kind, r.citation); });
      });
    });
  }

  /* --- cited passages: where each lies in its document, down to the character --- */
  function where(c) {
    var parts = [c.path || c.title];
    if (c.record !== null && c.record !== undefined) parts.push("record " + c.record + " (" + c.title + ")");
    parts.push(c.start === null ? "offsets unknown" : "chars " + c.start + "–" + c.end);
    return parts.join(" · ");
  }

  function renderCitations(citations) {
    if (!citations.length) return;
    var box = $("references");
    var heading = el("h3", {}, "Cited passages (" + citations.length + ")");
    box.insertBefore(heading, box.firstChild);
    var ul = el("ul", { "class": "passages" });
    box.insertBefore(ul, heading.nextSibling);
    citations.forEach(function (c) {
      var b = el("button", { type: "button", "class": "passage", "data-ref": c.citation, "data-start": c.start, "data-end": c.end }, null, el("li", {}, null, ul));
      el("span", { "class": "where" }, where(c), b);
      el("span", { "class": "quote" }, c.text, b);
      b.addEventListener("click", function () { showCitation(c); });
    });
  }

  /* the passage's text into ``parent`` with the characters of each span marked; spans count
     characters of the document, ``offset`` is where the passage starts in it (text indexes count
     UTF-16 code units, the offsets code points: Array.from splits the text into code points) */
  function markedText(parent, text, offset, spans) {
    var chars = Array.from(text), at = 0;
    spans.filter(function (c) { return c.start !== null && offset !== null && offset !== undefined; })
      .map(function (c) { return [Math.max(0, c.start - offset), Math.min(chars.length, c.end - offset)]; })
      .filter(function (s) { return s[1] > s[0]; })
      .sort(function (a, b) { return a[0] - b[0]; })
      .forEach(function (s) {
        if (s[0] < at) return;  // overlapping spans: the first one is marked
        parent.appendChild(document.createTextNode(chars.slice(at, s[0]).join("")));
        el("mark", { "class": "cited-span" }, chars.slice(s[0], s[1]).join(""), parent);
        at = s[1];
      });
    parent.appendChild(document.createTextNode(chars.slice(at).join("")));
  }

  function showCitation(c) {
    detail("Loading…");
    $("detail").setAttribute("data-kind", "sources");
    return api("api/sources/" + encodeURIComponent(c.citation)).then(function (s) { showSource(s, [c]); })
      .catch(function (error) { detail("Not found", "").appendChild(el("p", { "class": "error" }, error.message)); });
  }

  /* --- the detail panel --- */
  function detail(title, meta) {
    $("detail-title").textContent = title;
    $("detail-meta").textContent = meta || "";
    var body = $("detail-body");
    body.textContent = "";
    return body;
  }

  function showRecord(kind, ref, button) {
    Array.prototype.forEach.call(document.querySelectorAll(".cite.active"), function (b) { b.classList.remove("active"); });
    if (button) button.classList.add("active");
    detail("Loading…");
    $("detail").setAttribute("data-kind", kind);
    return api("api/" + kind + "/" + encodeURIComponent(ref)).then(function (record) {
      ({ reports: showReport, entities: showEntity, relationships: showRelationship, claims: showClaim, sources: showSource })[kind](record);
    }).catch(function (error) { detail("Not found", "").appendChild(el("p", { "class": "error" }, error.message)); });
  }

  function showReport(r) {
    var body = detail(r.title || "Community " + r.community,
      "report of community " + r.community + " · level " + r.level + " · " + (r.size || 0) + " entities" + (r.rank !== null ? " · rank " + r.rank : ""));
    var actions = el("div", { "class": "actions" }, null, body);
    var map = el("button", { type: "button", id: "report-on-map" }, "Show on the community map", actions);
    map.addEventListener("click", function () { showMap(r.community); });
    var text = GraphMarkdown.withoutTitle(r.full_content || r.summary || "", r.title);  // the title is the pane's heading
    GraphMarkdown.render(el("div", { id: "detail-text" }, null, body), text, renderCitedRun);
  }

  function showEntity(e) {
    var body = detail(e.title, [e.type, "degree " + e.degree].filter(Boolean).join(" · "));
    var actions = el("div", { "class": "actions" }, null, body);
    el("button", { type: "button", id: "entity-graph-button" }, "Neighbourhood graph", actions)
      .addEventListener("click", function () { showNeighbourhood(e.human_readable_id, e.title); });
    renderCited(el("p", { "class": "text", id: "detail-text" }, null, body), e.description || "");
    if (e.aliases && e.aliases.length) el("p", { "class": "muted" }, "also called: " + e.aliases.join(", "), body);
    el("h3", {}, "Relationships (" + e.relationships.total + ", strongest first)", body);
    var table = el("table", { "class": "rels" }, null, body);
    function addRows(page) {
      page.items.forEach(function (rel) {
        var tr = el("tr", {}, null, table);
        var other = el("button", { type: "button", "class": "link" }, rel.other.title, el("td", {}, null, tr));
        other.addEventListener("click", function () { showRecord("entities", String(rel.other.human_readable_id)); });
        el("td", { "class": "muted" }, rel.weight === null ? "" : Number(rel.weight).toPrecision(3), tr);
        el("td", {}, rel.description, tr);
      });
      if (page.next_offset !== null) {
        var more = el("button", { type: "button", "class": "more" }, "more relationships", body);
        more.addEventListener("click", function () {
          more.remove();
          api("api/entities/" + e.human_readable_id + "?limit=" + PAGE + "&offset=" + page.next_offset).then(function (next) { addRows(next.relationships); });
        });
      }
    }
    addRows(e.relationships);
    recordList(body, "Communities", e.communities.map(function (c) {
      return { ref: String(c.community), label: "level " + c.level, title: c.title, kind: "reports" };
    }));
    sourceList(body, e.sources);
  }

  function showRelationship(r) {
    var body = detail(r.source.title + " — " + r.target.title, "relationship " + r.human_readable_id + " · weight " + r.weight);
    var ends = el("div", { "class": "actions" }, null, body);
    [r.source, r.target].forEach(function (end) {
      if (end.human_readable_id === null) return;
      el("button", { type: "button" }, end.title, ends).addEventListener("click", function () { showRecord("entities", String(end.human_readable_id)); });
    });
    renderCited(el("p", { "class": "text", id: "detail-text" }, null, body), r.description || "");
    sourceList(body, r.sources);
  }

  function showClaim(c) {
    var body = detail((c.type || "Claim") + ": " + (c.subject_id || ""), [c.status, c.start_date, c.end_date].filter(Boolean).join(" · "));
    el("p", { "class": "text", id: "detail-text" }, c.description || "", body);
    if (c.object_id) el("p", { "class": "muted" }, "about " + c.object_id, body);
    if (c.source_text) el("pre", {}, c.source_text, body);
    sourceList(body, c.sources);
  }

  /* a source's text with the characters the answer cites marked (``marked``: those citations,
     else every citation of this source in the last answer) */
  function showSource(s, marked) {
    var doc = s.document || {};
    var spans = marked || state.citations.filter(function (c) { return c.citation === s.citation; });
    var meta = ["source " + s.citation, "part " + ((s.chunk_index || 0) + 1), s.n_tokens + " tokens"];
    if (s.start_char !== null && s.start_char !== undefined) meta.push("chars " + s.start_char + "–" + s.end_char + " of the document");
    var body = detail(doc.path || doc.title || "Source " + s.citation, meta.join(" · "));
    spans.forEach(function (c) { el("p", { "class": "muted cited-where" }, "cited: " + where(c), body); });
    markedText(el("pre", { id: "detail-text" }, null, body), s.text, s.start_char, spans);
    var mark = body.querySelector("mark");
    if (mark && mark.scrollIntoView) mark.scrollIntoView({ block: "nearest" });
  }

  function recordList(parent, heading, items) {
    if (!items.length) return;
    el("h3", {}, heading, parent);
    var ul = el("ul", { "class": "records" }, null, parent);
    items.forEach(function (item) {
      var b = el("button", { type: "button" }, null, el("li", {}, null, ul));
      el("span", { "class": "num" }, item.label, b);
      el("span", { "class": "grow" }, item.title, b);
      b.addEventListener("click", function () { showRecord(item.kind, item.ref); });
    });
  }

  function sourceList(parent, sources) {
    recordList(parent, "Sources", (sources || []).map(function (s) {
      var doc = s.document || {};
      return { ref: s.citation, label: s.citation, title: (doc.path || doc.title || "") + " · part " + ((s.chunk_index || 0) + 1), kind: "sources" };
    }));
  }

  /* --- communities by level --- */
  function loadCommunities(level, append) {
    state.communityLevel = level;
    if (!append) state.communityOffset = 0;
    var query = "api/communities?limit=" + PAGE + "&offset=" + state.communityOffset + (level === null ? "" : "&level=" + level);
    return api(query).then(function (page) {
      var buttons = $("level-buttons");
      if (!buttons.childElementCount) {
        page.levels.forEach(function (l) {
          el("button", { type: "button", "data-level": l }, "level " + l, buttons).addEventListener("click", function () { loadCommunities(l); });
        });
      }
      Array.prototype.forEach.call(buttons.children, function (b) { b.classList.toggle("selected", Number(b.getAttribute("data-level")) === level); });
      var list = $("community-list");
      if (!append) list.textContent = "";
      page.items.forEach(function (c) {
        var b = el("button", { type: "button", "class": "community-item", "data-community": c.community }, null, el("li", {}, null, list));
        el("span", { "class": "num" }, c.community, b);
        el("span", { "class": "grow" }, c.title, b);
        el("span", { "class": "muted" }, c.size + " entities" + (c.rank !== null ? " · rank " + c.rank : ""), b);
        b.addEventListener("click", function () { showRecord("reports", String(c.community)); });
      });
      state.communityOffset = page.next_offset || 0;
      $("more-communities").hidden = page.next_offset === null;
    });
  }

  /* --- the graph view (the same drawing code as export --format html) --- */
  function mount(data, caption, neighbourhood) {
    selectTab("graph", false);
    $("graph-view").classList.toggle("neighbourhood", !!neighbourhood);
    $("graph-caption").textContent = caption;
    // the selected community's report goes to the detail pane, so it is never shown twice
    state.view = GraphView.mount($("graph-view"), data, { onCommunity: showCommunityReport });
    return state.view;
  }

  function showCommunityReport(c) {
    if (c.report) showRecord("reports", String(c.community));
    else detail("Community " + c.community, "level " + c.level + " · " + c.size + " entities · no report");
  }

  function showMap(community) {
    var ready = state.mapData ? Promise.resolve(state.mapData) : api("api/graph").then(function (d) { state.mapData = d; return d; });
    return ready.then(function (data) {
      var view = mount(data, "the community map: click a circle to open a community, search for an entity");
      if (community !== undefined && community !== null) view.selectCommunity(community);
    }).catch(function (error) { $("graph-caption").textContent = error.message; });
  }

  function showNeighbourhood(ref, title) {
    return api("api/entities/" + encodeURIComponent(ref) + "/graph").then(function (data) {
      var view = mount(data, "the neighbourhood of " + title + " (strongest relationships)", true);
      view.selectEntity(data.center);
    }).catch(function (error) { $("graph-caption").textContent = error.message; });
  }

  /* --- tabs, projects, start --- */
  function selectTab(name, load) {
    Array.prototype.forEach.call(document.querySelectorAll(".tabs button"), function (b) {
      b.setAttribute("aria-selected", String(b.getAttribute("data-tab") === name));
    });
    ["ask", "communities", "graph"].forEach(function (t) { $("panel-" + t).hidden = t !== name; });
    if (load === false) return;
    if (name === "communities" && !$("community-list").childElementCount) loadCommunities(0);
    if (name === "graph" && !state.view) showMap();
  }

  function showStatus(status) {
    var current = status.projects.filter(function (p) { return p.name === status.project; })[0];
    if (status.projects.length > 1) {
      var select = $("project");
      status.projects.forEach(function (p) { el("option", { value: p.name }, p.name, select); });
      select.value = status.project;
      select.addEventListener("change", function () { window.location.href = "/p/" + encodeURIComponent(select.value) + "/"; });
      $("project-choice").hidden = false;
    }
    if (current && current.build) {
      $("build").textContent = current.name + " · " + current.counts.entities + " entities · " + current.counts.communities +
        " communities · published " + (current.build.published_at || "").slice(0, 19).replace("T", " ");
    } else if (current) {
      $("build").textContent = current.name + ": no index yet";
    }
  }

  document.querySelectorAll(".tabs button").forEach(function (b) {
    b.addEventListener("click", function () { selectTab(b.getAttribute("data-tab")); });
  });
  $("ask-form").addEventListener("submit", ask);
  $("question").addEventListener("keydown", function (evt) {
    if (evt.key === "Enter" && (evt.ctrlKey || evt.metaKey)) $("ask-form").requestSubmit();
  });
  $("show-map").addEventListener("click", function () { showMap(); });
  $("more-communities").addEventListener("click", function () { loadCommunities(state.communityLevel, true); });
  api("api/status").then(showStatus).catch(function (error) { $("build").textContent = error.message; });
})();
