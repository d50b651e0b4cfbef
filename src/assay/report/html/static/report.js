// assay HTML report: renders the embedded run document on demand (no network, no library).
// Only visible case rows and the open case are in the DOM, so 10,000-case runs stay fast.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("assay-data").textContent);
  var ROW_H = 30;
  var root = document.getElementById("app");
  var state = { sort: null, desc: false, status: "", metric: "", cause: "", tool: "", q: "" };
  var byKey = {};
  D.cases.forEach(function (c, i) { c._i = i; byKey[c.key] = c; });
  var metricNames = D.metrics.map(function (m) { return m.name; });
  var multiSet = new Set(D.cases.map(function (c) { return c.set; })).size > 1;
  var multiRun = D.header.runs_per_case > 1;

  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === null || v === undefined || v === false) return;
        if (k === "text") node.textContent = v;
        else if (k === "class") node.className = v;
        else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), v);
        else node.setAttribute(k, v);
      });
    }
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }
  function append(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) child.forEach(function (c) { append(node, c); });
    else node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
  function svg(tag, attrs) {
    var node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    return node;
  }
  function num(v, digits) {
    return v === null || v === undefined ? "–" : Number(v).toFixed(digits === undefined ? 2 : digits);
  }
  function json(v) { return JSON.stringify(v); }
  function caseHref(key) { return "#case/" + encodeURIComponent(key); }
  function statusBadge(s) { return el("span", { class: "badge " + s, text: s }); }

  // -- overview ---------------------------------------------------------------------------
  function header() {
    var h = D.header;
    var facts = [
      ["run", (h.run_id || "not stored") + (h.name ? "  (" + h.name + ")" : "")],
      ["status", h.status], ["eval sets", h.eval_sets.join(", ")],
      ["agent", h.agent || "recorded responses"],
      ["criteria", Object.keys(h.criteria).map(function (k) { return k + ": " + json(h.criteria[k]); }).join("; ") || metricNames.join(", ")],
      ["judge models", h.judges.join(", ") || null], ["runs per case", String(h.runs_per_case)],
      ["started", h.started], ["finished", h.finished], ["assay", h.version], ["git commit", h.commit],
    ];
    var c = h.counts;
    var summary = c.PASSED + " passed, " + c.FAILED + " failed, " + c.NOT_EVALUATED + " not evaluated (" + D.cases.length + " case runs)";
    if (h.pass_at_k) summary += "; pass@" + h.pass_at_k[0] + " " + num(h.pass_at_k[1]) + ", pass^" + h.pass_at_k[0] + " " + num(h.pass_at_k[2]);
    return el("header", null, el("h1", { text: h.title }),
      el("p", { class: "summary", id: "summary", text: summary }),
      el("dl", { class: "facts" }, facts.filter(function (f) { return f[1]; }).map(function (f) {
        return el("div", null, el("dt", { text: f[0] }), el("dd", { text: f[1] }));
      })));
  }

  function histogram(bins, label, width, height) {
    var box = svg("svg", { width: width, height: height, role: "img", "aria-label": label });
    var top = Math.max.apply(null, bins.concat([1]));
    var w = width / bins.length;
    bins.forEach(function (n, i) {
      var h = Math.round((n / top) * (height - 14));
      var r = svg("rect", { x: i * w + 1, y: height - 12 - h, width: w - 2, height: h, class: "bar" });
      var t = svg("title", {}); t.textContent = n + " cases"; r.appendChild(t);
      box.appendChild(r);
    });
    var axis = svg("line", { x1: 0, y1: height - 12, x2: width, y2: height - 12, class: "axis" });
    box.appendChild(axis);
    return box;
  }

  function metricCards() {
    return el("section", { id: "metrics" }, el("h2", { text: "Metrics" }),
      el("div", { class: "cards" }, D.metrics.map(function (m) {
        var rate = m.pass_rate === null ? "–" : Math.round(m.pass_rate * 100) + "%";
        return el("div", { class: "card" + (m.failed ? " has-failures" : "") },
          el("h3", { text: m.name }),
          el("p", { class: "big", text: num(m.mean) }),
          el("p", { text: "95% interval " + (m.ci95 ? "[" + num(m.ci95[0]) + ", " + num(m.ci95[1]) + "]" : "–") }),
          el("p", { text: m.informational ? "informational" : "threshold " + num(m.threshold) + " · pass rate " + rate }),
          el("p", { class: "muted", text: m.passed + " passed · " + m.failed + " failed · " + m.not_evaluated + " not evaluated" }),
          histogram(m.histogram, "score distribution of " + m.name + " from " + num(m.range[0]) + " to " + num(m.range[1]), 220, 70),
          el("p", { class: "axis-label", text: num(m.range[0]) + " … " + num(m.range[1]) }));
      })));
  }

  function charts() {
    var canvas = el("canvas", { width: 600, height: 24, id: "passfail", "aria-label": "pass/fail per case" });
    var ctx = canvas.getContext && canvas.getContext("2d");
    if (ctx) {
      var w = 600 / Math.max(D.cases.length, 1);
      var colors = { PASSED: "#2e7d32", FAILED: "#c62828", NOT_EVALUATED: "#f9a825" };
      D.cases.forEach(function (c, i) { ctx.fillStyle = colors[c.status]; ctx.fillRect(i * w, 0, Math.max(w - (w > 3 ? 1 : 0), 0.5), 24); });
    }
    var lat = D.latency;
    return el("section", { id: "charts", class: "charts" },
      el("div", null, el("h3", { text: "Pass/fail per case" }), canvas),
      el("div", null, el("h3", { text: "Latency (s)" }),
        lat.max === null ? el("p", { class: "muted", text: "no latency recorded" }) :
          el("div", null, histogram(lat.histogram, "latency distribution", 300, 70),
            el("p", { class: "axis-label", text: "0 … " + num(lat.max) + " s · mean " + num(lat.mean) + " s" }))));
  }

  function filterLink(label, filters) {
    var q = Object.keys(filters).map(function (k) { return k + "=" + encodeURIComponent(filters[k]); }).join("&");
    return el("a", { href: "#cases?" + q, class: "count-link", text: label });
  }

  function analysisSection() {
    var A = D.analysis;
    var causes = Object.keys(A.by_cause);
    var body = causes.length === 0 ? el("p", { class: "muted", text: "No failed case." }) : [
      el("ul", { class: "causes" }, causes.map(function (c) {
        return el("li", null, filterLink(A.by_cause[c].length + " " + c, { cause: c }));
      })),
      Object.keys(A.by_argument).length ? el("p", null, "Wrong arguments: ", Object.keys(A.by_argument).map(function (k) {
        return el("span", { class: "chip", text: k + " ×" + A.by_argument[k] });
      })) : null,
      Object.keys(A.by_tool).length ? el("table", { class: "tools" }, el("thead", null, el("tr", null, el("th", { text: "tool" }), el("th", { text: "causes" }))),
        el("tbody", null, Object.keys(A.by_tool).map(function (t) {
          return el("tr", null, el("td", null, filterLink(t, { tool: t })), el("td", null, Object.keys(A.by_tool[t]).map(function (c) {
            return filterLink(A.by_tool[t][c] + " " + c, { tool: t, cause: c });
          })));
        }))) : null,
    ];
    return el("section", { id: "analysis" }, el("h2", { text: "Failure analysis" }), body);
  }

  // -- case table (virtual) ---------------------------------------------------------------
  function columns() {
    var cols = [];
    if (multiSet) cols.push({ key: "set", label: "eval set", w: "10rem" });
    cols.push({ key: "id", label: "case", w: "16rem" });
    if (multiRun) cols.push({ key: "run", label: "run", w: "3rem" });
    cols.push({ key: "status", label: "status", w: "8.5rem" });
    metricNames.forEach(function (m) { cols.push({ key: "m:" + m, label: m, w: "7rem", metric: m }); });
    cols.push({ key: "latency", label: "latency", w: "5rem" });
    cols.push({ key: "reason", label: "why", w: "36rem" });
    return cols;
  }
  var COLS = columns();
  var template = COLS.map(function (c) { return c.w; }).join(" ");

  function visibleRows() {
    var q = state.q.toLowerCase();
    var rows = D.cases.filter(function (c) {
      if (state.status && c.status !== state.status) return false;
      if (state.metric && c.failed.indexOf(state.metric) < 0) return false;
      if (state.cause && c.causes.indexOf(state.cause) < 0) return false;
      if (state.tool && c.tools.indexOf(state.tool) < 0) return false;
      if (q && (c.id + " " + c.set + " " + (c.reason || "")).toLowerCase().indexOf(q) < 0) return false;
      return true;
    });
    if (state.sort) {
      var key = state.sort, sign = state.desc ? -1 : 1;
      var value = function (c) {
        if (key.slice(0, 2) === "m:") { var v = c.scores[key.slice(2)]; return v === null || v === undefined ? -Infinity : v; }
        var v2 = c[key]; return v2 === null || v2 === undefined ? "" : v2;
      };
      rows.sort(function (a, b) { var x = value(a), y = value(b); return (x < y ? -1 : x > y ? 1 : a._i - b._i) * sign; });
    }
    return rows;
  }

  function rowNode(c) {
    var cells = COLS.map(function (col) {
      if (col.key === "id") return el("a", { href: caseHref(c.key), class: "cell case-link", text: c.id });
      if (col.key === "status") return el("span", { class: "cell" }, statusBadge(c.status));
      if (col.metric) {
        var v = c.scores[col.metric];
        return el("span", { class: "cell num" + (c.failed.indexOf(col.metric) >= 0 ? " fail" : ""), text: v === undefined ? "" : num(v) });
      }
      if (col.key === "latency") return el("span", { class: "cell num", text: c.latency === null ? "" : num(c.latency) });
      if (col.key === "reason") return el("span", { class: "cell reason", title: c.reason || "", text: c.reason || "" });
      return el("span", { class: "cell", text: String(c[col.key]) });
    });
    var row = el("div", { class: "row " + c.status, role: "row", "data-key": c.key }, cells);
    row.style.gridTemplateColumns = template;
    return row;
  }

  function caseTable() {
    var head = el("div", { class: "row head", role: "row" }, COLS.map(function (col) {
      var mark = state.sort === col.key ? (state.desc ? " ▼" : " ▲") : "";
      return el("button", { class: "cell sort", "data-sort": col.key, text: col.label + mark, onclick: function () {
        if (state.sort === col.key) state.desc = !state.desc; else { state.sort = col.key; state.desc = false; }
        renderTable();
      } });
    }));
    head.style.gridTemplateColumns = template;
    var select = function (id, label, options, key) {
      return el("label", null, label + " ", el("select", { id: id, onchange: function (e) { state[key] = e.target.value; renderTable(); } },
        [el("option", { value: "", text: "all" })].concat(options.map(function (o) {
          var opt = el("option", { value: o, text: o }); if (state[key] === o) opt.selected = true; return opt;
        }))));
    };
    var search = el("input", { type: "search", id: "search", placeholder: "search cases and reasons", value: state.q,
      oninput: function (e) { state.q = e.target.value; renderTable(); } });
    var controls = el("div", { class: "controls" }, search,
      select("status-filter", "status", ["PASSED", "FAILED", "NOT_EVALUATED"], "status"),
      select("metric-filter", "failed metric", metricNames, "metric"),
      select("cause-filter", "cause", Object.keys(D.analysis.by_cause), "cause"),
      select("tool-filter", "tool", Object.keys(D.analysis.by_tool), "tool"),
      el("span", { id: "row-count", class: "muted" }));
    var scroller = el("div", { class: "scroller", id: "case-scroller", role: "table" }, head, el("div", { class: "body" }));
    scroller.addEventListener("scroll", function () { requestAnimationFrame(paintRows); });
    return el("section", { id: "cases" }, el("h2", { text: "Cases" }), controls, scroller);
  }

  var current = [];
  function renderTable() {
    current = visibleRows();
    document.getElementById("row-count").textContent = current.length + " of " + D.cases.length + " case runs";
    var scroller = document.getElementById("case-scroller");
    var old = scroller.querySelector(".row.head");
    var fresh = caseTable().querySelector(".row.head");
    scroller.replaceChild(fresh, old);
    var body = scroller.querySelector(".body");
    body.style.height = current.length * ROW_H + "px";
    body._painted = null;
    paintRows();
  }
  function paintRows() {
    var scroller = document.getElementById("case-scroller");
    if (!scroller) return;
    var body = scroller.querySelector(".body");
    var first = Math.max(0, Math.floor(scroller.scrollTop / ROW_H) - 10);
    var last = Math.min(current.length, first + Math.ceil(scroller.clientHeight / ROW_H) + 20);
    var stamp = first + ":" + last;
    if (body._painted === stamp) return;
    body._painted = stamp;
    body.textContent = "";
    for (var i = first; i < last; i++) {
      var row = rowNode(current[i]);
      row.style.top = i * ROW_H + "px";
      body.appendChild(row);
    }
  }

  function overview(filters) {
    Object.assign(state, { status: "", metric: "", cause: "", tool: "", q: "" }, filters || {});
    root.textContent = "";
    root.appendChild(header());
    root.appendChild(metricCards());
    root.appendChild(charts());
    root.appendChild(analysisSection());
    root.appendChild(caseTable());
    renderTable();
  }

  // -- case page --------------------------------------------------------------------------
  function words(text) { return (text || "").split(/(\s+|[.,;:!?()"'])/); }
  function markedText(text, other) {
    var vocab = new Set(words(other).map(function (w) { return w.toLowerCase(); }).filter(function (w) { return /\w/.test(w); }));
    return words(text).map(function (w) {
      return /\w/.test(w) && vocab.has(w.toLowerCase()) ? el("mark", { text: w }) : document.createTextNode(w);
    });
  }
  function callText(call, wrong) {
    if (!call) return el("span", { class: "muted", text: "—" });
    var args = Object.keys(call.args || {}).map(function (k, i) {
      var bad = wrong && wrong.indexOf(k) >= 0;
      return [i ? ", " : "", el("span", { class: bad ? "arg wrong-arg" : "arg", text: k + "=" + json(call.args[k]) })];
    });
    return el("code", null, call.name + "(", [].concat.apply([], args), ")");
  }
  var MARK_LABEL = { match: "match", args: "wrong argument", tool: "wrong tool", missing: "missing call", extra: "extra call" };
  function callsTable(calls) {
    if (!calls) return el("p", { class: "muted", text: "no reference turn to compare tool calls with" });
    if (!calls.length) return el("p", { class: "muted", text: "no tool call expected or made" });
    return el("table", { class: "calls" }, el("thead", null, el("tr", null, el("th", { text: "expected" }), el("th", { text: "actual" }), el("th", { text: "" }))),
      el("tbody", null, calls.map(function (r) {
        var wrongArgs = (r.wrong_args || []).map(function (a) {
          return el("div", { class: "arg-diff", text: a + ": expected " + json((r.expected.args || {})[a]) + ", got " + json((r.actual.args || {})[a]) });
        });
        return el("tr", { class: "call " + r.mark },
          el("td", null, callText(r.expected, r.wrong_args)), el("td", null, callText(r.actual, r.wrong_args)),
          el("td", null, el("span", { class: "mark " + r.mark, text: MARK_LABEL[r.mark] }), r.out_of_order ? el("span", { class: "mark order", text: "out of order" }) : null, wrongArgs));
      })));
  }
  function details(value) {
    return el("pre", { class: "details", text: JSON.stringify(value, null, 2) });
  }
  function stepsList(turn) {
    if (!turn || !turn.steps.length) return null;
    return el("details", null, el("summary", { text: turn.steps.length + " steps" }), el("ol", { class: "steps" }, turn.steps.map(function (s) {
      return el("li", null, el("span", { class: "step-kind", text: s.kind }), " ", el("code", { text: json(s.value) }));
    })));
  }
  function invocationNode(inv, i) {
    var a = inv.actual, e = inv.expected;
    var scores = Object.keys(inv.scores).map(function (k) {
      var s = inv.scores[k];
      return el("li", null, el("strong", { text: k }), " " + num(s.value), s.explanation ? el("span", { class: "rationale", text: " — " + s.explanation }) : null, s.details ? details(s.details) : null);
    });
    return el("section", { class: "turn", id: "turn-" + (i + 1) },
      el("h3", { text: "Turn " + (i + 1) + (inv.id ? " · " + inv.id : "") }),
      el("div", { class: "bubble user" }, el("span", { class: "who", text: "user" }), (a || e || {}).user || ""),
      callsTable(inv.calls),
      el("div", { class: "responses" },
        el("div", { class: "bubble agent" }, el("span", { class: "who", text: "expected response" }), e ? markedText(e.response, a && a.response) : el("span", { class: "muted", text: "none" })),
        el("div", { class: "bubble agent" }, el("span", { class: "who", text: "actual response" }), a ? markedText(a.response, e && e.response) : el("span", { class: "muted", text: "no reply" }))),
      a && a.error ? el("p", { class: "error", text: a.error }) : null,
      stepsList(a),
      scores.length ? el("ul", { class: "scores" }, scores) : null);
  }
  var ENDINGS = {
    stop_signal: "the simulated user ended the conversation (goal reached or given up)",
    max_turns: "it reached the turn limit",
    error: "it failed",
    timeout: "it timed out"
  };
  function conversationNode(conv) {
    if (!conv) return null;
    var why = ENDINGS[conv.stopped_by] || conv.stopped_by;
    var facts = [];
    if (conv.persona) facts.push("persona " + conv.persona);
    if (conv.user_model) facts.push("simulated by " + conv.user_model);
    if (conv.initiator === "AGENT") facts.push("the agent spoke first");
    if (conv.user_turns != null) facts.push(conv.user_turns + (conv.max_turns != null ? " of at most " + conv.max_turns : "") + " user turns");
    return el("section", { class: "conversation", id: "conversation" },
      el("h2", { text: "Scenario conversation" }),
      el("p", { class: "ended" }, el("strong", { text: "Ended: " }), why + " (" + conv.stopped_by + ")."),
      facts.length ? el("p", { class: "muted", text: facts.join(" · ") }) : null,
      conv.stop_message ? el("p", null, el("span", { class: "who", text: "the user's last message" }), " " + conv.stop_message) : null);
  }
  function casePage(key) {
    var c = byKey[key], d = D.details[key];
    root.textContent = "";
    if (!c) { root.appendChild(el("p", null, "No case " + key + ". ", el("a", { href: "#", text: "back to the run" }))); return; }
    var siblings = D.cases.filter(function (o) { return o.set === c.set && o.id === c.id && o.key !== c.key; });
    var metrics = Object.keys(d.metrics).map(function (n) {
      var m = d.metrics[n];
      return el("tr", { class: m.status || "" }, el("td", { text: n }), el("td", { class: "num", text: num(m.score) }), el("td", { class: "num", text: num(m.threshold) }),
        el("td", null, m.status ? statusBadge(m.status) : "informational"), el("td", null, m.explanation || "", m.details ? details(m.details) : null));
    });
    root.appendChild(el("article", { id: "case-page", "data-key": key },
      el("p", null, el("a", { href: "#", id: "back", text: "← all cases" })),
      el("h1", null, c.id + (multiRun ? " · run " + c.run : ""), " ", statusBadge(c.status)),
      c.set ? el("p", { class: "muted", text: "eval set " + c.set }) : null,
      d.findings.length ? el("ul", { class: "findings" }, d.findings.map(function (f) {
        return el("li", { class: "finding " + f.cause.replace(/ /g, "-") }, el("span", { class: "mark", text: f.cause }), " " + f.text);
      })) : null,
      d.error ? el("p", { class: "error", text: (d.error_type ? d.error_type + ": " : "") + d.error }) : null,
      d.traceback ? el("pre", { class: "traceback", id: "traceback", text: d.traceback }) : null,
      conversationNode(d.conversation),
      siblings.length ? el("p", null, "Other runs of this case: ", siblings.map(function (s) {
        return el("a", { href: caseHref(s.key), class: "chip " + s.status, text: "run " + s.run + " " + s.status });
      })) : null,
      el("table", { class: "metric-table" }, el("thead", null, el("tr", null, ["metric", "score", "threshold", "status", "explanation"].map(function (h) { return el("th", { text: h }); }))), el("tbody", null, metrics)),
      d.invocations.map(invocationNode)));
    window.scrollTo(0, 0);
  }

  function route() {
    var hash = decodeURIComponent(location.hash.slice(1));
    if (hash.slice(0, 5) === "case/") return casePage(hash.slice(5));
    var filters = {};
    if (hash.slice(0, 6) === "cases?") {
      location.hash.slice(7).split("&").forEach(function (pair) {
        var kv = pair.split("="); filters[kv[0]] = decodeURIComponent(kv[1] || "");
      });
    }
    overview(filters);
    if (hash.slice(0, 5) === "cases") document.getElementById("cases").scrollIntoView();
  }
  window.addEventListener("hashchange", route);
  route();
})();
