// Live updates for an incident's pages (timeline, event table, hypotheses board): every few
// seconds ask the incident's version, an ETag'd request answered by a body-less 304 while
// nothing changed (timeline/views/live.py says why polling and not a stream). When it changes:
// - every element marked data-live-refresh gets an htmx "live-refresh" event (the hypotheses
//   panel and board re-fetch themselves on it), once the user is not typing in it and has no
//   half-filled form there (until then it waits, and is tried again at each tick);
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

  // A form the user has started to fill in (a choice picked, text typed) is never replaced
  // under them: its refresh waits until they are done.
  function dirty(node) {
    return Array.from(node.querySelectorAll("input, textarea, select")).some(f => {
      if (f.type === "hidden" || f.type === "submit" || f.type === "button") return false;
      if (f.tagName === "SELECT") {
        const d = Array.from(f.options).findIndex(o => o.defaultSelected);
        return f.selectedIndex !== (d < 0 ? 0 : d);
      }
      if (f.type === "checkbox" || f.type === "radio") return f.checked !== f.defaultChecked;
      return f.value !== f.defaultValue;
    });
  }

  const stale = new Set();
  function refreshStale() {
    if (!window.htmx) return;
    stale.forEach(n => {
      if (!document.contains(n)) { stale.delete(n); return; }
      if (editing(n) || dirty(n)) return;
      stale.delete(n);
      htmx.trigger(n, "live-refresh");
    });
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
    document.querySelectorAll("[data-live-refresh]").forEach(n => stale.add(n));
    refreshStale();
    refreshTable();
    document.body.dispatchEvent(new CustomEvent("live-changed", {detail: {version}}));
  }

  function poll() {
    refreshStale();
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
