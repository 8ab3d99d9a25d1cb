# SPDX-License-Identifier: MIT
# frozen_string_literal: true
#
# The HTML report's flame graph of live bytes by stack (dumps with
# stacks): the trees of lib/mwrap_flame.rb as JSON in the page, drawn as
# SVG by the small script below (no library, nothing fetched).  Rooted at
# the allocation by default (the line holding the memory on top, who
# called it beneath, in their ratio), the outermost frame first one click
# away (or #flame=outer in the URL).  A click zooms into a frame (it
# fills the width; its callers, or callees, beneath it); a click on it
# again, or on one of the rows above it, or "reset zoom" (Esc) zooms
# back out.  The search box highlights the frames whose name contains
# its text and sums their bytes.  Hover: the frame, its exact bytes and
# share (a native tooltip and the line under the graph).
require "cgi"
require "json"
require_relative "mwrap_flame"
require_relative "mwrap_report"

module MwrapFlameHtml
  WIDTH = 1200
  ROW = 18

  # The section (caption, controls, SVG, data, script) for DUMP; "" when
  # it has no stacks.
  def self.section(dump, focus: nil)
    data = MwrapFlame.data(dump, focus: focus)
    return "" unless data

    all = dump.sites.sum { |s| s[:live].to_i }
    where = focus ? "under #{focus}" : "outside Ruby's library and gems"
    sampled = if dump.stacks&.any?
                per = dump.header["stack_sample_bytes"]
                " (each line's bytes exact, how they split among its callers estimated from " \
                  "sampled stacks#{" (about one per #{MwrapReport.human(per)} allocated)" if per})"
              end
    <<~HTML
      <p>Live bytes by stack, rooted at the allocation: each box on the top row is a line holding
      live memory (#{h(MwrapReport.human(data['total']))} of #{h(MwrapReport.human(all))} live),
      beneath it the lines that called it, each as wide as its share#{h(sampled)}.  A line of
      library code is shown by the application line that called it (the first frame #{h(where)};
      the library lines are on hover).  Click a frame to zoom into it, click it again to zoom
      out.</p>
      <div id="flame-controls">
      <label><input type="radio" name="flame-view" value="alloc" checked> rooted at the allocation</label>
      <label><input type="radio" name="flame-view" value="outer"> outermost frame first</label>
      <button type="button" id="flame-reset">reset zoom</button>
      <input type="search" id="flame-search" placeholder="search frames" size="40">
      <span id="flame-found"></span>
      </div>
      <svg id="flame" xmlns="http://www.w3.org/2000/svg" width="#{WIDTH}" height="#{ROW}" role="img"
      aria-label="flame graph of live bytes by stack"></svg>
      <div id="flame-info">&nbsp;</div>
      <script type="application/json" id="flame-data">#{JSON.generate(data).gsub('</', '<\/')}</script>
      <script>#{SCRIPT}</script>
    HTML
  end

  def self.h(s)
    CGI.escapeHTML(s.to_s)
  end

  STYLE = <<~CSS
    #flame-controls{margin:.5em 0;font-size:90%}
    #flame-controls label{margin-right:1em}
    #flame g.frame{cursor:pointer}
    #flame g.frame text{font-size:11px;fill:#111;pointer-events:none}
    #flame g.ancestor rect{opacity:.55}
    #flame g.match rect{fill:#c026d3}
    #flame g.match text{fill:#fff}
    #flame g.frame:hover rect{stroke:#000;stroke-width:1}
    #flame-info{font-family:monospace;font-size:90%;min-height:1.3em;overflow-wrap:anywhere}
    #flame-found{margin-left:.5em}
  CSS

  SCRIPT = <<~'JS'
    // SPDX-License-Identifier: MIT
    // The flame graph: draws #flame-data's trees into svg#flame.
    (function () {
      "use strict";
      var W = 1200, ROW = 18, MIN_PX = 0.5, NS = "http://www.w3.org/2000/svg";
      var data = JSON.parse(document.getElementById("flame-data").textContent);
      var svg = document.getElementById("flame");
      var info = document.getElementById("flame-info");
      var found = document.getElementById("flame-found");
      var search = document.getElementById("flame-search");
      var state = { view: /flame=outer/.test(location.hash) ? "outer" : "alloc", zoom: null };

      // [name index, bytes, children, flags, via] -> {name, bytes, kids, lib, via, parent}
      function build(list, parent) {
        return list.map(function (a) {
          var n = { name: data.names[a[0]], bytes: a[1], lib: a[3] === 1, via: a[4] || null, parent: parent };
          n.kids = build(a[2], n);
          return n;
        });
      }
      var views = { alloc: build(data.alloc, null), outer: build(data.outer, null) };

      function grouped(b) { return String(b).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
      function human(b) {
        var u = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
        while (Math.abs(b) >= 1024 && i < u.length - 1) { b /= 1024; i++; }
        return i ? b.toFixed(1) + " " + u[i] : b + " B";
      }
      function pct(part, whole) { return (whole > 0 ? 100 * part / whole : 0).toFixed(1) + "%"; }
      // "name: 1,234 bytes (12.3%)", and its share of the row above it
      function words(n) {
        var s = n.name + ": " + grouped(n.bytes) + " bytes (" + pct(n.bytes, data.total) + ")";
        if (n.parent) s += ", " + pct(n.bytes, n.parent.bytes) + " of " + n.parent.name.replace(/ in .*/, "");
        if (n.via) s += "; allocated in library code at " + n.via;
        return s;
      }
      function hash(s) {
        var h = 0;
        for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0;
        return h;
      }
      // a hue per file and a shade per line, the same in every report:
      // warm for the application, cool for library code
      function color(n) {
        var h = hash(n.name.replace(/:\d+( in [\s\S]*)?$/, "")), l = hash(n.name.replace(/ in [\s\S]*$/, ""));
        return n.lib ? "hsl(" + (190 + h % 50) + ",35%," + (60 + l % 16) + "%)"
                     : "hsl(" + (h % 45) + ",78%," + (52 + l % 16) + "%)";
      }

      function box(n, x, depth, w, cls) {
        var g = document.createElementNS(NS, "g");
        g.setAttribute("class", "frame" + cls);
        g.setAttribute("data-depth", depth);
        g.flameNode = n;
        var title = document.createElementNS(NS, "title");
        title.textContent = words(n);
        var r = document.createElementNS(NS, "rect");
        r.setAttribute("x", x.toFixed(1));
        r.setAttribute("y", depth * ROW);
        r.setAttribute("width", Math.max(w - 0.5, 0.5).toFixed(1));
        r.setAttribute("height", ROW - 1);
        r.setAttribute("fill", color(n));
        g.appendChild(title);
        g.appendChild(r);
        var chars = Math.floor((w - 6) / 6.5);
        if (chars >= 4) {
          var label = n.name.replace(/^[^:]*\//, "");   // the file's name, line and method
          var t = document.createElementNS(NS, "text");
          t.setAttribute("x", (x + 3).toFixed(1));
          t.setAttribute("y", depth * ROW + 13);
          t.textContent = label.length > chars ? label.slice(0, chars - 1) + "\u2026" : label;
          g.appendChild(t);
        }
        g.addEventListener("click", function () { zoomTo(n === state.zoom ? n.parent : n); });
        g.addEventListener("mouseover", function () { info.textContent = words(n); });
        svg.appendChild(g);
      }

      // NODES side by side from X on row DEPTH, SCALE pixels a byte,
      // their children beneath; returns the rows used.
      function layout(nodes, x, depth, scale) {
        var rows = depth;
        nodes.forEach(function (n) {
          var w = n.bytes * scale;
          if (w >= MIN_PX) {
            box(n, x, depth, w, "");
            rows = Math.max(rows, layout(n.kids, x, depth + 1, scale));
          }
          x += w;
        });
        return Math.max(rows, depth + (nodes.length ? 1 : 0));
      }

      function draw() {
        while (svg.firstChild) svg.removeChild(svg.firstChild);
        var rows, z = state.zoom;
        if (z) {
          // the zoomed frame at full width, the rows above it (what it
          // hangs under) too, dimmed
          var chain = [];
          for (var a = z.parent; a; a = a.parent) chain.unshift(a);
          chain.forEach(function (a, d) { box(a, 0, d, W, " ancestor"); });
          box(z, 0, chain.length, W, " zoomed");
          rows = Math.max(chain.length + 1, layout(z.kids, 0, chain.length + 1, W / z.bytes));
        } else {
          var total = views[state.view].reduce(function (s, n) { return s + n.bytes; }, 0);
          rows = layout(views[state.view], 0, 0, W / Math.max(total, 1));
        }
        svg.setAttribute("height", rows * ROW + 2);
        document.body.setAttribute("data-flame-view", state.view);
        document.body.setAttribute("data-flame-zoom", z ? z.name : "");
        info.textContent = z ? "zoomed: " + words(z) : "\u00a0";
        highlight();
      }

      function zoomTo(n) {
        state.zoom = n;
        draw();
      }

      // the frames whose name contains the search text, highlighted; the
      // bytes under them (each counted once) beside the box
      function highlight() {
        var q = search.value.trim().toLowerCase();
        var hit = function (n) { return q !== "" && n.name.toLowerCase().indexOf(q) >= 0; };
        Array.prototype.forEach.call(svg.querySelectorAll("g.frame"), function (g) {
          g.classList.toggle("match", hit(g.flameNode));
        });
        if (q === "") { found.textContent = ""; return; }
        var count = 0, bytes = 0;
        var base = state.zoom || { bytes: data.total, kids: views[state.view] };
        (function walk(nodes, under) {
          nodes.forEach(function (n) {
            var m = hit(n);
            if (m) count++;
            if (m && !under) bytes += n.bytes;
            walk(n.kids, under || m);
          });
        })(state.zoom ? [state.zoom] : base.kids, false);
        found.textContent = count + " frames match: " + human(bytes) + " (" + grouped(bytes) + " bytes, " +
          pct(bytes, base.bytes) + (state.zoom ? " of the zoomed frame)" : ")");
      }

      Array.prototype.forEach.call(document.getElementsByName("flame-view"), function (r) {
        r.checked = r.value === state.view;
        r.addEventListener("change", function () {
          state.view = r.value;
          state.zoom = null;
          draw();
        });
      });
      document.getElementById("flame-reset").addEventListener("click", function () { zoomTo(null); });
      document.addEventListener("keydown", function (e) { if (e.key === "Escape") zoomTo(null); });
      search.addEventListener("input", highlight);
      draw();
    })();
  JS
end
