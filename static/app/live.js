// Live updates for an incident's pages (timeline, event table, hypotheses board): every few
// seconds ask the incident's version, an ETag'd request answered by a body-less 304 while
// nothing changed (timeline/views/live.py says why polling and not a stream). When it changes:
// - every element marked data-live-refresh that the user is not typing in gets an htmx
//   "live-refresh" event (the hypotheses panel and board re-fetch themselves on it);
// - the event table is fetched again with its current filters and page;
// - "live-changed" is dispatched on <body> for page scripts (the timeline redraws its figure).
(function () {
  "use strict";
  const root = document.querySelector("[data-version-url]");
  if (!root || !window.fetch) return;
  const POLL_MS = 4000;
  let etag = null, busy = false;

  function editing(node) {
    return node && node.contains(document.activeElement) && document.activeElement !== document.body;
  }

  function refreshTable() {
    const box = document.getElementById("event-table");
    const filters = box && box.querySelector("form.filters");
    if (!filters || editing(box) || !window.htmx) return;
    const params = new URLSearchParams(new FormData(filters));
    const table = box.querySelector(".event-table");
    if (table && table.dataset.page) params.set("page", table.dataset.page);
    htmx.ajax("GET", filters.getAttribute("hx-get") + "?" + params.toString(), {target: "#event-table", swap: "innerHTML"});
  }

  function changed(version) {
    root.dataset.version = version;
    if (window.htmx) {
      document.querySelectorAll("[data-live-refresh]").forEach(n => { if (!editing(n)) htmx.trigger(n, "live-refresh"); });
    }
    refreshTable();
    document.body.dispatchEvent(new CustomEvent("live-changed", {detail: {version}}));
  }

  function poll() {
    if (busy || document.hidden) return;
    busy = true;
    fetch(root.dataset.versionUrl, {credentials: "same-origin", cache: "no-store", headers: etag ? {"If-None-Match": etag} : {}})
      .then(r => {
        if (r.status === 304) return null;
        if (!r.ok) throw new Error("HTTP " + r.status);
        etag = r.headers.get("ETag");
        return r.json();
      })
      .then(body => {
        if (!body) return;
        // A page rendered without its version takes the first answer as what it shows.
        if (!root.dataset.version) root.dataset.version = body.version;
        else if (body.version !== root.dataset.version) changed(body.version);
      })
      .catch(() => { /* offline or logged out: try again at the next tick */ })
      .finally(() => { busy = false; });
  }
  window.setInterval(poll, POLL_MS);
})();
