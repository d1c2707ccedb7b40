// The live page's sentence splitting and out-of-domain note: what lib.translate does with a paragraph and with input
// the model was not trained on, in the browser.
//
// Sentences: the browser's own Intl.Segmenter (ICU's sentence rules; lib.translate uses pysbd's German rules, which
// also keep "Dr." and "3. Mai" inside a sentence). Out of domain: lib.translate.domain_note, to the letter, with the
// constants lib.export writes into manifest.json ("domain"), applied to the same sub-word tokens.
// tests/cli/test_translate_cli.py runs this file under Node.js against lib on the Multi30k test set.

const WORD_START = "\u2581"; // the Metaspace marker before every word
const OUTER_PUNCTUATION = /^\p{P}+|\p{P}+$/gu; // Python: unicodedata.category(c).startswith("P") at either end

/** The sentences of a cleaned text (lib.translate.split_sentences, by the browser's rules): trimmed, none blank. */
export function sentences(text) {
  if (!text) return [];
  if (typeof Intl !== "object" || typeof Intl.Segmenter !== "function") return [text]; // an old browser: whole
  const segmenter = new Intl.Segmenter("de", { granularity: "sentence" });
  const out = [...segmenter.segment(text)].map((s) => s.segment.trim()).filter((s) => s);
  return out.length ? out : [text];
}

/** lib.translate._words: whitespace words from sub-word tokens, lowercased, outer punctuation stripped. */
export function words(tokens) {
  const out = [];
  for (const token of tokens) {
    if (token.startsWith(WORD_START) || !out.length) out.push(token.slice(token.startsWith(WORD_START) ? 1 : 0));
    else out[out.length - 1] += token;
  }
  return out.map((w) => w.replace(OUTER_PUNCTUATION, "").toLowerCase());
}

/** lib.translate.domain_note: why the tokens look out of the model's domain, or null. */
export function domainNote(tokens, rule) {
  if (!rule) return null; // an export from before the rule was shared
  const ws = words(tokens);
  if (!ws.length) return null;
  const reasons = [];
  const perWord = tokens.length / ws.length;
  if (perWord > rule.max_pieces_per_word) {
    const most = rule.max_pieces_per_word;
    reasons.push(`${tokens.length} sub-words for ${ws.length} words (captions have at most about ${most} per word)`);
  }
  const english = ws.filter((w) => rule.english_words.includes(w)).length;
  const german = ws.filter((w) => rule.german_words.includes(w)).length;
  if (english >= rule.min_english_words && english > german) {
    reasons.push(`${english} English function words and ${german} German ones: it looks like English`);
  }
  if (tokens.some((t) => t.includes(rule.question_mark)) || ws.some((w) => rule.conversation_words.includes(w))) {
    reasons.push("a question or a first/second person: captions describe a picture");
  }
  return reasons.length ? reasons.join("; ") : null;
}

/** The page's note under the translation: shown with the reason when the input looks out of domain, else hidden. */
export function showDomainNote(element, note) {
  if (!element) return;
  element.hidden = !note;
  element.textContent = note
    ? `This does not look like an image caption in German (${note}): the model knows image captions only, ` +
      "so this translation is probably wrong."
    : "";
}
