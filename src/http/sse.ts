/**
 * Server-Sent Events framing (the WHATWG HTML "event stream" format) for long-lived
 * responses: the headers proxies need to pass events on at once, comment-line heartbeats on
 * one timer for all open streams (so proxies keep idle ones open), and the rule that keeps
 * a slow reader from costing memory: past `bufferBytes` of unsent output, it is dropped.
 */
import type { Request, Response } from "express";

export interface SseEvent {
  id?: string | number;
  event?: string;
  /** JSON: one line (JSON.stringify escapes line breaks inside strings). */
  data: string;
}

/** One event's bytes on the wire. */
export function eventFrame(event: SseEvent): Buffer {
  let frame = "";
  if (event.id !== undefined) frame += `id: ${event.id}\n`;
  if (event.event !== undefined) frame += `event: ${event.event}\n`;
  frame += `data: ${event.data}\n\n`;
  return Buffer.from(frame);
}

const KEEP_ALIVE = Buffer.from(": keep-alive\n\n");

export interface SseOptions {
  heartbeatMs: number;
  bufferBytes: number;
}

export class SseStream {
  private closed = false;
  private readonly closeListeners: (() => void)[] = [];

  constructor(
    private readonly res: Response,
    private readonly options: SseOptions,
    private readonly hub: SseHub,
  ) {}

  /** Sends one event; false once the stream is closed (the reader left, or was dropped for not reading). */
  send(event: SseEvent): boolean {
    return this.write(eventFrame(event));
  }

  /**
   * Sends an event already framed by {@link eventFrame}: one change goes to every reader of
   * its tree, so its frame is made once and the same bytes are written to each (with
   * 10,000 readers, framing and encoding it per stream was most of a fan-out's time).
   */
  sendFrame(frame: Buffer): boolean {
    return this.write(frame);
  }

  /** A comment line: keeps proxies from timing the stream out. */
  heartbeat(): void {
    this.write(KEEP_ALIVE);
  }

  onClose(listener: () => void): void {
    if (this.closed) listener();
    else this.closeListeners.push(listener);
  }

  /** Ends the response (the client's EventSource reconnects, unless the server says otherwise then). */
  close(): void {
    if (this.closed) return;
    this.finish();
    this.res.end();
  }

  /** @internal called once the connection is gone, however. */
  finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.hub.remove(this);
    for (const listener of this.closeListeners.splice(0)) listener();
  }

  private write(frame: string | Buffer): boolean {
    if (this.closed) return false;
    // The reader has not taken what was sent before: drop it rather than buffer without bound.
    if (this.res.writableLength > this.options.bufferBytes) {
      this.finish();
      this.res.destroy();
      return false;
    }
    this.res.write(frame);
    return true;
  }
}

/** Every open SSE response of the server, and the one heartbeat timer they share. */
export class SseHub {
  private readonly open = new Set<SseStream>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: SseOptions) {}

  /** Starts an event stream on `res`: status 200, the headers, a first comment so clients see it open. */
  start(req: Request, res: Response, retryMs: number): SseStream {
    res.status(200).set({
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-store",
      // nginx and others buffer responses unless told not to.
      "X-Accel-Buffering": "no",
    });
    res.flushHeaders();
    const stream = new SseStream(res, this.options, this);
    res.write(`retry: ${retryMs}\n: open\n\n`);
    req.socket.setNoDelay(true);
    res.once("close", () => stream.finish());
    this.open.add(stream);
    if (!this.timer) {
      this.timer = setInterval(() => {
        for (const each of [...this.open]) each.heartbeat();
      }, this.options.heartbeatMs);
      this.timer.unref();
    }
    return stream;
  }

  remove(stream: SseStream): void {
    this.open.delete(stream);
    if (this.open.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}
