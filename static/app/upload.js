// Upload page: files dropped on the form are submitted with it (a static file, not inline:
// the Content-Security-Policy runs only scripts served from this site).
(function () {
  const zone = document.getElementById("dropzone"), input = document.getElementById("files");
  if (!zone || !input) return;
  ["dragenter", "dragover"].forEach(t => zone.addEventListener(t, e => { e.preventDefault(); zone.classList.add("over"); }));
  ["dragleave", "drop"].forEach(t => zone.addEventListener(t, e => { e.preventDefault(); zone.classList.remove("over"); }));
  zone.addEventListener("drop", e => { input.files = e.dataTransfer.files; zone.submit(); });
})();
