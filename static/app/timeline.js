// The timeline page: fetch the figure for a window, re-fetch on zoom, open details on click,
// pick a moment for notes and marks (a click on a marker or on empty chart space).
(function () {
  "use strict";
  const el = document.getElementById("timeline-chart");
  if (!el) return;
  const status = document.getElementById("chart-status");
  let pending = null;
  let loaded = false;

  function selectedSeries() {
    const form = document.getElementById("panel-form");
    if (!form) return [];
    return Array.from(form.querySelectorAll("input[name=series]:checked")).map(i => i.value);
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
          status.textContent = total ? `${shown.toLocaleString()} of ${total.toLocaleString()} points shown` : "";
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

  // The moment picked for a note or a mark: datetime-local inputs hold UTC wall time.
  function pickTime(ms) {
    if (!isFinite(ms)) return;
    const value = new Date(ms).toISOString().slice(0, 19);
    document.querySelectorAll("input.picked-time").forEach(i => { i.value = value; });
    el.dataset.picked = value;
  }

  function currentRange() {
    const xa = el._fullLayout && el._fullLayout.xaxis;
    if (!xa || xa.autorange) return [null, null];
    return [toIso(xa.range[0]), toIso(xa.range[1])];
  }

  // Plotly fires plotly_click only on points: a click on empty plot area picks its time here.
  function onBackgroundClick(ev) {
    const full = el._fullLayout;
    if (!full || !full.xaxis || ev.target.closest(".modebar")) return;
    const xa = full.xaxis, box = el.getBoundingClientRect();
    const px = ev.clientX - box.left - xa._offset;
    const py = ev.clientY - box.top;
    if (px < 0 || px > xa._length || py < full._size.t || py > full.height - full._size.b) return;
    pickTime(xa.p2c(px));
  }

  function bind() {
    el.on("plotly_click", ev => {
      const pt = ev.points && ev.points[0];
      if (pt && pt.x !== undefined) pickTime(Date.parse(toIso(pt.x)));
      if (pt && pt.customdata && pt.customdata[0] !== undefined) openDetail(pt.customdata[0]);
    });
    el.addEventListener("click", onBackgroundClick);
    el.on("plotly_relayout", ev => {
      if (ev["xaxis.range[0]"] !== undefined) {
        load(toIso(ev["xaxis.range[0]"]), toIso(ev["xaxis.range[1]"]));
      } else if (ev["xaxis.autorange"]) {
        load();
      }
    });
  }

  function toIso(v) {
    // Plotly gives "2026-11-20 23:39:58.123" in UTC (the figure's x values are UTC).
    return String(v).replace(" ", "T") + (String(v).match(/[zZ]|[+-]\d\d:\d\d$/) ? "" : "Z");
  }

  document.getElementById("reset-zoom").addEventListener("click", () => load());
  const form = document.getElementById("panel-form");
  if (form) form.addEventListener("submit", e => { e.preventDefault(); load(); });
  document.querySelectorAll(".suspect-link").forEach(a => a.addEventListener("click", e => {
    e.preventDefault();
    openDetail("f" + a.dataset.finding);
    const at = new Date(a.dataset.at).getTime();
    load(new Date(at - 3600e3).toISOString(), new Date(at + 3600e3).toISOString());
  }));
  // A note added or removed elsewhere on the page: redraw the same window with its lane.
  document.body.addEventListener("collab-changed", () => { const r = currentRange(); load(r[0], r[1]); });
  window.addEventListener("load", () => load());
})();
