/**
 * Idempotency keys (SPEC §13, the IETF `Idempotency-Key` header as Stripe's API uses it):
 * the header names and the key's syntax, which the server checks and the browser client
 * follows when it makes keys for its outbox.
 */

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
/** Set to `true` on an answer given again from what was kept for the key. */
export const IDEMPOTENT_REPLAYED_HEADER = "Idempotent-Replayed";

/** Most characters of a key. */
export const IDEMPOTENCY_KEY_MAX = 255;

/** 1–255 visible ASCII characters (0x21–0x7e): no space, no control character, nothing else. */
const KEY = /^[\x21-\x7e]{1,255}$/;

/** Why `key` is not a valid Idempotency-Key, or null when it is. */
export function idempotencyKeyProblem(key: string): string | null {
  if (key.length === 0) return "must not be empty";
  if (key.length > IDEMPOTENCY_KEY_MAX) return `must be at most ${IDEMPOTENCY_KEY_MAX} characters`;
  if (!KEY.test(key)) return "must be visible ASCII characters only (no spaces or control characters)";
  return null;
}
