// assay HTML report: renders the embedded run document on demand (no network, no library).
// Only visible case rows and the open case are in the DOM, so 10,000-case runs stay fast.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("assay-data").textContent);
  var ROW_H = 40;
  var root = document.getElementById("app");
  var state = { sort: null, desc: false, status: "", metric: "", cause: "", tool: "", judge: "", q: "" };
  var byKey = {};
  D.cases.forEach(function (c, i) { c._i = i; byKey[c.key] = c; });
  // A metric no case has a score for (token usage a recorded run did not report) is
  // named once, not drawn as a card and a column of dashes.
  var measured = D.metrics.filter(function (m) { return m.mean !== null || m.passed + m.failed + m.not_evaluated > 0; });
  var unmeasured = D.metrics.filter(function (m) { return measured.indexOf(m) < 0; }).map(function (m) { return m.name; });
  var metricNames = measured.map(function (m) { return m.name; });
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
  // Numbers for people: two decimals (seconds as ms / s / min), the full value in a tooltip.
  function isSeconds(name) { return /duration|latency|seconds/.test(name || ""); }
  function secs(v) {
    if (v === null || v === undefined) return "–";
    var a = Math.abs(v);
    if (a < 0.001) return a === 0 ? "0 s" : "<1 ms";
    if (a < 1) return Math.round(v * 1000) + " ms";
    if (a < 60) return v.toFixed(2) + " s";
    return Math.floor(v / 60) + " min " + Math.round(v % 60) + " s";
  }
  function human(v, name) { return isSeconds(name) ? secs(v) : num(v); }
  function numEl(tag, v, name, cls) {
    return el(tag, { class: cls, text: human(v, name), title: v === null || v === undefined ? null : String(v) });
  }
  function json(v) { return JSON.stringify(v); }
  function rounded(v) {
    return JSON.stringify(v, function (k, x) { return typeof x === "number" && !Number.isInteger(x) ? Number(x.toPrecision(4)) : x; }, 2);
  }
  function breakable(name) { return name.replace(/_/g, "_\u200b"); }
  function caseHref(key) { return "#case/" + encodeURIComponent(key); }
  function statusBadge(s) { return el("span", { class: "badge " + s, text: s }); }

  // -- overview ---------------------------------------------------------------------------
  function header() {
    var h = D.header;
    var facts = [
      ["run", (h.run_id || "not stored") + (h.name ? "  (" + h.name + ")" : "")],
      ["status", h.status], ["eval sets", h.eval_sets.join(", ")],
      ["agent", h.agent || "recorded responses"],
      ["criteria", (h.criteria_text || []).length ? el("ul", { class: "criteria" }, h.criteria_text.map(function (t) { return el("li", { text: t }); })) : null],
      ["judge models", h.judges.join(", ") || null],
      ["judge cost", h.judge_cost ? el("ul", { class: "criteria" }, h.judge_cost.map(function (t) { return el("li", { text: t }); })) : null],
      ["runs per case", String(h.runs_per_case)],
      ["started", h.started], ["finished", h.finished], ["assay", h.version], ["git commit", h.commit],
    ];
    var c = h.counts;
    var summary = c.PASSED + " passed, " + c.FAILED + " failed, " + c.NOT_EVALUATED + " not evaluated (" + D.cases.length + " case runs)";
    if (h.pass_at_k) summary += "; pass@" + h.pass_at_k[0] + " " + num(h.pass_at_k[1]) + ", pass^" + h.pass_at_k[0] + " " + num(h.pass_at_k[2]);
    return el("header", null, el("h1", { text: h.title }),
      el("p", { class: "summary", id: "summary", text: summary }),
      h.compare_previous ? el("p", null, el("a", { id: "compare-previous", href: h.compare_previous.href, text: "compare with the previous run of this eval set (" + h.compare_previous.label + ")" }))
        : "compare_previous" in h ? el("p", { class: "muted", id: "compare-previous", text: "The first run of this eval set: no earlier run to compare with." }) : null,
      el("dl", { class: "facts" }, facts.filter(function (f) { return f[1]; }).map(function (f) {
        return el("div", { class: "fact-" + f[0].replace(/ /g, "-") }, el("dt", { text: f[0] }), typeof f[1] === "string" ? el("dd", { text: f[1] }) : el("dd", null, f[1]));
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
      el("div", { class: "cards" }, measured.map(function (m) {
        var rate = m.pass_rate === null ? "–" : Math.round(m.pass_rate * 100) + "%";
        var counts = [[m.passed, "passed"], [m.failed, "failed"], [m.not_evaluated, "not evaluated"]].filter(function (c) { return c[0]; });
        return el("div", { class: "card" + (m.failed ? " has-failures" : "") + (m.informational ? " informational" : ""), "data-metric": m.name },
          el("h3", { text: m.name }),
          numEl("p", m.mean, m.name, "big"),
          m.ci95 ? el("p", { title: String(m.ci95) }, "95% interval [" + human(m.ci95[0], m.name) + ", " + human(m.ci95[1], m.name) + "]") : null,
          el("p", { text: m.informational ? "informational: shown, never pass/fail" : "threshold " + num(m.threshold) + " · pass rate " + rate }),
          counts.length ? el("p", { class: "muted", text: counts.map(function (c) { return c[0] + " " + c[1]; }).join(" · ") }) : null,
          m.unstable ? el("p", { class: "unstable-count", title: UNSTABLE_TITLE, text: "~ " + m.unstable + " unstable (judge samples straddle the threshold)" }) : null,
          histogram(m.histogram, "score distribution of " + m.name + " from " + human(m.range[0], m.name) + " to " + human(m.range[1], m.name), 220, 70),
          el("p", { class: "axis-label", text: human(m.range[0], m.name) + " … " + human(m.range[1], m.name) }));
      })),
      unmeasured.length ? el("p", { class: "muted", id: "unmeasured", text: "Not measured in this run: " + unmeasured.join(", ") }) : null);
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
      el("div", null, el("h3", { text: "Latency per case" }),
        lat.max === null ? el("p", { class: "muted", text: "no latency recorded" }) :
          el("div", null, histogram(lat.histogram, "latency distribution", 300, 70),
            el("p", { class: "axis-label", title: "max " + lat.max + " s, mean " + lat.mean + " s", text: "0 … " + secs(lat.max) + " · mean " + secs(lat.mean) }))));
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
    if (multiSet) cols.push({ key: "set", label: "eval set", w: "9rem" });
    cols.push({ key: "id", label: "case", w: "minmax(9rem, 14rem)" });
    if (multiRun) cols.push({ key: "run", label: "run", w: "3rem" });
    cols.push({ key: "status", label: "status", w: "7.5rem" });
    metricNames.forEach(function (m) { cols.push({ key: "m:" + m, label: breakable(m), w: "5.6rem", metric: m }); });
    cols.push({ key: "latency", label: "latency", w: "5.2rem" });
    cols.push({ key: "reason", label: "why", w: "minmax(18rem, 1fr)" });
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
      if (state.judge && !(c.unstable || []).length) return false;
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

  var UNSTABLE_TITLE = "unstable: the judge's samples straddle the threshold, another draw may flip the verdict";
  function unstableMark() { return el("span", { class: "unstable-mark", title: UNSTABLE_TITLE, text: " ~" }); }
  function splitText(details) {
    var s = details && details.sample_split;
    return s ? s.pass + " pass / " + s.fail + " fail" : "";
  }
  function rowNode(c) {
    var cells = COLS.map(function (col) {
      if (col.key === "id") return el("a", { href: caseHref(c.key), class: "cell case-link", title: c.id, text: c.id });
      if (col.key === "status") return el("span", { class: "cell" }, statusBadge(c.status));
      if (col.metric) {
        var v = c.scores[col.metric];
        if (v === undefined) return el("span", { class: "cell" });
        var cell = numEl("span", v, col.metric, "cell num" + (c.failed.indexOf(col.metric) >= 0 ? " fail" : ""));
        if ((c.unstable || []).indexOf(col.metric) >= 0) append(cell, unstableMark());
        return cell;
      }
      if (col.key === "latency") return c.latency === null ? el("span", { class: "cell" }) : el("span", { class: "cell num", title: String(c.latency), text: secs(c.latency) });
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
      D.cases.some(function (c) { return (c.unstable || []).length; }) ? select("judge-filter", "judge verdicts", ["unstable"], "judge") : null,
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
  // Details of a score (nulls are already left out): numbers rounded, the exact JSON in the tooltip.
  function details(value) {
    return el("pre", { class: "details", title: JSON.stringify(value), text: rounded(value) });
  }
  // -- the conversation timeline: user turn, tool calls, tool results, agent reply ------
  function toolError(response) {
    if (response && typeof response === "object" && !Array.isArray(response) && response.error !== undefined && response.error !== null) {
      return typeof response.error === "string" ? response.error : json(response.error);
    }
    return null;
  }
  function resultText(response) {
    if (response && typeof response === "object" && !Array.isArray(response) && Object.keys(response).length === 1 && response.output !== undefined) {
      response = response.output;
    }
    return typeof response === "string" ? response : json(response);
  }
  function timing(v) { return v === null || v === undefined ? null : el("span", { class: "timing", title: v + " s", text: secs(v) }); }
  function event(kind, who, body, seconds) {
    return el("li", { class: "event " + kind }, el("span", { class: "who", text: who }), timing(seconds), el("div", { class: "what" }, body));
  }
  function stepEvent(step) {
    var v = step.value || {};
    if (step.kind === "tool_call") return event("tool-call", "tool call", callText(v));
    if (step.kind === "tool_response") {
      var failed = toolError(v.response);
      return failed !== null
        ? event("tool-result tool-error", v.name + " failed", el("span", { class: "error", text: failed }), v.latency_s)
        : event("tool-result", v.name + " returned", el("code", { text: resultText(v.response) }), v.latency_s);
    }
    if (step.kind === "agent_message") return event("agent-message", (v.author || "agent") + " (intermediate)", v.text);
    if (step.kind === "agent_transfer") return event("transfer", "transfer", "to " + v.target_agent);
    if (step.kind === "variables_update") return event("variables", "variables updated", el("code", { text: json(v) }));
    if (step.kind === "retrieval") { var n = (v.chunks || []).length; return event("retrieval", "retrieval", n + (n === 1 ? " chunk" : " chunks")); }
    return event("other", step.kind, el("code", { text: json(v) }));
  }
  function turnTiming(a) {
    if (!a || a.latency === null || a.latency === undefined) return null;
    var parts = [secs(a.latency)];
    if (a.model_latency !== null && a.model_latency !== undefined) parts.push("model " + secs(a.model_latency));
    if (a.tool_latency !== null && a.tool_latency !== undefined) parts.push("tools " + secs(a.tool_latency));
    if (a.model_calls !== null && a.model_calls !== undefined) parts.push(a.model_calls + " model calls");
    if (a.usage) parts.push(a.usage.input_tokens + " tokens in, " + a.usage.output_tokens + " out");
    return el("span", { class: "timing", title: "latency " + a.latency + " s", text: parts.join(" · ") });
  }
  function timeline(inv) {
    var a = inv.actual, e = inv.expected;
    var user = (a || e || {}).user;
    var events = [event("user", "user", user || el("span", { class: "muted", text: "(no text)" }))];
    (a ? a.steps : []).forEach(function (s) { events.push(stepEvent(s)); });
    if (a && a.error) events.push(event("agent-error", "agent error", el("span", { class: "error", text: a.error })));
    events.push(event("agent-reply", "agent reply", a && a.response ? markedText(a.response, e && e.response) : el("span", { class: "muted", text: "no reply" }), a && a.latency));
    return el("ol", { class: "timeline" }, events);
  }
  function invocationNode(inv, i, many, unmeasured) {
    var a = inv.actual, e = inv.expected;
    // A metric the case did not measure (named once above) is not repeated per turn.
    var scores = Object.keys(inv.scores).filter(function (k) { var s = inv.scores[k]; return s.value !== null || (unmeasured.indexOf(k) < 0 && (s.explanation || s.details)); }).map(function (k) {
      var s = inv.scores[k];
      return el("li", null, el("strong", { text: k }), " ", numEl("span", s.value, k), s.explanation ? el("span", { class: "rationale", text: " — " + s.explanation }) : null, s.details ? details(s.details) : null);
    });
    return el("section", { class: "turn", id: "turn-" + (i + 1) },
      el("h3", null, "Turn " + (i + 1) + (inv.id ? " · " + inv.id : "") + " ", turnTiming(a)),
      timeline(inv),
      e ? el("h4", { text: "Against the reference" }) : null,
      e ? callsTable(inv.calls) : null,
      e ? el("div", { class: "responses" },
        el("div", { class: "bubble agent" }, el("span", { class: "who", text: "expected response" }), markedText(e.response, a && a.response)),
        el("div", { class: "bubble agent" }, el("span", { class: "who", text: "actual response" }), a ? markedText(a.response, e && e.response) : el("span", { class: "muted", text: "no reply" }))) : null,
      // One turn: its scores are the case's (the table above); several: each turn's own.
      many && scores.length ? el("ul", { class: "scores" }, scores) : null);
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
  // Only pages of the local `assay view` carry case_actions (the authoring pages).
  function caseActions(key) {
    var a = D.header.case_actions;
    if (!a) return null;
    var href = function (mode) { return a.href + encodeURIComponent(key) + "?mode=" + mode; };
    return el("p", { class: "case-actions" },
      el("a", { id: "bless", href: href("update"), text: "make this the expected behaviour" }), " · ",
      el("a", { id: "add-to-set", href: href("add"), text: a.recorded ? "new case from this conversation" : "add to eval set" }));
  }

  function casePage(key) {
    var c = byKey[key], d = D.details[key];
    root.textContent = "";
    if (!c) { root.appendChild(el("p", null, "No case " + key + ". ", el("a", { href: "#", text: "back to the run" }))); return; }
    var siblings = D.cases.filter(function (o) { return o.set === c.set && o.id === c.id && o.key !== c.key; });
    var shown = Object.keys(d.metrics).filter(function (n) { var m = d.metrics[n]; return m.score !== null || m.status; });
    var hidden = Object.keys(d.metrics).filter(function (n) { return shown.indexOf(n) < 0; });
    var metrics = shown.map(function (n) {
      var m = d.metrics[n];
      return el("tr", { class: m.status || "" }, el("td", { text: n }), numEl("td", m.score, n, "num"), el("td", { class: "num", text: m.threshold === null ? "" : num(m.threshold) }),
        el("td", null, m.status ? statusBadge(m.status) : "informational",
          m.details && m.details.unstable ? el("span", { class: "badge unstable", title: UNSTABLE_TITLE, text: "unstable " + splitText(m.details) }) : null),
        el("td", { class: "explanation" }, m.explanation || "", m.details ? details(m.details) : null));
    });
    var prev = D.cases[c._i - 1], next = D.cases[c._i + 1];
    var label = function (o) { return o.id + (multiRun ? " · run " + o.run : ""); };
    root.appendChild(el("article", { id: "case-page", "data-key": key },
      el("p", { class: "case-nav" }, el("a", { href: "#", id: "back", text: "← all cases" }),
        prev ? el("a", { href: caseHref(prev.key), id: "prev-case", title: "previous case", text: "‹ " + label(prev) }) : el("span", { class: "muted", text: "first case" }),
        el("span", { class: "muted", text: (c._i + 1) + " of " + D.cases.length }),
        next ? el("a", { href: caseHref(next.key), id: "next-case", title: "next case", text: label(next) + " ›" }) : el("span", { class: "muted", text: "last case" })),
      el("h1", null, c.id + (multiRun ? " · run " + c.run : ""), " ", statusBadge(c.status)),
      c.set ? el("p", { class: "muted", text: "eval set " + c.set }) : null,
      d.findings.length ? el("ul", { class: "findings" }, d.findings.map(function (f) {
        return el("li", { class: "finding " + f.cause.replace(/ /g, "-") }, el("span", { class: "mark", text: f.cause }), " " + f.text);
      })) : null,
      d.error ? el("p", { class: "error", text: (d.error_type ? d.error_type + ": " : "") + d.error }) : null,
      d.traceback ? el("pre", { class: "traceback", id: "traceback", text: d.traceback }) : null,
      caseActions(key),
      conversationNode(d.conversation),
      siblings.length ? el("p", null, "Other runs of this case: ", siblings.map(function (s) {
        return el("a", { href: caseHref(s.key), class: "chip " + s.status, text: "run " + s.run + " " + s.status });
      })) : null,
      el("table", { class: "metric-table" }, el("thead", null, el("tr", null, ["metric", "score", "threshold", "status", "explanation"].map(function (h) { return el("th", { text: h }); }))), el("tbody", null, metrics)),
      hidden.length ? el("p", { class: "muted", id: "not-measured", text: "Not measured: " + hidden.join(", ") }) : null,
      d.invocations.map(function (inv, i) { return invocationNode(inv, i, d.invocations.length > 1, hidden); })));
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
