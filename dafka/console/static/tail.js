// The live tail: polls /records.json from the next offset; every peer-controlled string
// is placed with textContent (never as HTML).
(function () {
  "use strict";
  var box = document.getElementById("tail");
  var table = document.getElementById("tail-records");
  var status = document.getElementById("tail-status");
  var next = Number(box.dataset.offset);
  var MAX_ROWS = 500;
  function cell(row, text) {
    var td = document.createElement("td");
    td.textContent = text;
    row.appendChild(td);
  }
  function poll() {
    var q = new URLSearchParams({topic: box.dataset.topic, partition: box.dataset.partition,
                                 offset: String(next), limit: "100"});
    fetch("/records.json?" + q.toString(), {credentials: "same-origin"})
      .then(function (r) {
        if (r.status === 503) { return [503, null]; }  // the console is busy: poll again
        return r.json().then(function (body) { return [r.status, body]; });
      })
      .then(function (res) {
        var body = res[1];
        if (res[0] === 503) { status.textContent = "console busy, trying again · next offset " + next; return; }
        if (res[0] !== 200) { status.textContent = "error " + res[0]; return; }
        body.records.forEach(function (rec) {
          var tr = document.createElement("tr");
          [String(rec.offset), rec.time, rec.key, rec.value, rec.signature].forEach(function (t) { cell(tr, t); });
          table.appendChild(tr);
          next = rec.offset + 1;
        });
        while (table.rows.length > MAX_ROWS) { table.deleteRow(1); }
        status.textContent = (body.error ? body.error + " · " : "") + "next offset " + next;
      })
      .catch(function (e) { status.textContent = "poll failed: " + e; })
      .finally(function () { setTimeout(poll, 1000); });
  }
  poll();
})();
