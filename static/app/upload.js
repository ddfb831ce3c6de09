// Upload page: the chosen (or dropped) files are sent with XMLHttpRequest so the page can show
// how much of them has reached the server (bytes sent of the total, and a percentage); once the
// server has them it sends the page back, where the files' ingest progress takes over. Without
// JavaScript the form posts as a plain form. A static file, not inline: the Content-Security-
// Policy runs only scripts served from this site.
(function () {
  "use strict";
  const zone = document.getElementById("dropzone"), input = document.getElementById("files");
  if (!zone || !input) return;
  const box = document.getElementById("upload-progress-box");
  const bar = document.getElementById("upload-progress");
  const text = document.getElementById("upload-progress-text");
  const button = zone.querySelector("button[type=submit], button:not([type])");
  let busy = false;

  function size(bytes) {
    if (bytes >= 1024 * 1024) return (bytes / (1024 * 1024)).toFixed(1) + " MB";
    if (bytes >= 1024) return (bytes / 1024).toFixed(1) + " KB";
    return bytes + " B";
  }

  function show(sent, total, note) {
    const percent = total ? Math.floor((sent / total) * 100) : 0;
    bar.max = total || 1;
    bar.value = Math.min(sent, total);
    bar.dataset.percent = String(percent);
    text.textContent = `${size(sent)} of ${size(total)} sent (${percent}%)` + (note ? ` · ${note}` : "");
  }

  function send() {
    if (busy || !input.files.length || !window.XMLHttpRequest || !box) return false;
    busy = true;
    const data = new FormData(zone);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", zone.action || window.location.href);
    xhr.setRequestHeader("X-Upload-Progress", "1");  // answer with where to go, not a redirect
    box.hidden = false;
    if (button) button.disabled = true;
    let total = 0;
    for (const f of input.files) total += f.size;
    show(0, total, "");
    xhr.upload.addEventListener("progress", e => {
      if (e.lengthComputable) show(e.loaded, e.total, "");
    });
    xhr.upload.addEventListener("load", () => {
      show(Number(bar.max), Number(bar.max), "the server is storing the files…");
    });
    xhr.addEventListener("load", () => {
      let next = window.location.href;
      try { next = JSON.parse(xhr.responseText).next || next; } catch (err) { /* a plain page */ }
      if (xhr.status >= 400) {
        text.textContent = `The upload failed (HTTP ${xhr.status}); nothing was stored.`;
        bar.dataset.failed = "yes";
        busy = false;
        if (button) button.disabled = false;
        return;
      }
      bar.dataset.done = "yes";
      window.location.assign(next);
    });
    xhr.addEventListener("error", () => {
      text.textContent = "The upload was interrupted (network error); try again.";
      bar.dataset.failed = "yes";
      busy = false;
      if (button) button.disabled = false;
    });
    xhr.send(data);
    return true;
  }

  zone.addEventListener("submit", e => { if (send()) e.preventDefault(); });
  ["dragenter", "dragover"].forEach(t => zone.addEventListener(t, e => { e.preventDefault(); zone.classList.add("over"); }));
  ["dragleave", "drop"].forEach(t => zone.addEventListener(t, e => { e.preventDefault(); zone.classList.remove("over"); }));
  zone.addEventListener("drop", e => {
    input.files = e.dataTransfer.files;
    if (!send()) zone.requestSubmit();
  });
})();
