/**
 * Password hashing with node:crypto scrypt (SPEC §4), the server's PasswordHasher port. A hash costs tens of milliseconds of
 * CPU on the libuv pool, so at most a few run at once, and the line to get one is fair:
 * each piece of work names who asked (the client's address, `requester`), requesters are
 * served in turn, and one requester's share of the line is capped (src/domain/fair-gate.ts).
 * A flood from one client is answered 429 past its share instead of standing in front of
 * everyone else's log-in. With two slots or more, one is kept for log-ins with credentials
 * verified before: a flood of sign-ups or guesses from many addresses never holds every slot
 * (nor, on two cores, both cores), so a returning user's log-in starts at once.
 */
import { randomBytes, scrypt as scryptCallback, timingSafeEqual } from "node:crypto";
import { FairGate, type GateLimits } from "../domain/fair-gate.js";
import type { PasswordHasher } from "../domain/ports/password-hasher.js";

const KEY_LENGTH = 64;
const COST = { N: 16384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

function scrypt(password: string, salt: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCallback(password, salt, KEY_LENGTH, COST, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** Work asked for by no client (the CLI, the dummy hash made once). */
const LOCAL = "local";

export class ScryptPasswordHasher implements PasswordHasher {
  private readonly gate: FairGate;
  private dummyHash: Promise<string> | undefined;

  constructor(concurrentHashes: number, limits: GateLimits = { perKey: Infinity, queue: Infinity }) {
    this.gate = new FairGate(Math.max(1, concurrentHashes), limits);
  }

  /**
   * `scrypt$N$r$p$salt$key`, salt and key in base64.
   * @throws TooManyRequestsError when `requester` already has its share of hashing under way.
   */
  hash(password: string, requester = LOCAL): Promise<string> {
    return this.gate.run(requester, async () => {
      const salt = randomBytes(16);
      const key = await scrypt(password, salt);
      return ["scrypt", COST.N, COST.r, COST.p, salt.toString("base64"), key.toString("base64")].join("$");
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
      const [scheme, , , , saltText, keyText] = stored.split("$");
      if (scheme !== "scrypt" || !saltText || !keyText) return false;
      const expected = Buffer.from(keyText, "base64");
      const actual = await scrypt(password, Buffer.from(saltText, "base64"));
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
export function scryptHasherFor(limits: { concurrentHashes: number; hashesPerAddress: number; hashQueue: number }): ScryptPasswordHasher {
  return new ScryptPasswordHasher(limits.concurrentHashes, {
    perKey: limits.hashesPerAddress,
    queue: limits.hashQueue,
    reserved: limits.concurrentHashes >= 2 ? 1 : 0,
  });
}
