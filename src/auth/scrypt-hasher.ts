/**
 * Password hashing with node:crypto scrypt (SPEC §4), the server's PasswordHasher port. A hash costs tens of milliseconds of
 * CPU on the libuv pool, so at most a few run at once, and the line to get one is fair:
 * each piece of work names who asked (the client's address, `requester`), requesters are
 * served in turn, and one requester's share of the line is capped (src/domain/fair-gate.ts).
 * A flood from one client is answered 429 past its share instead of standing in front of
 * everyone else's log-in. With two slots or more, one is kept for log-ins with credentials
 * verified before: a flood of sign-ups or guesses from many addresses never holds every slot
 * (nor, on two cores, both cores), so a returning user's log-in starts at once.
 *
 * New hashes use the configured cost (`PASSWORD_HASH_COST`, log2 of N; 14 by default), and
 * each hash records its own N, r and p, which `verify` uses: the cost may be raised later
 * without locking anyone out, and the test servers use a cheap one (test/helpers) while a
 * test holds the default to the production parameters (src/auth/scrypt-hasher.test.ts).
 */
import { randomBytes, scrypt as scryptCallback, timingSafeEqual } from "node:crypto";
import { FairGate, type GateLimits } from "../domain/fair-gate.js";
import type { PasswordHasher } from "../domain/ports/password-hasher.js";
import { PASSWORD_HASH_COSTS } from "../config.js";

const KEY_LENGTH = 64;
/** scrypt's block size and parallelism; N comes from the configured cost. */
const R = 8;
const P = 1;

interface Cost {
  N: number;
  r: number;
  p: number;
}

/** What a stored hash may ask of `verify`: within the configured range (config.ts), r and p as ever written. */
function acceptable({ N, r, p }: Cost): boolean {
  const log2 = Math.log2(N);
  return Number.isInteger(log2) && log2 >= PASSWORD_HASH_COSTS.least && log2 <= PASSWORD_HASH_COSTS.most && r === R && p === P;
}

function scrypt(password: string, salt: Buffer, { N, r, p }: Cost): Promise<Buffer> {
  // scrypt needs 128 * N * r bytes; twice that leaves room for its own bookkeeping.
  const maxmem = Math.max(64 * 1024 * 1024, 256 * N * r);
  return new Promise((resolve, reject) =>
    scryptCallback(password, salt, KEY_LENGTH, { N, r, p, maxmem }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** Work asked for by no client (the CLI, the dummy hash made once). */
const LOCAL = "local";

export class ScryptPasswordHasher implements PasswordHasher {
  private readonly gate: FairGate;
  private dummyHash: Promise<string> | undefined;
  private readonly cost: Cost;

  /** `cost`: log2 of N for new hashes (`PASSWORD_HASH_COST`). */
  constructor(concurrentHashes: number, limits: GateLimits = { perKey: Infinity, queue: Infinity }, cost: number = PASSWORD_HASH_COSTS.fallback) {
    this.gate = new FairGate(Math.max(1, concurrentHashes), limits);
    this.cost = { N: 2 ** cost, r: R, p: P };
    if (!acceptable(this.cost)) throw new Error(`A password hash cost of ${cost} is outside ${PASSWORD_HASH_COSTS.least}..${PASSWORD_HASH_COSTS.most}.`);
  }

  /**
   * `scrypt$N$r$p$salt$key`, salt and key in base64.
   * @throws TooManyRequestsError when `requester` already has its share of hashing under way.
   */
  hash(password: string, requester = LOCAL): Promise<string> {
    return this.gate.run(requester, async () => {
      const salt = randomBytes(16);
      const { N, r, p } = this.cost;
      const key = await scrypt(password, salt, this.cost);
      return ["scrypt", N, r, p, salt.toString("base64"), key.toString("base64")].join("$");
    });
  }

  /**
   * Compares in constant time; a malformed stored hash never matches.
   * @throws TooManyRequestsError as `hash` does.
   */
  verify(password: string, stored: string, requester = LOCAL, urgent = false): Promise<boolean> {
    return this.gate.run(
      requester,
      async () => {
        const [scheme, nText, rText, pText, saltText, keyText] = stored.split("$");
        if (scheme !== "scrypt" || !saltText || !keyText) return false;
        // The parameters the hash was made with; one outside what this server would make is no match.
        const cost = { N: Number(nText), r: Number(rText), p: Number(pText) };
        if (!acceptable(cost)) return false;
        const expected = Buffer.from(keyText, "base64");
        const actual = await scrypt(password, Buffer.from(saltText, "base64"), cost);
        return expected.length === actual.length && timingSafeEqual(expected, actual);
      },
      urgent,
    );
  }

  /**
   * Spends the same work as a real check for an email that has no account, so the answer
   * time does not tell which accounts exist.
   */
  async verifyAgainstDummy(password: string, requester = LOCAL): Promise<false> {
    this.dummyHash ??= this.hash(randomBytes(16).toString("hex"));
    this.dummyHash.catch(() => (this.dummyHash = undefined));
    await this.verify(password, await this.dummyHash, requester);
    return false;
  }
}

/** The server's hasher, with the concurrency and per-client shares of the configuration. */
export function scryptHasherFor(limits: { concurrentHashes: number; hashesPerAddress: number; hashQueue: number; passwordHashCost: number }): ScryptPasswordHasher {
  return new ScryptPasswordHasher(
    limits.concurrentHashes,
    {
      perKey: limits.hashesPerAddress,
      queue: limits.hashQueue,
      reserved: limits.concurrentHashes >= 2 ? 1 : 0,
    },
    limits.passwordHashCost,
  );
}
