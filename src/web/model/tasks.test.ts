import { describe, expect, it } from "vitest";
import { setTask } from "./tasks.js";

describe("setTask", () => {
  const source = ["Shopping:", "", "- [ ] bread", "- [x] milk", "", "```", "- [ ] not a task", "```", "", "> 1. [ ] quoted"].join("\n");

  it("ticks and clears the nth task, counting as the rendered list does", () => {
    expect(setTask(source, 0, true)).toContain("- [x] bread");
    expect(setTask(source, 1, false)).toContain("- [ ] milk");
    expect(setTask(source, 2, true)).toContain("> 1. [x] quoted");
  });

  it("leaves fenced code alone and answers null for a task that is not there", () => {
    expect(setTask(source, 2, true)).toContain("- [ ] not a task");
    expect(setTask(source, 3, true)).toBeNull();
    expect(setTask("- [] no", 0, true)).toBeNull();
  });
});
