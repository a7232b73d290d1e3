"use strict";
(() => {
  const DATA = JSON.parse(document.getElementById("specengine-data").textContent);
  const CASES = DATA.cases, DER = DATA.derived;
  const STATUSES = ["passed", "failed", "error", "skipped"];
  const STATUS_LABEL = { passed: "Passed", failed: "Failed", error: "Error", skipped: "Skipped" };
  const STATUS_RANK = { failed: 0, error: 1, skipped: 2, passed: 3 };
  const CHANGES = ["regressed", "fixed", "new", "changed"];
  const CHANGE_LABEL = { regressed: "regressed", fixed: "fixed", new: "new", changed: "changed" };
  // failed and errored cases first, each group in plan order (the order before any column sort)
  const FIRST = (c) => (c.status === "failed" ? 0 : c.status === "error" ? 1 : 2);
  const ANSI = /\x1b\[[0-9;?]*[ -\/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g;
  const $ = (id) => document.getElementById(id);

  const state = { status: "all", change: "", suite: "", label: "", q: "", deep: false, sort: "", dir: 1, page: 0, size: 100, open: -1, trial: -1 };
  let view = [];
  let counts = {};
  const hay = [], deepHay = [];

  function clean(s) { return s == null ? "" : String(s).replace(ANSI, ""); }
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    if (attrs) for (const [k, v] of Object.entries(attrs)) {
      if (v == null || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "text") el.textContent = clean(v);
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
    add(el, kids);
    return el;
  }
  function add(el, kid) {
    if (kid == null || kid === false) return;
    if (Array.isArray(kid)) { for (const k of kid) add(el, k); return; }
    el.appendChild(kid instanceof Node ? kid : document.createTextNode(clean(kid)));
  }
  function pill(status) { return h("span", { class: "pill " + status, text: STATUS_LABEL[status] || status }); }
  function fmtDur(s) {
    if (s == null || isNaN(s)) return "–";
    if (s < 10) return s.toFixed(2) + " s";
    if (s < 60) return s.toFixed(1) + " s";
    const m = Math.floor(s / 60), r = Math.round(s % 60);
    return m < 60 ? m + " m " + String(r).padStart(2, "0") + " s" : Math.floor(m / 60) + " h " + String(m % 60).padStart(2, "0") + " m";
  }
  function fmtScore(x) { return typeof x === "number" ? x.toFixed(2) : "–"; }
  function fmtTokens(n) { return n.toLocaleString("en-US") + " tokens"; }
  function fmtThreshold(t) {
    if (!t || typeof t !== "object") return "";
    const ops = [["gte", "≥"], ["gt", ">"], ["lte", "≤"], ["lt", "<"]];
    return ops.filter(([k]) => typeof t[k] === "number").map(([k, s]) => s + " " + t[k]).join(" and ");
  }
  function pretty(v) {
    if (typeof v === "string") { try { return JSON.stringify(JSON.parse(v), null, 2); } catch (e) { return v; } }
    try { return JSON.stringify(v, null, 2); } catch (e) { return String(v); }
  }
  function text(v) { return typeof v === "string" ? v : v == null ? "" : pretty(v); }
  function spec(c) { return c.spec || String(c.id).split("::")[0]; }
  function where(c, line) { return line ? spec(c) + ":" + line : spec(c); }

  function haystack(i) {
    if (hay[i] === undefined) {
      const c = CASES[i], d = DER[i];
      const parts = [c.id, d.suite, d.reason, (c.labels || []).join(" ")];
      for (const t of c.trials || []) for (const k of t.checks || []) {
        if (k.status === "failed" || k.status === "error") parts.push(k.name, k.reason, k.rationale);
      }
      hay[i] = clean(parts.filter(Boolean).join("\n")).toLowerCase();
    }
    if (!state.deep) return hay[i];
    if (deepHay[i] === undefined) {
      const parts = [];
      for (const t of CASES[i].trials || []) for (const m of t.transcript || []) {
        if (!m) continue;
        parts.push(text(m.content));
        for (const call of m.tool_calls || []) parts.push(call.name, pretty(call.args));
      }
      deepHay[i] = hay[i] + "\n" + clean(parts.join("\n")).toLowerCase();
    }
    return deepHay[i];
  }

  function sortKey(i) {
    const c = CASES[i], d = DER[i];
    switch (state.sort) {
      case "status": return STATUS_RANK[c.status] ?? 9;
      case "id": return String(c.id).toLowerCase();
      case "suite": return String(d.suite).toLowerCase();
      case "duration": return d.duration || 0;
      case "trials": return c.n_trials ? (c.passed_trials || 0) / c.n_trials : 2;
      default: return i;
    }
  }

  function recompute() {
    const terms = state.q.trim().toLowerCase().split(/\s+/).filter(Boolean);
    view = [];
    counts = { all: 0, passed: 0, failed: 0, error: 0, skipped: 0 };
    for (let i = 0; i < CASES.length; i++) {
      const c = CASES[i];
      if (state.suite && DER[i].suite !== state.suite) continue;
      if (state.label && !(c.labels || []).includes(state.label)) continue;
      if (terms.length) { const s = haystack(i); if (!terms.every((t) => s.includes(t))) continue; }
      counts.all++;
      counts[c.status] = (counts[c.status] || 0) + 1;
      if (state.status !== "all" && c.status !== state.status) continue;
      if (state.change && DER[i].change !== state.change) continue;
      view.push(i);
    }
    if (!state.sort) view.sort((a, b) => FIRST(CASES[a]) - FIRST(CASES[b]) || a - b);
    else {
      const keys = new Map(view.map((i) => [i, sortKey(i)]));
      view.sort((a, b) => {
        const x = keys.get(a), y = keys.get(b);
        return (x < y ? -1 : x > y ? 1 : a - b) * (x === y ? 1 : state.dir);
      });
    }
    const pages = Math.max(1, Math.ceil(view.length / state.size));
    if (state.page >= pages) state.page = pages - 1;
  }

  function renderChips() {
    const box = $("status-filters");
    box.replaceChildren();
    for (const b of document.querySelectorAll("#changes button[data-change]")) {
      b.setAttribute("aria-pressed", String(state.change === b.dataset.change));
    }
    for (const s of ["all", ...STATUSES]) {
      const label = s === "all" ? "All" : STATUS_LABEL[s];
      box.appendChild(h("button", {
        class: "chip " + s, type: "button", "data-status": s, "aria-pressed": String(state.status === s),
        onclick: () => { state.status = s; state.page = 0; update(); },
      }, label, h("span", { class: "n", text: String(counts[s] || 0) })));
    }
  }

  function renderTable() {
    const tbody = $("rows");
    const start = state.page * state.size;
    const frag = document.createDocumentFragment();
    for (const i of view.slice(start, start + state.size)) frag.appendChild(row(i));
    tbody.replaceChildren(frag);
    $("empty").hidden = view.length > 0;
    for (const th of document.querySelectorAll("th[data-sort]")) {
      th.classList.toggle("sorted-asc", th.dataset.sort === state.sort && state.dir === 1);
      th.classList.toggle("sorted-desc", th.dataset.sort === state.sort && state.dir === -1);
    }
    renderPager();
  }

  function row(i) {
    const c = CASES[i], d = DER[i];
    const trials = c.n_trials ? (c.passed_trials ?? 0) + "/" + c.n_trials : "–";
    const doubt = (d.uncertain || []).length
      ? h("span", { class: "tag uncertain", text: "uncertain", title: "the judge's samples disagreed: " + d.uncertain.join("; ") })
      : null;
    return h("tr", { class: "row s-" + c.status + (state.open === i ? " open" : ""), tabindex: "0", "data-index": i,
                     "data-id": c.id, "data-change": d.change || null },
      h("td", null, pill(c.status), doubt ? " " : null, doubt, marks(d)),
      h("td", { title: c.id }, h("div", { class: "title", text: d.title }), h("div", { class: "sub mono", text: d.where })),
      h("td", { text: d.suite, title: d.suite }),
      h("td", null, (c.labels || []).map((l) => h("span", { class: "label", text: l }))),
      h("td", { class: "num", text: trials }),
      h("td", { class: "num", text: fmtDur(d.duration) }),
      h("td", { class: "reason", title: clean(d.reason) }, d.reason,
        d.review ? h("div", { class: "sub reviewed", text: d.review }) : null));
  }

  function marks(d) {
    const out = [];
    if (d.skipped) out.push(h("span", { class: "tag skipped-gates", text: d.skipped_tag, title: d.skipped + ": the case passed without them" }));
    if (d.change) out.push(h("span", { class: "tag change " + d.change, text: CHANGE_LABEL[d.change] || d.change, title: "since the baseline" }));
    return out;
  }

  function renderPager() {
    const nav = $("pager");
    const pages = Math.max(1, Math.ceil(view.length / state.size));
    const start = view.length ? state.page * state.size + 1 : 0;
    const end = Math.min(view.length, (state.page + 1) * state.size);
    const size = h("select", { "aria-label": "rows per page", onchange: (e) => { state.size = +e.target.value; state.page = 0; update(); } },
      [50, 100, 250, 1000].map((n) => h("option", { value: n, selected: n === state.size, text: n + " per page" })));
    nav.replaceChildren(
      h("span", { text: start + "–" + end + " of " + view.length }),
      size,
      h("button", { type: "button", disabled: state.page === 0, onclick: () => { state.page--; renderTable(); window.scrollTo(0, 0); } }, "‹ Prev"),
      h("span", { text: "page " + (state.page + 1) + " of " + pages }),
      h("button", { type: "button", disabled: state.page >= pages - 1, onclick: () => { state.page++; renderTable(); window.scrollTo(0, 0); } }, "Next ›"));
  }

  function update() { recompute(); renderChips(); renderTable(); saveHash(); }

  // ---- case details -------------------------------------------------------------------------
  function openCase(i, trial) {
    const c = CASES[i];
    if (!c) return;
    state.open = i;
    const trials = c.trials || [];
    if (trial == null || trial < 0 || trial >= trials.length) {
      trial = trials.findIndex((t) => t.status !== "passed");
      if (trial < 0) trial = 0;
    }
    state.trial = trial;
    const drawer = $("drawer");
    drawer.replaceChildren(drawerBar(i), h("div", { class: "body" }, caseView(c, DER[i], trial)));
    drawer.hidden = false;
    $("scrim").hidden = false;
    drawer.scrollTop = 0;
    drawer.focus();
    for (const tr of document.querySelectorAll("tr.row.open")) tr.classList.remove("open");
    const tr = document.querySelector('tr.row[data-index="' + i + '"]');
    if (tr) tr.classList.add("open");
    saveHash();
  }
  function closeCase() {
    if (state.open < 0) return;
    const last = state.open;
    state.open = -1;
    $("drawer").hidden = true;
    $("scrim").hidden = true;
    for (const tr of document.querySelectorAll("tr.row.open")) tr.classList.remove("open");
    const tr = document.querySelector('tr.row[data-index="' + last + '"]');
    if (tr) tr.focus();
    saveHash();
  }
  function step(delta) {
    const at = view.indexOf(state.open);
    const next = view[at + delta];
    if (next === undefined) return;
    const page = Math.floor((at + delta) / state.size);
    if (page !== state.page) { state.page = page; renderTable(); }
    openCase(next);
  }
  function drawerBar(i) {
    const at = view.indexOf(i);
    return h("div", { class: "bar-top" },
      h("button", { type: "button", disabled: at <= 0, onclick: () => step(-1), title: "previous case (k)" }, "‹ Prev"),
      h("button", { type: "button", disabled: at < 0 || at >= view.length - 1, onclick: () => step(1), title: "next case (j)" }, "Next ›"),
      h("span", { class: "pos", text: at >= 0 ? (at + 1) + " of " + view.length : "" }),
      h("span", { class: "spacer" }),
      h("button", { type: "button", class: "close", onclick: closeCase, title: "close (Esc)", "aria-label": "close" }, "✕ Close"));
  }

  function caseView(c, d, trialIndex) {
    const out = [];
    out.push(h("h2", null, pill(c.status), h("span", { text: d.title })));
    out.push(h("div", { class: "id mono", text: c.id }));
    const facts = [["Spec", where(c, c.line)], ["Suite", d.suite]];
    if ((c.labels || []).length) facts.push(["Labels", c.labels.map((l) => h("span", { class: "label", text: l }))]);
    if (c.row != null) facts.push(["Row", typeof c.row === "object" ? pretty(c.row) : String(c.row)]);
    if (c.endpoint) facts.push(["Endpoint", String(c.endpoint)]);
    if (c.n_trials) {
      let t = (c.passed_trials ?? 0) + " of " + c.n_trials + " passed";
      if (c.n_trials > 1) t += " · pass@k " + (c.pass_at_k ? "yes" : "no") + " · pass^k " + (c.pass_hat_k ? "yes" : "no");
      facts.push(["Trials", t]);
    }
    const sim = c.simulation;
    if (sim) {
      facts.push(["Simulated user", text(sim.user)]);
      facts.push(["Goal", text(sim.goal)]);
      facts.push(["Stopped", stopText(sim)]);
    }
    facts.push(["Time", fmtDur(d.duration)]);
    if (d.review) facts.push(["Review", d.review]);
    if (d.tokens) facts.push(["Tokens", d.tokens]);
    if (d.cost) facts.push(["Cost", d.cost]);
    if (c.cell) facts.push(["Cell", c.cell]);
    if (d.skipped) facts.push(["Not checked", d.skipped + ": the case passed without them"]);
    if (d.change) facts.push(["Since baseline", CHANGE_LABEL[d.change] || d.change]);
    out.push(h("dl", { class: "facts" }, facts.map(([k, v]) => [h("dt", { text: k }), h("dd", null, v)])));
    if (c.status === "skipped") out.push(h("p", { class: "errorbox", text: "Skipped: " + d.reason }));
    else if (c.error) out.push(h("div", { class: "errorbox", text: errText(c.error) }));

    const trials = c.trials || [];
    if (trials.length > 1 && (c.checks || []).length) {
      out.push(h("h3", { text: "Checks across " + trials.length + " trials" }));
      out.push(h("table", { class: "agg" },
        h("thead", null, h("tr", null, ["Status", "Check", "Mean score", "Spread", "Where"].map((x) => h("th", { text: x })))),
        h("tbody", null, c.checks.map((k) => h("tr", null,
          h("td", null, pill(k.status), k.uncertain ? [" ", uncertainTag()] : null),
          h("td", { text: k.name + (k.gate === false ? " (soft)" : "") }),
          h("td", { class: "num", text: fmtScore(k.score) }),
          h("td", { class: "num", text: typeof k.spread === "number" ? fmtScore(k.spread) : "" }),
          h("td", { class: "mono", text: where(c, k.line) }))))));
    }
    if (!trials.length) {
      if (c.status !== "skipped") out.push(h("p", { class: "empty", text: "No trials recorded." }));
      return out;
    }
    if (trials.length > 1) {
      out.push(h("h3", { text: "Trials" }));
      out.push(h("div", { class: "tabs", role: "tablist" }, trials.map((t, j) => h("button", {
        type: "button", role: "tab", "aria-selected": String(j === trialIndex),
        onclick: () => openCase(state.open, j),
      }, "Trial " + (j + 1) + " ", pill(t.status)))));
    }
    out.push(trialView(c, trials[trialIndex], trialIndex, trials.length));
    return out;
  }

  function stopText(sim) {
    const turns = sim.turns + " simulated turn" + (sim.turns === 1 ? "" : "s");
    return sim.stop_reason + " after " + turns + (sim.simulator ? " (simulator " + sim.simulator + ")" : "");
  }

  function errText(e) {
    if (!e) return "";
    if (typeof e === "string") return e;
    return (e.type ? e.type + ": " : "") + (e.message || "");
  }

  function trialView(c, t, j, n) {
    const box = h("section", { class: "trial" });
    const info = [t.status ? pill(t.status) : null, " "];
    if (typeof t.latency_s === "number") info.push("latency " + fmtDur(t.latency_s));
    if (typeof t.ttft_s === "number") info.push(" · first token " + fmtDur(t.ttft_s));
    if (t.attempts > 1) info.push(" · " + t.attempts + " attempts");
    if (t.usage && typeof t.usage.total_tokens === "number") info.push(" · " + fmtTokens(t.usage.total_tokens));
    if (n > 1) for (const sim of t.simulations || []) info.push(" · stopped: " + stopText(sim));
    if (n > 1) box.appendChild(h("div", { class: "trialinfo" }, info));
    if (t.error && !(n === 1 && errText(t.error) === errText(c.error))) box.appendChild(h("div", { class: "errorbox", text: errText(t.error) }));
    const checks = t.checks || [];
    box.appendChild(h("h3", { text: "Checks (" + checks.length + ")" }));
    if (!checks.length) box.appendChild(h("p", { class: "empty", text: t.error ? "Checks did not run: the trial errored." : "No checks." }));
    const order = { failed: 0, error: 1, skipped: 2, passed: 3 };
    const sorted = checks.map((k, i) => [k, i]).sort((a, b) => ((order[a[0].status] ?? 4) - (order[b[0].status] ?? 4)) || a[1] - b[1]);
    for (const [k] of sorted) box.appendChild(checkView(c, k));
    box.appendChild(h("h3", { text: "Transcript" }));
    box.appendChild(transcriptView(t.transcript || []));
    return box;
  }

  function checkView(c, k) {
    const info = [];
    const graded = k.matcher === "judge" || (typeof k.score === "number" && k.score !== 0 && k.score !== 1);
    if (graded && typeof k.score === "number") info.push(h("span", { text: "score " + fmtScore(k.score) + (k.threshold ? " (needs " + fmtThreshold(k.threshold) + ")" : "") }));
    info.push(h("span", { class: "mono", text: where(c, k.line) }));
    if (k.turn) info.push(h("a", { class: "turnlink", href: "#", onclick: (e) => { e.preventDefault(); flashTurn(k.turn); }, text: "turn " + k.turn }));
    if (k.matcher) info.push(h("span", { text: k.matcher }));
    if (k.judge && typeof k.judge === "object") info.push(h("span", {
      class: "mono", text: "judged by " + (k.judge.name ? k.judge.name + " · " : "") + k.judge.model,
      title: "prompt " + k.judge.prompt_hash + " · autoevals " + k.judge.autoevals }));
    return h("div", { class: "check " + k.status },
      h("div", { class: "head" }, pill(k.status), h("span", { class: "name", text: k.name || k.matcher || "check" }),
        h("span", { class: "tag", text: k.gate === false ? "soft" : "gate" }),
        k.cached ? h("span", { class: "tag", text: "cached", title: "judge score reused from the cache" }) : null,
        k.uncertain ? uncertainTag() : null),
      h("div", { class: "info" }, info),
      k.reason ? h("div", { class: "reason", text: k.reason }) : null,
      samplesView(k),
      k.expected != null || k.got != null ? h("div", { class: "diff" },
        h("div", null, h("div", { class: "dlabel", text: "expected" }), h("pre", { text: text(k.expected) })),
        h("div", null, h("div", { class: "dlabel", text: "got" }), h("pre", { text: text(k.got) }))) : null,
      k.rationale ? h("div", { class: "rationale" }, h("strong", { text: "Judge rationale: " }), k.rationale) : null);
  }

  function uncertainTag() {
    return h("span", { class: "tag uncertain", text: "uncertain", title: "the judge's samples disagreed" });
  }
  function samplesView(k) {
    if (!Array.isArray(k.samples) || !k.samples.length) return null;
    const head = k.samples.length + " samples" + (typeof k.spread === "number" ? " · spread " + fmtScore(k.spread) : "");
    return h("details", { class: "samples", open: k.uncertain === true },
      h("summary", { text: head + (k.uncertain ? " · uncertain" : "") }),
      h("ol", null, k.samples.map((sm) => h("li", null,
        h("strong", { text: sm.error ? "error" : (sm.choice || "") + " (" + fmtScore(sm.score) + ")" }),
        sm.error || sm.rationale ? ": " + (sm.error || sm.rationale) : null))));
  }

  function transcriptView(messages) {
    const box = h("div", { class: "transcript" });
    if (!messages.length) { box.appendChild(h("p", { class: "empty", text: "No messages." })); return box; }
    let turn = 0;
    for (const m of messages) {
      if (m && m.role === "reset") { box.appendChild(h("div", { class: "reset", text: "reset: a new conversation starts" })); continue; }
      const role = (m && m.role) || "message";
      const simulated = role === "user" && m.simulated;
      const head = h("div", { class: "role" }, h("span", { text: simulated ? "user · simulated" : role }));
      const attrs = { class: "msg " + role + (simulated ? " simulated" : "") };
      if (simulated) attrs.title = m.simulator ? "written by the simulator " + m.simulator : "the simulated user's first_message";
      if (role === "user") { turn++; attrs["data-turn"] = turn; head.appendChild(h("span", { text: "turn " + turn })); }
      if (m && m.usage && typeof m.usage.total_tokens === "number") head.appendChild(h("span", { class: "tokens", text: fmtTokens(m.usage.total_tokens) }));
      const content = text(m && m.content);
      const calls = (m && m.tool_calls) || [];
      box.appendChild(h("div", attrs, head,
        content || !calls.length ? h("div", { class: "content" + (content ? "" : " none"), text: content || "(empty)" }) : null,
        calls.map((call) => h("div", { class: "call" },
          h("div", { class: "fn", text: "⚙ " + (call.name || "tool") }),
          call.args !== undefined ? h("pre", { text: pretty(call.args) }) : null,
          call.result !== undefined && call.result !== null ? h("div", { class: "fn result", text: "returned" }) : null,
          call.result !== undefined && call.result !== null ? h("pre", { class: "result", text: pretty(call.result) }) : null))));
    }
    return box;
  }

  function flashTurn(n) {
    const el = document.querySelector('#drawer .msg[data-turn="' + n + '"]');
    if (!el) return;
    el.scrollIntoView({ block: "center" });
    el.classList.add("flash");
    setTimeout(() => el.classList.remove("flash"), 1200);
  }

  // ---- state in the URL, so a link opens the same view ------------------------------------
  let restoring = false;
  function saveHash() {
    if (restoring) return;
    const p = new URLSearchParams();
    if (state.status !== "all") p.set("status", state.status);
    if (state.change) p.set("change", state.change);
    if (state.suite) p.set("suite", state.suite);
    if (state.label) p.set("label", state.label);
    if (state.q) p.set("q", state.q);
    if (state.deep) p.set("deep", "1");
    if (state.open >= 0) p.set("case", CASES[state.open].id);
    const hash = p.toString();
    history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search);
  }
  function loadHash() {
    const p = new URLSearchParams(location.hash.slice(1));
    state.status = STATUSES.includes(p.get("status")) ? p.get("status") : "all";
    state.change = CHANGES.includes(p.get("change")) ? p.get("change") : "";
    state.suite = p.get("suite") || "";
    state.label = p.get("label") || "";
    state.q = p.get("q") || "";
    state.deep = p.get("deep") === "1";
    return p.get("case");
  }

  // ---- wiring ---------------------------------------------------------------------------------
  function fillSelect(id, values) {
    const sel = $(id);
    for (const v of values) sel.appendChild(h("option", { value: v, text: v }));
  }
  const suites = [...new Set(DER.map((d) => d.suite))].sort();
  const labels = [...new Set(CASES.flatMap((c) => c.labels || []))].sort();
  fillSelect("suite", suites);
  fillSelect("label", labels);
  if (labels.length === 0) $("label").hidden = true;

  restoring = true;
  const wanted = loadHash();
  $("search").value = state.q;
  $("deep").checked = state.deep;
  $("suite").value = state.suite;
  $("label").value = state.label;
  update();
  restoring = false;
  if (wanted) {
    const i = CASES.findIndex((c) => c.id === wanted);
    if (i >= 0) {
      const at = view.indexOf(i);
      if (at >= 0) { state.page = Math.floor(at / state.size); renderTable(); }
      openCase(i);
    }
  }

  let timer = 0;
  $("search").addEventListener("input", (e) => {
    clearTimeout(timer);
    timer = setTimeout(() => { state.q = e.target.value; state.page = 0; update(); }, 120);
  });
  $("deep").addEventListener("change", (e) => { state.deep = e.target.checked; state.page = 0; update(); });
  $("suite").addEventListener("change", (e) => { state.suite = e.target.value; state.page = 0; update(); });
  $("label").addEventListener("change", (e) => { state.label = e.target.value; state.page = 0; update(); });
  $("rows").addEventListener("click", (e) => {
    const tr = e.target.closest("tr.row");
    if (tr) openCase(+tr.dataset.index);
  });
  $("rows").addEventListener("keydown", (e) => {
    const tr = e.target.closest("tr.row");
    if (tr && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); openCase(+tr.dataset.index); }
  });
  for (const th of document.querySelectorAll("th[data-sort]")) {
    th.addEventListener("click", () => {
      const key = th.dataset.sort;
      if (state.sort === key) { if (state.dir === 1) state.dir = -1; else { state.sort = ""; state.dir = 1; } }
      else { state.sort = key; state.dir = 1; }
      update();
    });
  }
  $("scrim").addEventListener("click", closeCase);
  for (const b of document.querySelectorAll("#changes button[data-change]")) {
    b.addEventListener("click", () => {
      state.change = state.change === b.dataset.change ? "" : b.dataset.change;
      state.page = 0;
      update();
    });
  }
  // a row of the suite or label table shows only its cases
  for (const tr of document.querySelectorAll("table.groups tr.group")) {
    const pick = () => {
      const key = tr.dataset.suite !== undefined ? "suite" : "label";
      state[key] = tr.dataset[key];
      $(key).value = state[key];
      state.page = 0;
      update();
      $("cases").scrollIntoView({ block: "start" });
    };
    tr.addEventListener("click", pick);
    tr.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); pick(); } });
  }
  document.addEventListener("keydown", (e) => {
    if (e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement) {
      if (e.key === "Escape" && e.target.id === "search" && !e.target.value) e.target.blur();
      return;
    }
    if (e.key === "Escape") closeCase();
    else if (state.open >= 0 && (e.key === "j" || e.key === "ArrowDown" && e.altKey)) step(1);
    else if (state.open >= 0 && (e.key === "k" || e.key === "ArrowUp" && e.altKey)) step(-1);
    else if (e.key === "/" && state.open < 0) { e.preventDefault(); $("search").focus(); }
  });
})();
