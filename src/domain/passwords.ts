/**
 * Password hashing with node:crypto scrypt (SPEC §4). A hash costs tens of milliseconds of
 * CPU on the libuv pool, so at most a few run at once: a flood of log-in attempts waits in
 * line instead of starving every other file and crypto operation.
 */
import { randomBytes, scrypt as scryptCallback, timingSafeEqual } from "node:crypto";

const KEY_LENGTH = 64;
const COST = { N: 16384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

function scrypt(password: string, salt: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCallback(password, salt, KEY_LENGTH, COST, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

class Semaphore {
  private waiting: (() => void)[] = [];
  private running = 0;
  constructor(private readonly size: number) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}

export class PasswordHasher {
  private readonly gate: Semaphore;
  private dummyHash: Promise<string> | undefined;

  constructor(concurrentHashes: number) {
    this.gate = new Semaphore(Math.max(1, concurrentHashes));
  }

  /** `scrypt$N$r$p$salt$key`, salt and key in base64. */
  hash(password: string): Promise<string> {
    return this.gate.run(async () => {
      const salt = randomBytes(16);
      const key = await scrypt(password, salt);
      return ["scrypt", COST.N, COST.r, COST.p, salt.toString("base64"), key.toString("base64")].join("$");
    });
  }

  /** Compares in constant time; a malformed stored hash never matches. */
  verify(password: string, stored: string): Promise<boolean> {
    return this.gate.run(async () => {
      const [scheme, , , , saltText, keyText] = stored.split("$");
      if (scheme !== "scrypt" || !saltText || !keyText) return false;
      const expected = Buffer.from(keyText, "base64");
      const actual = await scrypt(password, Buffer.from(saltText, "base64"));
      return expected.length === actual.length && timingSafeEqual(expected, actual);
    });
  }

  /**
   * Spends the same work as a real check for an email that has no account, so the answer
   * time does not tell which accounts exist.
   */
  async verifyAgainstDummy(password: string): Promise<false> {
    this.dummyHash ??= this.hash(randomBytes(16).toString("hex"));
    await this.verify(password, await this.dummyHash);
    return false;
  }
}
