// The content upload's progress bar: the one place the console needs script. The file goes as the request's body
// (PUT, streamed to disk by the server), with the session's CSRF token and the note in headers.
"use strict";
(function () {
  var form = document.getElementById("upload");
  if (!form) return;
  var progress = document.getElementById("u-progress");
  var status = document.getElementById("u-status");
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var file = document.getElementById("u-file").files[0];
    if (!file) return;
    var name = document.getElementById("u-name").value.trim() || file.name;
    var request = new XMLHttpRequest();
    request.open("PUT", form.dataset.base + encodeURIComponent(name) + "?app=" + encodeURIComponent(form.dataset.app));
    request.setRequestHeader("Content-Type", file.type || "application/octet-stream");
    request.setRequestHeader("X-CSRF-Token", form.dataset.csrf);
    request.setRequestHeader("X-Console-Note", encodeURIComponent(document.getElementById("u-note").value));
    progress.hidden = false;
    progress.value = 0;
    status.textContent = "Uploading " + name + "…";
    request.upload.addEventListener("progress", function (e) {
      if (e.lengthComputable) progress.value = Math.round((e.loaded / e.total) * 100);
    });
    request.addEventListener("load", function () {
      if (request.status >= 200 && request.status < 300) {
        progress.value = 100;
        status.textContent = "Uploaded " + name + ".";
        window.location.reload();
      } else {
        var message = "The upload was refused (" + request.status + ")";
        try { message += ": " + JSON.parse(request.responseText).error.message; } catch (e) {}
        status.textContent = message;
      }
    });
    request.addEventListener("error", function () { status.textContent = "The upload failed: the connection broke."; });
    request.send(file);
  });
})();
