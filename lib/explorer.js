// The attention explorer: a heatmap of one attention map with the tokens on both axes. The reader picks a
// sentence, the kind of attention (encoder self, decoder self, cross), the layer and a head or the mean of the
// heads; pointing at a cell (or moving to it with the arrow keys) shows the query token, the key token and the
// weight, pointing at a token shows its whole row or column.
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
.attn-explorer select:focus-visible, .attn-explorer svg:focus-visible { outline: 3px solid #f59e0b; outline-offset: 2px; }
.attn-explorer .attn-readout { min-height: 1.5em; margin: .5em 0; font-variant-numeric: tabular-nums; }
.attn-explorer .attn-figure { overflow-x: auto; contain: inline-size; } /* a wide map scrolls, not the page */
.attn-explorer svg { display: block; }
.attn-explorer text { fill: currentColor; font-size: 12px; cursor: default; }
.attn-explorer text.attn-active { font-weight: 700; fill: #b45309; }
.attn-explorer .attn-band { fill: #f59e0b; opacity: .18; pointer-events: none; }
.attn-explorer .attn-cursor { fill: none; stroke: #f59e0b; stroke-width: 2.5; pointer-events: none; }
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
  injectStyle(doc);
  root.replaceChildren();
  root.classList.add("attn-explorer");
  const state = { sentence: 0, kind: "cross", layer: 0, head: "mean", cursor: null };
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
  const figure = el(doc, "div", { class: "attn-figure" });
  root.append(controls, caption, readout, figure);

  let current = null; // { sentence, map, rows, cols, ... } of what is drawn
  const decimals = () => (Number.isInteger(data.decimals) ? data.decimals : 3);
  const fmt = (w) => w.toFixed(decimals());
  const kinds = (s) => Object.keys(KINDS).filter((k) => s.maps && s.maps[k] && s.maps[k].length);

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
    const map = selectMap(s, state.kind, state.layer, state.head);
    const max = Math.max(1e-9, ...map.flat());
    caption.textContent = s.translation !== undefined ? `${s.source} → ${s.translation}` : (s.source ?? "");
    caption.hidden = !caption.textContent || options.caption === false;

    const cell = Math.max(12, Math.min(30, Math.floor(560 / Math.max(rows.length, cols.length))));
    const charW = 7.2;
    const left = 10 + charW * Math.max(...rows.map((t) => t.length), 3);
    const top = 14 + 0.82 * charW * Math.max(...cols.map((t) => t.length), 3); // labels at -55°
    const width = left + cell * cols.length + 70;
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
          `${rows.length} query rows by ${cols.length} key columns. Arrow keys move between cells.`,
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
    const rowLabels = rows.map((t, r) => {
      const text = el(
        doc,
        "text",
        { class: "attn-row-label", x: left - 6, y: top + (r + 0.5) * cell, "text-anchor": "end",
          "dominant-baseline": "central", "data-row": r },
        SVG,
      );
      text.textContent = t;
      return text;
    });
    const colLabels = cols.map((t, c) => {
      const x = left + (c + 0.5) * cell;
      const text = el(
        doc,
        "text",
        { class: "attn-col-label", x, y: top - 6, transform: `rotate(-55 ${x} ${top - 6})`, "data-col": c },
        SVG,
      );
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
    current = { s, rows, cols, rowName, colName, map, cell, left, top, rowLabels, colLabels, rowBand, colBand, cursor };
    svg.addEventListener("pointermove", onPointer);
    svg.addEventListener("pointerleave", () => clear());
    svg.addEventListener("keydown", onKey);
    svg.addEventListener("focus", () => {
      if (!state.cursor) state.cursor = [0, 0];
      highlight(...state.cursor);
    });
    clear();
  }

  function band(rect, on, x, y, w, h) {
    rect.setAttribute("visibility", on ? "visible" : "hidden");
    if (on) for (const [k, v] of Object.entries({ x, y, width: w, height: h })) rect.setAttribute(k, v);
  }

  /** Highlight row r and/or column c (either may be null) and describe them in the readout. */
  function highlight(r, c) {
    const { rows, cols, rowName, colName, map, cell, left, top } = current;
    current.rowLabels.forEach((t, i) => t.classList.toggle("attn-active", i === r));
    current.colLabels.forEach((t, i) => t.classList.toggle("attn-active", i === c));
    band(current.rowBand, r !== null, left, top + (r ?? 0) * cell, cols.length * cell, cell);
    band(current.colBand, c !== null, left + (c ?? 0) * cell, top, cell, rows.length * cell);
    const both = r !== null && c !== null;
    current.cursor.setAttribute("visibility", both ? "visible" : "hidden");
    if (both) {
      current.cursor.setAttribute("x", left + c * cell);
      current.cursor.setAttribute("y", top + r * cell);
      const w = map[r][c];
      readout.textContent = `${rowName} “${rows[r]}” → ${colName} “${cols[c]}”: ${fmt(w)}`;
      Object.assign(readout.dataset, { row: r, col: c, weight: fmt(w), query: rows[r], key: cols[c] });
    } else if (r !== null) {
      const row = map[r];
      const best = row.indexOf(Math.max(...row));
      const sum = row.reduce((a, b) => a + b, 0);
      readout.textContent =
        `${rowName} “${rows[r]}”: its weights sum to ${fmt(sum)}; the largest, ${fmt(row[best])}, ` +
        `is on ${colName} “${cols[best]}”`;
      Object.assign(readout.dataset, { row: r, col: "", weight: "", query: rows[r], key: "" });
    } else if (c !== null) {
      const column = map.map((row) => row[c]);
      const best = column.indexOf(Math.max(...column));
      readout.textContent =
        `${colName} “${cols[c]}”: attended to most, ${fmt(column[best])}, by ${rowName} “${rows[best]}”`;
      Object.assign(readout.dataset, { row: "", col: c, weight: "", query: "", key: cols[c] });
    }
  }

  function clear() {
    if (!current) return;
    current.rowLabels.concat(current.colLabels).forEach((t) => t.classList.remove("attn-active"));
    for (const b of [current.rowBand, current.colBand, current.cursor]) b.setAttribute("visibility", "hidden");
    readout.textContent = "Point at a cell or a token (or focus the map and use the arrow keys).";
    Object.assign(readout.dataset, { row: "", col: "", weight: "", query: "", key: "" });
  }

  function onPointer(event) {
    const d = event.target.dataset || {};
    const r = d.row !== undefined ? Number(d.row) : null;
    const c = d.col !== undefined ? Number(d.col) : null;
    if (r === null && c === null) return clear();
    if (r !== null && c !== null) state.cursor = [r, c];
    highlight(r, c);
  }

  function onKey(event) {
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    const [r, c] = state.cursor ?? [0, 0];
    let next;
    if (moves[event.key]) next = [r + moves[event.key][0], c + moves[event.key][1]];
    else if (event.key === "Home") next = [r, 0];
    else if (event.key === "End") next = [r, current.cols.length - 1];
    else if (event.key === "Escape") return clear();
    else return;
    event.preventDefault();
    next = [
      Math.min(current.rows.length - 1, Math.max(0, next[0])),
      Math.min(current.cols.length - 1, Math.max(0, next[1])),
    ];
    state.cursor = next;
    highlight(...next);
  }

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
