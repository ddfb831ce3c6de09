(function () {
  var fig = JSON.parse(document.getElementById("pm-figure-data").textContent);
  Plotly.newPlot("pm-figure", fig.data, fig.layout, {displaylogo: false, responsive: true})
    .then(function () { document.body.dataset.figure = "ready"; });
})();
