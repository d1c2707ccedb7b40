/* The book's script on top of sphinx-book-theme (_config.yml: html_static_path and html_js_files).

   Figures at their own size. A figure is drawn for the desktop column (688 px): its text is at least 9 pt there.
   A page narrower than the figure (a 390-px phone; a twelve-panel grid on any screen) scales it down, and its text
   with it: a schematic's 9-pt labels are about 4.5 pt on a phone. Such a figure is marked "zoomable" (a zoom-in
   cursor and a line under it); a tap, a click or Enter shows it at its own size in a box that scrolls sideways, and
   a second one fits it to the column again. Figures already at their own size are left alone.
   tests/browser/test_layout.py checks it. */
(function () {
  "use strict";
  var FIGURES = ".bd-article .cell_output img, .bd-article figure img";
  var ZOOMABLE = "figure-zoomable";
  var ZOOMED = "figure-zoomed";

  function shownNarrower(img) {
    return img.naturalWidth > 0 && img.getBoundingClientRect().width < img.naturalWidth - 1;
  }

  function mark(img) {
    var box = img.parentElement;
    var zoomed = box.classList.contains(ZOOMED);
    var zoomable = zoomed || shownNarrower(img);
    box.classList.toggle(ZOOMABLE, zoomable);
    if (zoomable) {
      img.tabIndex = 0;
      img.title = zoomed ? "Fit the figure to the page" : "Show the figure at its own size";
    } else {
      img.removeAttribute("tabindex");
      img.removeAttribute("title");
    }
  }

  function markAll() {
    document.querySelectorAll(FIGURES).forEach(function (img) {
      if (img.complete) {
        mark(img);
      } else {
        img.addEventListener("load", function () { mark(img); }, { once: true });
      }
    });
  }

  function toggle(img) {
    var box = img.parentElement;
    if (!box.classList.contains(ZOOMABLE)) return false;
    box.classList.toggle(ZOOMED);
    mark(img);
    return true;
  }

  document.addEventListener("click", function (event) {
    var img = event.target.closest ? event.target.closest(FIGURES) : null;
    if (img && toggle(img)) event.preventDefault();
  });
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Enter" && event.key !== " ") return;
    var img = document.activeElement;
    if (img && img.matches && img.matches(FIGURES) && toggle(img)) event.preventDefault();
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", markAll);
  } else {
    markAll();
  }
  window.addEventListener("resize", markAll);
})();
