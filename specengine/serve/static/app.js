// specengine serve: small enhancements on server-rendered pages. Every page works without this file;
// it never builds markup from data (textContent only).
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  // Filters apply as soon as a choice changes.
  for (const form of document.querySelectorAll("form[data-autosubmit]")) {
    for (const select of form.querySelectorAll("select")) {
      select.addEventListener("change", () => form.requestSubmit());
    }
  }

  // Compare needs two to four runs.
  const compare = document.getElementById("compare-button");
  if (compare) {
    const boxes = [...document.querySelectorAll('input[name="run"][form="compare-form"]')];
    const count = document.getElementById("compare-count");
    const update = () => {
      const picked = boxes.filter((b) => b.checked).length;
      compare.disabled = picked < 2 || picked > 4;
      // say why the button does nothing rather than leave it silently greyed out
      count.textContent = picked > 4 ? `${picked} runs selected: compare takes at most four` :
        picked === 1 ? "1 run selected: select one more" : picked ? `${picked} runs selected` : "";
    };
    boxes.forEach((box) => box.addEventListener("change", update));
    update();
  }

  // Rerunning a selection needs a selection.
  const rerunSelected = document.getElementById("rerun-selected");
  if (rerunSelected) {
    const boxes = [...document.querySelectorAll('input[name="case"][form="rerun-selected-form"]')];
    const update = () => { rerunSelected.disabled = !boxes.some((b) => b.checked); };
    boxes.forEach((box) => box.addEventListener("change", update));
    update();
  }

  // A rerun's page follows the engine until it ends.
  const job = document.getElementById("job");
  const following = (state) => state === "running" || state === "queued";
  if (job && following(job.dataset.state)) {
    const progress = document.getElementById("job-progress");
    const count = document.getElementById("job-count");
    const state = document.getElementById("job-state");
    const result = document.getElementById("job-result");
    const poll = async () => {
      let data;
      try {
        const response = await fetch(`/api/jobs/${encodeURIComponent(job.dataset.job)}`);
        data = await response.json();
      } catch (error) {
        setTimeout(poll, 2000);
        return;
      }
      progress.max = data.total;
      progress.value = data.done;
      count.textContent = `${data.done} of ${data.total} cases`;
      state.textContent = data.state;
      job.dataset.state = data.state;
      if (following(data.state)) {
        setTimeout(poll, 700);
        return;
      }
      result.textContent = "";
      if (data.run_id) {
        // The page as the server renders a finished rerun: its counts and a link to compare.
        window.location.reload();
      } else if (data.message) {
        const pre = document.createElement("pre");
        pre.className = "errorbox";
        pre.textContent = data.message;
        result.append(pre);
      }
    };
    setTimeout(poll, 500);
  }

  // Reviews save in place: the page stays where it is, says that it saved, and shows the verdict
  // line and the check's mark as the server now renders them. Opened from the review queue, saving
  // the item in question moves on to the next item.
  const walk = document.getElementById("queue-walk");
  const main = document.querySelector("main[data-queue-check]");
  const isQueueItem = (form) => main && (new FormData(form).get("check") || "") === main.dataset.queueCheck;
  const refreshVerdicts = async (form) => {
    try {
      const response = await fetch(window.location.href, { headers: { Accept: "text/html" } });
      const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
      const swap = (selector) => {
        const now = document.querySelector(selector);
        const then = fresh.querySelector(selector);
        if (now && then) now.replaceWith(document.importNode(then, true));
      };
      swap("#verdicts");
      const check = new FormData(form).get("check");
      if (check) swap(`.check[data-check="${CSS.escape(check)}"] > .head`);
    } catch (error) {
      // the saved status already says what happened; the line catches up on the next load
    }
  };
  const save = async (form, options = {}) => {
    const status = form.querySelector(".saved");
    const fields = new FormData(form);
    const body = {
      case: fields.get("case"),
      check: fields.get("check") || null,
      verdict: fields.get("verdict"),
      note: fields.get("note") || "",
    };
    status.className = "saved";
    status.textContent = "saving…";
    let answer;
    try {
      const response = await fetch(form.dataset.api, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
        keepalive: Boolean(options.keepalive),
      });
      answer = await response.json();
      if (!response.ok) throw new Error(answer.error || `HTTP ${response.status}`);
    } catch (error) {
      status.className = "saved failed";
      status.textContent = `not saved: ${error.message}`;
      return false;
    }
    const human = (answer.engine === "passed") === (answer.verdict === "correct") ? "passed" : "failed";
    status.textContent = `saved ✓ ${answer.verdict} (human says ${human})`;
    const log = form.parentElement.querySelector(".reviewlog");
    if (log) {
      const item = document.createElement("li");
      item.textContent = `${answer.verdict} of “${answer.engine}” by ${answer.reviewer}, just now` +
        (answer.note ? `: “${answer.note}”` : "");
      log.prepend(item);
    }
    if (options.keepalive) return true;
    if (walk && isQueueItem(form)) {
      const next = document.getElementById("queue-next") || document.getElementById("back-to-queue");
      window.location.href = next.href;
      return true;
    }
    await refreshVerdicts(form);
    return true;
  };
  for (const form of document.querySelectorAll("form.reviewform[data-api]")) {
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      cancelPending();
      save(form);
    });
  }

  // `c`/`i` mark the case after a moment in which `u` (or the Undo button) takes the mark back;
  // leaving the page saves a mark still pending.
  let pending = null;
  const UNDO_MS = 4000;
  const cancelPending = () => {
    if (!pending) return;
    clearTimeout(pending.timer);
    pending = null;
  };
  const undo = () => {
    if (!pending) return;
    const { form, before } = pending;
    cancelPending();
    for (const radio of form.querySelectorAll('input[name="verdict"]')) radio.checked = radio.value === before;
    const status = form.querySelector(".saved");
    status.className = "saved";
    status.textContent = "undone: nothing saved";
  };
  const flushPending = async (options = {}) => {
    if (!pending) return;
    const { form } = pending;
    cancelPending();
    await save(form, options);
  };
  const markLater = (form, verdict) => {
    cancelPending();
    const checked = form.querySelector('input[name="verdict"]:checked');
    const before = checked ? checked.value : null;
    form.querySelector(`input[name="verdict"][value="${verdict}"]`).checked = true;
    const status = form.querySelector(".saved");
    status.className = "saved pending";
    status.textContent = `marked ${verdict}; saving in ${UNDO_MS / 1000} s `;
    const button = document.createElement("button");
    button.type = "button";
    button.id = "undo-mark";
    button.className = "linklike";
    button.textContent = "undo (u)";
    button.addEventListener("click", undo);
    status.append(button);
    pending = { form, before, timer: setTimeout(() => flushPending(), UNDO_MS) };
  };
  window.addEventListener("pagehide", () => { if (pending) flushPending({ keepalive: true }); });

  // Opened from the review queue: the item's check (or the case's verdict) in view, its form focused.
  if (main) {
    const name = main.dataset.queueCheck;
    const place = name ? document.querySelector(`.check[data-check="${CSS.escape(name)}"]`)
      : document.getElementById("case-review-form");
    if (place) {
      const details = place.querySelector("details.checkreview");
      if (details) details.open = true;
      place.scrollIntoView({ block: "center" });
      const radio = place.querySelector('input[name="verdict"]:checked') || place.querySelector('input[name="verdict"]');
      if (radio) radio.focus({ preventScroll: true });
    }
  }

  // Keys: j/k next/previous case, c/i mark the case correct/incorrect, / search, ? the key list.
  // On a run page j/k move a focus through the case rows as listed (filter, sort and page as shown)
  // and Enter opens the focused case; on a case page they open the next/previous case.
  const keys = document.getElementById("keys");
  const rows = [...document.querySelectorAll("#cases tr.caserow")];
  const focusRow = (step) => {
    const held = rows.findIndex((row) => row.contains(document.activeElement));
    const at = held >= 0 ? held : rows.findIndex((row) => row.classList.contains("kbfocus"));
    const next = at < 0 ? 0 : Math.min(Math.max(at + step, 0), rows.length - 1);
    rows.forEach((row) => row.classList.remove("kbfocus"));
    rows[next].classList.add("kbfocus");
    rows[next].querySelector("a.caselink").focus();  // Enter then opens it, and a screen reader follows
    rows[next].scrollIntoView({ block: "nearest" });
  };
  // The key list names only the keys this page answers to.
  const here = {
    walk: rows.length > 0 || Boolean(document.getElementById("next-case") || document.getElementById("prev-case") || walk),
    open: rows.length > 0,
    mark: Boolean(document.getElementById("case-review-form")),
    search: Boolean(document.querySelector("input[data-search]")),
  };
  for (const entry of keys.querySelectorAll("[data-keys]")) entry.hidden = !here[entry.dataset.keys];
  const toggleKeys = () => { keys.hidden = !keys.hidden; };
  const showKeys = document.getElementById("show-keys");
  if (showKeys) showKeys.addEventListener("click", toggleKeys);
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    // Keys stay with what takes text; a focused radio button (a review's choice) leaves them to the page.
    const typing = target.closest && target.closest("textarea, select, [contenteditable], input:not([type=radio]):not([type=checkbox])");
    if (typing) {
      if (event.key === "Escape") target.blur();
      return;
    }
    if (event.key === "Enter") {
      // A focused link opens itself; otherwise Enter opens the row j/k last focused.
      const row = rows.find((r) => r.classList.contains("kbfocus"));
      if (row && !(target.closest && target.closest("a, button, summary, label"))) {
        event.preventDefault();
        row.querySelector("a.caselink").click();
      }
      return;
    }
    const go = async (id) => {
      const link = document.getElementById(id);
      if (!link) return;
      await flushPending();
      window.location.href = link.href;
    };
    const mark = (verdict) => {
      const form = document.getElementById("case-review-form");
      if (form) markLater(form, verdict);
    };
    const actions = {
      j: () => (rows.length ? focusRow(1) : go(walk ? "queue-next" : "next-case")),
      k: () => (rows.length ? focusRow(-1) : go(walk ? "queue-prev" : "prev-case")),
      c: () => mark("correct"),
      i: () => mark("incorrect"),
      u: undo,
      "/": () => { const search = document.querySelector("input[data-search]"); if (search) search.focus(); },
      "?": toggleKeys,
      Escape: () => { keys.hidden = true; },
    };
    const action = actions[event.key];
    if (action) {
      event.preventDefault();
      action();
    }
  });
});
