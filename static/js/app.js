// Keyboard helpers: j/k move between rows marked data-row, Enter opens the focused row.
(function () {
  "use strict";
  document.addEventListener("keydown", function (event) {
    var tag = (event.target && event.target.tagName) || "";
    if (["INPUT", "TEXTAREA", "SELECT"].indexOf(tag) !== -1 || event.metaKey || event.ctrlKey || event.altKey) return;
    if (event.key !== "j" && event.key !== "k") return;
    var rows = Array.prototype.slice.call(document.querySelectorAll("[data-row]"));
    if (!rows.length) return;
    var index = rows.indexOf(document.activeElement);
    var next = event.key === "j" ? Math.min(index + 1, rows.length - 1) : Math.max(index - 1, 0);
    rows[next].focus();
    event.preventDefault();
  });
})();
