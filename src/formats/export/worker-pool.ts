/**
 * Exports and import parsing off the event loop (issues 12 and 18): rendering a big tree to
 * docx, pptx or html, or reading a 16 MiB seed, takes
 * seconds of CPU, which on the main thread would stall every other user's request. A small
 * pool of `node:worker_threads` workers runs `exportTree`; each job has a deadline, after
 * which its worker is terminated, and each worker a heap limit, so no export can take the
 * server down with it. Cheap exports (txt, md, json of a modest tree) stay on the main
 * thread, where a worker's hand-off would cost more than the export.
 *
 * The worker runs this very module (`import.meta.url`): it is reached only through a dynamic
 * import, so in the esbuild bundle (scripts/build.mjs, `splitting`) it sits in a chunk of its
 * own rather than in dist/server.mjs, and the chunk is a file a worker can load. How the
 * worker starts (from that file, under tsx, or from the single binary's embedded worker
 * script) is ../worker-start.ts's business.
 */
import { isMainThread, parentPort, type Worker, workerData } from "node:worker_threads";
import {
  DomainError,
  LimitReachedError,
  NotFoundError,
  TooManyRequestsError,
  ValidationError,
  type ErrorCode,
  type ErrorDetail,
} from "../../shared/errors.js";
import type { ImportNode } from "../../shared/records.js";
import type { ExportFormat, ExportJob, ExportResult } from "../../shared/export-options.js";
import { startWorker } from "../worker-start.js";

export interface ExportPoolConfig {
  /** Workers at most; 0 runs every export on the main thread. */
  workers: number;
  /** Exports waiting for a worker at most; more are refused with 429. */
  queue: number;
  /** Longest an export may run in its worker. */
  timeoutMs: number;
  /** Heap of each worker (V8's old generation), in MiB. */
  workerMemoryMb: number;
}


/** What a worker is asked: an export, or the parse of an import's seed. */
type Job = { kind: "export"; job: ExportJob } | { kind: "seed"; seed: string };

/** Text formats below this many characters of cards are cheaper to export in place. */
const INLINE_CHARS = 1024 * 1024;
const INLINE_FORMATS: ReadonlySet<ExportFormat> = new Set(["txt", "md", "json", "opml", "gkw"]);
/** Seeds below this many characters are parsed in place (a few milliseconds). */
const INLINE_SEED_CHARS = 64 * 1024;
/**
 * A worker left idle this long is stopped: its heap goes back. Short, because a worker that
 * has just built a big export keeps hundreds of MB until it ends (measured in the hostile
 * bench: 30 s kept the export workers of earlier attacks alive through later ones, and the
 * server's RSS only climbed); starting a worker again costs tens of milliseconds.
 */
const IDLE_MS = 5_000;
/** Anonymous exports running at once, at most (ExportJob.anonymous): they queue for one worker. */
const ANONYMOUS_AT_ONCE = 1;
/** The worker entry's name (`workerData.role`; the single binary's worker script runs it by it). */
export const EXPORT_WORKER_ROLE = "cardtree-export-worker";

const pools = new WeakMap<ExportPoolConfig, ExportPool>();

/** Exports `job` on a worker of the pool for `config` (one pool per configuration), or in place when cheap. */
export async function exportOffThread(config: ExportPoolConfig, job: ExportJob): Promise<ExportResult> {
  const size = job.cards.reduce((sum, card) => sum + card.content.length, 0);
  if (config.workers <= 0 || (INLINE_FORMATS.has(job.format) && size <= INLINE_CHARS)) {
    const { exportTree } = await import("./index.js");
    return exportTree(job.format, job.tree, job.cards, job.options);
  }
  const result = (await poolFor(config).run({ kind: "export", job })) as WorkerResult;
  const { body } = result;
  // A view of the transferred memory, not a copy of it.
  return { ...result, body: typeof body === "string" ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength) };
}

/**
 * Parses an import's seed (src/formats/seed.ts) on a worker of the same pool, or in place
 * when it is small: a 16 MiB Markdown seed takes seconds to read.
 * @throws ValidationError for a JSON seed of the wrong shape, as `parseSeed` does.
 */
export async function parseSeedOffThread(config: ExportPoolConfig, seed: string): Promise<ImportNode[]> {
  if (config.workers <= 0 || seed.length <= INLINE_SEED_CHARS) {
    const { parseSeed } = await import("../seed.js");
    return parseSeed(seed);
  }
  return nestSeed((await poolFor(config).run({ kind: "seed", seed })) as FlatSeed);
}

/**
 * A parsed seed as it crosses between threads: contents, depths and ids (a Gingko Writer
 * file's, else absent) in tree order. Structured cloning recurses, and a 10,000-level chain
 * would overflow the stack; a flat list cannot.
 */
type FlatSeed = { contents: string[]; depths: number[]; ids: (string | undefined)[] };

function flattenSeed(nodes: readonly ImportNode[]): FlatSeed {
  const flat: FlatSeed = { contents: [], depths: [], ids: [] };
  const stack: { node: ImportNode; depth: number }[] = [...nodes].reverse().map((node) => ({ node, depth: 0 }));
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    flat.contents.push(node.content);
    flat.depths.push(depth);
    flat.ids.push(node.id);
    for (let i = (node.children?.length ?? 0) - 1; i >= 0; i--) stack.push({ node: node.children![i], depth: depth + 1 });
  }
  return flat;
}

function nestSeed({ contents, depths, ids }: FlatSeed): ImportNode[] {
  const roots: ImportNode[] = [];
  const open: ImportNode[] = [];
  contents.forEach((content, i) => {
    const node: ImportNode = ids[i] === undefined ? { content } : { content, id: ids[i] };
    open.length = depths[i];
    const parent = open[open.length - 1];
    if (parent) (parent.children ??= []).push(node);
    else roots.push(node);
    open.push(node);
  });
  return roots;
}

/** What the pool for `config` is doing now: workers started, busy (anonymous among them), jobs waiting. */
export function exportPoolStats(config: ExportPoolConfig): { workers: number; busy: number; anonymousBusy: number; waiting: number } {
  return pools.get(config)?.stats() ?? { workers: 0, busy: 0, anonymousBusy: 0, waiting: 0 };
}

function poolFor(config: ExportPoolConfig): ExportPool {
  let pool = pools.get(config);
  if (!pool) pools.set(config, (pool = new ExportPool(config)));
  return pool;
}

interface WorkerResult {
  body: string | Uint8Array;
  contentType: string;
  filename: string;
}

interface Pending {
  job: Job;
  anonymous: boolean;
  resolve: (result: unknown) => void;
  reject: (error: unknown) => void;
}

interface Slot {
  worker: Worker;
  busy?: { pending: Pending; timer: NodeJS.Timeout };
  idleTimer?: NodeJS.Timeout;
}

class ExportPool {
  private readonly slots = new Set<Slot>();
  private readonly waiting: Pending[] = [];

  constructor(private readonly config: ExportPoolConfig) {}

  run(job: Job): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const pending = { job, anonymous: job.kind === "export" && job.job.anonymous === true, resolve, reject };
      const slot = this.mayStart(pending) ? this.idleSlot() : undefined;
      if (slot) return this.dispatch(slot, pending);
      // Anonymous jobs may fill half the line at most: a signed-in user's export still finds room.
      const room = pending.anonymous ? Math.ceil(this.config.queue / 2) - this.waiting.filter((p) => p.anonymous).length : this.config.queue - this.waiting.length;
      if (room <= 0 || this.waiting.length >= this.config.queue) {
        return reject(new TooManyRequestsError("The server is busy with other exports; try again in a few seconds.", 5));
      }
      this.waiting.push(pending);
    });
  }

  stats() {
    const busy = [...this.slots].filter((slot) => slot.busy);
    return {
      workers: this.slots.size,
      busy: busy.length,
      anonymousBusy: busy.filter((slot) => slot.busy!.pending.anonymous).length,
      waiting: this.waiting.length,
    };
  }

  /** Whether `pending` may start now: an anonymous job only while fewer than ANONYMOUS_AT_ONCE run. */
  private mayStart(pending: Pending): boolean {
    if (!pending.anonymous) return true;
    let running = 0;
    for (const slot of this.slots) if (slot.busy?.pending.anonymous) running++;
    return running < ANONYMOUS_AT_ONCE;
  }

  /** The first waiting job that may start now, taken off the queue. */
  private takeWaiting(): Pending | undefined {
    const index = this.waiting.findIndex((pending) => this.mayStart(pending));
    return index < 0 ? undefined : this.waiting.splice(index, 1)[0];
  }

  private idleSlot(): Slot | undefined {
    for (const slot of this.slots) if (!slot.busy) return slot;
    if (this.slots.size < this.config.workers) return this.startWorker();
    return undefined;
  }

  private startWorker(): Slot {
    const worker = startWorker(EXPORT_WORKER_ROLE, new URL(import.meta.url), {
      workerData: { role: EXPORT_WORKER_ROLE },
      resourceLimits: { maxOldGenerationSizeMb: this.config.workerMemoryMb },
    });
    // An idle worker must not keep a stopping server alive.
    worker.unref();
    const slot: Slot = { worker };
    worker.on("message", (message: WorkerReply) => this.finish(slot, message));
    worker.on("error", (error) => {
      const outOfMemory = (error as { code?: string }).code === "ERR_WORKER_OUT_OF_MEMORY";
      const megabytes = this.config.workerMemoryMb;
      this.fail(slot, outOfMemory ? new LimitReachedError(`This export needs more than the ${megabytes} MiB an export may use here; narrow it with cardId or column.`) : error);
    });
    worker.on("exit", (code) => this.fail(slot, new Error(`export worker exited with code ${code}`)));
    this.slots.add(slot);
    return slot;
  }

  private dispatch(slot: Slot, pending: Pending) {
    clearTimeout(slot.idleTimer);
    const timer = setTimeout(() => {
      const seconds = Math.round(this.config.timeoutMs / 1000);
      this.fail(
        slot,
        new LimitReachedError(`This export took longer than the ${seconds} s an export may take here; narrow it with cardId or column.`),
      );
    }, this.config.timeoutMs);
    slot.busy = { pending, timer };
    slot.worker.ref();
    slot.worker.postMessage(pending.job);
  }

  private finish(slot: Slot, reply: WorkerReply) {
    const busy = slot.busy;
    if (!busy) return;
    clearTimeout(busy.timer);
    slot.busy = undefined;
    slot.worker.unref();
    if ("error" in reply) busy.pending.reject(revive(reply.error));
    else busy.pending.resolve(reply.result);
    this.next(slot);
  }

  /** The worker is gone or must go: its job fails with `error`, another worker takes the queue. */
  private fail(slot: Slot, error: unknown) {
    if (!this.slots.delete(slot)) return;
    clearTimeout(slot.idleTimer);
    if (slot.busy) {
      clearTimeout(slot.busy.timer);
      slot.busy.pending.reject(error);
      slot.busy = undefined;
    }
    void slot.worker.terminate();
    const pending = this.takeWaiting();
    if (pending) this.dispatch(this.startWorker(), pending);
  }

  private next(slot: Slot) {
    const pending = this.takeWaiting();
    // (A waiting anonymous job blocked by another is taken by that one's slot when it ends.)
    if (pending) return this.dispatch(slot, pending);
    slot.idleTimer = setTimeout(() => {
      if (!slot.busy && this.slots.delete(slot)) void slot.worker.terminate();
    }, IDLE_MS);
    slot.idleTimer.unref();
  }
}

type WorkerReply =
  | { result: WorkerResult | FlatSeed }
  | { error: { code: ErrorCode | null; message: string; details?: ErrorDetail[]; retryAfterSeconds?: number } };

/** A domain error as the worker sent it, as the same class again (REST and GraphQL map them by class and code). */
function revive(error: Extract<WorkerReply, { error: unknown }>["error"]): Error {
  switch (error.code) {
    case null:
      return new Error(error.message);
    case "invalid_request":
      return new ValidationError(error.message, error.details);
    case "not_found": {
      const found = new NotFoundError();
      found.message = error.message;
      return found;
    }
    case "limit_reached":
      return new LimitReachedError(error.message);
    default:
      return new DomainError(error.code, error.message);
  }
}

/** Inside a worker: answer each job with its export or parsed seed, or with the error it threw. */
async function serveExports() {
  const [{ exportTree }, { parseSeed }] = await Promise.all([import("./index.js"), import("../seed.js")]);
  parentPort!.on("message", async (message: Job) => {
    try {
      if (message.kind === "seed") {
        parentPort!.postMessage({ result: flattenSeed(parseSeed(message.seed)) });
        return;
      }
      const { job } = message;
      const result = await exportTree(job.format, job.tree, job.cards, job.options);
      if (typeof result.body === "string") {
        parentPort!.postMessage({ result });
        return;
      }
      // A view of a pooled buffer cannot be transferred; a copy of its own can.
      const body = result.body.byteOffset === 0 && result.body.byteLength === result.body.buffer.byteLength ? result.body : Uint8Array.prototype.slice.call(result.body);
      parentPort!.postMessage({ result: { ...result, body } }, [body.buffer as ArrayBuffer]);
    } catch (error) {
      const known = error instanceof DomainError;
      parentPort!.postMessage({
        error: {
          code: known ? error.code : null,
          message: error instanceof Error ? error.message : String(error),
          details: error instanceof ValidationError ? error.details : undefined,
        },
      });
    }
  });
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === EXPORT_WORKER_ROLE) void serveExports();
