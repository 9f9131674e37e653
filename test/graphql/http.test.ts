/**
 * /graphql as HTTP: cookie sessions and their CSRF token, cross-origin reads, mutations
 * over GET, body limits, masked internal errors, and GraphiQL served under the CSP.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Api, buildUser, uniqueEmail } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { Gql } from "./client.js";

let server: InProcessServer;

beforeAll(async () => {
  server = await startInProcessServer();
});
afterAll(() => server.stop());

async function cookieSession(): Promise<{ cookie: string; csrf: string }> {
  const res = await new Api(server.url).post("/api/signup", { email: uniqueEmail("browser"), password: "correct horse battery" });
  const cookie = res.headers.get("set-cookie")!.split(";")[0];
  return { cookie, csrf: res.body.csrf };
}

function post(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.url}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

describe("cookie sessions", () => {
  it("refuses a POST without the session's CSRF token and accepts it with the token", async () => {
    const { cookie, csrf } = await cookieSession();
    const mutation = { query: `mutation { createTree(input: { name: "From the browser" }) { id } }` };
    const refused = await post(mutation, { cookie });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ error: "forbidden" });

    const gql = new Gql(server.url, { cookie, "x-csrf-token": csrf });
    expect((await gql.data(`{ trees { id } }`)).trees).toEqual([]);
    const created = await gql.data(mutation.query);
    const me = await gql.data(`{ me { csrf treesCount } trees { id } }`);
    expect(me).toEqual({ me: { csrf, treesCount: 1 }, trees: [{ id: created.createTree.id }] });
  });

  it("answers queries over GET without a token, but never runs a mutation over GET", async () => {
    const { cookie } = await cookieSession();
    const read = await fetch(`${server.url}/graphql?query=${encodeURIComponent("{ me { treesCount } }")}`, { headers: { cookie } });
    expect(await read.json()).toEqual({ data: { me: { treesCount: 0 } } });
    const write = await fetch(`${server.url}/graphql?query=${encodeURIComponent('mutation { createTree(input: { name: "x" }) { id } }')}`, {
      headers: { cookie, accept: "application/json" },
    });
    expect(write.status).toBe(405);
    const again = await fetch(`${server.url}/graphql?query=${encodeURIComponent("{ me { treesCount } }")}`, { headers: { cookie } });
    expect(await again.json()).toEqual({ data: { me: { treesCount: 0 } } });
  });

  it("does not let another origin read responses (no CORS)", async () => {
    const { cookie } = await cookieSession();
    const res = await fetch(`${server.url}/graphql?query=${encodeURIComponent("{ me { csrf } }")}`, {
      headers: { cookie, origin: "https://elsewhere.example" },
    });
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    expect(res.headers.get("access-control-allow-credentials")).toBeNull();
  });
});

describe("requests", () => {
  it("refuses bad credentials before GraphQL runs", async () => {
    const res = await post({ query: "{ me { id } }" }, { authorization: `Basic ${Buffer.from("nobody@example.test:wrong-password").toString("base64")}` });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: "unauthenticated" });
  });

  it("reports a malformed document and an unknown field as invalid_request", async () => {
    const gql = new Gql(server.url);
    expect(await gql.codes(`{ tree(id: `)).toEqual(["invalid_request"]);
    expect(await gql.codes(`{ nope }`)).toEqual(["invalid_request"]);
    const notJson = await fetch(`${server.url}/graphql`, { method: "POST", headers: { "content-type": "text/plain" }, body: "{ me { id } }" });
    expect(notJson.status).toBe(415);
  });

  it("masks an unexpected failure as internal and logs it", async () => {
    const user = await buildUser(server.url);
    const trees = server.ctx.store.trees;
    const forUser = trees.forUser;
    const logged = vi.spyOn(server.logger, "error").mockImplementation(() => {});
    trees.forUser = async () => {
      throw new Error("disk on fire at /var/secret");
    };
    try {
      const reply = await Gql.as(user).reply(`{ trees { id } }`);
      expect(reply.errors).toEqual([
        { message: "Something went wrong on the server. Try again later.", path: ["trees"], locations: expect.any(Array), extensions: { code: "internal" } },
      ]);
      expect(JSON.stringify(logged.mock.calls)).toContain("disk on fire");
    } finally {
      trees.forUser = forUser;
      logged.mockRestore();
    }
  });

  it("answers 404 under /graphql for anything but the endpoint and GraphiQL's files", async () => {
    const res = await fetch(`${server.url}/graphql/elsewhere`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: "not_found" });
  });
});

describe("body limit", () => {
  let small: InProcessServer;
  beforeAll(async () => {
    small = await startInProcessServer({ IMPORT_BODY_LIMIT: "2048" });
  });
  afterAll(() => small.stop());

  it("refuses a body over the import limit with payload_too_large", async () => {
    const user = await buildUser(small.url);
    const res = await fetch(`${small.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: user.authHeader! },
      body: JSON.stringify({ query: `mutation ($s: String!) { createTree(input: { name: "big", seed: $s }) { id } }`, variables: { s: "x".repeat(4096) } }),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ error: "payload_too_large" });
  });
});

describe("GraphiQL", () => {
  it("serves a page with no inline script, under the ordinary CSP, and its files from here", async () => {
    const page = await fetch(`${server.url}/graphql`, { headers: { accept: "text/html" } });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    const csp = page.headers.get("content-security-policy")!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/script-src[^;]*(unsafe|https?:)/);
    // GraphiQL's stylesheet embeds its fonts; only this page allows that.
    expect(csp).toContain("font-src 'self' data:");
    expect((await fetch(`${server.url}/graphql?query={__typename}`)).headers.get("content-security-policy")).not.toContain("font-src");
    const html = await page.text();
    const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, body] of scripts) {
      if (/type="application\/json"/.test(attributes)) continue;
      expect(attributes).toMatch(/src="\/graphql\/graphiql\/[a-z.]+"/);
      expect(body).toBe("");
    }
    const files = [...html.matchAll(/(?:src|href)="(\/graphql\/graphiql\/[^"]+)"/g)].map((m) => m[1]);
    files.push("/graphql/graphiql/editor.worker.js", "/graphql/graphiql/json.worker.js", "/graphql/graphiql/graphql.worker.js");
    for (const file of files) {
      const res = await fetch(server.url + file);
      expect(res.status, file).toBe(200);
      expect(res.headers.get("content-type"), file).toMatch(file.endsWith(".css") ? /^text\/css/ : /^text\/javascript/);
      expect((await res.text()).length, file).toBeGreaterThan(100);
    }
    expect((await fetch(`${server.url}/graphql/graphiql/nope.js`)).status).toBe(404);
  });

  it("gives a cookie session's GraphiQL its CSRF token", async () => {
    const { cookie, csrf } = await cookieSession();
    const html = await (await fetch(`${server.url}/graphql`, { headers: { accept: "text/html", cookie } })).text();
    const options = JSON.parse(/<script type="application\/json" id="graphiql-options">([\s\S]*?)<\/script>/.exec(html)![1]);
    expect(options).toMatchObject({ endpoint: "/graphql", additionalHeaders: { "X-CSRF-Token": csrf } });
  });
});
