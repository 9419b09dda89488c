// A form sent after its session had ended comes back filled in: the fields the server kept for it
// (#kept-form: never passwords, credential values or the CSRF token) go into the form that posts where it did.
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var data = document.getElementById("kept-form");
    if (!data) { return; }
    var kept = JSON.parse(data.textContent);
    var form = Array.prototype.find.call(document.forms, function (f) {
      return new URL(f.action, window.location.href).pathname === kept.action;
    });
    if (!form) { return; }
    var fields = Array.prototype.filter.call(form.elements, function (el) {
      return el.name && ["hidden", "password", "file", "submit", "button"].indexOf(el.type) < 0;
    });
    fields.forEach(function (el) {  // a box left unticked was not sent: untick them all, then tick the sent ones
      if (el.type === "checkbox") { el.checked = false; }
    });
    kept.fields.forEach(function (pair) {
      fields.forEach(function (el) {
        if (el.name !== pair[0]) { return; }
        if (el.type === "checkbox" || el.type === "radio") { if (el.value === pair[1]) { el.checked = true; } }
        else if (el.multiple) {
          Array.prototype.forEach.call(el.options, function (o) { if (o.value === pair[1]) { o.selected = true; } });
        } else { el.value = pair[1]; }
      });
    });
    var details = form.querySelectorAll("details");  // a kept value inside a closed section is shown
    Array.prototype.forEach.call(details, function (d) {
      if (Array.prototype.some.call(d.querySelectorAll("input, textarea"), function (el) { return el.value; })) { d.open = true; }
    });
  });
})();
