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

  // Compare needs exactly two runs.
  const compare = document.getElementById("compare-button");
  if (compare) {
    const boxes = [...document.querySelectorAll('input[name="run"][form="compare-form"]')];
    const update = () => { compare.disabled = boxes.filter((b) => b.checked).length !== 2; };
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
  if (job && job.dataset.state === "running") {
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
      if (data.state === "running") {
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
});
