// Text handling of lib.translate, in the browser: the same cleaning, the same ids, the same pieces.
// Each function names the Python function it reproduces; tests/browser/test_live_translation.py checks the result
// against lib on the whole Multi30k test set and on awkward strings (control tokens as text, NFKC, long texts).

// Python's str.isspace() / re's \s on str (JavaScript's \s differs: it lacks U+001C-U+001F and U+0085 and has U+FEFF).
const PY_SPACE = "\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const STRIP = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, "g");
// lib.translate._SENTENCE_END: after . ! ? ; (optionally followed by a closing quote or bracket) and a space.
const SENTENCE_END = new RegExp(
  `(?<=[.!?;])[${PY_SPACE}]+|(?<=[.!?;]["'\\u00ab\\u00bb\\u201c\\u201d\\u2018\\u2019)\\]])[${PY_SPACE}]+`,
  "u",
);
const WORD_START = "\u2581"; // the Metaspace marker before every word

// A text of invisible characters only (format characters, category Cf: zero-width spaces, joiners, soft hyphens).
const INVISIBLE = new RegExp(`^[\\p{Cf}${PY_SPACE}]*$`, "u");

/** lib.translate.clean_text: NFC, without byte-order marks (U+FEFF) and surrounding whitespace; "" when invisible. */
export function clean(text) {
  const cleaned = text.normalize("NFC").replaceAll("\ufeff", "").replace(STRIP, "");
  return INVISIBLE.test(cleaned) ? "" : cleaned;
}

/**
 * A tokenizer that reads <pad>, <s>, </s>, <unk> in a text as characters (lib.translate.plain_text_tokenizer):
 * the same tokenizer.json without its added tokens, so that nothing is matched before the BPE model.
 */
export function plainTokenizerJSON(tokenizerJSON) {
  return { ...tokenizerJSON, added_tokens: [] };
}

/** lib.translate._text_ids: ids of a cleaned text, a control id (pad, bos, eos) from text becoming <unk>. */
export function textIds(plain, text, special) {
  if (!text) return [];
  const control = new Set([special["<pad>"], special["<s>"], special["</s>"]]);
  return plain.encode(text, { add_special_tokens: false }).ids.map((i) => (control.has(i) ? special["<unk>"] : i));
}

/** lib.translate._cut: the last word start in the window's second half, else the limit. */
function cut(plain, ids, limit) {
  for (let j = limit; j > Math.floor(limit / 2); j--) {
    if ((plain.id_to_token(ids[j]) || "").startsWith(WORD_START)) return j;
  }
  return limit;
}

/** lib.translate.text_pieces: a cleaned text in pieces of at most `limit` ids, sentence ends first, then the limit. */
export function pieces(plain, text, limit, special) {
  const ids = textIds(plain, text, special);
  if (ids.length <= limit) return ids.length ? [ids] : [];
  const out = [];
  for (const sentence of text.split(SENTENCE_END)) {
    let rest = textIds(plain, sentence, special);
    while (rest.length > limit) {
      const at = cut(plain, rest, limit);
      out.push(rest.slice(0, at));
      rest = rest.slice(at);
    }
    if (rest.length) out.push(rest);
  }
  return out;
}

/** lib.bpe.decode: the text of target ids, stopping at the first </s> and dropping the special tokens. */
export function decodeIds(tokenizer, ids, special) {
  const end = ids.indexOf(special["</s>"]);
  const kept = end < 0 ? ids : ids.slice(0, end);
  if (!kept.length) return ""; // (the library throws on an empty list)
  // no clean-up of spaces: Python's tokenizers does none ("Keks ." stays "Keks .")
  return tokenizer.decode(kept, { skip_special_tokens: true, clean_up_tokenization_spaces: false });
}
