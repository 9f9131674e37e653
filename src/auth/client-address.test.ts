import type { Request } from "express";
import { describe, expect, it } from "vitest";
import { parseTrustProxy } from "../config.js";
import { clientAddress } from "./middleware.js";

const from = (ip: string) => clientAddress({ ip, socket: {} } as unknown as Request);

describe("clientAddress", () => {
  it("is the IPv4 address, also when written IPv4-mapped", () => {
    expect(from("203.0.113.9")).toBe("203.0.113.9");
    expect(from("::ffff:203.0.113.9")).toBe("203.0.113.9");
  });

  it("is the /64 of an IPv6 address, however it is written", () => {
    expect(from("2001:db8:1:2:aaaa:bbbb:cccc:dddd")).toBe("2001:db8:1:2::/64");
    expect(from("2001:0db8:0001:0002::1")).toBe("2001:db8:1:2::/64");
    expect(from("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(from("::1")).toBe("0:0:0:0::/64");
    expect(from("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
  });
});

describe("TRUST_PROXY", () => {
  it("is off, a hop count (1 and true: one proxy), or a list of proxies", () => {
    for (const off of [undefined, "", "0", "false", "off"]) expect(parseTrustProxy(off)).toBe(false);
    expect(parseTrustProxy("1")).toBe(1);
    expect(parseTrustProxy("true")).toBe(1);
    expect(parseTrustProxy("3")).toBe(3);
    expect(parseTrustProxy("127.0.0.1, 10.0.0.0/8 ,fd00::/8,loopback")).toEqual(["127.0.0.1", "10.0.0.0/8", "fd00::/8", "loopback"]);
  });

  it("refuses what is neither", () => {
    for (const bad of ["yes", "10.0.0.0/33", "10.0.0.1/8/2", "proxy.example", "-1"]) {
      expect(() => parseTrustProxy(bad), bad).toThrow(/TRUST_PROXY/);
    }
  });
});
