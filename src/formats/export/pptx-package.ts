/**
 * Finishing touches on the package pptxgenjs writes, for two of its habits:
 *
 * - It writes an `<a:pPr>` before every run of a paragraph, where the schema allows one,
 *   first. PowerPoint 2016 asks to repair such files (pptxgenjs PR #1083); only the first
 *   one, which carries the paragraph's bullet and level, is kept.
 * - `write({ outputType: "nodebuffer" })` ignores `compression` and stores every part
 *   uncompressed: 30 MB for 5,000 slides. The parts are deflated here with node:zlib,
 *   which is also several times faster than the compression pptxgenjs offers elsewhere.
 *
 * The reader only takes what pptxgenjs writes: a stored (uncompressed), non-ZIP64 archive.
 */
import { deflateRawSync } from "node:zlib";

const LOCAL_HEADER = 0x04034b50;
const CENTRAL_HEADER = 0x02014b50;
const END_OF_CENTRAL_DIRECTORY = 0x06054b50;
const STORED = 0;
const DEFLATED = 8;
/** Bit 11: names are UTF-8. */
const UTF8_NAMES = 0x0800;
const VERSION = 20;

interface Entry {
  name: Buffer;
  data: Buffer;
  time: number;
  date: number;
}

const SLIDE = /^ppt\/slides\/slide\d+\.xml$/;
// pptxgenjs escapes run text, so "</a:r><a:pPr" can only be its own markup.
const LATER_PARAGRAPH_PROPERTIES = /(<\/a:r>|<a:br\/>)<a:pPr\b[^>]*?(?:\/>|>[\s\S]*?<\/a:pPr>)/g;

/**
 * The presentation pptxgenjs wrote, with one `<a:pPr>` per paragraph and deflated parts.
 * @throws Error when `stored` is not the kind of archive pptxgenjs writes (a bug, not input).
 */
export function finishPresentation(stored: Buffer): Buffer {
  const entries = readStoredZip(stored).map((entry) => {
    if (!SLIDE.test(entry.name.toString("utf8"))) return entry;
    const xml = entry.data.toString("utf8").replace(LATER_PARAGRAPH_PROPERTIES, "$1");
    return { ...entry, data: Buffer.from(xml, "utf8") };
  });
  return writeZip(entries);
}

function readStoredZip(zip: Buffer): Entry[] {
  let end = zip.length - 22;
  while (end >= 0 && zip.readUInt32LE(end) !== END_OF_CENTRAL_DIRECTORY) end--;
  if (end < 0) throw new Error("pptx package: no end of central directory");
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  const entries: Entry[] = [];
  for (let i = 0; i < count; i++) {
    if (zip.readUInt32LE(at) !== CENTRAL_HEADER) throw new Error("pptx package: bad central directory");
    const method = zip.readUInt16LE(at + 10);
    const size = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const skip = nameLength + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
    const local = zip.readUInt32LE(at + 42);
    if (method !== STORED || zip.readUInt32LE(local) !== LOCAL_HEADER) throw new Error("pptx package: unexpected entry");
    const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    entries.push({
      name: zip.subarray(at + 46, at + 46 + nameLength),
      data: zip.subarray(start, start + size),
      time: zip.readUInt16LE(at + 12),
      date: zip.readUInt16LE(at + 14),
    });
    at += 46 + skip;
  }
  return entries;
}

function writeZip(entries: Entry[]): Buffer {
  // Synchronous on purpose: async zlib sets up a stream and a thread-pool job per part,
  // which for 20,000 small parts costs ten times the compression itself.
  const compressed = entries.map((entry) => (entry.data.length > 0 ? deflateRawSync(entry.data) : entry.data));
  const chunks: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  entries.forEach((entry, i) => {
    const data = compressed[i];
    const method = entry.data.length > 0 ? DEFLATED : STORED;
    const crc = crc32(entry.data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(LOCAL_HEADER, 0);
    local.writeUInt16LE(VERSION, 4);
    local.writeUInt16LE(UTF8_NAMES, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt16LE(entry.time, 10);
    local.writeUInt16LE(entry.date, 12);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(entry.data.length, 22);
    local.writeUInt16LE(entry.name.length, 26);
    local.writeUInt16LE(0, 28);
    const header = Buffer.alloc(46);
    header.writeUInt32LE(CENTRAL_HEADER, 0);
    header.writeUInt16LE(VERSION, 4);
    header.writeUInt16LE(VERSION, 6);
    local.copy(header, 8, 6, 30);
    header.writeUInt32LE(offset, 42);
    central.push(header, entry.name);
    chunks.push(local, entry.name, data);
    offset += local.length + entry.name.length + data.length;
  });
  const centralSize = central.reduce((sum, chunk) => sum + chunk.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(END_OF_CENTRAL_DIRECTORY, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...chunks, ...central, end]);
}

const CRC_TABLE = (() => {
  const table = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c;
  }
  return table;
})();

function crc32(data: Uint8Array): number {
  let crc = -1;
  for (let i = 0; i < data.length; i++) crc = CRC_TABLE[(crc ^ data[i]) & 0xff] ^ (crc >>> 8);
  return (crc ^ -1) >>> 0;
}
