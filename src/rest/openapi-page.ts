/**
 * `GET /api/docs`: the OpenAPI document (openapi.ts) as a page a person reads: each
 * operation with its parameters, body and answers, then the schemas. Written on the server
 * from the same document, with nothing loaded from elsewhere (no script at all).
 */
import { openApiDocument } from "./openapi.js";

type Json = Record<string, unknown>;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A schema in a word or two: a component's name, a type, an enum. */
function schemaSummary(schema: Json | undefined): string {
  if (!schema) return "";
  if (typeof schema.$ref === "string") {
    const name = schema.$ref.split("/").pop()!;
    return `<a href="#schema-${escapeHtml(name)}">${escapeHtml(name)}</a>`;
  }
  if (Array.isArray(schema.allOf)) return schemaSummary(schema.allOf[0] as Json);
  if (schema.type === "array") return `array of ${schemaSummary(schema.items as Json)}`;
  if (Array.isArray(schema.enum)) return schema.enum.map((value) => `<code>${escapeHtml(String(value))}</code>`).join(" | ");
  return escapeHtml([schema.type ?? "any"].flat().join(" or "));
}

function operationHtml(method: string, path: string, op: Json, responses: Record<string, Json>): string {
  const parameters = ((op.parameters ?? []) as Json[])
    .map((p) => `<tr><td><code>${escapeHtml(String(p.name))}</code></td><td>${escapeHtml(String(p.in))}${p.required ? ", required" : ""}</td><td>${schemaSummary(p.schema as Json)}</td><td>${escapeHtml(String(p.description ?? ""))}</td></tr>`)
    .join("");
  const body = (op.requestBody as Json | undefined)?.content as Record<string, Json> | undefined;
  const answers = Object.entries(op.responses as Record<string, Json>)
    .map(([status, answer]) => {
      const resolved = typeof answer.$ref === "string" ? responses[answer.$ref.split("/").pop()!] : answer;
      const content = Object.entries((resolved.content ?? {}) as Record<string, Json>)
        .map(([type, media]) => `${escapeHtml(type)} ${schemaSummary(media.schema as Json)}`)
        .join("; ");
      return `<li><b>${status}</b> ${escapeHtml(String(resolved.description))}${content ? ` <small>(${content})</small>` : ""}</li>`;
    })
    .join("");
  return `<section id="${escapeHtml(String(op.operationId))}">
<h3><code>${method.toUpperCase()} /api${escapeHtml(path)}</code></h3>
<p>${escapeHtml(String(op.summary))}</p>
${parameters ? `<table><tr><th>parameter</th><th>in</th><th>type</th><th></th></tr>${parameters}</table>` : ""}
${body ? `<p>Body: ${Object.entries(body).map(([type, media]) => `${escapeHtml(type)} ${schemaSummary(media.schema as Json)}`).join("; ")}</p>` : ""}
<ul>${answers}</ul>
</section>`;
}

let page: string | undefined;

/** The page, written on first use and kept. */
export function openApiPage(): string {
  if (page) return page;
  const doc = openApiDocument() as unknown as { info: Json; paths: Record<string, Record<string, Json>>; components: { schemas: Record<string, Json>; responses: Record<string, Json> } };
  const operations = Object.entries(doc.paths)
    .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => operationHtml(method, path, op, doc.components.responses)))
    .join("\n");
  const schemas = Object.entries(doc.components.schemas)
    .map(([name, schema]) => `<details id="schema-${escapeHtml(name)}"><summary><code>${escapeHtml(name)}</code></summary><pre>${escapeHtml(JSON.stringify(schema, null, 2))}</pre></details>`)
    .join("\n");
  page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(String(doc.info.title))}</title>
<style>body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}section{border-top:1px solid #ddd;padding:.5rem 0}table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left;vertical-align:top}pre{background:#f6f6f6;padding:.5rem;overflow:auto}</style>
</head><body>
<h1>${escapeHtml(String(doc.info.title))} ${escapeHtml(String(doc.info.version))}</h1>
<p>${escapeHtml(String(doc.info.description))} The same as a document for tools: <a href="/api/openapi.json">/api/openapi.json</a> (OpenAPI 3.1).</p>
<h2>Operations</h2>
${operations}
<h2>Schemas</h2>
${schemas}
</body></html>`;
  return page;
}
