// Live parts of a page: an element with data-live="URL" is replaced by the HTML the URL returns, every
// 2 seconds (data-every: milliseconds), until the server answers with the header X-Swath-Final: 1 (the run or
// export has ended).
(function () {
  "use strict";
  function poll(el) {
    var url = el.getAttribute("data-live");
    if (!url) { return; }
    fetch(url, {credentials: "same-origin", headers: {"Accept": "text/html"}}).then(function (response) {
      if (!response.ok) { throw new Error("HTTP " + response.status); }
      var final = response.headers.get("X-Swath-Final") === "1";
      return response.text().then(function (html) {
        el.innerHTML = html;
        localTimes(el);
        el.setAttribute("data-updated", new Date().toISOString());
        if (final) { el.removeAttribute("data-live"); el.setAttribute("data-final", "1"); }
        else { window.setTimeout(function () { poll(el); }, parseInt(el.getAttribute("data-every"), 10) || 2000); }
      });
    }).catch(function () { window.setTimeout(function () { poll(el); }, 5000); });
  }
  function localTimes(root) {
    // show a time's tooltip in the reader's own time zone, without seconds
    root.querySelectorAll("time[datetime]").forEach(function (t) {
      var d = new Date(t.getAttribute("datetime").replace(" ", "T") + (/[zZ]|[+-]\d\d:?\d\d$/.test(t.getAttribute("datetime")) ? "" : "Z"));
      if (!isNaN(d)) { t.title = d.toLocaleString([], {dateStyle: "medium", timeStyle: "short"}); }
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    localTimes(document);
    document.querySelectorAll("[data-live]").forEach(function (el) { window.setTimeout(function () { poll(el); }, 1000); });
  });
})();
