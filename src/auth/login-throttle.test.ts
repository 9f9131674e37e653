import { describe, expect, it } from "vitest";
import { LoginThrottle, throttleKeys } from "./login-throttle.js";

const WINDOW = 1000;
const throttle = () => new LoginThrottle({ pair: 3, address: 5, account: 4 }, WINDOW);
const refused = (t: LoginThrottle, keys: string[], at: number) => {
  try {
    t.check(keys, at);
    return false;
  } catch (err) {
    expect(err).toMatchObject({ code: "too_many_requests" });
    return true;
  }
};

describe("LoginThrottle", () => {
  it("refuses the account from that address past the pair's limit, and nobody else", () => {
    const t = throttle();
    const attacked = throttleKeys("victim@example.com", "10.0.0.1");
    for (let i = 0; i < 3; i++) t.recordFailure(attacked, i);
    expect(refused(t, attacked, 10)).toBe(true);
    expect(refused(t, throttleKeys("colleague@example.com", "10.0.0.1"), 10)).toBe(false);
    expect(refused(t, throttleKeys("victim@example.com", "10.0.0.2"), 10)).toBe(false);
    // Until the window has passed.
    expect(refused(t, attacked, WINDOW + 3)).toBe(false);
  });

  it("bounds guesses at many accounts from one address, and at one account from many addresses", () => {
    const t = throttle();
    for (let i = 0; i < 5; i++) t.recordFailure(throttleKeys(`user${i}@example.com`, "10.0.0.9"), i);
    expect(refused(t, throttleKeys("someone-new@example.com", "10.0.0.9"), 10)).toBe(true);
    expect(refused(t, throttleKeys("someone-new@example.com", "10.0.0.8"), 10)).toBe(false);
    for (let i = 0; i < 4; i++) t.recordFailure(throttleKeys("target@example.com", `10.1.0.${i}`), i);
    expect(refused(t, throttleKeys("target@example.com", "10.2.0.1"), 10)).toBe(true);
  });

  it("counts checks in flight, and ignores keys of another kind (an older process's)", () => {
    const t = throttle();
    const keys = throttleKeys("a@example.com", "10.0.0.1");
    t.recordFailure(keys, 0);
    t.recordFailure(keys, 1);
    const end = t.begin(keys);
    expect(refused(t, keys, 2)).toBe(true);
    end();
    expect(refused(t, keys, 2)).toBe(false);
    for (let i = 0; i < 20; i++) t.recordFailure(["email:a@example.com", "address:10.0.0.3"].slice(0, 1), i);
    expect(refused(t, throttleKeys("a@example.com", "10.0.0.3"), 30)).toBe(false);
  });
});
