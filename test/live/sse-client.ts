/**
 * A Server-Sent Events reader for the live tests, over fetch as a script would read the
 * stream: events parsed as they arrive, waited for one by one, and the connection dropped
 * at will. The response's status and media type are checked against the OpenAPI document.
 */
import { checkAgainstOpenApi } from "../helpers/openapi-check.js";

export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

export class SseReader {
  readonly events: SseEvent[] = [];
  ended = false;
  private waiters: (() => void)[] = [];

  private constructor(
    readonly status: number,
    readonly headers: Headers,
    private readonly controller: AbortController,
    body: ReadableStream<Uint8Array> | null,
  ) {
    if (body) void this.pump(body);
    else this.ended = true;
  }

  /** Opens `path` (under the server's /api) with `headers`; resolves once the response's head is in. */
  static async open(baseUrl: string, path: string, headers: Record<string, string> = {}, method = "GET", body?: string): Promise<SseReader> {
    const controller = new AbortController();
    const res = await fetch(baseUrl + path, { method, headers, body, signal: controller.signal });
    const reader = new SseReader(res.status, res.headers, controller, res.status === 200 ? res.body : null);
    if (res.status !== 200) reader.text = await res.text();
    if (path.startsWith("/api/")) {
      await checkAgainstOpenApi(baseUrl, method, res.url, {
        status: res.status,
        headers: res.headers,
        text: reader.text,
        body: reader.text && res.headers.get("content-type")?.includes("json") ? JSON.parse(reader.text) : reader.text,
      });
    }
    return reader;
  }

  /** The body of a refusal (not 200). */
  text = "";

  get json(): any {
    return JSON.parse(this.text);
  }

  /** The events named `name` so far, their data parsed. */
  data(name = "change"): any[] {
    return this.events.filter((e) => e.event === name).map((e) => JSON.parse(e.data));
  }

  /** Waits until `count` events named `name` arrived (or the stream ended); fails after `timeoutMs`. */
  async waitFor(count: number, name = "change", timeoutMs = 5000): Promise<any[]> {
    await this.until(() => this.data(name).length >= count || this.ended, timeoutMs, `${count} ${name} events`);
    return this.data(name);
  }

  async waitForEnd(timeoutMs = 5000): Promise<void> {
    await this.until(() => this.ended, timeoutMs, "the end of the stream");
  }

  close(): void {
    this.controller.abort();
  }

  private async until(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`waited ${timeoutMs} ms for ${what}; got ${JSON.stringify(this.events)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  private async pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = "";
    const reader = body.getReader();
    try {
      for (let read = await reader.read(); !read.done; read = await reader.read()) {
        buffer += decoder.decode(read.value, { stream: true });
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event: SseEvent = { event: "message", data: "" };
          let hasData = false;
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) continue;
            const colon = line.indexOf(":");
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
            if (field === "id") event.id = value;
            else if (field === "event") event.event = value;
            else if (field === "data") {
              event.data += (hasData ? "\n" : "") + value;
              hasData = true;
            }
          }
          if (hasData) this.events.push(event);
          this.wake();
        }
      }
    } catch {
      // Aborted by close(), or cut by the server.
    }
    this.ended = true;
    this.wake();
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}
