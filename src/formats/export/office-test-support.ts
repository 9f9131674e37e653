/**
 * Test support for the docx and impress exports: opens the zip package and checks that
 * each XML part is well formed, since no Word or LibreOffice runs in the tests.
 */
import JSZip from "jszip";

/** All entry names of the package, folders excluded. */
export async function partNames(file: Uint8Array): Promise<string[]> {
  const zip = await JSZip.loadAsync(file);
  return Object.values(zip.files)
    .filter((entry) => !entry.dir)
    .map((entry) => entry.name);
}

/**
 * The package's XML parts (and .rels), by path, checked against their CRC. `only` picks
 * some of them: reading all 20,000 parts of a big deck takes JSZip half a minute.
 */
export async function xmlParts(file: Uint8Array, only: (name: string) => boolean = () => true): Promise<Map<string, string>> {
  const zip = await JSZip.loadAsync(file, { checkCRC32: true });
  const parts = new Map<string, string>();
  for (const entry of Object.values(zip.files)) {
    if (!entry.dir && /\.(xml|rels)$/.test(entry.name) && only(entry.name)) parts.set(entry.name, await entry.async("string"));
  }
  return parts;
}

const TOKEN =
  /<\?[\s\S]*?\?>|<!--[\s\S]*?-->|<!\[CDATA\[[\s\S]*?\]\]>|<(\/?)([A-Za-z_][\w.:-]*)((?:\s+[A-Za-z_][\w.:-]*\s*=\s*(?:"[^"<]*"|'[^'<]*'))*)\s*(\/?)>|<|&(?!(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);)/g;
const BAD_CHAR = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

/** What keeps `xml` from being well formed; empty when it is. */
export function xmlProblems(xml: string): string[] {
  const problems: string[] = [];
  if (BAD_CHAR.test(xml)) problems.push("a character XML does not allow");
  const open: string[] = [];
  let roots = 0;
  for (const match of xml.matchAll(TOKEN)) {
    const [whole, closing, name, attributes, selfClosing] = match;
    if (name === undefined) {
      if (whole === "<" || whole === "&") problems.push(`a bare ${whole} at ${match.index}`);
      continue;
    }
    if (closing) {
      const expected = open.pop();
      if (expected !== name) problems.push(`</${name}> closes <${expected}> at ${match.index}`);
      continue;
    }
    const names = [...attributes.matchAll(/([A-Za-z_][\w.:-]*)\s*=/g)].map((m) => m[1]);
    if (new Set(names).size !== names.length) problems.push(`a repeated attribute in <${name}>`);
    if (open.length === 0) roots++;
    if (!selfClosing) open.push(name);
  }
  if (open.length > 0) problems.push(`unclosed <${open.join("><")}>`);
  if (roots !== 1) problems.push(`${roots} root elements`);
  return problems;
}

/** Every part of the package with its problems, for one readable assertion. */
export function packageProblems(parts: Map<string, string>): Record<string, string[]> {
  const found: Record<string, string[]> = {};
  for (const [name, xml] of parts) {
    const problems = xmlProblems(xml);
    if (problems.length > 0) found[name] = problems;
  }
  return found;
}
