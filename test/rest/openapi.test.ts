/**
 * `GET /api/openapi.json` (SPEC §12). Every other REST test checks the responses it gets
 * against this document (test/helpers/openapi-check.ts); these check the document itself:
 * it names every route the REST routers have, and the check refuses what it does not describe.
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import type { Router } from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isEventStreamPath } from "../../src/http/compression.js";
import { restApi } from "../../src/rest/api.js";
import { Api, buildTree, buildUser } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { checkAgainstOpenApi } from "../helpers/openapi-check.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer();
});
afterAll(() => server.stop());

interface Layer {
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}

/** `METHOD /path` for each route of the REST routers, in OpenAPI's path syntax. */
function routesOf(stack: Layer[]): string[] {
  return stack.flatMap((layer) => {
    if (layer.route) {
      const paths = ([] as string[]).concat(layer.route.path);
      return paths.flatMap((path) =>
        Object.keys(layer.route!.methods).map((method) => `${method.toUpperCase()} ${path.replace(/:(\w+)/g, "{$1}")}`),
      );
    }
    return layer.handle?.stack ? routesOf(layer.handle.stack) : [];
  });
}

describe("GET /api/openapi.json", () => {
  it("is an OpenAPI 3.1 document of exactly the routes the REST routers serve", async () => {
    const res = await new Api(server.url).get("/api/openapi.json");
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe("3.1.0");
    const documented = Object.entries(res.body.paths as Record<string, object>).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const noop = () => undefined;
    const router = restApi({ ctx: server.ctx, credentials: {} as never, sessions: {} as never, logger: server.logger, jsonLimit: noop, importLimit: noop }) as Router & { stack: Layer[] };
    expect(documented.sort()).toEqual(routesOf(router.stack).sort());
  });

  it("names every event stream the compression middleware leaves alone, and nothing else", async () => {
    const res = await new Api(server.url).get("/api/openapi.json");
    const paths = res.body.paths as Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>>;
    const concrete = (path: string) => `/api${path.replace(/\{[^}]+\}/g, "x1")}`;
    const streams: string[] = [];
    for (const [path, operations] of Object.entries(paths)) {
      const streamed = Object.values(operations.get?.responses ?? {}).some((r) => r.content?.["text/event-stream"] !== undefined);
      if (streamed) streams.push(path);
      expect([path, isEventStreamPath(concrete(path))]).toEqual([path, streamed]);
    }
    expect(streams.length).toBeGreaterThanOrEqual(2);
  });

  it("describes each operation's bodies and errors with schemas that compile under JSON Schema 2020-12", async () => {
    const doc = (await new Api(server.url).get("/api/openapi.json")).body;
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    (addFormats as unknown as (ajv: Ajv2020) => void)(ajv);
    const schemas = JSON.parse(JSON.stringify(doc.components.schemas).replaceAll('"#/components/schemas/', '"doc#/$defs/'));
    ajv.addSchema({ $id: "doc", $defs: schemas });
    for (const [name, schema] of Object.entries(schemas as Record<string, object>)) {
      expect(() => ajv.compile({ $id: `check-${name}`, ...schema }), name).not.toThrow();
    }
    const createCard = doc.paths["/trees/{treeId}/cards"].post;
    expect(createCard.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/CreateCardInput" });
    expect(doc.components.schemas.CreateCardInput.required).toEqual(["treeId", "position"]);
    expect(Object.keys(createCard.responses).sort()).toEqual(["201", "400", "401", "403", "404", "409", "413", "415", "422", "429", "500", "503"]);
    expect(doc.components.responses.not_found.content["application/json"].schema.allOf[1]).toEqual({ properties: { error: { const: "not_found" } } });
    const exportParameters = doc.paths["/export/{treeId}.{format}"].get.parameters.map((p: { name: string }) => p.name);
    expect(exportParameters).toEqual(["treeId", "format", "cardId", "column", "newlines", "start", "end", "leaves"]);
  });

  it("the response check refuses an undocumented status, a wrong body and an unlisted media type", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const good = await alice.get(`/api/trees/${tree._id}/cards`);
    const check = (method: string, path: string, reply: Partial<typeof good>) =>
      checkAgainstOpenApi(server.url, method, `${server.url}${path}`, { ...good, ...reply });

    await expect(check("GET", `/api/trees/${tree._id}/cards`, {})).resolves.toBeUndefined();
    await expect(check("GET", `/api/trees/${tree._id}/cards`, { status: 409 })).rejects.toThrow(/a status openapi.json does not list/);
    const card = good.body[0];
    await expect(check("GET", `/api/trees/${tree._id}/cards`, { body: [{ ...card, trashed: "x" }] })).rejects.toThrow(/must NOT have additional properties/);
    await expect(check("GET", `/api/trees/${tree._id}/cards`, { body: [{ ...card, parentId: undefined }] })).rejects.toThrow(/parentId/);
    await expect(check("GET", `/api/trees/${tree._id}/cards`, { headers: new Headers({ "content-type": "text/html" }) })).rejects.toThrow(/not one of/);
    await expect(check("DELETE", `/api/trees/${tree._id}`, { status: 204, text: "{}" })).rejects.toThrow(/says there is none/);
    // An unknown path answers an error body, and nothing else.
    await expect(check("GET", "/api/nowhere", { status: 200 })).rejects.toThrow(/no such operation/);
    const unknown = await alice.get("/api/nowhere");
    expect(unknown.status).toBe(404);
  });

  it("the card list's answer carries the headers the document gives it: its ETag, and how many cards are coming", async () => {
    const doc = (await new Api(server.url).get("/api/openapi.json")).body;
    const documented = doc.paths["/trees/{treeId}/cards"].get.responses["200"].headers as Record<string, { schema: { pattern?: string } }>;
    expect(Object.keys(documented).sort()).toEqual(["ETag", "X-Card-Count", "X-Cards-Revision"]);
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice, { seed: "# One\n\n## Two\n\n# Three" });
    const res = await alice.get(`/api/trees/${tree._id}/cards`);
    for (const [name, { schema }] of Object.entries(documented)) {
      const value = res.headers.get(name);
      expect(value, name).not.toBeNull();
      if (schema.pattern) expect(value).toMatch(new RegExp(schema.pattern));
    }
    expect(Number(res.headers.get("X-Card-Count"))).toBe(res.body.length);
    expect(res.body.length).toBe(3);
    const listed = (await alice.get("/api/trees")).body.find((t: { _id: string }) => t._id === tree._id);
    expect(Number(res.headers.get("X-Cards-Revision"))).toBe(listed.revision);
  });

  it("GET /api/docs is the same document as a page, loading nothing from elsewhere", async () => {
    const anonymous = new Api(server.url);
    const doc = (await anonymous.get("/api/openapi.json")).body;
    const page = await anonymous.get("/api/docs");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    for (const [path, methods] of Object.entries(doc.paths as Record<string, object>)) {
      for (const method of Object.keys(methods)) expect(page.text).toContain(`${method.toUpperCase()} /api${path.replaceAll("&", "&#38;")}`);
    }
    for (const name of Object.keys(doc.components.schemas)) expect(page.text).toContain(`id="schema-${name}"`);
    expect(page.text).toContain('<a href="#schema-CreateCardInput">CreateCardInput</a>');
    expect(page.text).not.toMatch(/<script|<link|src=|https?:\/\/(?!json-schema\.org)/);
  });
});
