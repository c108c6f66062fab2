// Queue keys beyond app.js's j/k: Enter opens the focused row, x toggles its checkbox.
(function () {
  "use strict";
  document.addEventListener("keydown", function (event) {
    var row = document.activeElement;
    if (!row || !row.hasAttribute || !row.hasAttribute("data-row")) return;
    if (event.metaKey || event.ctrlKey || event.altKey) return;
    if (event.key === "Enter" && row.getAttribute("data-href")) {
      window.location.assign(row.getAttribute("data-href"));
      event.preventDefault();
    } else if (event.key === "x") {
      var box = row.querySelector("input[type=checkbox]");
      if (box) { box.checked = !box.checked; event.preventDefault(); }
    }
  });
})();
