// Covenant console: the only script the pages load (the Content-Security-Policy allows no
// other). Pages work without it; it only asks for confirmation before governance actions.
"use strict";
document.addEventListener("submit", function (event) {
  var form = event.target;
  var question = form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});
