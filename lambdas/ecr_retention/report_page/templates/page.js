"use strict";
// The image table: sort by column, filter by text, action and (a run over several Regions) Region, the first PAGE matches shown, "show more" for the
// next. Reads every row's data once; never writes markup (no innerHTML), only attributes and textContent.
(() => {
  const PAGE = 500;
  const section = document.getElementById("images");
  const body = section && section.querySelector("tbody");
  if (!body) return;
  const text = document.getElementById("filter-text");
  const action = document.getElementById("filter-action");
  const region = document.getElementById("filter-region"); // only on the page of a run over several Regions
  const count = document.getElementById("row-count");
  const more = document.getElementById("show-more");
  const controls = document.getElementById("controls");

  const rows = Array.from(body.rows, (row, index) => {
    const cells = row.cells;
    const d = row.dataset;
    const tags = cells[2] ? cells[2].textContent : "";
    const reasons = cells[6] ? cells[6].textContent : "";
    const size = d.size === "" ? -1 : Number(d.size);
    return {
      row,
      index,
      repository: d.repository || "",
      digest: d.digest || "",
      tags,
      age: Number(d.ageSeconds),
      size,
      action: d.action || "",
      region: d.region || "",
      haystack: [d.repository, d.digest, tags, reasons].join("\n").toLowerCase(),
      shown: true,
    };
  });
  let order = rows.slice();
  let limit = PAGE;
  let sortKey = null;
  let descending = false;

  const compare = (key) => {
    if (key === "age" || key === "size") return (a, b) => a[key] - b[key] || a.index - b.index;
    return (a, b) => (a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : a.index - b.index);
  };

  const apply = () => {
    const needle = text.value.trim().toLowerCase();
    const wanted = action.value;
    const where = region ? region.value : "all";
    let matches = 0;
    let shown = 0;
    for (const item of order) {
      const match =
        (wanted === "all" || item.action === wanted) &&
        (where === "all" || item.region === where) &&
        (needle === "" || item.haystack.includes(needle));
      let visible = false;
      if (match) {
        matches += 1;
        if (matches <= limit) {
          visible = true;
          shown += 1;
        }
      }
      if (visible !== item.shown) {
        item.row.hidden = !visible;
        item.shown = visible;
      }
    }
    count.dataset.shown = String(shown);
    count.dataset.total = String(rows.length);
    count.dataset.matches = String(matches);
    count.textContent =
      `${shown} of ${matches} matching images shown (${rows.length} in all)` +
      (matches > shown ? `; ${matches - shown} more behind "show more"` : "");
    more.hidden = matches <= shown;
  };

  const sortBy = (key, button) => {
    descending = sortKey === key ? !descending : false;
    sortKey = key;
    const ascending = rows.slice().sort(compare(key));
    order = descending ? ascending.reverse() : ascending;
    for (const th of section.querySelectorAll("thead th[aria-sort]")) th.setAttribute("aria-sort", "none");
    button.closest("th").setAttribute("aria-sort", descending ? "descending" : "ascending");
    // Empty the body in one step, then insert the rows in their new order: moving 30,000 rows one by one out of a
    // live table (appendChild, replaceChildren) takes Chromium close to a minute.
    body.textContent = "";
    const fragment = document.createDocumentFragment();
    for (const item of order) fragment.appendChild(item.row);
    body.appendChild(fragment);
    limit = PAGE;
    apply();
  };

  text.addEventListener("input", () => {
    limit = PAGE;
    apply();
  });
  action.addEventListener("change", () => {
    limit = PAGE;
    apply();
  });
  if (region) {
    region.addEventListener("change", () => {
      limit = PAGE;
      apply();
    });
  }
  more.addEventListener("click", () => {
    limit += PAGE;
    apply();
  });
  for (const button of section.querySelectorAll("button.sort")) {
    button.addEventListener("click", () => sortBy(button.dataset.sortKey, button));
  }
  controls.hidden = false;
  apply();
})();
