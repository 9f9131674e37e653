/**
 * The anchor for many readers (issue 27): a bare node:http server holding event streams,
 * with none of Cardtree's routing, auth, store or stream bookkeeping. `GET /events` opens a
 * stream (the same headers and first comment as Cardtree's); `POST /publish` writes one
 * event, framed once, to every open stream and answers 204 once it has; `GET /healthz` is
 * ready. Started pinned by bench/scenarios/stream-memory.ts with PORT set. Plain
 * JavaScript, so its memory is node's alone.
 */
import http from "node:http";

const open = new Set();
let revision = 0;

http
  .createServer((req, res) => {
    if (req.url === "/events") {
      res.writeHead(200, { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store", "X-Accel-Buffering": "no" });
      res.write("retry: 2000\n: open\n\n");
      open.add(res);
      res.once("close", () => open.delete(res));
      return;
    }
    if (req.url === "/publish") {
      revision++;
      const frame = Buffer.from(`id: ${revision}\nevent: change\ndata: ${JSON.stringify({ revision, cards: [{ content: `Live ${revision}` }] })}\n\n`);
      for (const each of open) each.write(frame);
      res.writeHead(204).end();
      return;
    }
    res.writeHead(200, { "Content-Type": "text/plain" }).end("ok");
  })
  .listen(Number(process.env.PORT), "127.0.0.1");

process.on("SIGTERM", () => process.exit(0));
