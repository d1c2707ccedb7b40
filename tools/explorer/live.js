// Live translation in the page: the book's shipped model (exported by lib.export) runs in the reader's browser with
// onnxruntime-web (WebAssembly, one thread), the tokenizer is @huggingface/tokenizers reading the model's own
// tokenizer.json, and the cross-attention of the translation is drawn by the attention explorer.
//
// Decoding is lib.export's rule (manifest.json, "decoding"), which is lib.translate's greedy decoding:
//   src = ids of the cleaned text (text.js) + [</s>]; tgt = [<s>]; for at most min(floor(1.5 len(src)) + 10, max_len)
//   steps append argmax(logits) and stop after </s>. A text longer than max_len - 1 ids is translated in pieces,
//   as lib.translate does (text.js: pieces), and the pieces' translations are joined with a space. A paragraph is
//   split into sentences first (domain.js: sentences), and input that looks out of domain gets a note (domain.js).
//
// Used by chapters/translate_live.md: start({ form, input, output, status, explorer }) with its elements. The status
// line's data-state is "loading", "done", "empty" (a blank input: a prompt instead of a translation) or "error".

import { mount } from "./explorer.js";
import { clean, decodeIds, pieces, plainTokenizerJSON } from "./text.js";
import { domainNote, sentences, showDomainNote } from "./domain.js";

const VENDOR = new URL("../", import.meta.url); // _static/: the vendored packages sit beside this folder
const EXPORT = new URL("../live/", import.meta.url); // _static/live/: what `python -m lib.export` wrote
const DECIMALS = 3;

async function fetchBytes(url, expected) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (expected !== undefined && bytes.length !== expected) {
    throw new Error(`${url}: ${bytes.length} bytes, the manifest says ${expected}: rebuild the site (make book)`);
  }
  return bytes;
}

const ORT_MODULE = new URL("onnxruntime-web/dist/ort.wasm.bundle.min.mjs", VENDOR);
const TOKENIZERS_MODULE = new URL("tokenizers/dist/tokenizers.min.mjs", VENDOR);

/** The runtime, imported and configured: one thread (no SharedArrayBuffer without cross-origin isolation). */
async function runtime() {
  const ort = await import(ORT_MODULE.href);
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.proxy = false;
  ort.env.logLevel = "error";
  return ort;
}

/**
 * Start onnxruntime's WebAssembly (fetch and compile its 14 MB of kernels) now, while the model's files arrive,
 * rather than inside the first InferenceSession.create once they have all come. onnxruntime-web exports no
 * init function: creating a session initialises the runtime before it reads the model, so a session of an
 * empty model starts it, and its "cannot load the model" error is expected and dropped. A real failure of the
 * runtime shows again, with its message, when the encoder's session is created.
 */
function warmUp(ort, options) {
  return ort.InferenceSession.create(new Uint8Array(0), options).then(
    (session) => session.release(),
    () => {},
  );
}

/**
 * Load the model: onnxruntime-web, the tokenizer and both graphs. Returns a translator.
 *
 * Everything starts at once (issue 35: the first translation within 3 s of opening the page): the two modules,
 * the manifest and the model's files, and, as soon as the runtime module is there, its WebAssembly. The page
 * preloads the same URLs (chapters/translate_live.md), so most are already on their way when this runs.
 * performance.mark("live:...") records each step (tools/live_timing.py prints them).
 */
export async function load() {
  const start = performance.now();
  const options = { executionProviders: ["wasm"], graphOptimizationLevel: "all" };
  const ortReady = runtime().then((ort) => {
    performance.mark("live:runtime-module");
    return { ort, warm: warmUp(ort, options).then(() => performance.mark("live:runtime-ready")) };
  });
  const tokenizersReady = import(TOKENIZERS_MODULE.href);
  const manifest = await (await fetch(new URL("manifest.json", EXPORT))).json();
  const files = manifest.files;
  const bytesReady = Promise.all(
    ["encoder.onnx", "decoder.onnx", manifest.external_data, "tokenizer.json"].map((name) =>
      fetchBytes(new URL(name, EXPORT), files[name]?.bytes),
    ),
  );
  const [{ ort, warm }, { Tokenizer }, [encoderBytes, decoderBytes, weights, tokenizerBytes]] = await Promise.all([
    ortReady,
    tokenizersReady,
    bytesReady,
  ]);
  performance.mark("live:files");
  const tokenizerJSON = JSON.parse(new TextDecoder().decode(tokenizerBytes));
  const tokenizer = new Tokenizer(tokenizerJSON, {});
  const plain = new Tokenizer(plainTokenizerJSON(tokenizerJSON), {});
  performance.mark("live:tokenizer");
  await warm;
  // one weights.bin for both graphs
  const sessionOptions = { ...options, externalData: [{ path: manifest.external_data, data: weights }] };
  const encoder = await ort.InferenceSession.create(encoderBytes, sessionOptions);
  const decoder = await ort.InferenceSession.create(decoderBytes, sessionOptions);
  performance.mark("live:sessions");
  const bytes = Object.values(files).reduce((sum, f) => sum + f.bytes, 0);
  return new Translator(ort, manifest, encoder, decoder, tokenizer, plain, {
    seconds: (performance.now() - start) / 1000,
    bytes,
  });
}

export class Translator {
  constructor(ort, manifest, encoder, decoder, tokenizer, plain, loaded) {
    Object.assign(this, { ort, manifest, encoder, decoder, tokenizer, plain, loaded });
    this.special = manifest.special_tokens; // {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3}
    this.maxLen = manifest.max_len;
  }

  ids(values) {
    return new this.ort.Tensor("int64", BigInt64Array.from(values, BigInt), [1, values.length]);
  }

  /** Greedy decoding of one piece (ids without </s>): lib.export.OnnxTranslator.greedy. */
  async greedy(srcIds) {
    const eos = this.special["</s>"];
    const src = [...srcIds, eos];
    const { memory, src_mask: srcMask } = await this.encoder.run({ src: this.ids(src) });
    const steps = Math.min(Math.floor(1.5 * src.length) + 10, this.maxLen);
    const tgt = [this.special["<s>"]];
    let cross = null;
    for (let step = 0; step < steps; step++) {
      const out = await this.decoder.run({ tgt: this.ids(tgt), memory, src_mask: srcMask });
      const logits = out.logits.data;
      let best = 0;
      for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i; // first maximum, as argmax
      cross?.dispose();
      cross = out.cross_attention;
      out.logits.dispose();
      tgt.push(best);
      if (best === eos) break;
    }
    memory.dispose();
    srcMask.dispose();
    const produced = tgt.slice(1);
    const map = toNested(cross.data, cross.dims);
    cross.dispose();
    return { src, produced, cross: map };
  }

  /** One translation, as `python -m lib.translate` gives it for one line, and the explorer's data of it. */
  async translate(text) {
    const cleaned = clean(text);
    const parts = sentences(cleaned).flatMap((s) => pieces(this.plain, s, this.maxLen - 1, this.special));
    const texts = [];
    let first = null;
    for (const part of parts) {
      const result = await this.greedy(part);
      texts.push(decodeIds(this.tokenizer, result.produced, this.special));
      first ??= result;
    }
    const translation = texts.length === 1 ? texts[0] : texts.filter((t) => t).join(" ");
    const ids = cleaned ? this.plain.encode(cleaned, { add_special_tokens: false }).ids : [];
    const tokens = ids.map((i) => this.plain.id_to_token(i));
    const note = domainNote(tokens, this.manifest.domain); // domain.js: lib.translate.domain_note
    if (!first) return { translation, explorer: null, pieces: 0, note };
    const name = (i) => this.tokenizer.id_to_token(i);
    const sentence = {
      source: parts.length > 1 ? `${cleaned.slice(0, 80)}… (first of ${parts.length} pieces)` : cleaned,
      translation: texts[0],
      src_tokens: first.src.map(name),
      tgt_tokens: first.produced.map(name),
      tgt_input_tokens: [name(this.special["<s>"]), ...first.produced.slice(0, -1).map(name)],
      maps: { cross: first.cross },
    };
    const explorer = { format: 1, decimals: DECIMALS, sentences: [sentence] };
    return { translation, explorer, pieces: parts.length, note };
  }
}

/** (1, layers, heads, seq_t, seq_s) float32 → [layer][head][q][k] rounded to DECIMALS places. */
function toNested(data, dims) {
  const [, layers, heads, rows, cols] = dims.map(Number);
  const scale = 10 ** DECIMALS;
  const out = [];
  let i = 0;
  for (let l = 0; l < layers; l++) {
    const layer = [];
    for (let h = 0; h < heads; h++) {
      const head = [];
      for (let q = 0; q < rows; q++) {
        const row = new Array(cols);
        for (let k = 0; k < cols; k++) row[k] = Math.round(data[i++] * scale) / scale;
        head.push(row);
      }
      layer.push(head);
    }
    out.push(layer);
  }
  return out;
}

/** Wire the page: load the model, translate the example, then every sentence the reader submits. */
export async function start({ form, input, output, status, explorer }) {
  const button = form.querySelector("button");
  const say = (text, state) => {
    status.textContent = text;
    status.dataset.state = state;
  };
  // Everything the page fetches, once (the browser then caches it); tests/browser/test_live_translation.py checks
  // these sizes against the built files.
  say(
    "Loading the translator, about 20 MB the first time: 14.2 MB of WebAssembly (onnxruntime's kernels), " +
      "4.9 MB of weights and 0.6 MB of tokenizer…",
    "loading",
  );
  let translator;
  try {
    translator = await load();
  } catch (error) {
    say(`The model could not be loaded: ${error.message}`, "error");
    throw error;
  }
  let view = null;
  let count = 0;
  const run = async () => {
    if (!clean(input.value)) {
      // Nothing to translate (a blank line translates to nothing, as in lib.translate): say what to do instead.
      output.textContent = "";
      view?.destroy();
      view = null;
      say("Type a German sentence in the box above, then press Enter or Translate.", "empty");
      input.focus();
      return;
    }
    button.disabled = true;
    const t0 = performance.now();
    try {
      const result = await translator.translate(input.value);
      const ms = performance.now() - t0;
      output.textContent = result.translation;
      showDomainNote(document.getElementById("live-domain"), result.note); // domain.js
      count += 1;
      Object.assign(output.dataset, { count, ms: ms.toFixed(1) });
      if (result.explorer) {
        if (view) view.setData(result.explorer, { layer: view.state.layer, head: view.state.head });
        else view = mount(explorer, result.explorer, { caption: false });
      } else {
        view?.destroy();
        view = null;
      }
      const split = result.pieces > 1 ? ` in ${result.pieces} pieces (the map shows the first)` : "";
      say(`Translated${split} in ${ms.toFixed(0)} ms (model loaded in ${translator.loaded.seconds.toFixed(1)} s).`, "done");
      // performance.now() counts from the page's navigation: the reader's wait for the first translation
      if (count === 1) {
        performance.mark("live:first");
        status.dataset.firstSeconds = (performance.now() / 1000).toFixed(2);
      }
    } catch (error) {
      say(`Translation failed: ${error.message}`, "error");
      throw error;
    } finally {
      button.disabled = false;
    }
  };
  form.addEventListener("submit", () => showDomainNote(document.getElementById("live-domain"), null)); // domain.js
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!button.disabled) run();
  });
  await run(); // the example sentence already in the box
  return translator;
}
