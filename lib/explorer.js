// The attention explorer: a heatmap of one attention map with the tokens on both axes. The reader picks a
// sentence, the kind of attention (encoder self, decoder self, cross), the layer and a head or the mean of the
// heads; pointing at a cell shows the query token, the key token and the weight, pointing at a token its whole
// row or column. Mouse, touch and keyboard alike: a mouse previews what it hovers; a click or a tap pins a cell
// or a token (a second tap on it, a tap elsewhere or Escape clears); focused, the map moves its pinned cell with
// the arrow keys, Home and End.
//
// Tokens are shown as words: SentencePiece's word-start mark is dropped ("▁Hund" -> "Hund") and a piece that
// continues a word gets a leading hyphen ("ing" -> "-ing"); see tokenLabel. The readout's data attributes keep
// the tokens as the data has them.
//
// One ES module, no dependencies, for the static site and for a notebook (it lives in lib/ because both use it):
//   the site: import { mount } from "./explorer.js";  const view = mount(element, data);  view.setData(other);
//     (the {attention-explorer} directive of tools/sphinxext/book_site.py inlines this file and calls mountAll);
//   a notebook: lib.explorer.ExplorerWidget, an anywidget whose _esm is this file: the default export's
//     render({ model, el }) reads the JSON strings in model.get("data_json") and model.get("view_json").
//
// `data` is what lib.explorer.explorer_data returns (tests/unit/test_explorer.py describes it):
//   { decimals: 3, sentences: [{ source, translation, src_tokens, tgt_tokens, tgt_input_tokens,
//                                maps: { encoder: [layer][head][query][key], decoder: ..., cross: ... } }] }
// Any kind may be missing (the live translation page has only "cross"). Axes, as lib.translate labels them:
//   encoder  rows src_tokens,  columns src_tokens
//   decoder  rows tgt_tokens (row t predicted tgt_tokens[t]), columns tgt_input_tokens (<s> and the prefix)
//   cross    rows tgt_tokens,  columns src_tokens

const KINDS = {
  encoder: "encoder self-attention",
  decoder: "decoder self-attention (causal)",
  cross: "cross-attention (decoder → encoder)",
};
const SVG = "http://www.w3.org/2000/svg";
const BLUES = [
  [247, 251, 255],
  [198, 219, 239],
  [107, 174, 214],
  [33, 113, 181],
  [8, 48, 107],
];

const CSS = `
.attn-explorer { font: 14px/1.4 system-ui, sans-serif; margin: 1em 0; }
.attn-explorer .attn-controls { display: flex; flex-wrap: wrap; gap: .5em 1.2em; align-items: center; }
.attn-explorer label { display: inline-flex; gap: .4em; align-items: center; max-width: 100%; }
.attn-explorer select { font: inherit; padding: .15em .3em; max-width: 28em; min-width: 0; flex: 0 1 auto; }
.attn-explorer select:focus-visible { outline: 3px solid #f59e0b; outline-offset: 2px; }
/* The readout and, hidden under it, the longest texts it can show: its box is as high as the tallest of them at
   any width, so that a shorter text never pulls the map up under the pointer. */
.attn-explorer .attn-readout-box { display: grid; margin: .5em 0; font-variant-numeric: tabular-nums; }
.attn-explorer .attn-readout-box > p { grid-area: 1 / 1; margin: 0; min-height: 1.5em; }
.attn-explorer .attn-readout-sizer { visibility: hidden; }
.attn-explorer .attn-figure { overflow-x: auto; contain: inline-size; } /* a wide map scrolls, not the page */
.attn-explorer svg { display: block; -webkit-tap-highlight-color: transparent; }
/* The focus ring is drawn inside the scrolling box, which would clip a ring drawn around it. */
.attn-explorer svg:focus { outline: none; }
.attn-explorer svg:focus-visible { outline: 3px solid #f59e0b; outline-offset: -3px; }
@supports selector(:has(*)) {
  .attn-explorer svg:focus-visible { outline: none; }
  .attn-explorer .attn-figure:has(> svg:focus-visible) { outline: 3px solid #f59e0b; outline-offset: -3px; }
}
.attn-explorer text { fill: currentColor; font-size: 12px; cursor: default; }
.attn-explorer text.attn-active { font-weight: 700; fill: #b45309; }
.attn-explorer .attn-band { fill: #f59e0b; opacity: .18; pointer-events: none; }
.attn-explorer .attn-cursor { fill: none; stroke: #f59e0b; stroke-width: 2.5; pointer-events: none; }
.attn-explorer .attn-cursor.attn-pinned { stroke: #b45309; stroke-width: 3.5; }
.attn-explorer .attn-legend text { font-size: 11px; }
`;

function injectStyle(doc) {
  if (doc.getElementById("attn-explorer-style")) return;
  const style = doc.createElement("style");
  style.id = "attn-explorer-style";
  style.textContent = CSS;
  doc.head.appendChild(style);
}

function el(doc, tag, attrs = {}, ns = null) {
  const node = ns ? doc.createElementNS(ns, tag) : doc.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

/** The colour of a weight in [0, 1] (0 = near white, 1 = dark blue), interpolated between the BLUES stops. */
export function colour(v) {
  const x = Math.min(1, Math.max(0, v)) * (BLUES.length - 1);
  const i = Math.min(BLUES.length - 2, Math.floor(x));
  const f = x - i;
  const rgb = BLUES[i].map((a, k) => Math.round(a + f * (BLUES[i + 1][k] - a)));
  return `rgb(${rgb.join(",")})`;
}

/** The row tokens, column tokens and axis names of a kind of map for a sentence. */
export function axes(sentence, kind) {
  const src = sentence.src_tokens;
  const tgt = sentence.tgt_tokens;
  const tgtIn = sentence.tgt_input_tokens ?? ["<s>", ...tgt.slice(0, -1)];
  if (kind === "encoder") return { rows: src, cols: src, rowName: "query", colName: "key" };
  if (kind === "decoder") return { rows: tgt, cols: tgtIn, rowName: "query predicting", colName: "key" };
  return { rows: tgt, cols: src, rowName: "query predicting", colName: "key" };
}

/** The map to draw: one head's (query, key) matrix, or the mean over the heads of a layer (head = "mean"). */
export function selectMap(sentence, kind, layer, head) {
  const heads = sentence.maps[kind][layer];
  if (head !== "mean") return heads[head];
  return heads[0].map((row, q) => row.map((_, k) => heads.reduce((s, h) => s + h[q][k], 0) / heads.length));
}

const WORD_START = "\u2581"; // SentencePiece's (Metaspace's) mark of a word's first piece
const WORD_PIECE = /^[\p{L}\p{N}]/u;

/**
 * How a token is shown: a word's first piece without the word-start mark ("▁Hund" → "Hund", a lone "▁" → "␣"),
 * and, where the tokens mark word starts (`metaspace`), a piece that continues a word with a leading hyphen
 * ("ing" → "-ing"); punctuation and special tokens ("." "</s>") as they are. lib/token_labels.py labels the
 * book's figures by the same rule (a test holds the two to each other).
 */
export function tokenLabel(token, metaspace = true) {
  if (token.startsWith(WORD_START)) return token.length > 1 ? token.slice(1).replaceAll(WORD_START, " ") : "␣";
  const shown = token.replaceAll(WORD_START, " ");
  return metaspace && WORD_PIECE.test(token) ? `-${shown}` : shown;
}

/** Whether a sentence's tokens mark word starts (the book's tokenizer does), so that continuations are marked. */
export function marksWordStarts(sentence) {
  return [...(sentence.src_tokens ?? []), ...(sentence.tgt_tokens ?? [])].some((t) => t.startsWith(WORD_START));
}

/**
 * Draw an explorer into `root` (its children are replaced).
 *
 * @param {HTMLElement} root  the element that holds the explorer.
 * @param {object} data  { decimals, sentences: [...] } as described at the top of this file.
 * @param {object} [options]  { kind, layer, head, sentence }: the first view (default: cross or the first kind
 *   present, the last layer, the mean of the heads, sentence 0); caption: false hides the line
 *   "source → translation" above the map (for a page that shows the translation already).
 * @returns {{ setData(data, options?): void, select(choice): void, state: object, destroy(): void }}
 */
export function mount(root, data, options = {}) {
  const doc = root.ownerDocument;
  const win = doc.defaultView;
  injectStyle(doc);
  root.replaceChildren();
  root.classList.add("attn-explorer");
  // cursor: the cell the arrow keys start from (the last cell pointed at, tapped or moved to)
  const state = { sentence: 0, kind: "cross", layer: 0, head: "mean", cursor: null };
  // What stays shown when no mouse points at the map: { r, c } (a cell; a token's row or column has the other
  // null), set by a click, a tap or the keyboard, cleared by a second tap, a tap elsewhere or Escape.
  let pinned = null;
  let lastPointer = { time: -Infinity, type: "mouse" }; // the latest pointerdown or pointerup on the map
  const uid = `attn${Math.random().toString(36).slice(2, 8)}`;

  const controls = el(doc, "div", { class: "attn-controls" });
  const makeSelect = (name, text) => {
    const label = el(doc, "label", { for: `${uid}-${name}` });
    label.append(text);
    const select = el(doc, "select", { id: `${uid}-${name}`, "data-control": name });
    label.append(select);
    controls.append(label);
    return select;
  };
  const sentenceSelect = makeSelect("sentence", "Sentence");
  const kindSelect = makeSelect("kind", "Attention");
  const layerSelect = makeSelect("layer", "Layer");
  const headSelect = makeSelect("head", "Head");
  const caption = el(doc, "p", { class: "attn-caption" });
  const readout = el(doc, "p", { class: "attn-readout", "aria-live": "polite", id: `${uid}-readout` });
  const sizers = [0, 1, 2, 3].map(() => el(doc, "p", { class: "attn-readout-sizer", "aria-hidden": "true" }));
  const readoutBox = el(doc, "div", { class: "attn-readout-box" });
  readoutBox.append(...sizers, readout);
  const figure = el(doc, "div", { class: "attn-figure" });
  root.append(controls, caption, readoutBox, figure);

  let current = null; // { svg, sentence, map, rows, cols, labels, ... } of what is drawn
  const decimals = () => (Number.isInteger(data.decimals) ? data.decimals : 3);
  const fmt = (w) => w.toFixed(decimals());
  const kinds = (s) => Object.keys(KINDS).filter((k) => s.maps && s.maps[k] && s.maps[k].length);

  // The width of a label in pixels, as the browser draws it in bold (the active label's weight).
  const context = (() => {
    try {
      const c = doc.createElement("canvas").getContext("2d");
      c.font = "700 12px system-ui, sans-serif";
      return c;
    } catch {
      return null;
    }
  })();
  const textWidth = (text) => (context ? context.measureText(text).width : 7.6 * text.length);

  function fillOptions(select, items, value) {
    select.replaceChildren(
      ...items.map(([v, text]) => {
        const option = el(doc, "option", { value: String(v) });
        option.textContent = text;
        return option;
      }),
    );
    select.value = String(value);
  }

  function syncControls() {
    const sentences = data.sentences;
    const shorten = (t) => (t.length > 60 ? `${t.slice(0, 57)}…` : t);
    fillOptions(
      sentenceSelect,
      sentences.map((s, i) => [i, `${i + 1}. ${shorten(s.source ?? s.src_tokens.join(" "))}`]),
      state.sentence,
    );
    sentenceSelect.parentElement.hidden = sentences.length < 2;
    const s = sentences[state.sentence];
    const present = kinds(s);
    if (!present.includes(state.kind)) state.kind = present.includes("cross") ? "cross" : present[0];
    fillOptions(kindSelect, present.map((k) => [k, KINDS[k]]), state.kind);
    kindSelect.parentElement.hidden = present.length < 2;
    const layers = s.maps[state.kind].length;
    if (!(state.layer >= 0 && state.layer < layers)) state.layer = layers - 1;
    // Layers and heads are counted from 0, as the book's chapters and lib count them.
    const last = (i, n) => (i === n - 1 && n > 1 ? " (last)" : "");
    fillOptions(layerSelect, [...Array(layers).keys()].map((l) => [l, `${l}${last(l, layers)}`]), state.layer);
    layerSelect.parentElement.hidden = layers < 2; // a recurrent model has one attention
    const heads = s.maps[state.kind][state.layer].length;
    if (state.head !== "mean" && !(state.head >= 0 && state.head < heads)) state.head = "mean";
    fillOptions(
      headSelect,
      [["mean", `mean of ${heads} heads`], ...[...Array(heads).keys()].map((h) => [h, `head ${h}`])],
      state.head,
    );
    headSelect.parentElement.hidden = heads < 2;
  }

  function draw() {
    syncControls();
    const s = data.sentences[state.sentence];
    const { rows, cols, rowName, colName } = axes(s, state.kind);
    const metaspace = marksWordStarts(s);
    const rowText = rows.map((t) => tokenLabel(t, metaspace));
    const colText = cols.map((t) => tokenLabel(t, metaspace));
    const map = selectMap(s, state.kind, state.layer, state.head);
    const max = Math.max(1e-9, ...map.flat());
    caption.textContent = s.translation !== undefined ? `${s.source} → ${s.translation}` : (s.source ?? "");
    caption.hidden = !caption.textContent || options.caption === false;

    // Cells of 30 px for a short sentence, smaller for a long one down to what a finger (coarse pointer) or a
    // mouse can still hit; a map wider than the page scrolls inside its box.
    const coarse = win?.matchMedia?.("(pointer: coarse)").matches;
    const cell = Math.max(coarse ? 20 : 14, Math.min(30, Math.floor(560 / Math.max(rows.length, cols.length))));
    // Column labels at -55° need 16 px between columns not to overlap; closer columns get upright labels.
    const angle = cell >= 16 ? -55 : -90;
    const longest = (labels) => Math.max(...labels.map(textWidth), textWidth("000"));
    const left = 12 + longest(rowText);
    const slant = angle === -90 ? 1 : Math.sin((55 * Math.PI) / 180); // the height of a label per pixel of its width
    const top = 16 + slant * longest(colText);
    const lastCol = angle === -90 ? 0 : Math.cos((55 * Math.PI) / 180) * textWidth(colText[colText.length - 1] ?? "");
    const width = left + cell * cols.length + Math.max(70, lastCol + 4);
    const height = top + cell * rows.length + 10;
    const svg = el(
      doc,
      "svg",
      {
        width,
        height,
        viewBox: `0 0 ${width} ${height}`,
        tabindex: "0",
        role: "img",
        "aria-roledescription": "heatmap",
        "aria-label":
          `${KINDS[state.kind]}, layer ${state.layer}, ` +
          `${state.head === "mean" ? "mean of the heads" : `head ${state.head}`}: ` +
          `${rows.length} query rows by ${cols.length} key columns. Arrow keys move between cells, Escape clears.`,
        "aria-describedby": readout.id,
      },
      SVG,
    );
    const cells = el(doc, "g", { class: "attn-cells" }, SVG);
    map.forEach((row, r) =>
      row.forEach((w, c) => {
        const rect = el(
          doc,
          "rect",
          {
            class: "attn-cell",
            x: left + c * cell,
            y: top + r * cell,
            width: cell,
            height: cell,
            fill: colour(w / max),
            "data-row": r,
            "data-col": c,
            "data-w": fmt(w),
          },
          SVG,
        );
        cells.append(rect);
      }),
    );
    const rowLabels = rowText.map((t, r) => {
      const text = el(
        doc,
        "text",
        { class: "attn-row-label", x: left - 6, y: top + (r + 0.5) * cell, "text-anchor": "end",
          "dominant-baseline": "central", "data-row": r, "data-token": rows[r] },
        SVG,
      );
      text.textContent = t;
      return text;
    });
    const colLabels = colText.map((t, c) => {
      const x = left + (c + 0.5) * cell;
      const attrs = { class: "attn-col-label", x, y: top - 6, transform: `rotate(${angle} ${x} ${top - 6})`,
        "data-col": c, "data-token": cols[c] };
      if (angle === -90) attrs["dominant-baseline"] = "central";
      const text = el(doc, "text", attrs, SVG);
      text.textContent = t;
      return text;
    });
    const rowBand = el(doc, "rect", { class: "attn-band", visibility: "hidden" }, SVG);
    const colBand = el(doc, "rect", { class: "attn-band", visibility: "hidden" }, SVG);
    const cursor = el(doc, "rect", { class: "attn-cursor", visibility: "hidden", width: cell, height: cell }, SVG);
    const legend = el(doc, "g", { class: "attn-legend" }, SVG);
    const lx = left + cell * cols.length + 14;
    const steps = 24;
    const lh = Math.min(160, cell * rows.length);
    for (let i = 0; i < steps; i++) {
      legend.append(
        el(doc, "rect", { x: lx, y: top + (lh * i) / steps, width: 12, height: lh / steps + 0.5,
          fill: colour(1 - i / steps) }, SVG),
      );
    }
    const maxText = el(doc, "text", { x: lx + 16, y: top + 8 }, SVG);
    maxText.textContent = fmt(max);
    const zeroText = el(doc, "text", { x: lx + 16, y: top + lh }, SVG);
    zeroText.textContent = "0";
    legend.append(maxText, zeroText);
    svg.append(cells, ...rowLabels, ...colLabels, rowBand, colBand, cursor, legend);
    figure.replaceChildren(svg);
    current = { svg, s, rows, cols, rowText, colText, rowName, colName, map, cell, left, top, rowLabels, colLabels,
      rowBand, colBand, cursor };
    pinned = null;
    size();
    const pointed = (event) => {
      lastPointer = { time: event.timeStamp, type: event.pointerType || "mouse" };
    };
    svg.addEventListener("pointerdown", pointed);
    svg.addEventListener("pointerup", pointed);
    svg.addEventListener("pointermove", onPointerMove);
    svg.addEventListener("pointerleave", (event) => {
      if (event.pointerType === "mouse") restore(); // (a finger "leaves" at the end of every tap)
    });
    svg.addEventListener("click", onClick);
    svg.addEventListener("keydown", onKey);
    svg.addEventListener("focus", onFocus);
    clear();
  }

  function band(rect, on, x, y, w, h) {
    rect.setAttribute("visibility", on ? "visible" : "hidden");
    if (on) for (const [k, v] of Object.entries({ x, y, width: w, height: h })) rect.setAttribute(k, v);
  }

  const CLEARED =
    "Point at or tap a cell or a token (tap it again or press Escape to clear; focus the map to use the arrow keys).";

  /** What the readout says of row r and/or column c (either may be null, not both). */
  function describe(r, c) {
    const { rowText, colText, rowName, colName, map } = current;
    if (r !== null && c !== null) {
      return `${rowName} “${rowText[r]}” → ${colName} “${colText[c]}”: ${fmt(map[r][c])}`;
    }
    if (r !== null) {
      const row = map[r];
      const best = row.indexOf(Math.max(...row));
      // The weights shown are rounded, so their sum is 1 only up to that rounding: it is shown to one decimal
      // fewer (1.00, not 1.003).
      const sum = row.reduce((a, b) => a + b, 0);
      return (
        `${rowName} “${rowText[r]}”: its weights sum to ${sum.toFixed(Math.max(0, decimals() - 1))} ` +
        `(each shown rounded to ${decimals()} decimals); the largest, ${fmt(row[best])}, ` +
        `is on ${colName} “${colText[best]}”`
      );
    }
    const column = map.map((row) => row[c]);
    const best = column.indexOf(Math.max(...column));
    return (
      `${colName} “${colText[c]}”: attended to most, ${fmt(column[best])}, ` +
      `by ${rowName} “${rowText[best]}”`
    );
  }

  /** Fill the readout's hidden sizers: the cleared text and the longest text of each kind this map can give. */
  function size() {
    const rowIndex = [...current.rows.keys()];
    const colIndex = [...current.cols.keys()];
    const longest = (texts) => texts.reduce((a, b) => (b.length > a.length ? b : a), "");
    const texts = [
      CLEARED,
      longest(rowIndex.map((r) => describe(r, null))),
      longest(colIndex.map((c) => describe(null, c))),
      longest(rowIndex.flatMap((r) => colIndex.map((c) => describe(r, c)))),
    ];
    sizers.forEach((sizer, i) => {
      sizer.textContent = texts[i];
    });
  }

  /** Highlight row r and/or column c (either may be null) and describe them in the readout. */
  function highlight(r, c) {
    const { rows, cols, map, cell, left, top } = current;
    const isPinned = pinned !== null && pinned.r === r && pinned.c === c;
    current.rowLabels.forEach((t, i) => t.classList.toggle("attn-active", i === r));
    current.colLabels.forEach((t, i) => t.classList.toggle("attn-active", i === c));
    band(current.rowBand, r !== null, left, top + (r ?? 0) * cell, cols.length * cell, cell);
    band(current.colBand, c !== null, left + (c ?? 0) * cell, top, cell, rows.length * cell);
    const both = r !== null && c !== null;
    current.cursor.setAttribute("visibility", both ? "visible" : "hidden");
    current.cursor.classList.toggle("attn-pinned", isPinned);
    readout.dataset.pinned = String(isPinned);
    if (r === null && c === null) return;
    readout.textContent = describe(r, c);
    if (both) {
      current.cursor.setAttribute("x", left + c * cell);
      current.cursor.setAttribute("y", top + r * cell);
      Object.assign(readout.dataset, { row: r, col: c, weight: fmt(map[r][c]), query: rows[r], key: cols[c] });
    } else if (r !== null) {
      Object.assign(readout.dataset, { row: r, col: "", weight: "", query: rows[r], key: "" });
    } else {
      Object.assign(readout.dataset, { row: "", col: c, weight: "", query: "", key: cols[c] });
    }
  }

  function clear() {
    if (!current) return;
    current.rowLabels.concat(current.colLabels).forEach((t) => t.classList.remove("attn-active"));
    for (const b of [current.rowBand, current.colBand, current.cursor]) b.setAttribute("visibility", "hidden");
    current.cursor.classList.remove("attn-pinned");
    readout.textContent = CLEARED;
    Object.assign(readout.dataset, { row: "", col: "", weight: "", query: "", key: "", pinned: "false" });
  }

  /** Show what is pinned, or nothing. */
  function restore() {
    if (pinned) highlight(pinned.r, pinned.c);
    else clear();
  }

  function pin(target) {
    pinned = target;
    if (target.r !== null && target.c !== null) state.cursor = [target.r, target.c];
    highlight(target.r, target.c);
  }

  /** The cell, row label or column label an event is on: { r, c } (null for a label's other axis), or null. */
  function targetOf(event) {
    const d = event.target?.dataset || {};
    const r = d.row !== undefined ? Number(d.row) : null;
    const c = d.col !== undefined ? Number(d.col) : null;
    return r === null && c === null ? null : { r, c };
  }

  function onPointerMove(event) {
    if (event.pointerType !== "mouse") return; // a finger or a pen selects by tapping (onClick)
    const target = targetOf(event);
    if (!target) return restore();
    if (target.r !== null && target.c !== null) state.cursor = [target.r, target.c];
    highlight(target.r, target.c);
  }

  function onClick(event) {
    const target = targetOf(event);
    const type = event.pointerType || (event.timeStamp - lastPointer.time < 1500 ? lastPointer.type : "mouse");
    if (target && !(pinned && pinned.r === target.r && pinned.c === target.c)) return pin(target);
    pinned = null; // a second tap on what is pinned, or a tap beside the cells
    if (type === "mouse" && target) highlight(target.r, target.c); // the mouse still points at it
    else clear();
  }

  function onFocus(event) {
    // A click or a tap focuses the map too: then the click pins what it is on. From the keyboard, the map pins the
    // cell the arrow keys start from.
    if (event.timeStamp - lastPointer.time < 1500) return;
    if (!state.cursor) state.cursor = [0, 0];
    pin({ r: state.cursor[0], c: state.cursor[1] });
  }

  function onKey(event) {
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    const [r, c] = pinned && pinned.r !== null && pinned.c !== null ? [pinned.r, pinned.c] : (state.cursor ?? [0, 0]);
    let next;
    if (moves[event.key]) next = [r + moves[event.key][0], c + moves[event.key][1]];
    else if (event.key === "Home") next = [r, 0];
    else if (event.key === "End") next = [r, current.cols.length - 1];
    else if (event.key === "Escape") {
      pinned = null;
      return clear();
    } else return;
    event.preventDefault();
    next = [
      Math.min(current.rows.length - 1, Math.max(0, next[0])),
      Math.min(current.cols.length - 1, Math.max(0, next[1])),
    ];
    pin({ r: next[0], c: next[1] });
    current.cursor.scrollIntoView?.({ block: "nearest", inline: "nearest" }); // a long map scrolls to the cell
  }

  // A tap or a click anywhere else on the page clears what is pinned. (pointerup: a finger that scrolls the page
  // ends with pointercancel instead, so scrolling keeps the pin.)
  const onOutside = (event) => {
    if (pinned && current && !current.svg.contains(event.target)) {
      pinned = null;
      clear();
    }
  };
  doc.addEventListener("pointerup", onOutside);

  const onChange = (name, parse) => (event) => {
    state[name] = parse(event.target.value);
    if (name === "sentence" || name === "kind") state.layer = Infinity; // the last layer of the new map
    state.cursor = null;
    draw();
  };
  sentenceSelect.addEventListener("change", onChange("sentence", Number));
  kindSelect.addEventListener("change", onChange("kind", String));
  layerSelect.addEventListener("change", onChange("layer", Number));
  headSelect.addEventListener("change", onChange("head", (v) => (v === "mean" ? "mean" : Number(v))));

  function setData(next, choice = {}) {
    data = next;
    const { caption: _, ...view } = choice;
    Object.assign(state, { sentence: 0, kind: "cross", layer: Infinity, head: "mean", cursor: null }, view);
    draw();
  }
  setData(data, options);
  return {
    setData,
    select(choice) {
      Object.assign(state, choice, { cursor: null });
      draw();
    },
    state,
    destroy() {
      doc.removeEventListener("pointerup", onOutside);
      root.replaceChildren();
    },
  };
}

/**
 * Mount an explorer on every `[data-attention-explorer]` element whose data sits in a JSON <script> it names;
 * its `data-attention-explorer-view` attribute, if any, holds the first view as JSON ({ kind, layer, head }).
 */
export function mountAll(doc = document) {
  return [...doc.querySelectorAll("[data-attention-explorer]")].map((node) => {
    const source = doc.getElementById(node.dataset.attentionExplorer);
    return mount(node, JSON.parse(source.textContent), JSON.parse(node.dataset.attentionExplorerView || "{}"));
  });
}

// anywidget (https://anywidget.dev): the same component in a notebook (lib.explorer.ExplorerWidget), its data in
// the model's "data_json" and its first view in "view_json".
export default {
  render({ model, el: root }) {
    const first = JSON.parse(model.get("view_json") || "{}");
    const view = mount(root, JSON.parse(model.get("data_json")), first);
    const update = () => view.setData(JSON.parse(model.get("data_json")));
    model.on("change:data_json", update);
    return () => {
      model.off("change:data_json", update);
      view.destroy();
    };
  },
};
