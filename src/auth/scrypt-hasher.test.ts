/**
 * The password hash's parameters (SPEC §4). The test servers make cheap hashes
 * (PASSWORD_HASH_COST=10, vitest.config.ts) to keep the suite quick; this file holds the
 * default, what production runs, to scrypt's N = 16384, r = 8, p = 1.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../config.js";
import { ScryptPasswordHasher, scryptHasherFor } from "./scrypt-hasher.js";

describe("scrypt password hashes", () => {
  it("are made with N = 16384, r = 8, p = 1 by default", async () => {
    // An explicit, empty environment: the default, whatever the test run sets.
    const config = loadConfig({});
    expect(config.limits.passwordHashCost).toBe(14);
    const stored = await scryptHasherFor(config.limits).hash("correct horse battery");
    const [scheme, N, r, p, salt, key] = stored.split("$");
    expect({ scheme, N, r, p }).toEqual({ scheme: "scrypt", N: "16384", r: "8", p: "1" });
    expect(Buffer.from(salt, "base64")).toHaveLength(16);
    expect(Buffer.from(key, "base64")).toHaveLength(64);
  });

  it("are checked with the parameters each was made with, so the cost may change", async () => {
    const cheap = new ScryptPasswordHasher(1, undefined, 10);
    const production = new ScryptPasswordHasher(1);
    const old = await cheap.hash("correct horse battery");
    expect(old.startsWith("scrypt$1024$8$1$")).toBe(true);
    expect(await production.verify("correct horse battery", old)).toBe(true);
    expect(await production.verify("wrong horse battery", old)).toBe(false);
    const current = await production.hash("correct horse battery");
    expect(await cheap.verify("correct horse battery", current)).toBe(true);
  });

  it("never match when the stored parameters are outside what a server would make", async () => {
    const hasher = new ScryptPasswordHasher(1, undefined, 10);
    const [, , , , salt, key] = (await hasher.hash("pw")).split("$");
    for (const params of ["512$8$1", "1000$8$1", "1024$1$1", "1024$8$2", "x$8$1"]) {
      expect(await hasher.verify("pw", `scrypt$${params}$${salt}$${key}`)).toBe(false);
    }
    expect(await hasher.verify("pw", `scrypt$1024$8$1$${salt}$${key}`)).toBe(true);
  });

  it("refuses a configured cost outside 10..20", () => {
    expect(() => loadConfig({ PASSWORD_HASH_COST: "9" })).toThrow(/PASSWORD_HASH_COST must be between 10 and 20/);
    expect(() => loadConfig({ PASSWORD_HASH_COST: "21" })).toThrow(/PASSWORD_HASH_COST/);
    expect(loadConfig({ PASSWORD_HASH_COST: "10" }).limits.passwordHashCost).toBe(10);
  });
});
