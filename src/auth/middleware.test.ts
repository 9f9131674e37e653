import { describe, expect, it } from "vitest";
import type { Request } from "express";
import { authenticate, LATE_CONFIRMED_WRITES } from "./middleware.js";
import type { StoredUser } from "../shared/records.js";

const ID = "a".repeat(24);
const CARD = "b".repeat(24);
const USER = { _id: "u".repeat(24), email: "ada@example.test" } as StoredUser;

/**
 * Runs `authenticate` on one request with basic credentials; says which of the checker's ways
 * it took. `instant`: whether the checker can answer these credentials at once (`checkInstant`).
 */
async function wayTaken(method: string, path: string, headers: Record<string, string> = {}, instant = false): Promise<string[]> {
  const calls: string[] = [];
  const credentials = {
    recall: () => (calls.push("recall"), USER),
    checkInstant: () => (calls.push("checkInstant"), instant ? USER : null),
    check: async () => (calls.push("check"), USER),
  };
  const all: Record<string, string> = { authorization: `Basic ${Buffer.from("ada@example.test:secret").toString("base64")}`, ...headers };
  const req = { method, path, baseUrl: "/api", headers: all, get: (name: string) => all[name.toLowerCase()], socket: {} } as unknown as Request;
  await authenticate({ credentials, store: {}, sessions: {} } as never)(req, {} as never, () => undefined);
  if (calls.includes("recall")) expect(req.auth.unconfirmed).toBe(USER);
  else expect(req.auth.user).toBe(USER);
  return calls;
}

describe("which requests confirm their log-in late (issue 27)", () => {
  it("the card writes the card routes are registered from, in their plain spelling, with an Idempotency-Key or without", async () => {
    const paths = { create: `/trees/${ID}/cards`, change: `/trees/${ID}/cards/${CARD}`, remove: `/trees/${ID}/cards/${CARD}` };
    for (const [name, { method }] of Object.entries(LATE_CONFIRMED_WRITES)) {
      expect(await wayTaken(method, paths[name as keyof typeof paths]), name).toEqual(["recall"]);
      expect(await wayTaken(method, paths[name as keyof typeof paths], { "idempotency-key": "k1" }), `${name}, keyed`).toEqual(["recall"]);
    }
  });

  it("nothing else: reads, other writes, other spellings", async () => {
    const others: [string, string, Record<string, string>?][] = [
      ["GET", `/trees/${ID}/cards`],
      ["POST", `/trees/${ID}/cards/seed`],
      ["POST", `/trees/${ID}/cards/`],
      ["POST", `/Trees/${ID}/cards`],
      ["PUT", `/trees/${ID}/cards/NOT-AN-ID`],
      ["PUT", `/trees/${ID}`],
      ["POST", `/trees/${ID}`, { "idempotency-key": "k1" }],
    ];
    for (const [method, path, headers] of others) expect(await wayTaken(method, path, headers), `${method} ${path}`).toEqual(["checkInstant", "check"]);
  });

  it("the others take credentials the checker can answer at once without its full check", async () => {
    expect(await wayTaken("GET", `/trees/${ID}/cards`, {}, true)).toEqual(["checkInstant"]);
    expect(await wayTaken("PUT", `/trees/${ID}`, {}, true)).toEqual(["checkInstant"]);
    // A late-confirmed write is recalled before anything else is asked.
    expect(await wayTaken("POST", `/trees/${ID}/cards`, {}, true)).toEqual(["recall"]);
  });
});
