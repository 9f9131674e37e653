/**
 * Checks a REST response against the OpenAPI document the server serves
 * (`GET /api/openapi.json`, src/rest/openapi.ts). The shared test client (api.ts) runs it on
 * every `/api` response it receives, so a test that gets an undocumented status, a body of
 * another shape, or a media type the document does not list fails with the reason; the
 * document cannot drift from what the server does.
 *
 * Paths outside the document are the server's 404 for unknown API paths: they must answer
 * with an error body and one of the statuses any path may answer.
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; responses: Record<string, ResponseObject> };
}
interface Operation {
  responses: Record<string, ResponseObject | { $ref: string }>;
}
interface ResponseObject {
  description: string;
  content?: Record<string, { schema: unknown }>;
}

export interface CheckedReply {
  status: number;
  headers: Headers;
  /** The parsed JSON, when the response is JSON. */
  body: unknown;
  text: string;
}

/** What any path may answer, documented or not: its 404, and errors from before routing. */
const UNROUTED_STATUSES = new Set(["400", "401", "403", "404", "429", "500"]);
const DOCUMENT_ID = "openapi.json";

class OpenApiChecker {
  private readonly ajv = new Ajv2020({ allErrors: true, strict: false });
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly routes: { pattern: RegExp; template: string; literals: number }[];

  constructor(private readonly doc: Document) {
    (addFormats as unknown as (ajv: Ajv2020) => void)(this.ajv);
    // The document's component references become absolute, so any schema in it compiles alone.
    const absolute = JSON.parse(JSON.stringify(doc).replaceAll('"#/components/schemas/', `"${DOCUMENT_ID}#/components/schemas/`));
    this.ajv.addSchema({ $id: DOCUMENT_ID, components: { schemas: absolute.components.schemas } });
    this.doc = absolute;
    this.routes = Object.keys(doc.paths)
      .map((template) => ({
        template,
        pattern: new RegExp(
          `^${template
            .split(/(\{\w+\})/)
            .map((part) => (part.startsWith("{") ? "([^/]+?)" : part.replace(/[.*+?^$()|[\]\\]/g, "\\$&")))
            .join("")}$`,
        ),
        literals: template.replace(/\{\w+\}/g, "").length,
      }))
      // Literal segments win, as in the routers: /cards/seed before /cards/{cardId}.
      .sort((a, b) => b.literals - a.literals);
  }

  check(method: string, url: string, reply: CheckedReply): void {
    const { pathname } = new URL(url);
    if (!pathname.startsWith("/api/")) return;
    const apiPath = pathname.slice("/api".length);
    const verb = method.toLowerCase();
    const where = `${method} ${pathname} answered ${reply.status}`;
    const route = this.routes.find((r) => r.pattern.test(apiPath) && this.doc.paths[r.template][verb]);
    if (!route) {
      if (!UNROUTED_STATUSES.has(String(reply.status))) throw new Error(`${where}: no such operation in openapi.json, and not an error`);
      this.checkBody(where, "#/components/schemas/Error", { $ref: `${DOCUMENT_ID}#/components/schemas/Error` }, reply);
      return;
    }
    const operation = this.doc.paths[route.template][verb];
    let response = operation.responses[String(reply.status)];
    if (!response) {
      throw new Error(`${where}, a status openapi.json does not list for ${verb.toUpperCase()} ${route.template} (${Object.keys(operation.responses).join(", ")})`);
    }
    if ("$ref" in response) response = this.doc.components.responses[response.$ref.split("/").pop()!];
    const pointer = `${route.template} ${verb} ${reply.status}`;
    if (!response.content) {
      if (reply.text !== "") throw new Error(`${where} with a body, where openapi.json says there is none`);
      return;
    }
    const mediaType = (reply.headers.get("content-type") ?? "").split(";")[0].trim();
    const content = response.content[mediaType];
    if (!content) throw new Error(`${where} as "${mediaType}", not one of openapi.json's ${Object.keys(response.content).join(", ")}`);
    if (mediaType === "application/json") this.checkBody(where, `${pointer} ${mediaType}`, content.schema, reply);
  }

  private checkBody(where: string, key: string, schema: unknown, reply: CheckedReply): void {
    let validate = this.validators.get(key);
    if (!validate) {
      validate = this.ajv.compile(schema as object);
      this.validators.set(key, validate);
    }
    const body = typeof reply.body === "string" && reply.text !== "" ? JSON.parse(reply.text) : reply.body;
    if (!validate(body)) {
      const problems = (validate.errors ?? []).map((e) => `${e.instancePath || "(body)"} ${e.message}`).join("; ");
      throw new Error(`${where} with a body openapi.json does not describe: ${problems}\n${reply.text.slice(0, 500)}`);
    }
  }
}

const checkers = new Map<string, Promise<OpenApiChecker>>();
/**
 * Checkers by the document's text: the servers of a test file serve the same document, and
 * a checker compiles each schema it meets once (ajv's compilation is the costly part), so a
 * file that starts a server per test compiles them once, not once per server.
 */
const byDocument = new Map<string, OpenApiChecker>();

/** The checker for the server at `baseUrl`, from the document it serves (fetched once per server). */
function checkerFor(baseUrl: string): Promise<OpenApiChecker> {
  let checker = checkers.get(baseUrl);
  if (!checker) {
    checker = fetch(`${baseUrl}/api/openapi.json`).then(async (res) => {
      if (res.status !== 200) throw new Error(`GET /api/openapi.json answered ${res.status}`);
      const text = await res.text();
      let known = byDocument.get(text);
      if (!known) {
        known = new OpenApiChecker(JSON.parse(text) as Document);
        byDocument.set(text, known);
      }
      return known;
    });
    checkers.set(baseUrl, checker);
    checker.catch(() => checkers.delete(baseUrl));
  }
  return checker;
}

/**
 * @throws Error saying how the response differs from the server's OpenAPI document.
 */
export async function checkAgainstOpenApi(baseUrl: string, method: string, url: string, reply: CheckedReply): Promise<void> {
  (await checkerFor(baseUrl)).check(method, url, reply);
}
