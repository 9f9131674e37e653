/**
 * Record ids in the formats of SPEC §2: users have 24 lowercase hex characters (like a
 * MongoDB ObjectId), trees and cards 24 characters of [a-z0-9].
 */
import { randomBytes, randomInt } from "node:crypto";

const ALPHANUMERIC = "abcdefghijklmnopqrstuvwxyz0123456789";
export const RECORD_ID = /^[a-z0-9]{24}$/;
export const USER_ID = /^[a-f0-9]{24}$/;

export function newUserId(): string {
  return randomBytes(12).toString("hex");
}

/** A tree or card id. 36^24 ≈ 2^124 values: collisions are not a concern. */
export function newRecordId(): string {
  const bytes = randomBytes(24);
  let id = "";
  // 252 is the largest multiple of 36 below 256: rejecting bytes above it keeps every
  // character equally likely.
  for (let i = 0; id.length < 24; i++) {
    const byte = i < bytes.length ? bytes[i] : randomInt(256);
    if (byte < 252) id += ALPHANUMERIC[byte % 36];
  }
  return id;
}

export function now(): string {
  return new Date().toISOString();
}
