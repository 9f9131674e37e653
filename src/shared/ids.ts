/**
 * Record ids in the formats of SPEC §2: users have 24 lowercase hex characters (like a
 * MongoDB ObjectId), trees and cards 24 characters of [a-z0-9].
 */

const ALPHANUMERIC = "abcdefghijklmnopqrstuvwxyz0123456789";
export const RECORD_ID = /^[a-z0-9]{24}$/;
export const USER_ID = /^[a-f0-9]{24}$/;
/** A tree's public address (`publicUrl`). */
export const PUBLIC_URL = /^[a-z0-9-]{3,64}$/;
/** A browser tab's id for presence, chosen by the client for each page it opens. */
export const TAB_ID = /^[A-Za-z0-9_-]{8,64}$/;

/**
 * Web Crypto, the same global in Node 20 and in browsers (shared/ imports no node: module
 * and is compiled with neither host's types: src/shared/host.d.ts declares this one call).
 */
function randomBytes(size: number): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(size));
}

export function newUserId(): string {
  let hex = "";
  for (const byte of randomBytes(12)) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

/**
 * Random bytes for record ids, drawn 4 KiB at a time: one call into the system's CSPRNG
 * per ~170 ids rather than per id, which showed at ~5 µs an id in a profile of a
 * 5,000-card import. The bytes are as random either way; ids are not secrets.
 */
const POOL_BYTES = 4096;
let pool: Uint8Array = new Uint8Array(0);
let poolOffset = 0;

function randomByte(): number {
  if (poolOffset >= pool.length) {
    pool = randomBytes(POOL_BYTES);
    poolOffset = 0;
  }
  return pool[poolOffset++];
}

/** The characters of an id as UTF-16 codes, and the codes of the id being drawn. */
const ALPHANUMERIC_CODES = Array.from(ALPHANUMERIC, (character) => character.charCodeAt(0));
const drawnCodes = new Array<number>(24).fill(0);

/**
 * A tree or card id. 36^24 ≈ 2^124 values: collisions are not a concern. The id is made as
 * one string from its 24 character codes: appended a character at a time, it left 23
 * intermediate strings (about 1 KB) for the garbage collector, and a string of pieces that
 * was copied again when first hashed (an id is a Map key); a keyed write draws one for its
 * claim and a new card one for itself (issue 26).
 */
export function newRecordId(): string {
  // 252 is the largest multiple of 36 below 256: rejecting bytes above it keeps every
  // character equally likely.
  for (let drawn = 0; drawn < 24; ) {
    const byte = randomByte();
    if (byte < 252) drawnCodes[drawn++] = ALPHANUMERIC_CODES[byte % 36];
  }
  return String.fromCharCode(...drawnCodes);
}

/**
 * A record id drawn from `bytes` (a digest) as `newRecordId` draws from random bytes, or
 * undefined when they hold fewer than 24 usable bytes (the caller then digests again).
 */
export function recordIdFromBytes(bytes: Uint8Array): string | undefined {
  let drawn = 0;
  for (const byte of bytes) {
    if (byte < 252) drawnCodes[drawn++] = ALPHANUMERIC_CODES[byte % 36];
    if (drawn === 24) return String.fromCharCode(...drawnCodes);
  }
  return undefined;
}

export function now(): string {
  return new Date().toISOString();
}
