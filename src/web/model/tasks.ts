/**
 * Task lists (`- [ ] item`, `- [x] done`): ticking the nth checkbox of a rendered card
 * rewrites the nth task marker of its Markdown. Markers are counted in the order marked
 * renders them (list items, also inside block quotes), skipping fenced code.
 */

const TASK = /^((?:[ \t]*>)*[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+)\[([ xX])\](?=\s|$)/;

/** The source with task `index` ticked or cleared, or null when it has no such task. */
export function setTask(source: string, index: number, checked: boolean): string | null {
  const lines = source.split("\n");
  let fence: string | null = null;
  let seen = 0;
  for (let i = 0; i < lines.length; i++) {
    const opening = /^\s{0,3}(`{3,}|~{3,})/.exec(lines[i]);
    if (opening) {
      if (fence === null) fence = opening[1][0];
      else if (opening[1][0] === fence) fence = null;
      continue;
    }
    if (fence !== null) continue;
    const match = TASK.exec(lines[i]);
    if (!match) continue;
    if (seen++ === index) {
      lines[i] = `${match[1]}[${checked ? "x" : " "}]${lines[i].slice(match[0].length)}`;
      return lines.join("\n");
    }
  }
  return null;
}
