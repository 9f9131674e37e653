import { describe, expect, it } from "vitest";
import { htmlExporter } from "./html.js";
import type { ExportOptions } from "../../shared/export-options.js";
import { selectCards } from "./select.js";
import { buildTree, CardBuilder } from "./test-factory.js";

function page(builder: CardBuilder, options: ExportOptions = {}) {
  return htmlExporter({ tree: builder.tree, selected: selectCards(builder.cards, options), options });
}

function pageOf(...contents: string[]) {
  const b = new CardBuilder();
  for (const content of contents) b.card(content);
  return page(b);
}

/** The rendered cards, without the page's own head. */
function mainOf(html: string) {
  return html.slice(html.indexOf("<main>"), html.indexOf("</main>"));
}

/** Every tag in the markup, attributes included. */
function tagsOf(html: string) {
  return html.match(/<[^>]*>/g) ?? [];
}

describe("html export", () => {
  it("is a standalone UTF-8 HTML5 page titled with the escaped tree name", () => {
    const b = new CardBuilder(buildTree({ name: 'Notes <b>&</b> "plans"' }));
    b.card("x");
    const html = page(b);
    expect(html.startsWith("<!DOCTYPE html>\n<html>")).toBe(true);
    expect(html).toContain('<meta charset="utf-8">');
    expect(html).toContain("<title>Notes &#60;b&#62;&#38;&#60;/b&#62; &#34;plans&#34;</title>");
    expect(html).toMatch(/<style>[^<]*@media print[^<]*<\/style>/);
    expect(html.trimEnd().endsWith("</html>")).toBe(true);
  });

  it("renders each card's Markdown in tree order, one section per card", () => {
    const b = new CardBuilder();
    const a = b.card("# Alpha\n\n**bold** _it_ ~~gone~~ `code`");
    b.card("Child", a);
    b.card("Beta");
    const main = mainOf(page(b));
    expect(main.match(/<section class="card"/g)).toHaveLength(3);
    expect(main.indexOf("Alpha")).toBeLessThan(main.indexOf("Child"));
    expect(main.indexOf("Child")).toBeLessThan(main.indexOf("Beta"));
    expect(main).toContain('data-depth="2"');
    expect(main).toContain("<strong>bold</strong> <em>it</em> <del>gone</del> <code>code</code>");
  });

  it("gives headings ids that are unique across the page", () => {
    const main = mainOf(pageOf("# Intro *here*\n\n## Intro here", "# Intro here", "# ¿Qué tal?"));
    expect(main).toContain('<h1 id="intro-here">');
    expect(main).toContain('<h2 id="intro-here-2">');
    expect(main).toContain('<h1 id="intro-here-3">');
    expect(main).toContain('<h1 id="qué-tal">');
  });

  it("keeps tables, lists, task lists, code blocks and http images", () => {
    const main = mainOf(
      pageOf("| a | b |\n|:-|-:|\n| 1 | 2 |", "- [x] done\n- [ ] todo\n\n1. one", "```js\nlet a = 1 < 2;\n```", "![cat](https://example.com/cat.png)"),
    );
    expect(main).toContain('<th align="left">a</th>');
    expect(main).toContain("\u2611 done");
    expect(main).toContain("<ol>");
    expect(main).toContain('<code class="language-js">let a = 1 &lt; 2;');
    expect(main).toContain('<img src="https://example.com/cat.png" alt="cat"');
    expect(main).not.toContain("<input");
  });

  it("typesets math in latex trees as MathML, untouched by Markdown (issue 18)", () => {
    const b = new CardBuilder(buildTree({ latex: true }));
    b.card("Energy $a_1*b_2*c$ and $x<y$\n\n$$\\sum_{i=1}^n i_k * j_k$$\n\n`$not_math$` `$$x$$` [link](https://x.example/$a_b$)");
    const main = mainOf(page(b));
    expect(main).toContain("<math><mrow><msub><mi>a</mi><mn>1</mn></msub>");
    expect(main).toContain("<mo>&lt;</mo>");
    expect(main).toMatch(/<math display="block"[^>]*><mrow><mrow><munderover><mo movablelimits="false">∑<\/mo>/);
    // Code spans are never math; nor is math inside a URL.
    expect(main).toContain("<code>$not_math$</code> <code>$$x$$</code>");
    expect(main).toContain('<a href="https://x.example/$a_b$">link</a>');
    expect(main).not.toContain("<em>");
    expect(main).not.toContain("$a_1");
  });

  it("keeps math Temml cannot read as its source, in code", () => {
    const b = new CardBuilder(buildTree({ latex: true }));
    b.card("Broken $\\frac{a$ here.");
    expect(mainOf(page(b))).toContain('<code class="math-error">$\\frac{a$</code>');
  });

  it("keeps math in an attribute as escaped source, never markup", () => {
    const b = new CardBuilder(buildTree({ latex: true }));
    b.card('![$x<y$](https://x.example/i.png "$a$")');
    const main = mainOf(page(b));
    expect(main).toContain('alt="$x&#60;y$"');
    expect(main).not.toMatch(/alt="[^"]*<math/);
  });

  it("resolves a reference link defined in another card (issue 18)", () => {
    const main = mainOf(pageOf("See [the guide][guide].", "[guide]: https://guide.example/docs"));
    expect(main).toContain('See <a href="https://guide.example/docs">the guide</a>.');
  });

  it("keeps YAML front matter as the page's title and meta tags, not as a heading (issue 18)", () => {
    const html = pageOf("---\ntitle: Field <notes>\nauthor: Ada\ndescription: What we saw\n---\n# First", "Second");
    expect(html).toContain("<title>Field &#60;notes&#62;</title>");
    expect(html).toContain('<meta name="author" content="Ada">');
    expect(html).toContain('<meta name="description" content="What we saw">');
    expect(mainOf(html)).not.toMatch(/title:|<hr|<h2/);
  });

  it("reads dollars as Markdown in trees without latex", () => {
    expect(mainOf(pageOf("$a_1*b*c$"))).toContain("<em>b</em>");
  });

  it("renders an empty page for an empty selection", () => {
    const b = new CardBuilder();
    b.card("only");
    const html = page(b, { column: 5 });
    expect(html).toContain("<main>\n</main>");
  });
});

const XSS = [
  "<script>alert(1)</script>",
  "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
  "<ScRiPt>alert(1)</sCrIpT>",
  "<img src=x onerror=alert(1)>",
  '<img src="x" ONERROR="alert(1)"',
  "<body onload=alert(1)>",
  "<div onmouseover='alert(1)'>hover</div>",
  '<details open ontoggle="alert(1)">x</details>',
  "<input autofocus onfocus=alert(1)>",
  '<a href="javascript:alert(1)">plain</a>',
  '<a href="JaVaScRiPt:alert(1)">mixed case</a>',
  '<a href="&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert(1)">decimal entities</a>',
  '<a href="&#x6A;&#x61;&#x76;&#x61;&#x73;&#x63;&#x72;&#x69;&#x70;&#x74;&#x3A;alert(1)">hex entities</a>',
  '<a href="&#x6A;avascript&colon;alert(1)">named colon</a>',
  '<a href="java&#x09;script:alert(1)">tab inside</a>',
  '<a href=" \x01javascript:alert(1)">leading junk</a>',
  '<a href="vbscript:msgbox(1)">vb</a>',
  "[markdown link](javascript:alert(1))",
  "[mixed](JaVaScRiPt:alert(1))",
  "[encoded](&#106;avascript:alert(1))",
  "![image](javascript:alert(1))",
  "<javascript:alert(1)>",
  '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">data link</a>',
  '<a href="DATA:text/html,<script>alert(1)</script>">upper data</a>',
  '<img src="data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+">',
  "[md data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
  "![md data image](data:image/png;base64,iVBORw0KGgo=)",
  "<svg><script>alert(1)</script></svg>",
  "<svg onload=alert(1)><circle r=5 /></svg>",
  '<svg><a xlink:href="javascript:alert(1)"><text>x</text></a></svg>',
  "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
  "<<script>script>alert(1)<</script>/script>",
  "<scr<script>ipt>alert(1)</scr</script>ipt>",
  '<img """><script>alert(1)</script>">',
  "<iframe src=\"javascript:alert(1)\"></iframe>",
  '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
  '<object data="javascript:alert(1)"></object><embed src="javascript:alert(1)">',
  '<div style="width: expression(alert(1))">expr</div>',
  "<style>body { background: url(javascript:alert(1)) }</style>",
  '<p style="background:url(&#106;avascript:alert(1))">styled</p>',
  '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
  '<base href="javascript:alert(1)//">',
  '<form action="javascript:alert(1)"><button>go</button></form>',
  '<link rel="stylesheet" href="https://evil.example/x.css">',
  "<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\"></noscript>",
];

describe("html export sanitizing", () => {
  const b = new CardBuilder();
  for (const attack of XSS) b.card(`Before ${attack} after`);
  const main = mainOf(page(b));
  const tags = tagsOf(main);

  it("leaves no script element", () => {
    expect(main.toLowerCase()).not.toContain("<script");
  });

  it("leaves no event-handler attribute", () => {
    expect(tags.filter((tag) => /\son\w+\s*=/i.test(tag))).toEqual([]);
  });

  it("leaves no javascript:, vbscript: or data: URL in any tag", () => {
    expect(tags.filter((tag) => /javascript:|vbscript:|data:/i.test(tag))).toEqual([]);
  });

  it("leaves no frame, object, SVG, style, form, meta, base or link element, and no style attribute", () => {
    expect(tags.filter((tag) => /^<\/?(iframe|object|embed|svg|math|style|form|meta|base|link|input|button)\b/i.test(tag))).toEqual([]);
    expect(tags.filter((tag) => /\sstyle\s*=/i.test(tag))).toEqual([]);
    expect(main).not.toContain("expression(");
  });

  it("keeps the text around each attack", () => {
    expect(main.match(/Before/g)).toHaveLength(XSS.length);
  });

  it("keeps the links it refuses as text", () => {
    expect(main).toContain("<a>markdown link</a>");
  });

  it("keeps every card inside its own section", () => {
    expect(main.match(/<section class="card"/g)).toHaveLength(XSS.length);
    expect(main.match(/<\/section>/g)).toHaveLength(XSS.length);
  });

  it("escapes math in latex trees instead of letting it become markup", () => {
    const latex = new CardBuilder(buildTree({ latex: true }));
    latex.card('$<script>alert(1)</script>$ and $<img src=x onerror="alert(1)">$');
    const out = mainOf(page(latex));
    expect(out.toLowerCase()).not.toContain("<script");
    expect(tagsOf(out).filter((tag) => /\son\w+\s*=/i.test(tag))).toEqual([]);
    // Temml reads the tags as TeX text: characters, never elements.
    expect(out).toContain("<mo>&lt;</mo><mi>s</mi><mi>c</mi><mi>r</mi>");
  });
});
