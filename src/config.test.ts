import { describe, expect, it } from "vitest";
import { loadConfig } from "./config.js";
import { LEASE_MS } from "./domain/idempotency.js";

describe("CARD_CONTENT_LIMIT", () => {
  it("defaults to 100,000 characters, or less when the JSON body limit could not carry that back", () => {
    expect(loadConfig({}).limits.cardContentChars).toBe(100_000);
    // 2048 bytes, a quarter kept for the other fields, 6 bytes a character.
    expect(loadConfig({ JSON_BODY_LIMIT: "2048" }).limits.cardContentChars).toBe(256);
  });

  it("refuses a limit whose largest card PUT could not save back", () => {
    expect(loadConfig({ CARD_CONTENT_LIMIT: "150000" }).limits.cardContentChars).toBe(150_000);
    expect(() => loadConfig({ CARD_CONTENT_LIMIT: "200000" })).toThrow(/CARD_CONTENT_LIMIT must be between 1 and 172032/);
    expect(() => loadConfig({ CARD_CONTENT_LIMIT: "0" })).toThrow(/CARD_CONTENT_LIMIT/);
  });
});

describe("hashing and sign-up limits", () => {
  it("refuse values that would shut everyone out", () => {
    expect(() => loadConfig({ HASHES_PER_ADDRESS: "0" })).toThrow(/HASHES_PER_ADDRESS must be at least 1/);
    expect(() => loadConfig({ SIGNUP_LIMIT_TOTAL: "-2" })).toThrow(/SIGNUP_LIMIT_TOTAL/);
    expect(loadConfig({ SIGNUP_LIMIT_PER_ADDRESS: "-1" }).limits.signupsPerAddress).toBe(-1);
  });
});

describe("STORE and DATABASE_URL", () => {
  it("default to the embedded store", () => {
    expect(loadConfig({}).store).toEqual({ engine: "nedb" });
    expect(loadConfig({ STORE: "nedb", DATABASE_URL: "postgres://ignored" }).store).toEqual({ engine: "nedb" });
  });

  it("select PostgreSQL with its URL and pool size", () => {
    expect(loadConfig({ STORE: "postgres", DATABASE_URL: "postgres://u:p@db:5432/cardtree" }).store).toEqual({
      engine: "postgres",
      databaseUrl: "postgres://u:p@db:5432/cardtree",
      poolSize: 10,
    });
    expect(loadConfig({ STORE: "postgres", DATABASE_URL: "postgresql://db/x", DATABASE_POOL_SIZE: "3" }).store).toMatchObject({ poolSize: 3 });
  });

  it("refuse an unknown engine, PostgreSQL without a URL, and an empty pool", () => {
    expect(() => loadConfig({ STORE: "mysql" })).toThrow(/STORE must be "nedb" or "postgres"/);
    expect(() => loadConfig({ STORE: "postgres" })).toThrow(/STORE=postgres needs DATABASE_URL/);
    expect(() => loadConfig({ STORE: "postgres", DATABASE_URL: "mysql://db/x" })).toThrow(/DATABASE_URL/);
    expect(() => loadConfig({ STORE: "postgres", DATABASE_URL: "postgres://db/x", DATABASE_POOL_SIZE: "0" })).toThrow(/DATABASE_POOL_SIZE/);
  });
});

describe("GraphQL budgets", () => {
  it("give anonymous callers less time and fewer values than signed-in ones, and refuse a time of 0", () => {
    const { graphql } = loadConfig({});
    expect(graphql).toMatchObject({ values: 1_000_000, timeMs: 10_000, anonymous: { values: 100_000, timeMs: 100, perSecondMs: 100 } });
    expect(loadConfig({ GRAPHQL_ANONYMOUS_TIME_LIMIT_MS: "250" }).graphql.anonymous.timeMs).toBe(250);
    expect(() => loadConfig({ GRAPHQL_TIME_LIMIT_MS: "0" })).toThrow(/GRAPHQL_TIME_LIMIT_MS must be at least 1/);
    expect(() => loadConfig({ GRAPHQL_ANONYMOUS_TIME_PER_SECOND_MS: "0" })).toThrow(/GRAPHQL_ANONYMOUS_TIME_PER_SECOND_MS/);
  });

  it("allow 4 copies of a tree in an answer unless told otherwise, never fewer than one", () => {
    expect(loadConfig({}).graphql.copies).toBe(4);
    expect(loadConfig({ GRAPHQL_COPY_LIMIT: "2" }).graphql.copies).toBe(2);
    expect(() => loadConfig({ GRAPHQL_COPY_LIMIT: "0" })).toThrow(/GRAPHQL_COPY_LIMIT must be at least 1/);
    expect(() => loadConfig({ GRAPHQL_COPY_LIMIT: "1.5" })).toThrow(/GRAPHQL_COPY_LIMIT must be a whole number/);
  });
});

describe("HISTORY_DAYS", () => {
  it("keeps everything by default, and takes a whole number of days, at least 1", () => {
    expect(loadConfig({}).historyDays).toBe(-1);
    expect(loadConfig({ HISTORY_DAYS: "30" }).historyDays).toBe(30);
    expect(() => loadConfig({ HISTORY_DAYS: "0" })).toThrow(/HISTORY_DAYS must be at least 1/);
    expect(() => loadConfig({ HISTORY_DAYS: "1.5" })).toThrow(/HISTORY_DAYS must be a whole number/);
  });
});

describe("READ_MODEL_CARDS", () => {
  it("keeps 200,000 cards on the embedded store and 30,000 on PostgreSQL unless told, and refuses a negative budget", () => {
    const postgres = { STORE: "postgres", DATABASE_URL: "postgres://u@localhost/db" };
    expect(loadConfig({}).readModelCards).toBe(200_000);
    expect(loadConfig(postgres).readModelCards).toBe(30_000);
    expect(loadConfig({ ...postgres, READ_MODEL_CARDS: "100000" }).readModelCards).toBe(100_000);
    expect(loadConfig({ READ_MODEL_CARDS: "0" }).readModelCards).toBe(0);
    expect(() => loadConfig({ READ_MODEL_CARDS: "-1" })).toThrow(/READ_MODEL_CARDS must be at least 0/);
  });
});

describe("REMOTE_IMAGES, sessions and log-in limits (issue 25)", () => {
  it("hold remote images back on public pages unless told otherwise, and refuse an unknown choice", () => {
    expect(loadConfig({}).remoteImages).toBe("click");
    for (const choice of ["allow", "click", "block"] as const) expect(loadConfig({ REMOTE_IMAGES: choice }).remoteImages).toBe(choice);
    expect(() => loadConfig({ REMOTE_IMAGES: "yes" })).toThrow(/REMOTE_IMAGES must be "allow", "click" or "block"/);
  });

  it("last 30 days, swept hourly; limits of 10 / 50 / 50 failed log-ins", () => {
    expect(loadConfig({}).sessions).toEqual({ ttlMs: 30 * 24 * 60 * 60 * 1000, sweepMs: 60 * 60 * 1000 });
    expect(() => loadConfig({ SESSION_TTL_MS: "10" })).toThrow(/SESSION_TTL_MS/);
    const { loginFailures, loginAddressFailures, loginAccountFailures } = loadConfig({}).limits;
    expect([loginFailures, loginAddressFailures, loginAccountFailures]).toEqual([10, 50, 50]);
  });
});

describe("IDEMPOTENCY_LEASE_MS", () => {
  it("holds a claim 30 s unless told (the domain's LEASE_MS), takes a shorter lease for the suites, never under 1 s", () => {
    expect(loadConfig({}).timeouts.idempotencyLeaseMs).toBe(LEASE_MS);
    expect(LEASE_MS).toBe(30_000);
    expect(loadConfig({ IDEMPOTENCY_LEASE_MS: "3000" }).timeouts.idempotencyLeaseMs).toBe(3000);
    expect(() => loadConfig({ IDEMPOTENCY_LEASE_MS: "999" })).toThrow(/IDEMPOTENCY_LEASE_MS/);
  });
});
