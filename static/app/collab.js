// Collaboration forms (htmx): errors shown in the form, forms reset after success, and the
// "link the open item as evidence" form follows whatever the side panel shows.
(function () {
  "use strict";
  if (!window.htmx) return;
  // 422 carries the error text for the form's error slot: swap it like a success.
  htmx.config.responseHandling = [
    {code: "204", swap: false},
    {code: "[23]..", swap: true},
    {code: "422", swap: true, error: false},
    {code: "[45]..", swap: false, error: true},
    {code: "...", swap: false},
  ];

  document.body.addEventListener("htmx:afterRequest", ev => {
    const form = ev.detail.elt;
    if (!(form instanceof HTMLFormElement) || !ev.detail.successful) return;
    if (ev.detail.xhr.status >= 300) return;
    const slot = form.querySelector(".form-error");
    if (slot) slot.textContent = "";
    if (form.classList.contains("reset-on-success")) {
      const kept = Array.from(form.querySelectorAll(".keep")).map(i => [i, i.value]);
      form.reset();
      kept.forEach(([i, v]) => { i.value = v; });
    }
  });

  // What the side panel shows: an event or a finding can be linked as evidence; a note cannot.
  let current = null;

  function readDetail() {
    const detail = document.getElementById("detail");
    const item = detail && detail.querySelector("[data-event], [data-finding], [data-note]");
    if (!item) { current = null; return; }
    const title = (item.querySelector("h2") || item).textContent.trim();
    if (item.dataset.event) current = {event: item.dataset.event, finding: "", title};
    else if (item.dataset.finding) current = {event: "", finding: item.dataset.finding, title};
    else current = null;
  }

  function fillLinkForm() {
    const form = document.getElementById("link-evidence");
    if (!form) return;
    form.elements.event.value = current ? current.event : "";
    form.elements.finding.value = current ? current.finding : "";
    form.querySelector(".link-target").textContent =
      current ? current.title : "click a marker or a suspect first";
    form.querySelector("button").disabled = !current;
    form.dataset.ready = current ? "yes" : "no";
  }

  document.body.addEventListener("htmx:afterSwap", ev => {
    const id = ev.detail.target && ev.detail.target.id;
    if (id === "detail") readDetail();
    if (id === "detail" || id === "hypotheses-panel") fillLinkForm();
  });
})();
