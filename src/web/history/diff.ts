/**
 * Two texts of a card, line by line, with what changed marked: removed lines as <del>,
 * added ones as <ins> (each with a + or − a screen reader reads too), unchanged ones plain.
 * The diff is node-diff3's (the library the conflict view's merges use), not our own.
 */
import { diffComm } from "node-diff3";
import { h } from "../dom.js";

export function lineDiff(before: string, after: string): HTMLElement {
  const box = h("div", { class: "line-diff" });
  if (before === after) {
    box.append(h("p", { class: "line-diff-same" }, "No change to the text."));
    return box;
  }
  const lines = (text: string) => (text === "" ? [] : text.split("\n"));
  for (const chunk of diffComm(lines(before), lines(after)) as { common?: string[]; buffer1?: string[]; buffer2?: string[] }[]) {
    for (const line of chunk.common ?? []) box.append(h("div", { class: "line-diff-line" }, h("span", { class: "line-diff-mark", "aria-hidden": "true" }, " "), line));
    for (const line of chunk.buffer1 ?? []) box.append(h("del", { class: "line-diff-line line-diff-removed" }, h("span", { class: "line-diff-mark" }, "− "), line));
    for (const line of chunk.buffer2 ?? []) box.append(h("ins", { class: "line-diff-line line-diff-added" }, h("span", { class: "line-diff-mark" }, "+ "), line));
  }
  return box;
}
