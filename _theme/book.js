/* The book's script on top of sphinx-book-theme (_config.yml: html_static_path and html_js_files).

   Figures at their own size. A figure is drawn for the desktop column (688 px): its text is at least 9 pt there.
   A page narrower than the figure (a 390-px phone; a twelve-panel grid on any screen) scales it down, and its text
   with it: a schematic's 9-pt labels are about 4.5 pt on a phone. Such a figure is marked "zoomable" (a zoom-in
   cursor and a line under it); a tap, a click or Enter shows it at its own size in a box that scrolls sideways, and
   a second one fits it to the column again. Figures already at their own size are left alone.
   tests/browser/test_layout.py checks it. */
/* Runs fn once the page's HTML is parsed (at once if it already is); every part below starts with it. */
function bookOnReady(fn) {
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", fn);
  } else {
    fn();
  }
}

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
  bookOnReady(markAll);
  window.addEventListener("resize", markAll);
})();

/* The sidebars' buttons on phones and tablets. Below 992 px the theme hides the sidebars and shows ☰ (chapters)
   and ≣ (this page's contents) in the article header; a tap should open each as a drawer. pydata-sphinx-theme 0.17
   binds its drawer, and sphinx-book-theme its wide-screen collapse, to the *first* .primary-toggle and
   .secondary-toggle of the page (document.querySelector), which 0.17 added, hidden, to the top bar: the visible
   buttons only showed a tooltip (pydata/pydata-sphinx-theme#2451). Each other button hands its click to the first
   one, so the themes' own code opens the drawer (or, at 992 px and wider, collapses the chapter list), and focus
   stays on the button that was used. tests/browser/test_navigation.py taps them at 390, 768 and 1,280 px. */
(function () {
  "use strict";

  function forward(selector) {
    var buttons = document.querySelectorAll(selector);
    var bound = buttons[0];
    for (var i = 1; i < buttons.length; i++) {
      buttons[i].addEventListener("click", function (event) {
        event.preventDefault();
        event.stopImmediatePropagation();
        bound.click();
      });
    }
  }

  function setUp() {
    forward(".primary-toggle");
    forward(".secondary-toggle");
  }

  bookOnReady(setUp);
})();

/* Search results: a snippet shows a formula as text ("K · V"), not as its TeX source ("\(K \cdot V\)"), which the
   pages' MathJax would have typeset but the search page reads raw. Sphinx's searchtools.js reads each result's
   page through Search.htmlToText; the formulas are rewritten before it. tests/browser/test_navigation.py. */
(function () {
  "use strict";
  var SYMBOLS = {
    cdot: "·", times: "×", top: "ᵀ", sqrt: "√", sum: "∑", prod: "∏", in: "∈", le: "≤", ge: "≥", leq: "≤",
    geq: "≥", ne: "≠", neq: "≠", approx: "≈", infty: "∞", to: "→", rightarrow: "→", dots: "…", ldots: "…",
    cdots: "⋯", alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", theta: "θ", lambda: "λ", mu: "μ",
    pi: "π", sigma: "σ", phi: "φ", omega: "ω", Sigma: "Σ", log: "log", exp: "exp", max: "max", min: "min",
  };

  function texToText(tex) {
    return tex
      .replace(/\\[()[\]]/g, "")
      .replace(/\\(?:text|mathrm|mathbf|operatorname|texttt|mathit)\{([^{}]*)\}/g, "$1")
      .replace(/\\frac\{([^{}]*)\}\{([^{}]*)\}/g, "$1/$2")
      .replace(/\\([A-Za-z]+)/g, function (all, name) { return name in SYMBOLS ? SYMBOLS[name] : ""; })
      .replace(/\\[,;:! ]/g, " ")
      .replace(/[{}]/g, "")
      .replace(/\^ᵀ/g, "ᵀ")
      .replace(/\s+/g, " ")
      .trim();
  }

  function patch() {
    if (typeof Search === "undefined" || !Search.htmlToText || Search.bookPatched) return;
    var original = Search.htmlToText;
    Search.htmlToText = function (htmlString, anchor) {
      var doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll("span.math, div.math").forEach(function (m) {
        m.textContent = " " + texToText(m.textContent) + " ";
      });
      return original(doc.documentElement.outerHTML, anchor);
    };
    Search.bookPatched = true;
  }

  bookOnReady(patch);
})();

/* Folded solutions: sphinx-togglebutton names every button "Toggle hidden content"; a screen reader's list of
   buttons then reads the same words eight times a page. Each is named for what it opens ("Show or hide: Solution
   to Exercise 3"). tests/browser/test_navigation.py. */
(function () {
  "use strict";

  function name() {
    document.querySelectorAll(".admonition .toggle-button").forEach(function (button) {
      var title = button.closest(".admonition").querySelector(".admonition-title");
      var text = title ? title.textContent.replace(/\s+/g, " ").trim() : "";
      if (text) button.setAttribute("aria-label", "Show or hide: " + text);
    });
  }

  window.addEventListener("load", name);
})();

/* Sliders that stay under the finger: a slider's label (the walk's "stage 9: ...") wraps to more or fewer lines
   from one frame to the next, and the slider below it jumped up and down as a phone reader dragged it. The label
   keeps the height of its tallest text. tests/browser/test_navigation.py. */
(function () {
  "use strict";

  function reserve(slider) {
    var value = slider.querySelector(".figure-slider-value");
    var data = slider.querySelector(".figure-slider-data");
    if (!value || !data) return;
    var labels = JSON.parse(data.textContent).labels || [];
    var shown = value.textContent;
    var tallest = 0;
    value.style.display = "inline-block";
    value.style.minHeight = "";
    labels.forEach(function (text) {
      value.textContent = text;
      tallest = Math.max(tallest, value.getBoundingClientRect().height);
    });
    value.textContent = shown;
    value.style.minHeight = tallest + "px";
  }

  function reserveAll() {
    document.querySelectorAll(".figure-slider").forEach(reserve);
  }

  bookOnReady(reserveAll);
  window.addEventListener("resize", reserveAll);
})();

/* Chinese in the text (the sources' terms, 自注意力, in the prose and the glossary) is marked lang="zh", so that a
   screen reader switches voice and the browser picks a Chinese font for it. tests/browser/test_navigation.py. */
(function () {
  "use strict";
  var HAN = /[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]+(?:[\s·・,，]*[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]+)*/g;
  var SKIP = "script, style, code, pre, mjx-container, svg, [lang=\"zh\"]";

  function mark(root) {
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: function (node) {
        HAN.lastIndex = 0;
        if (!HAN.test(node.nodeValue)) return NodeFilter.FILTER_REJECT;
        return node.parentElement.closest(SKIP) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT;
      },
    });
    var nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    nodes.forEach(function (node) {
      var text = node.nodeValue;
      var parts = document.createDocumentFragment();
      var last = 0;
      text.replace(HAN, function (run, at) {
        if (at > last) parts.appendChild(document.createTextNode(text.slice(last, at)));
        var span = document.createElement("span");
        span.lang = "zh";
        span.textContent = run;
        parts.appendChild(span);
        last = at + run.length;
      });
      if (last < text.length) parts.appendChild(document.createTextNode(text.slice(last)));
      node.parentNode.replaceChild(parts, node);
    });
  }

  function markArticle() {
    var article = document.querySelector(".bd-article");
    if (article) mark(article);
  }

  bookOnReady(markArticle);
})();

/* Keyboard users keep their place: sphinx-book-theme blurs the theme switch after every click (to hide its tooltip),
   which sends the focus of a reader who pressed Enter or Space on it back to the top of the page. A click made from
   the keyboard (event.detail 0) puts the focus back on the button. tests/browser/test_navigation.py. */
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest(".theme-switch-button") : null;
    if (!button || event.detail !== 0) return;
    setTimeout(function () { button.focus(); }, 0);
  });
})();

/* The attention explorer's map scrolls sideways in its box when it is wider than the screen (a long sentence, a
   phone): a line under it says so, since a touch screen shows no scroll bar until the finger moves.
   tests/browser/test_navigation.py. */
(function () {
  "use strict";
  var HINT = "attn-scroll-hint";

  function hint(figure) {
    var next = figure.nextElementSibling;
    var has = next && next.classList.contains(HINT);
    var wide = figure.scrollWidth > figure.clientWidth + 1;
    if (wide && !has) {
      var line = document.createElement("p");
      line.className = HINT;
      line.textContent = "⟷ the map is wider than the page: scroll it sideways";
      figure.insertAdjacentElement("afterend", line);
    } else if (!wide && has) {
      next.remove();
    }
  }

  function hintAll() {
    document.querySelectorAll(".attn-explorer .attn-figure").forEach(hint);
  }

  var pending = false;
  function soon() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () {
      pending = false;
      hintAll();
    });
  }

  function watch() {
    var article = document.querySelector(".bd-article");
    if (!article) return;
    new MutationObserver(function (changes) {
      if (changes.some(function (c) { return !(c.target.classList && c.target.classList.contains(HINT)); })) soon();
    }).observe(article, { childList: true, subtree: true });
    hintAll();
  }

  bookOnReady(watch);
  window.addEventListener("resize", soon);
})();
