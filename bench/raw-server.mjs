/**
 * The physical limit for the read scenario: a bare node:http server that answers every
 * request with one precomputed buffer (the bytes Cardtree sends for the same tree), with
 * no routing, auth, store or serialization. Started pinned by bench/scenarios/reads.ts:
 * `node bench/raw-server.mjs BODY_FILE` with PORT set; GET /healthz is ready. Plain
 * JavaScript, so its start and memory are node's alone, not tsx's.
 */
import { readFileSync } from "node:fs";
import http from "node:http";

const body = readFileSync(process.argv[2]);
const headers = { "Content-Type": "application/json; charset=utf-8", "Content-Length": String(body.length) };
// `node bench/raw-server.mjs BODY_FILE br`: the file holds compressed bytes, sent as such
// (bench/scenarios/wire.ts compares Cardtree's compressed read with it).
if (process.argv[3]) Object.assign(headers, { "Content-Encoding": process.argv[3], Vary: "Accept-Encoding" });

http
  .createServer((_req, res) => {
    res.writeHead(200, headers);
    res.end(body);
  })
  .listen(Number(process.env.PORT), "127.0.0.1");

process.on("SIGTERM", () => process.exit(0));
