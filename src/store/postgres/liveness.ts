/**
 * Whether the process that made an idempotency claim is still alive, as every process
 * sharing the database can tell (issue 26: a retry after a server crash should not wait out
 * the dead claim's 30 s lease; docs/decisions.md, "A dead process's claims, dead at once").
 *
 * Each process takes a random id when it opens the store, its process id, and holds a session
 * advisory lock on it in shared mode: on a dedicated connection, and on every connection of
 * the store's pool (`lockOn`, taken before the pool hands the connection out). PostgreSQL
 * drops a session's advisory locks when its connection closes, so the lock is free exactly
 * when no connection of the process is left, and nothing of it can commit any more: a process
 * killed (SIGKILL, a crash) frees it within milliseconds. A claim carries its maker's process
 * id (`claimToken`); a process meeting another's running claim asks whether that id's lock is
 * free (`isGone`, only then: nothing is asked on a write's way), and if so takes the claim
 * over at once, as it would once its lease had ended. The lease stays the fallback: a claim
 * with no id, or whose owner cannot be asked, ends with its lease as before.
 *
 * The process id never changes, so every connection the process has, opened before or after
 * anything was lost, keeps it alive in the others' eyes. What may happen is that all of them
 * go at once (the database restarted, the network cut), another process takes the claims
 * over meanwhile, and the process's connections come back. The dedicated connection's loss
 * is how the process learns of that: a claim also names the dedicated connection it was made
 * under (a random id of its own, a fresh one each time the connection is opened), and once
 * that connection is lost the process stops trusting the claims made under it (`holds` turns
 * false at once: a keyed change under such a claim is refused, so nothing is committed under
 * a claim another process may have taken over). Until the dedicated connection is back its
 * new claims carry no ids, which only their lease ends. (An earlier form of this took a fresh
 * process id instead, which the pool's older connections did not hold: losing the dedicated
 * connection a second time then freed the new id while those connections could still be
 * committing, and another process took a live claim over. The session's review proved it.)
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { KeptConnection } from "./kept-connection.js";
import { newRecordId } from "../../shared/ids.js";

/** A claim token: the maker's process id, its dedicated connection's id, a dot, a unique record id. */
const OWNED_TOKEN = /^([0-9a-f]{16})([0-9a-f]{16})\./;
const lockName = (id: string) => `cardtree:instance:${id}`;
const LOCK_SHARED = "SELECT pg_advisory_lock_shared(hashtextextended($1, 0))";
/** Taken and let go in one statement: true when nobody held it (its owner has no connection left). */
const LOCK_FREE = `SELECT CASE WHEN pg_try_advisory_lock(hashtextextended($1, 0))
  THEN pg_advisory_unlock(hashtextextended($1, 0)) ELSE false END AS free`;

export class ProcessLiveness extends KeptConnection {
  /** The id every connection of this process locks, for its life. */
  private readonly process = newInstanceId();
  /** The dedicated connection's id: a new one each time it is opened; `holding` while it is up. */
  private id = newInstanceId();
  private holding = false;
  /** Dedicated connections' ids this process lost: the claims made under them are not trusted any more. */
  private readonly lost = new Set<string>();

  constructor(
    databaseUrl: string,
    private readonly options: { log: (message: string, fields: Record<string, unknown>) => void; connectTimeoutMs?: number },
  ) {
    super(databaseUrl, { name: "cardtree-liveness", timeoutMs: options.connectTimeoutMs });
  }

  /** Takes the id's lock on a dedicated connection; when that fails, tries again in the background (claims carry no id meanwhile). */
  async start(): Promise<void> {
    try {
      await this.connect();
    } catch (err) {
      this.options.log("the liveness connection could not be opened; claims end with their lease until it is", { error: String(err) });
      this.schedule();
    }
  }

  /** For the pool's `onConnect`: the connection holds the process id's lock as long as it lives. */
  async lockOn(client: pg.ClientBase): Promise<void> {
    await client.query(LOCK_SHARED, [lockName(this.process)]);
  }

  /** A new claim's token: naming this process while it holds its id's lock, else a bare id (its lease alone ends it). */
  claimToken(): string {
    return this.holding ? `${this.process}${this.id}.${newRecordId()}` : newRecordId();
  }

  /** False for a claim this process made under a dedicated connection it lost since: another process may have taken it over. */
  holds(claim: string): boolean {
    const connection = OWNED_TOKEN.exec(claim)?.[2];
    return connection === undefined || !this.lost.has(connection);
  }

  /**
   * Whether the process that made `claim` has no connection left (it died), so the claim
   * can be taken over now. False when unsure (no id in it, or the database did not answer):
   * the lease decides then.
   */
  async isGone(pool: pg.Pool, claim: string): Promise<boolean> {
    const owner = OWNED_TOKEN.exec(claim)?.[1];
    if (owner === undefined) return false;
    try {
      const { rows } = await pool.query<{ free: boolean }>({ name: "liveness-free", text: LOCK_FREE, values: [lockName(owner)] });
      return rows[0].free;
    } catch {
      return false;
    }
  }

  override async close(): Promise<void> {
    this.holding = false;
    await super.close();
  }

  protected async prepare(client: pg.Client): Promise<void> {
    await this.lockOn(client);
  }

  protected up(): void {
    this.holding = true;
  }

  /** The dedicated connection is gone: the claims made under it are not trusted any more, and the next one gets a fresh id. */
  protected down(_client: pg.Client, err: unknown): void {
    this.holding = false;
    this.lost.add(this.id);
    this.id = newInstanceId();
    this.options.log("the liveness connection was lost; this process's running keyed requests commit nothing more, and it takes a fresh id", { error: String(err) });
  }
}

function newInstanceId(): string {
  return randomBytes(8).toString("hex");
}
