/**
 * A small HTTP client and record factories for integration tests: each test builds the
 * users, trees and cards it needs through the real API. Every `/api` response it receives
 * is checked against the server's OpenAPI document (openapi-check.ts): one that the
 * document does not describe fails the test that got it.
 */
import { randomBytes } from "node:crypto";
import { checkAgainstOpenApi } from "./openapi-check.js";

export interface Reply<T = any> {
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

export class Api {
  constructor(
    readonly baseUrl: string,
    readonly credentials?: { email: string; password: string },
  ) {}

  get authHeader(): string | undefined {
    if (!this.credentials) return undefined;
    return `Basic ${Buffer.from(`${this.credentials.email}:${this.credentials.password}`).toString("base64")}`;
  }

  async request<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Reply<T>> {
    const res = await this.send(method, path, body, headers);
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get("content-type") ?? "").includes("json") && text !== "") parsed = JSON.parse(text);
    const reply = { status: res.status, body: parsed as T, text, headers: res.headers };
    await checkAgainstOpenApi(this.baseUrl, method, res.url, reply);
    return reply;
  }

  /** A GET whose answer is kept as bytes (docx, pptx), checked against the document like any other. */
  async download(path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
    const res = await this.send("GET", path, undefined, headers);
    const bytes = Buffer.from(await res.arrayBuffer());
    const json = (res.headers.get("content-type") ?? "").includes("json");
    const text = json ? bytes.toString("utf8") : "";
    await checkAgainstOpenApi(this.baseUrl, "GET", res.url, { status: res.status, headers: res.headers, text, body: json && text ? JSON.parse(text) : text });
    return { status: res.status, headers: res.headers, bytes };
  }

  private send(method: string, path: string, body: unknown, headers: Record<string, string>): Promise<Response> {
    const all: Record<string, string> = { ...headers };
    if (this.authHeader && !("authorization" in all)) all.authorization = this.authHeader;
    let payload: string | undefined;
    if (body !== undefined) {
      payload = typeof body === "string" ? body : JSON.stringify(body);
      all["content-type"] ??= "application/json";
    }
    return fetch(this.baseUrl + path, { method, headers: all, body: payload });
  }

  get = <T = any>(path: string, headers?: Record<string, string>) => this.request<T>("GET", path, undefined, headers);
  post = <T = any>(path: string, body?: unknown, headers?: Record<string, string>) => this.request<T>("POST", path, body, headers);
  put = <T = any>(path: string, body?: unknown, headers?: Record<string, string>) => this.request<T>("PUT", path, body, headers);
  delete = <T = any>(path: string, headers?: Record<string, string>) => this.request<T>("DELETE", path, undefined, headers);

  anonymous(): Api {
    return new Api(this.baseUrl);
  }
}

export function uniqueEmail(prefix = "user"): string {
  return `${prefix}-${randomBytes(5).toString("hex")}@example.test`;
}

/** Signs a new user up and returns a client that sends their basic credentials. */
export async function buildUser(baseUrl: string, prefix = "user"): Promise<Api & { user: any }> {
  const credentials = { email: uniqueEmail(prefix), password: "correct horse battery" };
  const res = await new Api(baseUrl).post("/api/signup", credentials);
  if (res.status !== 201) throw new Error(`sign-up failed: ${res.status} ${res.text}`);
  return Object.assign(new Api(baseUrl, credentials), { user: res.body });
}

export async function buildTree(api: Api, fields: { name?: string; seed?: string } = {}): Promise<any> {
  const res = await api.post("/api/trees", { name: fields.name ?? "A tree", ...fields });
  if (res.status !== 201) throw new Error(`tree creation failed: ${res.status} ${res.text}`);
  return res.body;
}

/** Adds `collaborator` to `owner`'s tree; throws unless the API answers 201. */
export async function shareTree(owner: Api, treeId: string, collaborator: Api & { user: any }): Promise<void> {
  const res = await owner.post(`/api/trees/${treeId}/collaborators`, { email: collaborator.user.email });
  if (res.status !== 201) throw new Error(`sharing failed: ${res.status} ${res.text}`);
}

/** Two new users, alice and bob, and alice's tree of one card ("# root") shared with bob. */
export async function buildSharedTree(baseUrl: string): Promise<{ alice: Api & { user: any }; bob: Api & { user: any }; tree: any; root: any }> {
  const alice = await buildUser(baseUrl, "alice");
  const bob = await buildUser(baseUrl, "bob");
  const tree = await buildTree(alice, { name: "shared", seed: "# root" });
  await shareTree(alice, tree._id, bob);
  const [root] = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
  return { alice, bob, tree, root };
}

export async function buildCard(
  api: Api,
  treeId: string,
  fields: { content?: string; parentId?: string | null; position?: number } = {},
): Promise<any> {
  const res = await api.post(`/api/trees/${treeId}/cards`, { treeId, position: 0, ...fields });
  if (res.status !== 201) throw new Error(`card creation failed: ${res.status} ${res.text}`);
  return res.body;
}

/**
 * What a client's outbox does: sends again after Retry-After while the key is in flight (409
 * with the header), until `deadlineMs` would pass; the last reply and how long it all took.
 */
export async function retryUntilAnswered(send: () => Promise<Reply>, deadlineMs: number): Promise<{ reply: Reply; tookMs: number }> {
  const started = Date.now();
  for (;;) {
    const reply = await send();
    const wait = Number(reply.headers.get("retry-after") ?? 0) * 1000;
    if (reply.status !== 409 || wait === 0 || Date.now() + wait - started > deadlineMs) return { reply, tookMs: Date.now() - started };
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}
