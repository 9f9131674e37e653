/**
 * Server-Sent Events framing (the WHATWG HTML "event stream" format) for long-lived
 * responses: the headers proxies need to pass events on at once, comment-line heartbeats on
 * one timer for all open streams, a slice of them at a time (so proxies keep idle ones
 * open), and the rule that keeps a slow reader from costing memory: past `bufferBytes` of
 * unsent output, it is dropped.
 */
import type { Socket } from "node:net";
import type { Request, Response } from "express";

export interface SseEvent {
  id?: string | number;
  event?: string;
  /** JSON: one line (JSON.stringify escapes line breaks inside strings). */
  data: string;
}

/**
 * One event's bytes, framed once for all the streams it goes to: as they go on the wire in
 * a chunked HTTP/1.1 response (the chunk's size line and the CRLF after it around the
 * event), and as the event alone (HTTP/1.0, or a response not yet on its connection).
 */
export class SseFrame {
  readonly chunked: Buffer;

  constructor(readonly bytes: Buffer) {
    this.chunked = Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`, "latin1"), bytes, CRLF]);
  }
}

const CRLF = Buffer.from("\r\n", "latin1");

/** One event's bytes on the wire. */
export function eventFrame(event: SseEvent): SseFrame {
  let frame = "";
  if (event.id !== undefined) frame += `id: ${event.id}\n`;
  if (event.event !== undefined) frame += `event: ${event.event}\n`;
  frame += `data: ${event.data}\n\n`;
  return new SseFrame(Buffer.from(frame));
}

const KEEP_ALIVE = new SseFrame(Buffer.from(": keep-alive\n\n"));

export interface SseOptions {
  heartbeatMs: number;
  bufferBytes: number;
}

export class SseStream {
  /** @internal the hub's heartbeat slice this stream is in. */
  slice: Set<SseStream> | null = null;
  private closed = false;
  private readonly closeListeners: (() => void)[] = [];

  /**
   * @param socket the response's connection, written to directly (see `write`), or null
   *   to write through the response.
   */
  constructor(
    private readonly res: Response,
    private readonly options: SseOptions,
    private readonly hub: SseHub,
    private readonly socket: Socket | null,
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
  sendFrame(frame: SseFrame): boolean {
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

  /**
   * A chunked response whose head is on its connection gets each event's chunk, framed
   * once for every stream, written straight to the socket: the same bytes the response's
   * own write would send, without its per-write work (a cork, four buffered writes and an
   * uncork on the next tick), which with 10,000 streams was most of what a change cost
   * after the promise per stream had gone. The response's end still writes the last chunk.
   */
  private write(frame: SseFrame): boolean {
    if (this.closed) return false;
    // The reader has not taken what was sent before: drop it rather than buffer without bound.
    if (this.res.writableLength > this.options.bufferBytes) {
      this.finish();
      this.res.destroy();
      return false;
    }
    if (this.socket) this.socket.write(frame.chunked);
    else this.res.write(frame.bytes);
    return true;
  }
}

/**
 * Heartbeats go out in this many beats of the interval, to a slice of the streams each:
 * with 10,000 streams, writing every one at once held the event loop ~0.1 s every interval
 * (a change written meanwhile reached its readers that much later).
 */
const HEARTBEAT_SLICES = 20;

/** Every open SSE response of the server, and the one heartbeat timer they share. */
export class SseHub {
  /** The open streams in slices of about the same size; one slice's heartbeats go out at each beat. */
  private readonly slices: Set<SseStream>[] = Array.from({ length: HEARTBEAT_SLICES }, () => new Set());
  private open = 0;
  private beat = 0;
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
    res.write(`retry: ${retryMs}\n: open\n\n`);
    // Written to directly only when what the response would send is sure: chunked, with its
    // head already on this connection (a pipelined response waits for its socket, HEAD has no body).
    const direct = res.chunkedEncoding && req.method === "GET" && res.socket !== null && res.headersSent && !res.writableEnded;
    const stream = new SseStream(res, this.options, this, direct ? res.socket : null);
    req.socket.setNoDelay(true);
    res.once("close", () => stream.finish());
    // The routers' per-request state (each level's `next` and what it closes over) is not
    // needed by a response that now only streams, and would be held for the stream's life.
    req.next = undefined;
    const slice = this.slices.reduce((smallest, each) => (each.size < smallest.size ? each : smallest));
    slice.add(stream);
    stream.slice = slice;
    this.open++;
    if (!this.timer) {
      this.timer = setInterval(
        () => {
          const due = this.slices[this.beat++ % HEARTBEAT_SLICES];
          for (const each of [...due]) each.heartbeat();
        },
        Math.max(1, Math.floor(this.options.heartbeatMs / HEARTBEAT_SLICES)),
      );
      this.timer.unref();
    }
    return stream;
  }

  remove(stream: SseStream): void {
    if (!stream.slice?.delete(stream)) return;
    stream.slice = null;
    if (--this.open === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}
