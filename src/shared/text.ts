/**
 * Text rules shared by whatever turns user text into names and headers.
 */

/** A UTF-16 surrogate without its pair: not a character, and refused by encoders. */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
