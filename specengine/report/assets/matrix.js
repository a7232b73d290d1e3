(function () {
  "use strict";
  // The matrix view: click a column's heading to sort by it (again to reverse); "differs" keeps
  // only the cases whose cells disagree. Rows are the server's; this only reorders and hides them.
  const table = document.getElementById("matrix-cases");
  if (!table) return;
  const body = table.tBodies[0];
  const RANK = { error: 0, failed: 1, skipped: 2, passed: 3, "": 4 };
  let sorted = { col: null, dir: 1 };

  function key(row, col) {
    const name = row.cells[0].textContent.toLowerCase();
    if (col === "case") return [name, 0, ""];
    const cell = row.cells[Number(col) + 1];
    const score = cell.dataset.score === "" ? -1 : Number(cell.dataset.score);
    return [RANK[cell.dataset.status] ?? 4, score, name];  // ties by name, so a reverse is whole
  }
  function compare(a, b) {
    for (let i = 0; i < 3; i++) {
      if (a[i] < b[i]) return -1;
      if (a[i] > b[i]) return 1;
    }
    return 0;
  }
  function sortBy(col) {
    sorted = { col, dir: sorted.col === col ? -sorted.dir : 1 };
    const rows = Array.from(body.rows);
    rows.sort((a, b) => sorted.dir * compare(key(a, col), key(b, col)));
    for (const row of rows) body.appendChild(row);
    for (const th of table.tHead.rows[0].cells) {
      th.setAttribute("aria-sort", th.dataset.col === col ? (sorted.dir > 0 ? "ascending" : "descending") : "none");
    }
  }
  for (const th of table.tHead.rows[0].cells) {
    th.addEventListener("click", () => sortBy(th.dataset.col));
    th.addEventListener("keydown", (e) => { if (e.key === "Enter") sortBy(th.dataset.col); });
  }
  const differs = document.getElementById("matrix-differs");
  differs.addEventListener("change", () => {
    for (const row of body.rows) row.hidden = differs.checked && row.dataset.differs !== "1";
  });
})();
