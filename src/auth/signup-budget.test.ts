import { describe, expect, it } from "vitest";
import { SignupBudget } from "./signup-budget.js";

describe("SignupBudget", () => {
  it("allows so many per address and in all within the window, then says how long to wait", () => {
    const budget = new SignupBudget(2, 3, 1000);
    budget.take("a", 0);
    budget.take("a", 100);
    expect(() => budget.take("a", 200)).toThrow(expect.objectContaining({ code: "too_many_requests", retryAfterSeconds: 1 }));
    budget.take("b", 300);
    // The total is spent: another address waits too, until the oldest leaves the window.
    expect(() => budget.take("c", 400)).toThrow(expect.objectContaining({ code: "too_many_requests" }));
    budget.take("c", 1001);
    budget.take("a", 1101);
  });

  it("gives a place back when the sign-up failed, once", () => {
    const budget = new SignupBudget(1, 10, 1000);
    const giveBack = budget.take("a", 0);
    giveBack();
    giveBack();
    budget.take("a", 1);
    expect(() => budget.take("a", 2)).toThrow(expect.objectContaining({ code: "too_many_requests" }));
  });

  it("has no limit where it is negative", () => {
    const budget = new SignupBudget(-1, -1, 1000);
    for (let i = 0; i < 1000; i++) budget.take("a", i);
  });
});
