// Tell the app this browser's time zone once, so times show in the viewer's zone (not the server's).
// The page says which zone it used (data-tz) and whether the user left it automatic (data-tz-auto).
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script || script.getAttribute("data-tz-auto") !== "1" || !window.fetch || !window.Intl) return;
  var zone = "";
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { return; }
  if (!zone || zone === script.getAttribute("data-tz")) return;
  var key = "reconcile-tz-posted:" + zone;
  try { if (window.sessionStorage.getItem(key)) return; window.sessionStorage.setItem(key, "1"); } catch (e) { /* storage off: post anyway */ }
  var headers = {};
  try { headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}"); } catch (e) { headers = {}; }
  var body = new URLSearchParams();
  body.set("tz", zone);
  fetch(script.getAttribute("data-url"), {method: "POST", body: body, headers: headers, credentials: "same-origin"})
    .then(function (response) { return response.ok ? response.json() : {}; })
    .then(function (data) { if (data && data.changed) window.location.reload(); })
    .catch(function () { /* times stay in the page's stated zone */ });
})();
