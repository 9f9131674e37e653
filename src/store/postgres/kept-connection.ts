/**
 * A connection of a process's own to the database, outside the pools, kept open for the
 * process's life: the notice listener's (LISTEN belongs to one session) and the liveness
 * lock's (an advisory lock too). When it goes (the database restarts, the network drops, the
 * subclass finds it dead), the subclass is told (`down`) and it is opened again after a
 * growing pause (250 ms doubling to 5 s, with jitter so that many processes do not all return
 * in the same instant), until `close`.
 */
import pg from "pg";

const FIRST_PAUSE_MS = 250;
const LONGEST_PAUSE_MS = 5_000;

export abstract class KeptConnection {
  /** The connection while it is up (after `prepare`), else null. */
  protected client: pg.Client | null = null;
  protected closed = false;
  private pause = FIRST_PAUSE_MS;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly databaseUrl: string,
    private readonly settings: { name: string; timeoutMs?: number },
  ) {}

  /** What a new connection does before it counts as up (LISTEN, a lock); a failure closes it. */
  protected abstract prepare(client: pg.Client): Promise<void>;
  /** The connection is up: `again` after a loss (not on the first connect). */
  protected abstract up(client: pg.Client, again: boolean): void;
  /** The connection that was up is gone (not closed by `close`); it is opened again after a pause. */
  protected abstract down(client: pg.Client, err: unknown): void;
  /** Listeners a new connection gets before it connects (notifications). */
  protected attach(_client: pg.Client): void {}

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  /** Opens the connection; rejects when that fails (nothing is scheduled then). */
  protected async connect(again = false): Promise<void> {
    const client = new pg.Client({
      connectionString: this.databaseUrl,
      keepAlive: true,
      connectionTimeoutMillis: this.settings.timeoutMs ?? 5_000,
      application_name: this.settings.name,
    });
    // Before connect: an error on a connection without a listener would end the process.
    client.on("error", (err) => this.drop(client, err));
    client.on("end", () => this.drop(client, new Error("connection ended")));
    this.attach(client);
    try {
      await client.connect();
      await this.prepare(client);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.pause = FIRST_PAUSE_MS;
    this.up(client, again);
  }

  /** `client` is gone (or found dead): told once, then opened again after a pause. */
  protected drop(client: pg.Client, err: unknown): void {
    if (this.client !== client || this.closed) return;
    this.client = null;
    client.end().catch(() => undefined);
    this.down(client, err);
    this.schedule();
  }

  /** Tries to open the connection again after the next pause, and again until it opens or `close`. */
  protected schedule(): void {
    if (this.closed) return;
    const wait = this.pause * (0.75 + Math.random() / 2);
    this.pause = Math.min(LONGEST_PAUSE_MS, this.pause * 2);
    this.retry = setTimeout(() => this.connect(true).catch(() => this.schedule()), wait);
    this.retry.unref();
  }
}
