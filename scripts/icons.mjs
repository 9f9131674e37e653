/**
 * The app's icons (web app manifest, SPEC §13 "installable"), drawn here: the brand mark of
 * src/web/views/header.ts (cards stepping right, the shape of a tree in columns), light on the
 * app's accent colour, as an SVG and as PNGs of 192 and 512 pixels. The PNG encoder is the
 * format's minimum: one IDAT of unfiltered RGBA rows, deflated with node:zlib.
 */
import { deflateSync } from "node:zlib";

const BACKGROUND = [0x2f, 0x5d, 0x50];
const CARD = [0xfb, 0xf8, 0xef];
/** x, y, width, height on a 24-unit grid, as in brandMark(). */
const RECTS = [
  [1, 8, 6, 8],
  [9, 3, 6, 7],
  [9, 12, 6, 9],
  [17, 12, 6, 5],
];
/** The mark fills the middle of the icon, leaving the margin maskable icons need. */
const MARGIN = 0.2;

export function iconSvg() {
  const rects = RECTS.map(([x, y, w, h]) => `<rect x="${x}" y="${y}" width="${w}" height="${h}" rx="1.3" fill="rgb(${CARD.join(",")})"/>`).join("");
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="-6 -6 36 36"><rect x="-6" y="-6" width="36" height="36" fill="rgb(${BACKGROUND.join(",")})"/>${rects}</svg>\n`;
}

export function iconPng(size) {
  const pixels = Buffer.alloc(size * (size * 4 + 1));
  const scale = (size * (1 - 2 * MARGIN)) / 24;
  const offset = size * MARGIN;
  for (let y = 0; y < size; y++) {
    const row = y * (size * 4 + 1);
    pixels[row] = 0; // filter: none
    for (let x = 0; x < size; x++) {
      const gx = (x + 0.5 - offset) / scale;
      const gy = (y + 0.5 - offset) / scale;
      const inside = RECTS.some(([rx, ry, w, h]) => gx >= rx && gx < rx + w && gy >= ry && gy < ry + h);
      const [r, g, b] = inside ? CARD : BACKGROUND;
      pixels.set([r, g, b, 255], row + 1 + x * 4);
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header[8] = 8; // bit depth
  header[9] = 6; // RGBA
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(pixels, { level: 9 })),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

function chunk(type, data) {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

let table;
function crc32(bytes) {
  table ??= Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  let crc = 0xffffffff;
  for (const byte of bytes) crc = table[(crc ^ byte) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** The web app manifest: installable, opening on the user's trees, standalone like an app. */
export function manifest() {
  return `${JSON.stringify(
    {
      name: "Cardtree",
      short_name: "Cardtree",
      description: "Write in trees of Markdown cards, online or offline.",
      start_url: "/",
      scope: "/",
      display: "standalone",
      background_color: "#fbf8ef",
      theme_color: "#2f5d50",
      icons: [
        { src: "/icon-192.png", sizes: "192x192", type: "image/png", purpose: "any" },
        { src: "/icon-512.png", sizes: "512x512", type: "image/png", purpose: "any" },
        { src: "/icon-512.png", sizes: "512x512", type: "image/png", purpose: "maskable" },
        { src: "/icon.svg", sizes: "any", type: "image/svg+xml", purpose: "any" },
      ],
    },
    null,
    1,
  )}\n`;
}
