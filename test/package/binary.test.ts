/**
 * The single binary (`npm run package`, SPEC §12) as a self-hoster meets it: built once,
 * copied alone into an empty directory, run from there with a PATH that holds no node and
 * an environment holding nothing of ours. It serves the API, GraphQL, the exports and the
 * browser client from inside itself, runs exports and big imports on worker threads started
 * from its embedded worker script, stops cleanly on SIGTERM, and its CLI commands work on
 * the data directory the server left. docs/self-hosting.md is followed with the same binary.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import net from "node:net";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import JSZip from "jszip";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeInBrowser, sharedBrowser, watchErrors } from "../browser/harness.js";
import { Api, buildTree, buildUser } from "../helpers/api.js";
import { runSteps, shellCommands } from "../helpers/doc-commands.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const ADA = { email: "ada@example.com", password: "a long password" };

let dir: string;
let binary: string;
let env: Record<string, string>;
/** Servers a test started, stopped after all of them even when a test failed midway. */
const running = new Set<ChildProcess>();

/** Runs a command of the binary to its end. */
function run(args: string[], input = "", extraEnv: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(binary, args, { cwd: dir, env: { ...env, ...extraEnv } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

/** `cardtree serve`, resolved with its URL once it logs "listening". */
async function serve(extraEnv: Record<string, string> = {}) {
  const child = spawn(binary, ["serve"], { cwd: dir, env: { ...env, PORT: "0", HOST: "127.0.0.1", ...extraEnv } });
  const output: string[] = [];
  createInterface({ input: child.stderr! }).on("line", (line) => output.push(line));
  running.add(child);
  const closed = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  void closed.then(() => running.delete(child));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening" within 30 s:\n${output.join("\n")}`)), 30_000);
    child.once("exit", (code) => reject(new Error(`exited with ${code}:\n${output.join("\n")}`)));
    createInterface({ input: child.stdout! }).on("line", (line) => {
      output.push(line);
      if (line.includes('"message":"listening"')) {
        clearTimeout(timer);
        resolve(JSON.parse(line).url);
      }
    });
  });
  return { url, output, child: child as ChildProcess, closed };
}

beforeAll(async () => {
  const { packageBinary } = await import("../../scripts/package.mjs");
  const built = await packageBinary();
  dir = await mkdtemp(path.join(os.tmpdir(), "cardtree-binary-"));
  binary = path.join(dir, "cardtree");
  await copyFile(built.binary, binary);
  // An empty folder as the whole PATH: no node, no npm, nothing else to fall back on.
  const emptyBin = path.join(dir, "empty-bin");
  await mkdir(emptyBin);
  env = { PATH: emptyBin, HOME: dir, DATA_DIR: path.join(dir, "data"), LOG: "on" };
}, 300_000);

afterAll(async () => {
  await Promise.all(
    [...running].map((child) => {
      const exited = new Promise((resolve) => child.once("close", resolve));
      child.kill("SIGTERM");
      return exited;
    }),
  );
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("dist/cardtree, alone in an empty directory", { timeout: 120_000 }, () => {
  it("answers --version and --help, and refuses an unknown command", async () => {
    const { version } = JSON.parse(await readFile(path.join(ROOT, "package.json"), "utf8"));
    const shown = await run(["--version"]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toBe(`cardtree ${version} (Node ${process.version})\n`);
    const help = await run(["--help"]);
    expect(help.code).toBe(0);
    for (const command of ["serve", "user add EMAIL", "user passwd", "user limit", "user list", "import FILE", "export TREE", "backup DIR", "restore DIR"]) {
      expect(help.stdout).toContain(command);
    }
    const unknown = await run(["frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('Unknown command "frobnicate"');
    expect((await run(["serve", "--port", "1"])).code).toBe(2);
  });

  it("serves REST, GraphQL, docx and pptx exports and the browser client, then stops on SIGTERM; the CLI works on its data", async () => {
    const server = await serve();
    const { url } = server;
    const anonymous = new Api(url);
    const signup = await anonymous.post("/api/signup", ADA);
    expect(signup.status).toBe(201);
    const ada = new Api(url, ADA);

    const created = await ada.post("/api/trees", { name: "Novel", seed: "# Part one\n\nIt begins.\n\n## Chapter 1\n\nA scene." });
    expect(created.status).toBe(201);
    const treeId = created.body._id;
    const cards = await ada.get(`/api/trees/${treeId}/cards`);
    expect(cards.status).toBe(200);
    expect(cards.body.map((card: { content: string }) => card.content)).toEqual(["# Part one\n\nIt begins.", "## Chapter 1\n\nA scene."]);

    // GraphQL is loaded on its first request: it must be inside the binary.
    const graphql = await ada.post("/graphql", {
      query: "query ($id: ID!) { tree(id: $id) { name roots { content children { content depth } } } }",
      variables: { id: treeId },
    });
    expect(graphql.body).toEqual({
      data: { tree: { name: "Novel", roots: [{ content: "# Part one\n\nIt begins.", children: [{ content: "## Chapter 1\n\nA scene.", depth: 2 }] }] } },
    });

    // The exporters are loaded on first use too.
    const docx = await fetch(`${url}/api/export/${treeId}.docx`, { headers: { authorization: ada.authHeader! } });
    expect(docx.status).toBe(200);
    expect(docx.headers.get("content-type")).toContain("wordprocessingml");
    const word = await JSZip.loadAsync(await docx.arrayBuffer());
    expect(await word.file("word/document.xml")!.async("string")).toContain("A scene.");
    const pptx = await fetch(`${url}/api/export/${treeId}.impress`, { headers: { authorization: ada.authHeader! } });
    expect(pptx.status).toBe(200);
    expect(pptx.headers.get("content-type")).toContain("presentationml");
    const slides = await JSZip.loadAsync(await pptx.arrayBuffer());
    const slideTexts = await Promise.all(slides.file(/^ppt\/slides\/slide\d+\.xml$/).map((file) => file.async("string")));
    expect(slideTexts.filter((xml) => xml.includes("A scene."))).toHaveLength(1);

    // The browser client, from the binary's own assets: the page, then the script it names.
    const page = await anonymous.get("/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    const script = /src="(\/app-[A-Z0-9]+\.js)"/.exec(page.text)?.[1];
    expect(script).toBeDefined();
    const app = await anonymous.get(script!);
    expect(app.status).toBe(200);
    expect(app.headers.get("content-type")).toContain("javascript");
    expect(app.text).toBe(await readFile(path.join(ROOT, "dist", "package", "web", script!.slice(1)), "utf8"));
    // A card page is the same page with the Markdown renderer's chunks preloaded (and, for a
    // tree, the cards' worker prefetched): the built page names them in comments, and the
    // binary serves each of them too.
    const treePage = (await anonymous.get(`/trees/${treeId}`)).text;
    const renderer = /<!-- renderer: ([^>]*) -->/.exec(page.text)?.[1].trim().split(/\s+/) ?? [];
    expect(renderer.length).toBeGreaterThan(0);
    for (const name of renderer) {
      expect(treePage).toContain(`<link rel="modulepreload" href="${name}" />`);
      expect((await anonymous.get(name)).status).toBe(200);
    }
    const worker = /<!-- cards-worker: ([^ ]+) -->/.exec(page.text)?.[1];
    expect(worker).toBeDefined();
    expect(treePage).toContain(`<link rel="prefetch" href="${worker}" />`);
    expect((await anonymous.get(worker!)).status).toBe(200);
    const withoutPreloads = (html: string) =>
      html
        .replace(/\s*<!-- (renderer|cards-worker): [^>]* -->/g, "")
        .replace(/\s*<link rel="modulepreload" href="[^"]+" \/>/g, "")
        .replace(/\s*<link rel="prefetch" href="[^"]+" \/>/g, "");
    expect(withoutPreloads(treePage)).toBe(withoutPreloads(page.text));
    expect((await anonymous.get("/no-such-file.js")).status).toBe(404);
    // GraphiQL's page and its 9 MB script (another lazily loaded part).
    const graphiql = await anonymous.get("/graphql", { accept: "text/html" });
    expect(graphiql.status).toBe(200);
    const graphiqlScript = /src="([^"]*graphiql\.js)"/.exec(graphiql.text)?.[1];
    expect(graphiqlScript).toBeDefined();
    const graphiqlJs = await anonymous.get(new URL(graphiqlScript!, `${url}/graphql`).pathname);
    expect(graphiqlJs.status).toBe(200);
    expect(graphiqlJs.text.length).toBeGreaterThan(1_000_000);

    server.child.kill("SIGTERM");
    expect(await server.closed).toBe(0);
    const log = server.output.join("\n");
    expect(log).toContain('"message":"stopping"');
    expect(log).not.toMatch(/Warning|Error/);

    // The CLI, on the data directory the server left.
    const added = await run(["user", "add", "bob@example.com", "--limit", "50"], "bobs password\n");
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/Added bob@example\.com/);
    expect((await run(["user", "passwd", "ada@example.com"], "a new long password\n")).code).toBe(0);
    expect((await run(["user", "limit", "bob@example.com", "100"])).stdout).toContain("may now own 100 cards");
    const list = await run(["user", "list"]);
    expect(list.stdout).toMatch(/ada@example\.com +trees=1 cards=2 limit=-1/);
    expect(list.stdout).toMatch(/bob@example\.com +trees=0 cards=0 limit=100/);

    await writeFile(path.join(dir, "more.md"), "# Notes\n\nSome text");
    const imported = await run(["import", "more.md", "--tree", treeId]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout).toContain("Imported 1 cards");
    const exported = await run(["export", treeId, "--format", "md", "-o", "novel.md"]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(await readFile(path.join(dir, "novel.md"), "utf8")).toBe("# Part one\n\nIt begins.\n\n## Chapter 1\n\nA scene.\n\n# Notes\n\nSome text");
    const docxFile = await run(["export", treeId, "--format", "docx", "-o", "novel.docx"]);
    expect(docxFile.code, docxFile.stderr).toBe(0);
    expect((await readFile(path.join(dir, "novel.docx"))).subarray(0, 2).toString()).toBe("PK");

    const backup = await run(["backup", "backup-1"]);
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stdout).toContain("written to backup-1");
    expect((await run(["user", "add", "carol@example.com", "--password", "carols password"])).code).toBe(0);
    const restored = await run(["restore", "backup-1"]);
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stdout).toContain("(2 users)");
    expect((await run(["user", "list"])).stdout).not.toContain("carol@example.com");

    // Served again: the new password, the imported card, what the backup held.
    const again = await serve({ SIGNUP: "off" });
    try {
      expect((await new Api(again.url, ADA).get("/api/index")).status).toBe(401);
      const ada2 = new Api(again.url, { ...ADA, password: "a new long password" });
      const after = await ada2.get(`/api/trees/${treeId}/cards`);
      expect(after.body.map((card: { content: string }) => card.content)).toContain("# Notes\n\nSome text");
      expect((await new Api(again.url).post("/api/signup", { email: "dan@example.com", password: "dans password" })).status).toBe(403);
    } finally {
      again.child.kill("SIGTERM");
      expect(await again.closed).toBe(0);
    }
  });
});

describe("dist/cardtree's worker threads", { timeout: 180_000 }, () => {
  it("parses a big import and renders big html and docx exports on worker threads, as npm start does", async () => {
    // 2,000 cards, 230 KB of Markdown: over the 64 KiB a seed may have to be parsed in place.
    const seed = Array.from({ length: 2000 }, (_, i) => `# Card ${i}\n\n${"Words of the scene, one after another. ".repeat(3)}`).join("\n\n");
    const dataDir = path.join(dir, "worker-data");
    const server = await serve({ DATA_DIR: dataDir });
    let writer: Api & { user: any };
    let treeId: string;
    try {
      writer = await buildUser(server.url, "workers");
      const tree = await buildTree(writer, { name: "Big", seed });
      treeId = tree._id;
      expect((await writer.get(`/api/trees/${treeId}/cards`)).body).toHaveLength(2000);
      const html = await writer.get(`/api/export/${treeId}.html`);
      expect(html.status).toBe(200);
      expect(html.text).toContain("Card 1999");
      const docx = await fetch(`${server.url}/api/export/${treeId}.docx`, { headers: { authorization: writer.authHeader! } });
      expect(docx.status).toBe(200);
      const word = await JSZip.loadAsync(await docx.arrayBuffer());
      expect(await word.file("word/document.xml")!.async("string")).toContain("Card 1999");
    } finally {
      server.child.kill("SIGTERM");
      expect(await server.closed).toBe(0);
    }
    // Proof that they ran on workers: only a worker can be held to a deadline (the main thread
    // cannot be stopped), and no worker starts within 1 ms.
    const strict = await serve({ DATA_DIR: dataDir, EXPORT_TIMEOUT_MS: "1" });
    try {
      const api = new Api(strict.url, writer.credentials);
      const html = await api.get(`/api/export/${treeId}.html`);
      expect(html.status).toBe(422);
      expect(html.body.error).toBe("limit_reached");
      const imported = await api.post("/api/trees", { name: "Big again", seed });
      expect(imported.status).toBe(422);
      expect(imported.body.error).toBe("limit_reached");
      // A small seed is parsed in place, deadline or not.
      expect((await api.post("/api/trees", { name: "Small", seed: "# One" })).status).toBe(201);
    } finally {
      strict.child.kill("SIGTERM");
      expect(await strict.closed).toBe(0);
    }
    expect(strict.output.join("\n")).not.toMatch(/Warning|has no worker/);
  });
});

describeInBrowser("dist/cardtree's browser client, in Chromium", { timeout: 120_000 }, () => {
  it("logs in and draws a tree's columns from the binary's own assets, with no error", async () => {
    const server = await serve({ DATA_DIR: path.join(dir, "browser-data") });
    const browser = await sharedBrowser();
    try {
      const writer = await buildUser(server.url, "binary");
      const tree = await buildTree(writer, { name: "From the binary", seed: "# One\n\n## Two\n\n# Three" });
      const context = await browser.newContext({ baseURL: server.url });
      expect((await context.request.post("/api/login", { data: writer.credentials })).status()).toBe(200);
      const page = await context.newPage();
      const errors = watchErrors(page);
      await page.goto(`/trees/${tree._id}`);
      await page.locator(".columns .card").first().waitFor();
      await expect.poll(() => page.locator(".columns").innerText()).toMatch(/One[\s\S]*Three[\s\S]*Two|One[\s\S]*Two[\s\S]*Three/);
      expect(await page.locator(".tree-title").innerText()).toBe("From the binary");
      // The stylesheet came from the binary too: the columns are laid out side by side.
      expect(await page.locator(".columns").evaluate((el) => getComputedStyle(el).display)).toBe("flex");
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
      server.child.kill("SIGTERM");
      await server.closed;
    }
  });
});

async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** `Key=value` lines of the unit's [Service] section. */
function serviceSettings(unit: string): Map<string, string[]> {
  const section = /\[Service\]\n([\s\S]*?)(?:\n\[|$)/.exec(unit)?.[1] ?? "";
  const settings = new Map<string, string[]>();
  for (const line of section.split("\n")) {
    const match = /^(\w+)=(.*)$/.exec(line);
    if (match) settings.set(match[1], [...(settings.get(match[1]) ?? []), match[2]]);
  }
  return settings;
}

describe("docs/self-hosting.md, followed with the binary", { timeout: 180_000 }, () => {
  it("its unit file is one systemd accepts, with the settings the page promises", async () => {
    const doc = await readFile(path.join(ROOT, "docs", "self-hosting.md"), "utf8");
    const unit = /```ini\n([\s\S]*?)```/.exec(doc)![1];
    const settings = serviceSettings(unit);
    expect(settings.get("Restart")).toEqual(["on-failure"]);
    expect(settings.get("User")).toEqual(["cardtree"]);
    expect(settings.get("StateDirectory")).toEqual(["cardtree"]);
    expect(settings.get("ExecStart")).toEqual(["/usr/local/bin/cardtree serve"]);
    expect(settings.get("Environment")?.join(" ")).toContain("DATA_DIR=/var/lib/cardtree");
    // systemd's own check, where systemd's tools are installed (Debian's systemd package has them).
    const analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].find((file) => existsSync(file));
    if (!analyze) return;
    const unitDir = await mkdtemp(path.join(os.tmpdir(), "cardtree-unit-"));
    try {
      const file = path.join(unitDir, "cardtree.service");
      // Only the binary's place changes: verify checks that ExecStart names an executable.
      await writeFile(file, unit.replace("/usr/local/bin/cardtree", binary));
      const { stdout, stderr } = await promisify(execFile)(analyze, ["verify", file]);
      expect(stdout + stderr).toBe("");
    } finally {
      await rm(unitDir, { recursive: true, force: true });
    }
  });

  it("every command on the page runs as written, the unit's ExecStart and Environment standing in for systemd", async () => {
    const doc = await readFile(path.join(ROOT, "docs", "self-hosting.md"), "utf8");
    const settings = serviceSettings(/```ini\n([\s\S]*?)```/.exec(doc)![1]);
    const port = String(await freePort());
    const root = await mkdtemp(path.join(os.tmpdir(), "cardtree-host-"));
    // The machine's directories, under a scratch root; the release file sits in the working directory.
    const place = (text: string) =>
      text.replaceAll("/usr/local/bin", `${root}/usr/local/bin`).replaceAll("/var/lib", `${root}/var/lib`).replaceAll("/var/backups", `${root}/var/backups`).replaceAll("3000", port);
    const work = path.join(root, "release");
    await mkdir(work, { recursive: true });
    await mkdir(path.join(root, "usr/local/bin"), { recursive: true });
    await copyFile(binary, path.join(work, "cardtree"));
    const commands = shellCommands(doc).map(place);
    // sudo: the test is root already (or the files' owner); no system user or systemd in a
    // container, so useradd and chown do nothing and systemctl runs the unit's command.
    const prelude = `
sudo() { if [ "$1" = "-u" ]; then shift 2; fi; "$@"; }
useradd() { :; }
chown() { :; }
unit_start() {
  mkdir -p -m ${settings.get("StateDirectoryMode")?.[0] ?? "0755"} "${root}/var/lib/${settings.get("StateDirectory")![0]}"
  ( env ${place(settings.get("Environment")!.join(" "))} ${place(settings.get("ExecStart")![0])} >>"${root}/service.log" 2>&1 & echo $! >"${root}/service.pid" )
  for i in $(seq 300); do curl -s -o /dev/null "127.0.0.1:${port}/healthz" && return 0; sleep 0.1; done
  echo "the service did not start" >&2; cat "${root}/service.log" >&2; return 1
}
unit_stop() {
  local pid; pid=$(cat "${root}/service.pid")
  kill -TERM "$pid"; while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}
systemctl() {
  case "$1" in
    daemon-reload) ;;
    enable) [ "$2" = "--now" ] && unit_start ;;
    start) unit_start ;;
    stop) unit_stop ;;
    *) echo "systemctl $1 is not stood in for" >&2; return 1 ;;
  esac
}`;
    try {
      const outputs = await runSteps(commands, {
        cwd: work,
        env: { PATH: `${root}/usr/local/bin:/usr/bin:/bin`, HOME: root },
        prelude,
      });
      const { version } = JSON.parse(await readFile(path.join(ROOT, "package.json"), "utf8"));
      const printed = (pattern: RegExp) => outputs.filter((_, i) => pattern.test(commands[i])).map((out) => out.trim());
      expect(printed(/--version/)).toEqual([`cardtree ${version} (Node ${process.version})`, `cardtree ${version} (Node ${process.version})`]);
      expect(JSON.parse(printed(/healthz/)[0])).toMatchObject({ status: "ok" });
      expect(printed(/user add/)[0]).toMatch(/^Added ada@example\.com/);
      expect(printed(/user list/)[0]).toMatch(/ada@example\.com +trees=0/);
      expect(printed(/ backup /)[0]).toMatch(/written to .*var\/backups\/cardtree\/\d{4}-\d\d-\d\d/);
      expect(printed(/ restore /)[0]).toMatch(/^Restored .*\(1 users\)/);
      for (const [i, command] of commands.entries()) {
        if (/systemctl|install|useradd|chown/.test(command)) expect(outputs[i].trim(), command).toBe("");
      }
      // Left running by the last step, as the upgraded service: the account works; sign-up is off.
      const url = `http://127.0.0.1:${port}`;
      expect((await new Api(url, { email: "ada@example.com", password: "a long password" }).get("/api/index")).status).toBe(200);
      expect((await new Api(url).post("/api/signup", { email: "eve@example.com", password: "eves password" })).status).toBe(403);
    } finally {
      const pid = Number(await readFile(path.join(root, "service.pid"), "utf8").catch(() => "0"));
      if (pid > 0) {
        try {
          process.kill(pid, "SIGTERM");
          // Gone before its directory is removed (at most ten seconds).
          for (let i = 0; i < 100; i++) {
            process.kill(pid, 0);
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        } catch {
          // Stopped.
        }
      }
      await rm(root, { recursive: true, force: true });
    }
  });
});
