/**
 * Hostile traffic (issue 12): an honest writer keeps working (reads a 1,000-card tree, saves
 * a card, logs in now and then) while one client sends each attack of the issue in turn. The
 * figure that matters is the honest writer's p99 latency during each attack (target ≤ 250 ms),
 * with the server alive afterwards and its RSS ≤ 512 MB.
 *
 * The attacks come from this process on loopback, a few requests in flight at a time,
 * each bounded in time and count. The server trusts one proxy hop (TRUST_PROXY=1), as a
 * deployment behind a reverse proxy does, so the rotating X-Forwarded-For attack is real,
 * and the honest writer and the attacker each come from their own address (their
 * X-Forwarded-For), as they would in the world: a limit on the attacker's address must not
 * count as a failure of the service.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { CardtreeClient } from "../cardtree-client.js";
import { generateTree } from "../generate.js";
import { sampleRss, startPinned, type Pinned } from "../processes.js";
import { percentile, type Report } from "../report.js";

interface Attack {
  id: string;
  name: string;
  /** Requests in flight at once. */
  concurrency: number;
  /** One attacking request; returns its status (0 when the connection failed), or what a 200 held. */
  send(i: number): Promise<number | string>;
}

interface Sample {
  /** Which of the writer's requests: read, save, health, log-in. */
  kind: string;
  ms: number;
  ok: boolean;
}

/** The three slowest samples, by kind ("log-in 312, save 120, read 98"): what the p99 is made of. */
function slowest(samples: readonly Sample[]): string {
  return [...samples]
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 3)
    .map((s) => `${s.kind} ${s.ms.toFixed(0)}`)
    .join(", ");
}

const HONEST_ADDRESS = { "X-Forwarded-For": "192.0.2.10" };
const ATTACKER_ADDRESS = { "X-Forwarded-For": "198.51.100.66" };

async function status(promise: Promise<Response>): Promise<number> {
  try {
    const res = await promise;
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/**
 * What a GraphQL answer with status 200 held: "200 data" (answered) or "200 <code>" (its first
 * error's code, e.g. payload_too_large: the result budget refused it while executing).
 */
async function graphqlOutcome(promise: Promise<Response>): Promise<number | string> {
  try {
    const res = await promise;
    const text = await res.text();
    if (res.status !== 200) return res.status;
    const body = JSON.parse(text) as { errors?: { extensions?: { code?: string } }[] };
    return `200 ${body.errors?.[0]?.extensions?.code ?? "data"}`;
  } catch {
    return 0;
  }
}

/** Nested `children { parent { … } }` selections: each level multiplies by the siblings' count. */
function nestedQuery(url: string, levels: number): string {
  return `{publicTree(url:"${url}"){cards{${"children{parent{".repeat(levels)}id${"}}".repeat(levels)}}}}`;
}

/** A cookie session for `client` (log-in answers the CSRF token with the User). */
async function cookieSession(client: CardtreeClient): Promise<{ cookie: string; csrf: string }> {
  const res = await fetch(`${client.baseUrl}/api/login`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...ATTACKER_ADDRESS },
    body: JSON.stringify({ email: client.email, password: client.password }),
  });
  const user = (await res.json()) as { csrf: string };
  const cookie = res.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
  return { cookie, csrf: user.csrf };
}

async function publicTreeWith(client: CardtreeClient, name: string, publicUrl: string, seed: unknown): Promise<string> {
  const tree = await client.json<{ _id: string }>("POST", "/api/trees", { name });
  await client.importSeed(tree._id, JSON.stringify(seed));
  await client.json("PUT", `/api/trees/${tree._id}`, { publicUrl });
  return tree._id;
}

/**
 * Issue 25's probe sent alone, ten times one after another (each a new query text, so no
 * cached answer helps), while /healthz is polled every 10 ms: how big its answer is against
 * the tree's JSON (its record and cards as REST sends them), how long it takes, and how
 * long it holds the server (the worst /healthz wait meanwhile). Signed in: anonymous
 * callers had a smaller budget already.
 */
async function probeAlone(report: Report, attacker: CardtreeClient, treeId: string, query: string): Promise<void> {
  const url = attacker.baseUrl;
  const treeJson = (await (await attacker.request("GET", `/api/trees/${treeId}`)).arrayBuffer()).byteLength + (await (await attacker.request("GET", `/api/trees/${treeId}/cards`)).arrayBuffer()).byteLength;
  const times: number[] = [];
  let largest = 0;
  let worstHealth = 0;
  // The same polling with nothing else sent, as long: what the machine alone makes /healthz wait.
  let quietHealth = 0;
  const quietUntil = performance.now() + 1_000;
  while (performance.now() < quietUntil) {
    const started = performance.now();
    await (await fetch(`${url}/healthz`, { headers: HONEST_ADDRESS })).arrayBuffer();
    quietHealth = Math.max(quietHealth, performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  for (let i = 0; i < 10; i++) {
    let done = false;
    const poll = (async () => {
      while (!done) {
        const started = performance.now();
        await (await fetch(`${url}/healthz`, { headers: HONEST_ADDRESS })).arrayBuffer();
        worstHealth = Math.max(worstHealth, performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    const started = performance.now();
    const res = await attacker.request("POST", "/graphql", { query: query.replace(/^\{/, `{round${i}: __typename `) }, ATTACKER_ADDRESS);
    largest = Math.max(largest, (await res.arrayBuffer()).byteLength);
    times.push(performance.now() - started);
    done = true;
    await poll;
  }
  report.add({
    id: "hostile-amplification-alone",
    scenario: "issue 25's probe alone, signed in (10 in turn)",
    p50Ms: percentile(times, 50),
    p99Ms: percentile(times, 99),
    bytes: largest,
    note: `tree JSON ${treeJson} bytes; answer ${(largest / treeJson).toFixed(2)}× that; worst /healthz meanwhile ${worstHealth.toFixed(0)} ms (${quietHealth.toFixed(0)} ms with nothing sent)`,
  });
  report.target({ name: "issue 25's probe: answer against the tree's JSON", wanted: "≤ 4×", measured: `${(largest / treeJson).toFixed(2)}×`, met: largest <= 4 * treeJson });
  report.target({
    name: "issue 25's probe: worst /healthz wait while it runs, over the same with nothing sent",
    wanted: "≤ 50 ms more",
    measured: `${(worstHealth - quietHealth).toFixed(0)} ms (${worstHealth.toFixed(0)} against ${quietHealth.toFixed(0)})`,
    met: worstHealth - quietHealth <= 50,
  });
}

async function buildAttacks(server: Pinned, report: Report): Promise<Attack[]> {
  const url = server.url;
  const attacker = await CardtreeClient.signUp(url, "attacker@bench.example");
  // A 21-card public tree: one root with 20 children, so each children/parent level multiplies by 20.
  const smallId = await publicTreeWith(attacker, "Small", "hostile-21", [{ content: "# Root", children: Array.from({ length: 20 }, (_, i) => ({ content: `Child ${i}` })) }]);
  const bigId = await publicTreeWith(attacker, "Five thousand", "hostile-5k", generateTree(5_000, 3));
  const emphasisId = await publicTreeWith(attacker, "Emphasis", "hostile-emphasis", [{ content: "_a".repeat(50_000) }]);
  const quotesId = await publicTreeWith(attacker, "Quotes", "hostile-quotes", [{ content: `${"> ".repeat(20_000)}deep` }]);
  const ownTree = await attacker.json<{ _id: string }>("POST", "/api/trees", { name: "Imports" });
  // The first /graphql request of a process loads graphql-yoga and the schema (src/app.ts:
  // 0.5-1.5 s on this machine, once); that is start-up, not the attack, so it happens here.
  await fetch(`${url}/graphql`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ query: "{ __typename }" }) });
  const session = await cookieSession(attacker);

  const graphql = (query: string, variables?: unknown, auth = false, read: (res: Promise<Response>) => Promise<number | string> = status) =>
    read(
      fetch(`${url}/graphql`, {
        method: "POST",
        // As graphql-request asks: refusals then come with their HTTP status (429, 413, 400), not 200.
        headers: {
          "Content-Type": "application/json",
          Accept: "application/graphql-response+json, application/json",
          ...ATTACKER_ADDRESS,
          ...(auth ? { authorization: attacker.authorization } : {}),
        },
        body: JSON.stringify({ query, variables }),
      }),
    );
  const get = (pathAndQuery: string) => status(fetch(url + pathAndQuery, { headers: ATTACKER_ADDRESS }));
  const thousandCards = JSON.stringify(Array.from({ length: 1_000 }, (_, i) => ({ content: `card ${i}` })));
  const importAliases = Array.from({ length: 50 }, (_, i) => `i${i}: importSeed(treeId: $t, input: {parentId: null, seed: $s}) { id }`).join(" ");
  const meAliases = Array.from({ length: 1_000 }, (_, i) => `m${i}: me { id email }`).join(" ");
  const exportAliases = Array.from({ length: 10 }, (_, i) => `e${i}: export(format: HTML)`).join(" ");
  const decoration = "x".repeat(7_000);
  let counter = 0;
  // What a proxy forwards when the client sends its own X-Forwarded-For: the client's made-up
  // entry on the left, the address the proxy saw appended on the right.
  const spoofedAddress = () => ({ "X-Forwarded-For": `10.${(counter >> 16) & 255}.${(counter >> 8) & 255}.${counter++ & 255}, ${ATTACKER_ADDRESS["X-Forwarded-For"]}` });

  // Issue 25: the probe that answered 7.4 MB signed in (children, parent, children on the
  // 21-card tree, ~145 bytes), and a query over the anonymous result budget (three lists of
  // the 5,000-card tree: 120,000 values) sent again and again: it must never be answered.
  const amplification = '{publicTree(url:"hostile-21"){cards{children{parent{children{parent{children{id content position depth createdAt updatedAt}}}}}}}}';
  const fields = "id treeId parentId content position createdAt updatedAt version";
  const overBudget = `{publicTree(url:"hostile-5k"){a:cards{${fields}} b:cards{${fields}} c:cards{${fields}}}}`;
  await probeAlone(report, attacker, smallId, amplification);

  return [
    { id: "gql-amplification", name: "GraphQL children/parent/children probe of issue 25, ~145 bytes, on the 21-card tree (signed in)", concurrency: 2, send: () => graphql(amplification, undefined, true) },
    { id: "gql-amplification-anonymous", name: "the same probe, anonymous", concurrency: 2, send: () => graphql(amplification) },
    { id: "gql-over-budget-again", name: "GraphQL query over the anonymous result budget, sent again and again (anonymous)", concurrency: 2, send: () => graphql(overBudget, undefined, false, graphqlOutcome) },
    { id: "gql-nested", name: "GraphQL children/parent nesting on a public 21-card tree (anonymous)", concurrency: 2, send: () => graphql(nestedQuery("hostile-21", 6)) },
    { id: "gql-me-aliases", name: "GraphQL 1,000 aliases of me", concurrency: 4, send: () => graphql(`{${meAliases}}`, undefined, true) },
    { id: "gql-export-aliases", name: "GraphQL 10 aliases of export on a public 5,000-card tree (anonymous)", concurrency: 2, send: () => graphql(`{publicTree(url:"hostile-5k"){${exportAliases}}}`) },
    {
      id: "gql-import-aliases",
      name: "GraphQL 50 aliases of importSeed, 1,000 cards each",
      concurrency: 2,
      send: () => graphql(`mutation($t: ID!, $s: String!) {${importAliases}}`, { t: ownTree._id, s: thousandCards }, true),
    },
    { id: "gql-deep-parse", name: "GraphQL document of 5,000 nested selections (anonymous)", concurrency: 4, send: () => graphql(`{${"a{".repeat(5_000)}b${"}".repeat(5_000)}}`) },
    { id: "md-emphasis-html", name: "html export of a public 100 KB `_a…` card (anonymous)", concurrency: 2, send: () => get(`/api/export/${emphasisId}.html`) },
    { id: "md-emphasis-docx", name: "docx export of a public 100 KB `_a…` card (anonymous)", concurrency: 2, send: () => get(`/api/export/${emphasisId}.docx`) },
    { id: "md-quotes-html", name: "html export of 20,000 nested `>` (anonymous)", concurrency: 2, send: () => get(`/api/export/${quotesId}.html`) },
    { id: "export-decoration", name: "txt export of a public 5,000-card tree with 7,000-character start/end (anonymous)", concurrency: 4, send: () => get(`/api/export/${bigId}.txt?start=${decoration}&end=${decoration}`) },
    {
      id: "signup-flood",
      name: "sign-ups with fresh emails",
      concurrency: 8,
      send: (i) =>
        status(
          fetch(`${url}/api/signup`, {
            method: "POST",
            headers: { "Content-Type": "application/json", ...spoofedAddress() },
            body: JSON.stringify({ email: `flood-${Date.now()}-${i}@bench.example`, password: "flood password 1" }),
          }),
        ),
    },
    {
      id: "current-password-flood",
      name: "wrong currentPassword through one cookie session",
      concurrency: 8,
      send: () =>
        status(
          fetch(`${url}/api/index`, {
            method: "PUT",
            headers: { "Content-Type": "application/json", ...ATTACKER_ADDRESS, cookie: session.cookie, "X-CSRF-Token": session.csrf },
            body: JSON.stringify({ currentPassword: "not the password", newPassword: "another password 2" }),
          }),
        ),
    },
    {
      id: "login-rotating-xff",
      name: "wrong log-ins with a rotating X-Forwarded-For",
      concurrency: 8,
      send: (i) =>
        status(
          fetch(`${url}/api/login`, {
            method: "POST",
            headers: { "Content-Type": "application/json", ...spoofedAddress() },
            // A fresh email each time: no per-email limit stops it, only the address and global ones.
            body: JSON.stringify({ email: `guess-${i}@bench.example`, password: "a wrong guess" }),
          }),
        ),
    },
  ];
}

/**
 * The honest writer: reads its tree, saves a card, checks /healthz, and every fifth round
 * logs in afresh (a password hash, where a hashing flood would show). One request at a time.
 */
function honestWriter(honest: CardtreeClient, treeId: string, cardId: string): { stop(): Promise<Sample[]> } {
  const samples: Sample[] = [];
  let running = true;
  const timed = async (kind: string, request: () => Promise<Response>) => {
    const started = performance.now();
    let ok: boolean;
    try {
      const res = await request();
      await res.arrayBuffer();
      ok = res.ok;
    } catch {
      ok = false;
    }
    samples.push({ kind, ms: performance.now() - started, ok });
  };
  const loop = (async () => {
    for (let round = 0; running; round++) {
      await timed("read", () => honest.request("GET", `/api/trees/${treeId}/cards`, undefined, HONEST_ADDRESS));
      await timed("save", () => honest.request("PUT", `/api/trees/${treeId}/cards/${cardId}`, { content: `Draft ${round}` }, HONEST_ADDRESS));
      await timed("health", () => fetch(`${honest.baseUrl}/healthz`, { headers: HONEST_ADDRESS }));
      if (round % 5 === 0) {
        await timed("log-in", () =>
          fetch(`${honest.baseUrl}/api/login`, {
            method: "POST",
            headers: { "Content-Type": "application/json", ...HONEST_ADDRESS },
            body: JSON.stringify({ email: honest.email, password: honest.password }),
          }),
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return samples;
    },
  };
}

async function runAttack(attack: Attack, seconds: number, maxRequests: number): Promise<Map<number | string, number>> {
  const statuses = new Map<number | string, number>();
  const deadline = performance.now() + seconds * 1000;
  let sent = 0;
  const lane = async () => {
    while (performance.now() < deadline && sent < maxRequests) {
      const code = await attack.send(sent++);
      statuses.set(code, (statuses.get(code) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: attack.concurrency }, lane));
  return statuses;
}

export async function hostileScenarios(options: { report: Report; workDir: string; seconds: number }): Promise<void> {
  const { report } = options;
  const dataDir = path.join(options.workDir, "hostile-data");
  mkdirSync(dataDir, { recursive: true });
  let server = await startHostileServer(dataDir, options.workDir);
  const honest = await CardtreeClient.signUp(server.url, "honest@bench.example");
  const treeId = await honest.treeWith("Honest", generateTree(1_000, 7));
  const [card] = await honest.json<{ _id: string }[]>("GET", `/api/trees/${treeId}/cards`);
  const attacks = await buildAttacks(server, report);

  const quietRss = sampleRss(server.process.pid!, 100);
  const quiet = honestWriter(honest, treeId, card._id);
  await new Promise((resolve) => setTimeout(resolve, options.seconds * 1000));
  const quietMs = (await quiet.stop()).map((s) => s.ms);
  report.add({ id: "hostile-quiet", scenario: "honest writer, no attack", p50Ms: percentile(quietMs, 50), p99Ms: percentile(quietMs, 99), rssMb: quietRss.stop() / 1e6 });

  let worstP99 = percentile(quietMs, 99);
  let peakRss = 0;
  let overBudgetAnswered = 0;
  const crashed: string[] = [];
  for (const attack of attacks) {
    const rss = sampleRss(server.process.pid!, 100);
    const writer = honestWriter(honest, treeId, card._id);
    const statuses = await runAttack(attack, options.seconds, 2_000);
    const samples = await writer.stop();
    const attackRss = rss.stop() / 1e6;
    const alive = await fetch(`${server.url}/healthz`).then((r) => r.ok, () => false);
    const ms = samples.map((s) => s.ms);
    const failures = samples.filter((s) => !s.ok).length;
    const p99 = percentile(ms, 99);
    worstP99 = Math.max(worstP99, p99);
    peakRss = Math.max(peakRss, attackRss);
    const answered = [...statuses]
      .sort(([a], [b]) => String(a).localeCompare(String(b)))
      .map(([code, count]) => `${count}×${code || "failed"}`)
      .join(" ");
    if (attack.id === "gql-over-budget-again") overBudgetAnswered = statuses.get("200 data") ?? 0;
    report.add({
      id: `hostile-${attack.id}`,
      scenario: `honest writer during: ${attack.name}`,
      p50Ms: percentile(ms, 50),
      p99Ms: p99,
      rssMb: attackRss,
      errors: failures,
      note: `attacker answered ${answered}; slowest honest: ${slowest(samples)}${alive ? "" : "; SERVER DOWN"}`,
    });
    if (!alive) {
      crashed.push(attack.id);
      // Later attacks need a server: start it again on the same data and port.
      await server.stop();
      server = await startHostileServer(dataDir, options.workDir, server.port);
    }
  }
  await server.stop();
  report.target({ name: "honest p99 under each attack (issue 12)", wanted: "≤ 250 ms", measured: `${worstP99.toFixed(0)} ms worst`, met: worstP99 <= 250 });
  report.target({ name: "no crash under attack (issue 12)", wanted: "none", measured: crashed.length === 0 ? "none" : crashed.join(", "), met: crashed.length === 0 });
  report.target({ name: "RSS under attack (issue 12)", wanted: "≤ 512 MB", measured: `${peakRss.toFixed(0)} MB peak`, met: peakRss <= 512 });
  report.target({ name: "over-budget query answered when sent again (issue 25)", wanted: "never", measured: `${overBudgetAnswered} times`, met: overBudgetAnswered === 0 });
}

function startHostileServer(dataDir: string, workDir: string, port?: number): Promise<Pinned> {
  return startPinned({
    port,
    command: () => [process.execPath, "dist/server.mjs"],
    env: { DATA_DIR: dataDir, TRUST_PROXY: "1", LOG: "off" },
    logFile: path.join(workDir, "hostile-server.log"),
    readyPath: "/healthz",
  });
}
