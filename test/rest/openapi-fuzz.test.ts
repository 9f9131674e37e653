/**
 * A property-based test driven by the OpenAPI document (issue 28): fast-check draws
 * requests from the document's own schemas (path and query parameters, JSON bodies) and
 * sends them to the real server as a signed-in user.
 * - Every request the document allows is answered with success or a business refusal the
 *   operation documents (403 for owner-only actions and a wrong current password, 404,
 *   409, 413, 422, 429): never 400, never 5xx.
 * - Every request it forbids (an empty body where one is required, a body that is not an
 *   object, a required field missing, a value of the wrong type, out of range, too long or
 *   off its pattern, half of the password pair, a malformed id or query flag) is 400.
 * - Every answer is checked against the document (the Api client does it on each reply).
 *
 * What a document cannot say is drawn from the fixture instead of at random: a card's body
 * `treeId` is its path's, a `parentId` is a card of that tree (or null), and a seed is
 * Markdown (a JSON seed must be a json export). Left out: the live event stream (it never
 * ends), and sign-up, log-in and log-out, whose valid requests start sessions and count
 * against throttles (their invalid requests are drawn like every other's).
 * Bounded: a few runs per operation, each a request or two.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSharedTree, buildUser, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";

type Schema = Record<string, any>;
interface Operation {
  method: string;
  template: string;
  parameters: { name: string; in: string; required: boolean; schema: Schema }[];
  body?: { schema: Schema; required: boolean };
  statuses: number[];
}

const VALID_RUNS = 6;
const INVALID_RUNS = 3;
// The two event streams never end (test/live covers them: events, presence); the accounts'
// calls would sign the fixture's user out or fill the sign-up budget.
const NOT_DRAWN = new Set(["get /trees/{treeId}/events", "get /trees/{treeId}/presence", "post /signup", "post /login", "post /logout", "get /openapi.json", "get /docs"]);

let server: InProcessServer;
let alice: Api & { user: any };
let doc: Schema;
let fixture: {
  treeId: string;
  cardIds: string[];
  scriptId: string;
  collaboratorId: string;
  collaboratorEmail: string;
  publicUrl: string;
  /** Trees for `DELETE /trees/{treeId}` to delete, so the fixture's own tree stays. */
  spareTreeIds: string[];
};

beforeAll(async () => {
  server = await startInProcessServer({ SIGNUP_LIMIT_PER_ADDRESS: "1000" });
  const shared = await buildSharedTree(server.url);
  alice = shared.alice;
  await alice.post(`/api/trees/${shared.tree._id}/cards/seed`, { parentId: shared.root._id, seed: "# a\n\n# b" });
  const publicUrl = `fuzzed-${shared.tree._id.slice(0, 8)}`;
  expect((await alice.put(`/api/trees/${shared.tree._id}`, { publicUrl })).status).toBe(200);
  const script = await alice.post("/api/scripts", { name: "fuzzed", body: "console.log(1)" });
  const cards = (await alice.get(`/api/trees/${shared.tree._id}/cards`)).body;
  const spares = [];
  for (let i = 0; i < VALID_RUNS; i++) spares.push((await alice.post("/api/trees", { name: `spare ${i}` })).body._id);
  fixture = {
    treeId: shared.tree._id,
    cardIds: cards.map((card: any) => card._id),
    scriptId: script.body._id,
    collaboratorId: shared.bob.user._id,
    collaboratorEmail: shared.bob.user.email,
    publicUrl,
    spareTreeIds: spares,
  };
  doc = (await alice.get("/api/openapi.json")).body;
});
afterAll(() => server.stop());

function resolve(schema: Schema): Schema {
  return schema.$ref ? resolve(doc.components.schemas[schema.$ref.split("/").pop()]) : schema;
}

function operations(): Operation[] {
  return Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([template, item]) =>
    Object.entries(item).map(([method, op]) => ({
      method,
      template,
      parameters: (op.parameters ?? []).filter((p: any) => p.in !== "header"),
      body: op.requestBody && { schema: resolve(op.requestBody.content["application/json"].schema), required: op.requestBody.required },
      statuses: Object.keys(op.responses).map(Number),
    })),
  );
}

const RANDOM_ID = fc.stringMatching(/^[a-z0-9]{24}$/);

/** Values for what the document names but cannot pin down (see the header). */
function drawnFromFixture(name: string): fc.Arbitrary<unknown> | undefined {
  switch (name) {
    case "parentId":
      return fc.constantFrom(null, ...fixture.cardIds);
    case "seed":
      return fc.array(fc.string({ maxLength: 20 }).map((text) => text.replace(/^[\s[{]+/, "")), { maxLength: 4 }).map((lines) => lines.map((l) => `# ${l}`).join("\n\n"));
    case "email":
      return fc.oneof(fc.constant(fixture.collaboratorEmail), valueOf(resolve(doc.components.schemas.AddCollaboratorInput).properties.email));
    default:
      return undefined;
  }
}

/** Any value `schema` allows, small. */
function valueOf(schema: Schema, name = ""): fc.Arbitrary<unknown> {
  schema = resolve(schema);
  const fromFixture = name ? drawnFromFixture(name) : undefined;
  if (fromFixture) return fromFixture;
  if (schema.anyOf ?? schema.oneOf) return fc.oneof(...(schema.anyOf ?? schema.oneOf).map((s: Schema) => valueOf(s, name)));
  if ("const" in schema) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  switch (schema.type) {
    case "null":
      return fc.constant(null);
    case "boolean":
      return fc.boolean();
    case "integer":
      return fc.integer({ min: Math.max(schema.minimum ?? -1000, -1e9), max: Math.min(schema.maximum ?? 1000, 1e9) });
    case "number":
      return fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true });
    case "string": {
      const max = Math.min(schema.maxLength ?? 30, 60);
      const text = schema.pattern ? fc.stringMatching(new RegExp(schema.pattern)) : fc.string({ minLength: schema.minLength ?? 0, maxLength: max });
      return text.filter((s) => s.length >= (schema.minLength ?? 0) && s.length <= (schema.maxLength ?? Infinity));
    }
    case "array":
      return fc.array(valueOf(schema.items), { maxLength: Math.min(schema.maxItems ?? 3, 3) });
    case "object": {
      const properties = Object.fromEntries(Object.entries(schema.properties ?? {}).map(([key, s]) => [key, valueOf(s as Schema, key)]));
      const record = fc.record(properties, { requiredKeys: schema.required ?? [] });
      const pairs = Object.entries((schema.dependentRequired ?? {}) as Record<string, string[]>);
      return record.filter((value: any) => pairs.every(([key, needs]) => !(key in value) || needs.every((other) => other in value)));
    }
    default:
      return fc.constant({});
  }
}

function pathValue(op: Operation, name: string, schema: Schema): fc.Arbitrary<string> {
  // Mostly records that exist (the operation's success), sometimes not (its 404).
  const pick = (...known: string[]) => fc.oneof({ arbitrary: fc.constantFrom(...known), weight: 4 }, { arbitrary: RANDOM_ID, weight: 1 });
  switch (name) {
    case "treeId":
      return op.method === "delete" && op.template === "/trees/{treeId}" ? pick(...fixture.spareTreeIds) : pick(fixture.treeId);
    case "cardId":
      return pick(...fixture.cardIds);
    case "scriptId":
      return pick(fixture.scriptId);
    case "userId":
      return fc.oneof({ arbitrary: fc.constant(fixture.collaboratorId), weight: 4 }, { arbitrary: fc.stringMatching(/^[0-9a-f]{24}$/), weight: 1 });
    case "publicUrl":
    case "publicTreeId":
      return fc.oneof({ arbitrary: fc.constant(fixture.publicUrl), weight: 4 }, { arbitrary: fc.stringMatching(/^[a-z0-9-]{3,20}$/), weight: 1 });
    default:
      return valueOf(schema).map(String);
  }
}

interface Drawn {
  path: Record<string, string>;
  query: Record<string, unknown>;
  /** `undefined`: no body sent. */
  body: unknown;
}

/** `onFixture`: path parameters name the fixture's own records (no 404 to come before a 400). */
function validRequest(op: Operation, onFixture = false): fc.Arbitrary<Drawn> {
  const pathParameter = (name: string, schema: Schema) => {
    const known = knownPathValue(name);
    return onFixture && known !== undefined ? fc.constant(known) : pathValue(op, name, schema);
  };
  const path = fc.record(Object.fromEntries(op.parameters.filter((p) => p.in === "path").map((p) => [p.name, pathParameter(p.name, p.schema)])));
  const query = fc.record(Object.fromEntries(op.parameters.filter((p) => p.in === "query").map((p) => [p.name, valueOf(p.schema)])), { requiredKeys: [] });
  const body = op.body ? (op.body.required ? valueOf(op.body.schema) : fc.option(valueOf(op.body.schema), { nil: undefined })) : fc.constant(undefined);
  return fc.record({ path, query, body }).map((drawn) => {
    // A card's body names the tree of its path (the document cannot say so).
    if (drawn.body && typeof drawn.body === "object" && "treeId" in drawn.body && drawn.path.treeId) {
      (drawn.body as Record<string, unknown>).treeId = drawn.path.treeId;
    }
    return drawn;
  });
}

/** One change that makes a valid request one the document forbids. */
function invalidRequest(op: Operation): fc.Arbitrary<Drawn> | undefined {
  const breakages: fc.Arbitrary<(drawn: Drawn) => Drawn>[] = [];
  const body = op.body?.schema;
  if (op.body?.required) breakages.push(fc.constant((d: Drawn) => ({ ...d, body: undefined })));
  if (body?.type === "object") {
    breakages.push(fc.constantFrom<unknown>([], "text", 42).map((wrong) => (d: Drawn) => ({ ...d, body: wrong })));
    for (const key of body.required ?? []) {
      breakages.push(fc.constant((d: Drawn) => ({ ...d, body: Object.fromEntries(Object.entries(d.body as object).filter(([k]) => k !== key)) })));
    }
    for (const [key, raw] of Object.entries(body.properties as Record<string, Schema>)) {
      for (const wrong of wrongValues(resolve(raw))) {
        breakages.push(fc.constant((d: Drawn) => ({ ...d, body: { ...(d.body as object), [key]: wrong } })));
      }
    }
    for (const [key, needs] of Object.entries((body.dependentRequired ?? {}) as Record<string, string[]>)) {
      breakages.push(
        fc.constant((d: Drawn) => ({
          ...d,
          body: { ...Object.fromEntries(Object.entries(d.body as object).filter(([k]) => !needs.includes(k))), [key]: "something long enough" },
        })),
      );
    }
  }
  for (const parameter of op.parameters) {
    // Every value in a URL is text: "12" is a number there.
    for (const wrong of wrongValues(parameter.schema).filter((value) => typeof value !== "object" && value !== "12")) {
      const where = parameter.in === "path" ? "path" : "query";
      // A path segment that no longer matches the route is a 404 of another path, not this one's 400.
      if (where === "path" && (String(wrong) === "" || /[/.]/.test(String(wrong)))) continue;
      breakages.push(fc.constant((d: Drawn) => ({ ...d, [where]: { ...d[where], [parameter.name]: String(wrong) } })));
    }
  }
  if (breakages.length === 0) return undefined;
  // From a request the document allows, on the fixture's own records (no 404 to come first).
  return fc.tuple(validRequest(op, true), fc.oneof(...breakages)).map(([drawn, breakIt]) => breakIt(drawn));
}

function knownPathValue(name: string): string | undefined {
  const known: Record<string, string> = { treeId: fixture.treeId, cardId: fixture.cardIds[0], scriptId: fixture.scriptId, userId: fixture.collaboratorId };
  return known[name];
}

/** Values `schema` does not allow (as JSON), each a different way to be wrong. */
function wrongValues(schema: Schema): unknown[] {
  if (schema.anyOf ?? schema.oneOf) {
    const types = new Set((schema.anyOf ?? schema.oneOf).map((s: Schema) => resolve(s).type));
    return types.has("object") || types.has("array") ? [] : [{ not: "this" }];
  }
  const wrong: unknown[] = [];
  if (schema.type !== "object" && schema.type !== "array") wrong.push({ not: "this" });
  if (schema.type === "string") {
    if (schema.maxLength !== undefined) wrong.push("x".repeat(schema.maxLength + 1));
    // A value off the pattern: the first of these it refuses (a pattern may allow any text
    // with one visible character, as a name's does).
    if (schema.pattern) wrong.push(...["NOT VALID!", " ", ""].filter((value) => !new RegExp(schema.pattern).test(value)).slice(0, 1));
    if (schema.enum) wrong.push("none-of-these");
  }
  if (schema.type === "integer" || schema.type === "number") {
    wrong.push("12");
    if (schema.minimum !== undefined) wrong.push(schema.minimum - 1);
    if (schema.maximum !== undefined && schema.maximum < Number.MAX_SAFE_INTEGER) wrong.push(schema.maximum + 1);
    if (schema.type === "integer") wrong.push(1.5);
  }
  if (schema.enum && schema.type !== "string") wrong.push(-999);
  if (schema.type === "boolean") wrong.push("yes");
  if (schema.type === "array") wrong.push("not a list");
  return wrong;
}

function urlOf(op: Operation, drawn: Drawn): string {
  const path = op.template.replace(/\{(\w+)\}/g, (_, name) => encodeURIComponent(drawn.path[name]));
  const query = new URLSearchParams(Object.entries(drawn.query).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]));
  return `/api${path}${query.size > 0 ? `?${query}` : ""}`;
}

async function send(op: Operation, drawn: Drawn) {
  return alice.request(op.method.toUpperCase(), urlOf(op, drawn), drawn.body);
}

/** What a request the document allows may be refused with: the business statuses the operation documents. */
const BUSINESS = new Set([403, 404, 409, 413, 422, 429]);

describe("requests drawn from the OpenAPI document", () => {
  it("each one it allows is accepted or refused only for a business reason it documents", async () => {
    const drawnOps = operations().filter((op) => !NOT_DRAWN.has(`${op.method} ${op.template}`));
    expect(drawnOps.length).toBeGreaterThan(25);
    for (const op of drawnOps) {
      await fc.assert(
        fc.asyncProperty(validRequest(op), async (drawn) => {
          const reply = await send(op, drawn);
          const fine = reply.status < 400 || (BUSINESS.has(reply.status) && op.statuses.includes(reply.status));
          expect(fine, `${op.method.toUpperCase()} ${urlOf(op, drawn)} ${JSON.stringify(drawn.body)} → ${reply.status} ${reply.text.slice(0, 300)}`).toBe(true);
        }),
        { numRuns: VALID_RUNS },
      );
    }
  });

  it("each one it forbids is refused with 400", async () => {
    let drawnOps = 0;
    for (const op of operations().filter((o) => !["get /trees/{treeId}/events", "get /openapi.json", "get /docs"].includes(`${o.method} ${o.template}`))) {
      const invalid = invalidRequest(op);
      if (!invalid) continue;
      drawnOps++;
      await fc.assert(
        fc.asyncProperty(invalid, async (drawn) => {
          const reply = await send(op, drawn);
          expect(reply.status, `${op.method.toUpperCase()} ${urlOf(op, drawn)} ${JSON.stringify(drawn.body)} → ${reply.text.slice(0, 300)}`).toBe(400);
        }),
        { numRuns: INVALID_RUNS },
      );
    }
    expect(drawnOps).toBeGreaterThan(20);
  });
});

it("an empty body where the document requires one is 400, and nothing changes", async () => {
  const before = (await alice.get("/api/preferences")).body;
  for (const [method, path] of [
    ["PUT", "/api/preferences"],
    ["PUT", "/api/index"],
    ["PUT", `/api/trees/${fixture.treeId}`],
    ["PUT", `/api/trees/${fixture.treeId}/cards/${fixture.cardIds[0]}`],
    ["POST", `/api/trees/${fixture.treeId}/cards`],
    ["PUT", `/api/scripts/${fixture.scriptId}`],
    ["POST", "/api/scripts"],
  ]) {
    const reply = await alice.request(method, path);
    expect(reply.status, `${method} ${path}`).toBe(400);
    expect(reply.body.message).toMatch(/needs a JSON body/);
  }
  expect((await alice.get("/api/preferences")).body).toEqual(before);
  // `{}` is a body: a request to change nothing.
  expect((await alice.put("/api/preferences", {})).status).toBe(200);
});

it("takes every email the document's format allows, and only those", async () => {
  const other = await buildUser(server.url, "emails");
  const pattern = new RegExp(resolve(doc.components.schemas.SignupInput).properties.email.pattern);
  await fc.assert(
    fc.asyncProperty(fc.emailAddress().filter((e) => e.length <= 254 && pattern.test(e)), async (email) => {
      const reply = await other.anonymous().post("/api/signup", { email, password: "correct horse battery" });
      expect([201, 409], `${email}: ${reply.text}`).toContain(reply.status);
    }),
    { numRuns: 8 },
  );
  for (const email of [" padded@example.test", "no-at-sign", "two@@example.test", "dot.@example.test", "a@-host.test"]) {
    expect(pattern.test(email), email).toBe(false);
    expect((await other.anonymous().post("/api/signup", { email, password: "correct horse battery" })).status, email).toBe(400);
  }
});
