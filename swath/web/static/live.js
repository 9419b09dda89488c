// Live parts of a page, updated in place: no reload, so the scroll position, open sections and typed text stay.
//   data-live-json="URL": the URL answers {"parts": {NAME: html}}; each [data-part=NAME] inside is replaced only
//     when its content changed (the status page);
//   data-live="URL": the element is replaced by the HTML the URL answers, until the header X-Swath-Final: 1 (a run
//     or an export that has ended).
// Every data-every ms (2000 unless set); paused while the tab is hidden; after a failure the wait doubles, up to
// 5 minutes. The element whose id is the live element's id + "-state" (if any) says "Updated N s ago" or that
// the connection was lost.
(function () {
  "use strict";
  var MAX_WAIT = 300000;

  function localTimes(root) {
    // show a time's tooltip in the reader's own time zone, without seconds
    root.querySelectorAll("time[datetime]").forEach(function (t) {
      var d = new Date(t.getAttribute("datetime").replace(" ", "T") + (/[zZ]|[+-]\d\d:?\d\d$/.test(t.getAttribute("datetime")) ? "" : "Z"));
      if (!isNaN(d)) { t.title = d.toLocaleString([], {dateStyle: "medium", timeStyle: "short"}); }
    });
  }

  function seconds(ms) {
    var s = Math.max(0, Math.round(ms / 1000));
    return s < 120 ? s + " s" : Math.round(s / 60) + " min";
  }

  function replaceParts(el, parts) {
    Object.keys(parts).forEach(function (name) {
      var part = el.querySelector('[data-part="' + name + '"]');
      if (!part) { return; }
      var fresh = document.createElement("template");
      fresh.innerHTML = parts[name];
      localTimes(fresh.content);
      var probe = document.createElement("div");  // the new content serialised as the browser does the old
      probe.appendChild(fresh.content.cloneNode(true));
      if (probe.innerHTML === part.innerHTML) { return; }  // unchanged: leave it (and whatever is open in it) alone
      var open = Array.prototype.map.call(part.querySelectorAll("details[open][id]"), function (d) { return d.id; });
      part.replaceChildren(fresh.content);
      open.forEach(function (id) { var d = document.getElementById(id); if (d) { d.open = true; } });
    });
  }

  function Live(el) {
    this.el = el;
    this.json = el.hasAttribute("data-live-json");
    this.url = el.getAttribute(this.json ? "data-live-json" : "data-live");
    this.every = parseInt(el.getAttribute("data-every"), 10) || 2000;
    this.wait = this.every;
    this.state = el.id ? document.getElementById(el.id + "-state") : null;
    this.updated = Date.now();
    this.lost = null;  // why the last fetch failed
    this.timer = null;
    this.busy = false;  // a fetch is under way
    this.done = false;
  }

  Live.prototype.schedule = function (ms) {
    var self = this;
    window.clearTimeout(this.timer);
    this.timer = window.setTimeout(function () { self.poll(); }, ms);
    this.due = Date.now() + ms;
  };

  Live.prototype.poll = function () {
    var self = this;
    this.timer = null;
    if (this.done) { return; }
    if (document.hidden) { return; }  // visibilitychange starts it again
    this.busy = true;
    fetch(this.url, {credentials: "same-origin", headers: {"Accept": this.json ? "application/json" : "text/html"}})
      .then(function (response) {
        self.busy = false;
        if (response.redirected) { throw new Error("session"); }  // to the login page: polling cannot mend that
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        var final = response.headers.get("X-Swath-Final") === "1";
        return (self.json ? response.json() : response.text()).then(function (body) {
          if (self.json) { replaceParts(self.el, body.parts || {}); }
          else { self.el.innerHTML = body; localTimes(self.el); }
          self.el.setAttribute("data-updated", new Date().toISOString());
          self.updated = Date.now();
          self.lost = null;
          self.wait = self.every;
          if (final) { self.done = true; self.el.removeAttribute("data-live"); self.el.setAttribute("data-final", "1"); }
          else { self.schedule(self.every); }
          self.show();
        });
      })
      .catch(function (error) {
        self.busy = false;
        self.lost = error.message === "session" ? "session" : (error.message || "network error");
        if (self.lost === "session") { self.done = true; }
        else { self.wait = Math.min(self.wait * 2, MAX_WAIT); self.schedule(self.wait); }
        self.show();
      });
  };

  Live.prototype.show = function () {
    if (!this.state) { return; }
    var now = Date.now();
    this.state.classList.toggle("lost", this.lost !== null);
    if (this.lost === "session") {
      this.state.textContent = "Not updating: your session has ended; reload the page to log in again.";
    } else if (this.lost !== null) {
      this.state.textContent = "Connection lost (" + this.lost + "); updated " + seconds(now - this.updated) +
        " ago; trying again in " + seconds(this.due - now) + ".";
    } else if (this.done) {
      this.state.textContent = "Final; updated " + seconds(now - this.updated) + " ago.";
    } else {
      this.state.textContent = "Updated " + seconds(now - this.updated) + " ago" +
        (document.hidden ? "; paused while this tab is hidden." : ".");
    }
  };

  document.addEventListener("DOMContentLoaded", function () {
    localTimes(document);
    var lives = Array.prototype.map.call(document.querySelectorAll("[data-live], [data-live-json]"), function (el) {
      var live = new Live(el);
      live.schedule(Math.min(live.every, 1000));
      window.swathLive = window.swathLive || [];  // the pollers, for the console and tests
      window.swathLive.push(live);
      return live;
    });
    if (!lives.length) { return; }
    window.setInterval(function () { lives.forEach(function (live) { if (!document.hidden) { live.show(); } }); }, 1000);
    document.addEventListener("visibilitychange", function () {
      lives.forEach(function (live) {
        // back in view: update now, unless a fetch is under way or a failure is being waited out
        if (!document.hidden && !live.done && !live.busy && (live.timer === null || live.lost === null)) {
          window.clearTimeout(live.timer);
          live.poll();
        }
        live.show();
      });
    });
  });
})();
