/* The markdown of community reports, drawn as elements instead of shown raw.
 *
 * Reports are written by a model in markdown ("# title", "## finding", "**bold**", "- item").
 * Only that small subset is drawn; everything is inserted as text nodes (never as HTML), so a
 * description cannot inject markup. `inline(parent, text)` draws a run of plain text: the web
 * page passes one that turns citations into buttons. Shared by the HTML export and `serve`.
 */
var GraphMarkdown = (function () {
  "use strict";

  var EMPHASIS = /\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*/g;

  function plain(parent, text) { parent.appendChild(document.createTextNode(text)); }

  function emphasised(parent, text, inline) {
    var last = 0;
    text.replace(EMPHASIS, function (match, strong, strong2, em, at) {
      inline(parent, text.slice(last, at));
      var node = document.createElement(em !== undefined ? "em" : "strong");
      inline(node, strong || strong2 || em);
      parent.appendChild(node);
      last = at + match.length;
      return match;
    });
    inline(parent, text.slice(last));
  }

  function render(container, text, inline) {
    inline = inline || plain;
    container.textContent = "";
    container.classList.add("gv-markdown");
    var list = null, paragraph = null;
    String(text || "").split(/\r?\n/).forEach(function (line) {
      var heading = /^(#{1,6})\s+(.*)$/.exec(line);
      var item = /^\s*(?:[-*+]|(\d+)[.)])\s+(.*)$/.exec(line);
      if (!line.trim()) { list = null; paragraph = null; return; }
      if (heading) {
        list = null; paragraph = null;
        var level = Math.min(6, heading[1].length + 2);  // under the page's own headings
        emphasised(container.appendChild(document.createElement("h" + level)), heading[2], inline);
        return;
      }
      if (item) {
        paragraph = null;
        var kind = item[1] ? "ol" : "ul";
        if (!list || list.tagName.toLowerCase() !== kind) list = container.appendChild(document.createElement(kind));
        emphasised(list.appendChild(document.createElement("li")), item[2], inline);
        return;
      }
      list = null;
      if (paragraph) paragraph.appendChild(document.createTextNode(" "));
      else paragraph = container.appendChild(document.createElement("p"));
      emphasised(paragraph, line.trim(), inline);
    });
  }

  /* `text` without its first line when that is a heading saying `title` (shown above it already) */
  function withoutTitle(text, title) {
    text = String(text || "");
    var first = /^\s*#{1,6}\s+(.*)(\r?\n|$)/.exec(text);
    return first && first[1].trim() === String(title || "").trim() ? text.slice(first[0].length) : text;
  }

  return { render: render, withoutTitle: withoutTitle };
})();
