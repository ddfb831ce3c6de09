// The timeline page: fetch the figure for a window, re-fetch on zoom, open details on click,
// pick a moment for notes and marks (a click on a marker or on empty chart space), and keep
// the page live (see poll() below).
(function () {
  "use strict";
  const el = document.getElementById("timeline-chart");
  if (!el) return;
  const status = document.getElementById("chart-status");
  let pending = null;
  let loaded = false;
  let markerClickAt = 0;

  function selectedSeries() {
    const form = document.getElementById("panel-form");
    if (!form) return [];
    return Array.from(form.querySelectorAll("input[name=series]:checked")).map(i => i.value);
  }

  // The window shown, [start, end] as ISO strings; the server always sends an explicit range
  // (the incident's span when no window is asked for), so this is never the autorange default.
  function currentRange() {
    const xa = el._fullLayout && el._fullLayout.xaxis;
    if (!xa || xa.autorange || !xa.range) return [null, null];
    return [toIso(xa.range[0]), toIso(xa.range[1])];
  }

  function load(start, end) {
    const params = new URLSearchParams();
    if (start) params.set("start", start);
    if (end) params.set("end", end);
    selectedSeries().forEach(s => params.append("series", s));
    if (pending) pending.abort();
    pending = new AbortController();
    status.textContent = "loading…";
    el.dataset.state = "loading";
    return fetch(el.dataset.url + "?" + params.toString(), {signal: pending.signal, credentials: "same-origin"})
      .then(r => { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then(data => {
        const fig = data.figure;
        const config = {responsive: true, displaylogo: false, modeBarButtonsToRemove: ["select2d", "lasso2d"]};
        const p = loaded ? Plotly.react(el, fig.data, fig.layout, config) : Plotly.newPlot(el, fig.data, fig.layout, config);
        return p.then(() => {
          if (!loaded) { bind(); loaded = true; }
          const pts = Object.values(data.meta.points || {});
          const shown = pts.reduce((a, p) => a + p[0], 0), total = pts.reduce((a, p) => a + p[1], 0);
          if (!fig.data.length) status.textContent = "no data yet";
          else status.textContent = total ? `${shown.toLocaleString()} of ${total.toLocaleString()} points shown` : "";
          el.dataset.state = "ready";
          el.dataset.loads = String(Number(el.dataset.loads || 0) + 1);
        });
      })
      .catch(err => { if (err.name !== "AbortError") { status.textContent = "could not load the timeline: " + err.message; el.dataset.state = "error"; } });
  }

  function openDetail(id) {
    const s = String(id);
    let url;
    if (s.startsWith("f")) url = el.dataset.findingUrl.replace(/0\/$/, s.slice(1) + "/");
    else if (s.startsWith("n")) url = el.dataset.noteUrl.replace(/0\/$/, s.slice(1) + "/");
    else url = el.dataset.detailUrl.replace(/0\/$/, s + "/");
    htmx.ajax("GET", url, {target: "#detail", swap: "innerHTML"});
  }

  // The moment picked for a note or a mark, shown and sent as "YYYY-MM-DD HH:MM:SS UTC"
  // (24-hour, whatever the browser's locale; the server reads the trailing UTC).
  function pickTime(ms) {
    if (!isFinite(ms)) return;
    const value = new Date(ms).toISOString().slice(0, 19).replace("T", " ") + " UTC";
    document.querySelectorAll("input.picked-time").forEach(i => { i.value = value; });
    el.dataset.picked = value;
  }

  // Plotly fires plotly_click only on points: a click on empty plot area picks its time here.
  // A click on a marker also reaches this listener; the marker's own time wins.
  function onBackgroundClick(ev) {
    const full = el._fullLayout;
    if (!full || !full.xaxis || ev.target.closest(".modebar")) return;
    if (Date.now() - markerClickAt < 500) return;
    const xa = full.xaxis, box = el.getBoundingClientRect();
    const px = ev.clientX - box.left - xa._offset;
    const py = ev.clientY - box.top;
    if (px < 0 || px > xa._length || py < full._size.t || py > full.height - full._size.b) return;
    pickTime(xa.p2c(px));
  }

  function bind() {
    el.on("plotly_click", ev => {
      const pt = ev.points && ev.points[0];
      if (!pt) return;
      markerClickAt = Date.now();
      const own = pt.customdata && pt.customdata[2];
      if (own) pickTime(Date.parse(own));
      else if (pt.x !== undefined) pickTime(Date.parse(toIso(pt.x)));
      if (pt.customdata && pt.customdata[0] !== undefined) openDetail(pt.customdata[0]);
    });
    el.addEventListener("click", onBackgroundClick);
    el.on("plotly_relayout", ev => {
      if (ev["xaxis.range[0]"] !== undefined) {
        load(toIso(ev["xaxis.range[0]"]), toIso(ev["xaxis.range[1]"]));
      } else if (ev["xaxis.range"]) {
        load(toIso(ev["xaxis.range"][0]), toIso(ev["xaxis.range"][1]));
      } else if (ev["xaxis.autorange"]) {
        load();
      }
    });
  }

  function toIso(v) {
    // Plotly gives "2026-11-20 23:39:58.123" in UTC (the figure's x values are UTC).
    return String(v).replace(" ", "T") + (String(v).match(/[zZ]|[+-]\d\d:\d\d$/) ? "" : "Z");
  }

  // "Whole incident": no window asked, so the server answers with the incident's own span.
  document.getElementById("reset-zoom").addEventListener("click", () => load());

  // The metric panels picked are kept in the address, so a reload or a shared link keeps them.
  const form = document.getElementById("panel-form");
  if (form) form.addEventListener("submit", e => {
    e.preventDefault();
    const url = new URL(window.location.href);
    url.searchParams.delete("series");
    selectedSeries().forEach(s => url.searchParams.append("series", s));
    history.replaceState(null, "", url.toString());
    const r = currentRange();
    load(r[0], r[1]);
  });

  // Suspect links live in parts of the page that live updates replace: delegate.
  document.addEventListener("click", e => {
    const a = e.target.closest && e.target.closest(".suspect-link");
    if (!a) return;
    e.preventDefault();
    openDetail("f" + a.dataset.finding);
    const at = new Date(a.dataset.at).getTime();
    if (isFinite(at)) load(new Date(at - 3600e3).toISOString(), new Date(at + 3600e3).toISOString());
  });
  // A note added or removed elsewhere on the page: redraw the same window with its lane.
  document.body.addEventListener("collab-changed", () => { const r = currentRange(); load(r[0], r[1]); });
  window.addEventListener("load", () => load());

  // --- live updates ------------------------------------------------------------------------
  // Every few seconds ask the incident's version (an ETag'd, body-less 304 when nothing
  // changed; see timeline/views/live.py for why polling and not a stream). When it changes,
  // refresh in place: the figure for the same window (the zoom stays), the verdict, suspects
  // and warnings from a fresh render of this page, the event table with its filters and page,
  // and the hypotheses panel. The side panel's open detail is left as it is.
  const POLL_MS = 4000;
  const PARTS = ["verdict", "suspects", "analysis-warnings", "analysis-state", "files-count"];
  let etag = null;

  function editing(node) {
    return node && node.contains(document.activeElement) && document.activeElement !== document.body;
  }

  function refreshParts() {
    return fetch(window.location.href, {credentials: "same-origin", cache: "no-store"})
      .then(r => r.ok ? r.text() : Promise.reject(new Error("HTTP " + r.status)))
      .then(html => {
        const doc = new DOMParser().parseFromString(html, "text/html");
        PARTS.forEach(id => {
          const old = document.getElementById(id), fresh = doc.getElementById(id);
          if (!old || !fresh || editing(old)) return;
          const openDetails = Array.from(old.querySelectorAll("details[id]")).filter(d => d.open).map(d => d.id);
          const node = document.importNode(fresh, true);
          old.replaceWith(node);
          openDetails.forEach(d => { const n = document.getElementById(d); if (n) n.open = true; });
          if (window.htmx) htmx.process(node);
        });
      });
  }

  function refreshTable() {
    const box = document.getElementById("event-table");
    const filters = box && box.querySelector("form.filters");
    if (!filters || editing(box)) return;
    const params = new URLSearchParams(new FormData(filters));
    const table = box.querySelector(".event-table");
    if (table && table.dataset.page) params.set("page", table.dataset.page);
    htmx.ajax("GET", filters.getAttribute("hx-get") + "?" + params.toString(), {target: "#event-table", swap: "innerHTML"});
  }

  function refresh(version) {
    const r = currentRange();
    el.dataset.version = version;
    return Promise.all([load(r[0], r[1]), refreshParts()]).then(() => {
      refreshTable();
      if (!editing(document.getElementById("hypotheses-panel"))) {
        document.body.dispatchEvent(new CustomEvent("live-changed"));
      }
      el.dataset.liveUpdates = String(Number(el.dataset.liveUpdates || 0) + 1);
    });
  }

  let busy = false;
  function poll() {
    if (busy || document.hidden || !el.dataset.versionUrl) return;
    busy = true;
    const headers = etag ? {"If-None-Match": etag} : {};
    fetch(el.dataset.versionUrl, {credentials: "same-origin", cache: "no-store", headers})
      .then(r => {
        if (r.status === 304) return null;
        if (!r.ok) throw new Error("HTTP " + r.status);
        etag = r.headers.get("ETag");
        return r.json();
      })
      .then(body => {
        if (body && body.version !== el.dataset.version) return refresh(body.version);
      })
      .catch(() => { /* offline or logged out: try again at the next tick */ })
      .finally(() => { busy = false; });
  }
  window.setInterval(poll, POLL_MS);
})();
