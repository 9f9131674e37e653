import { describe, expect, it } from "vitest";
import { TooManyRequestsError } from "../shared/errors.js";
import { ExecutionAllowance } from "./execution-allowance.js";

function allowanceAt() {
  const clock = { now: 0 };
  const allowance = new ExecutionAllowance({ perSecondMs: 100, reserveMs: 100, burstMs: 150 }, () => clock.now);
  return { clock, allowance };
}

describe("ExecutionAllowance", () => {
  it("runs one execution at a time per address, and cheap ones back to back", () => {
    const { clock, allowance } = allowanceAt();
    allowance.take("a");
    expect(() => allowance.take("a")).toThrow(TooManyRequestsError);
    allowance.take("b"); // another address has its own
    allowance.settle("a", 2);
    // 2 ms every 20 ms: a tenth of the time, what the address regains.
    for (let i = 0; i < 500; i++) {
      clock.now += 20;
      allowance.take("a");
      allowance.settle("a", 2);
    }
  });

  it("keeps an address to its share of each second, and says when to come back", () => {
    const { clock, allowance } = allowanceAt();
    allowance.take("a");
    allowance.settle("a", 100);
    clock.now += 100;
    let refusal: unknown;
    try {
      allowance.take("a");
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(TooManyRequestsError);
    expect((refusal as TooManyRequestsError).retryAfterSeconds).toBe(1);
    clock.now += 400; // 50 left + 50 regained
    allowance.take("a");
    // An execution past its reserve (the check comes after the time is spent) owes the rest.
    allowance.settle("a", 300);
    clock.now += 2_000;
    expect(() => allowance.take("a")).toThrow(TooManyRequestsError);
    clock.now += 1_000;
    allowance.take("a");
  });
});
