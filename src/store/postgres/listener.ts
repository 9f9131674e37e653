/**
 * One dedicated connection per process that LISTENs on the channels processes share
 * (postgres/notices.ts). It is not a pooled connection: a pool hands connections back and
 * forth, and a LISTEN belongs to one session for as long as it lives.
 *
 * When the connection goes (the database restarts, the network drops, a heartbeat query
 * gets no answer), the listener says so (`lost`) and connects again with a growing pause
 * (250 ms doubling to 5 s, with jitter so that many processes do not all return in the same
 * instant). Once it is back and listening again, it says so (`restored`): whatever was
 * announced meanwhile was missed, so whoever derived something from notices must take it
 * as possibly stale.
 */
import pg from "pg";
import { KeptConnection } from "./kept-connection.js";

export interface ListenerEvents {
  notice(channel: string, payload: string | undefined): void;
  /** The connection is gone; notices may be missed until `restored`. */
  lost(): void;
  /** Listening again after `lost`. */
  restored(): void;
}

export interface ListenerOptions {
  log?: (message: string, fields: Record<string, unknown>) => void;
  /** How often the connection is checked with a query (default 10 s). */
  heartbeatMs?: number;
  /** How long a connection attempt or a heartbeat may take (default 5 s). */
  timeoutMs?: number;
}

/** Notices waiting to be sent on the connection beyond which more are dropped (they are advisory). */
const MOST_WAITING_NOTICES = 1_000;

export class NoticeListener extends KeptConnection {
  private connected = false;
  private heartbeat: NodeJS.Timeout | undefined;
  /**
   * The connection's statements, one at a time: pg queues a query sent while another runs,
   * but that is deprecated (pg 9 refuses it), and a burst of notices did just that.
   */
  private tail: Promise<unknown> = Promise.resolve();
  private waitingNotices = 0;
  private readonly log: NonNullable<ListenerOptions["log"]>;

  constructor(
    databaseUrl: string,
    private readonly channels: readonly string[],
    private readonly events: ListenerEvents,
    private readonly options: ListenerOptions = {},
  ) {
    super(databaseUrl, { name: "cardtree-listen", timeoutMs: options.timeoutMs });
    this.log = options.log ?? (() => undefined);
  }

  /** Whether the connection is up and listening. */
  get listening(): boolean {
    return this.connected;
  }

  /** Connects the first time; rejects if that fails (the process should not start deaf). */
  async start(): Promise<void> {
    await this.connect();
  }

  /**
   * Sends a notice on this connection, when it is up; otherwise (or if sending fails) the
   * notice is dropped: what is sent here is advisory (failed log-ins), never a change.
   */
  notify(channel: string, payload: string): void {
    if (!this.client || !this.connected || this.waitingNotices >= MOST_WAITING_NOTICES) return;
    this.waitingNotices++;
    this.inTurn(this.client, "SELECT pg_notify($1, $2)", [channel, payload])
      .catch(() => undefined)
      .finally(() => this.waitingNotices--);
  }

  /** Sends a statement on `client` once the ones sent before it are answered. */
  private inTurn(client: pg.Client, sql: string, params?: unknown[]): Promise<unknown> {
    const sent = this.tail.then(() => client.query(sql, params));
    this.tail = sent.catch(() => undefined);
    return sent;
  }

  override async close(): Promise<void> {
    clearInterval(this.heartbeat);
    this.connected = false;
    await super.close();
  }

  protected override attach(client: pg.Client): void {
    client.on("notification", (message) => {
      if (this.client === client) this.events.notice(message.channel, message.payload);
    });
  }

  protected async prepare(client: pg.Client): Promise<void> {
    for (const channel of this.channels) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
  }

  protected up(client: pg.Client, again: boolean): void {
    this.tail = Promise.resolve();
    this.connected = true;
    clearInterval(this.heartbeat);
    this.heartbeat = setInterval(() => this.check(client), this.options.heartbeatMs ?? 10_000);
    this.heartbeat.unref();
    if (!again) return;
    this.log("the database notice connection is back", {});
    this.events.restored();
  }

  /** A connection that answers nothing (a silent network) is as gone as a closed one. */
  private check(client: pg.Client): void {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("no answer to the heartbeat")), this.options.timeoutMs ?? 5_000);
    });
    Promise.race([this.inTurn(client, "SELECT 1"), late])
      .catch((err: unknown) => this.drop(client, err))
      .finally(() => clearTimeout(timer));
  }

  protected down(_client: pg.Client, err: unknown): void {
    this.connected = false;
    clearInterval(this.heartbeat);
    this.log("the database notice connection was lost; reconnecting", { error: String(err) });
    this.events.lost();
  }
}
