/**
 * The few API calls the benchmarks make to set up data, through the real REST interface:
 * sign up, create a tree, import seeds (in chunks under the import limits), read, export.
 */
import { chunkTree, type SeedNode } from "./generate.js";

/** Cards per import request: 20,000 cards stay well under the 16 MiB import body limit. */
const CARDS_PER_IMPORT = 20_000;

export class CardtreeClient {
  readonly authorization: string;

  constructor(
    readonly baseUrl: string,
    readonly email: string,
    readonly password: string,
  ) {
    this.authorization = `Basic ${Buffer.from(`${email}:${password}`).toString("base64")}`;
  }

  static async signUp(baseUrl: string, email: string): Promise<CardtreeClient> {
    const password = "bench password 1234";
    const res = await fetch(`${baseUrl}/api/signup`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ email, password }),
    });
    if (res.status !== 201) throw new Error(`sign-up failed: ${res.status} ${await res.text()}`);
    return new CardtreeClient(baseUrl, email, password);
  }

  async request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
    return fetch(this.baseUrl + path, {
      method,
      headers: {
        authorization: this.authorization,
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.request(method, path, body);
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
    return JSON.parse(text) as T;
  }

  /** A new tree holding `nodes` (its default empty card removed), returns its id. */
  async treeWith(name: string, nodes: readonly SeedNode[]): Promise<string> {
    const tree = await this.json<{ _id: string }>("POST", "/api/trees", { name });
    const [empty] = await this.json<{ _id: string }[]>("GET", `/api/trees/${tree._id}/cards`);
    for (const chunk of chunkTree(nodes, CARDS_PER_IMPORT)) await this.importSeed(tree._id, JSON.stringify(chunk));
    await this.json("DELETE", `/api/trees/${tree._id}/cards/${empty._id}`);
    return tree._id;
  }

  /** Imports a seed (Markdown or JSON text) into the first column; returns the milliseconds taken. */
  async importSeed(treeId: string, seed: string): Promise<number> {
    const started = performance.now();
    const res = await this.request("POST", `/api/trees/${treeId}/cards/seed`, { parentId: null, seed });
    const text = await res.text();
    if (res.status !== 201) throw new Error(`import failed: ${res.status} ${text.slice(0, 300)}`);
    return performance.now() - started;
  }

  /** Fetches a path (GET, or POST with `body`) and returns the bytes and the milliseconds until the last byte. */
  async timed(path: string, body?: unknown): Promise<{ ms: number; bytes: Buffer; status: number }> {
    const started = performance.now();
    const res = await this.request(body === undefined ? "GET" : "POST", path, body);
    const bytes = Buffer.from(await res.arrayBuffer());
    return { ms: performance.now() - started, bytes, status: res.status };
  }
}
