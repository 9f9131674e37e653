/**
 * A file system in memory for the power-cut tests (issue 32), in the manner of SQLite's
 * crash-test VFS: it implements the store's file-system port (src/store/file-system.ts)
 * and keeps, beside what every read sees, what is on "stable storage":
 * - a file's bytes become durable at `datasync` on a handle of it (all of them);
 * - a name created, renamed or unlinked becomes durable at `syncDirectory` of its
 *   directory (before that it may or may not survive, in the order the operations ran);
 * - at a power cut, each file keeps its durable bytes, and the writes and truncations
 *   since its last sync are, in a random way: kept in order up to some point, the one at
 *   that point torn (some of its 512-byte sectors written, the others not), and each later
 *   one kept or lost on its own (reordered). Bytes never written read as zeros, as on ext4
 *   or xfs; the size is what the kept operations made it.
 *
 * `cutAfter(n)` arms the cut: the n-th call from then on does not happen, and neither does
 * anything after it (every call's promise stays pending, as if the machine had stopped);
 * `image()` is then the disk as a reboot finds it, to open again with `fromImage`.
 */
import { seededRandom } from "../helpers/seeded-random.js";
import path from "node:path";
import type { FileHandle, FileSystem, OpenFlags } from "../../src/store/file-system.js";

type Op = { kind: "write"; offset: number; bytes: Buffer } | { kind: "truncate"; size: number };

/** Bytes that grow in place (a file written by appends would otherwise be copied whole at every write). */
class Bytes {
  private buffer: Buffer;
  length: number;

  constructor(initial: Buffer = Buffer.alloc(0)) {
    this.buffer = Buffer.alloc(Math.max(1024, initial.length * 2));
    initial.copy(this.buffer);
    this.length = initial.length;
  }

  private reserve(size: number): void {
    if (size <= this.buffer.length) return;
    const grown = Buffer.alloc(Math.max(size, this.buffer.length * 2));
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }

  apply(op: Op): void {
    if (op.kind === "truncate") {
      this.reserve(op.size);
      if (op.size > this.length) this.buffer.fill(0, this.length, op.size);
      this.length = op.size;
      return;
    }
    const end = op.offset + op.bytes.length;
    this.reserve(end);
    if (op.offset > this.length) this.buffer.fill(0, this.length, op.offset);
    op.bytes.copy(this.buffer, op.offset);
    this.length = Math.max(this.length, end);
  }

  /** The bytes, shared: copy before keeping them. */
  view(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}

interface Inode {
  data: Bytes;
  durable: Bytes;
  pending: Op[];
}

type DirOp = { kind: "link"; name: string; inode: Inode } | { kind: "unlink"; name: string } | { kind: "rename"; from: string; to: string; inode: Inode };

/** A disk image: file name (absolute) to bytes. */
export type DiskImage = Map<string, Buffer>;

const SECTOR = 512;

export { seededRandom };

function enoent(syscall: string, file: string): Error {
  return Object.assign(new Error(`ENOENT: no such file or directory, ${syscall} '${file}'`), { code: "ENOENT", syscall, path: file });
}

function applyOp(buffer: Buffer, op: Op, keepSectors?: (sector: number) => boolean): Buffer {
  if (op.kind === "truncate") {
    if (op.size <= buffer.length) return Buffer.from(buffer.subarray(0, op.size));
    return Buffer.concat([buffer, Buffer.alloc(op.size - buffer.length)]);
  }
  const end = op.offset + op.bytes.length;
  const out = end > buffer.length ? Buffer.concat([buffer, Buffer.alloc(end - buffer.length)]) : Buffer.from(buffer);
  if (!keepSectors) {
    op.bytes.copy(out, op.offset);
    return out;
  }
  // Torn: only some of the sectors the write covers reach the disk.
  for (let at = op.offset; at < end; ) {
    const sectorEnd = Math.min(end, (Math.floor(at / SECTOR) + 1) * SECTOR);
    if (keepSectors(Math.floor(at / SECTOR))) op.bytes.copy(out, at, at - op.offset, sectorEnd - op.offset);
    at = sectorEnd;
  }
  // A torn write that kept nothing past the old end does not grow the file.
  return out;
}

export class PowerCutFs implements FileSystem {
  private readonly names = new Map<string, Inode>();
  private readonly durableNames = new Map<string, Inode>();
  private readonly dirOps = new Map<string, DirOp[]>();
  private locked = new Set<string>();
  private countdown = Infinity;
  private cutImage: DiskImage | null = null;
  private onCut: (() => void) | null = null;
  /** Calls made so far (the power-cut runs size their next cut by it). */
  calls = 0;
  /** Resolves when the power is cut. */
  readonly cut: Promise<void>;

  constructor(
    private readonly random: () => number,
    image: DiskImage = new Map(),
  ) {
    this.cut = new Promise<void>((resolve) => (this.onCut = resolve));
    for (const [name, bytes] of image) {
      const inode: Inode = { data: new Bytes(bytes), durable: new Bytes(bytes), pending: [] };
      this.names.set(name, inode);
      this.durableNames.set(name, inode);
    }
  }

  /** Cuts the power at the n-th call from now (1: the next one never happens). */
  cutAfter(n: number): void {
    this.countdown = n;
  }

  /** Cuts the power now, between two calls. */
  cutNow(): void {
    if (!this.cutImage) this.powerFails();
  }

  get isCut(): boolean {
    return this.cutImage !== null;
  }

  /** The disk as a reboot after the cut finds it. */
  image(): DiskImage {
    if (!this.cutImage) throw new Error("the power was not cut");
    return this.cutImage;
  }

  /** The disk as it is, everything synced: a clean stop. */
  cleanImage(): DiskImage {
    return new Map([...this.names].map(([name, inode]) => [name, Buffer.from(inode.data.view())]));
  }

  private powerFails(): void {
    const names = new Map(this.durableNames);
    for (const [, ops] of this.dirOps) {
      // Directory changes not synced: those up to a random point survive, in order.
      const kept = Math.floor(this.random() * (ops.length + 1));
      for (const op of ops.slice(0, kept)) {
        if (op.kind === "link") names.set(op.name, op.inode);
        else if (op.kind === "unlink") names.delete(op.name);
        else {
          names.delete(op.from);
          names.set(op.to, op.inode);
        }
      }
    }
    const contents = new Map<Inode, Buffer>();
    const image: DiskImage = new Map();
    for (const [name, inode] of names) {
      let content: Buffer | undefined = contents.get(inode);
      if (!content) {
        content = this.survivingContent(inode);
        contents.set(inode, content);
      }
      image.set(name, content);
    }
    this.cutImage = image;
    this.onCut?.();
  }

  private survivingContent(inode: Inode): Buffer {
    let content: Buffer = Buffer.from(inode.durable.view());
    const ops = inode.pending;
    if (ops.length === 0) return content;
    // Often nothing unsynced survives at all; otherwise a prefix in order, a torn one, and a random rest.
    if (this.random() < 0.25) return content;
    const inOrder = Math.floor(this.random() * (ops.length + 1));
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i];
      if (i < inOrder) content = applyOp(content, op);
      else if (i === inOrder) {
        if (op.kind === "write") content = applyOp(content, op, () => this.random() < 0.5);
        else if (this.random() < 0.5) content = applyOp(content, op);
      } else if (this.random() < 0.5) content = applyOp(content, op);
    }
    return content;
  }

  /** Every call passes here: the cut, when armed, happens at its turn. */
  private async step<T>(work: () => T): Promise<T> {
    if (this.cutImage) return new Promise<T>(() => undefined);
    this.calls++;
    if (--this.countdown <= 0) {
      this.powerFails();
      return new Promise<T>(() => undefined);
    }
    // Let other tasks run between calls, as real I/O does.
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (this.cutImage) return new Promise<T>(() => undefined);
    return work();
  }

  private dirOp(name: string, op: DirOp): void {
    const dir = path.dirname(name);
    let ops = this.dirOps.get(dir);
    if (!ops) this.dirOps.set(dir, (ops = []));
    ops.push(op);
  }

  private record(inode: Inode, op: Op): void {
    inode.data.apply(op);
    inode.pending.push(op);
  }

  private inode(file: string, syscall: string): Inode {
    const inode = this.names.get(file);
    if (!inode) throw enoent(syscall, file);
    return inode;
  }

  open(file: string, flags: OpenFlags): Promise<FileHandle> {
    return this.step(() => {
      let inode = this.names.get(file);
      if (!inode) {
        if (flags === "r" || flags === "r+") throw enoent("open", file);
        inode = { data: new Bytes(), durable: new Bytes(), pending: [] };
        this.names.set(file, inode);
        this.dirOp(file, { kind: "link", name: file, inode });
      } else if (flags === "w") {
        this.record(inode, { kind: "truncate", size: 0 });
      }
      return new SimHandle(this, inode, flags);
    });
  }

  /** A handle's call, through the same gate as every other. */
  handleCall<T>(work: () => T): Promise<T> {
    return this.step(work);
  }

  write(inode: Inode, offset: number, bytes: Buffer): void {
    this.record(inode, { kind: "write", offset, bytes: Buffer.from(bytes) });
  }

  datasync(inode: Inode): void {
    for (const op of inode.pending) inode.durable.apply(op);
    inode.pending = [];
  }

  readFile(file: string): Promise<Buffer> {
    return this.step(() => Buffer.from(this.inode(file, "open").data.view()));
  }

  size(file: string): Promise<number | null> {
    return this.step(() => this.names.get(file)?.data.length ?? null);
  }

  rename(from: string, to: string): Promise<void> {
    return this.step(() => {
      const inode = this.inode(from, "rename");
      this.names.delete(from);
      this.names.set(to, inode);
      this.dirOp(to, { kind: "rename", from, to, inode });
    });
  }

  unlink(file: string): Promise<void> {
    return this.step(() => {
      this.inode(file, "unlink");
      this.names.delete(file);
      this.dirOp(file, { kind: "unlink", name: file });
    });
  }

  truncate(file: string, size: number): Promise<void> {
    return this.step(() => this.record(this.inode(file, "truncate"), { kind: "truncate", size }));
  }

  readdir(dir: string): Promise<string[]> {
    return this.step(() => [...this.names.keys()].filter((name) => path.dirname(name) === dir).map((name) => path.basename(name)));
  }

  mkdir(): Promise<void> {
    return this.step(() => undefined);
  }

  syncDirectory(dir: string): Promise<void> {
    return this.step(() => {
      for (const op of this.dirOps.get(dir) ?? []) {
        if (op.kind === "link") this.durableNames.set(op.name, op.inode);
        else if (op.kind === "unlink") this.durableNames.delete(op.name);
        else {
          this.durableNames.delete(op.from);
          this.durableNames.set(op.to, op.inode);
        }
      }
      this.dirOps.delete(dir);
    });
  }

  lock(dir: string): Promise<() => Promise<void>> {
    return this.step(() => {
      if (this.locked.has(dir)) throw new Error(`${dir} is in use`);
      this.locked.add(dir);
      return async () => {
        this.locked.delete(dir);
      };
    });
  }

  makePrivate(): Promise<void> {
    return this.step(() => undefined);
  }
}

class SimHandle implements FileHandle {
  private position = 0;
  private closed = false;

  constructor(
    private readonly fs: PowerCutFs,
    private readonly inode: Inode,
    private readonly flags: OpenFlags,
  ) {}

  private check(): void {
    if (this.closed) throw Object.assign(new Error("EBADF: file closed"), { code: "EBADF" });
  }

  write(data: Buffer | string, position?: number): Promise<void> {
    return this.fs.handleCall(() => {
      this.check();
      if (this.flags === "r") throw Object.assign(new Error("EBADF: read-only handle"), { code: "EBADF" });
      const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
      const append = this.flags === "a" || this.flags === "a+";
      const at = append ? this.inode.data.length : (position ?? this.position);
      this.fs.write(this.inode, at, bytes);
      if (position === undefined) this.position = at + bytes.length;
    });
  }

  read(buffer: Buffer, offset: number, length: number, position: number): Promise<number> {
    return this.fs.handleCall(() => {
      this.check();
      const available = Math.max(0, Math.min(length, this.inode.data.length - position));
      this.inode.data.view().copy(buffer, offset, position, position + available);
      return available;
    });
  }

  size(): Promise<number> {
    return this.fs.handleCall(() => {
      this.check();
      return this.inode.data.length;
    });
  }

  datasync(): Promise<void> {
    return this.fs.handleCall(() => {
      this.check();
      this.fs.datasync(this.inode);
    });
  }

  close(): Promise<void> {
    return this.fs.handleCall(() => {
      this.check();
      this.closed = true;
    });
  }
}
