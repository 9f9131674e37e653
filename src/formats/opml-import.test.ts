import { describe, expect, it } from "vitest";
import { ValidationError } from "../shared/errors.js";
import { looksLikeOpml } from "../shared/seed-kind.js";
import { keepAttributeBreaks, opmlToCards } from "./opml-import.js";
import { parseSeed } from "./seed.js";

const opml = (body: string, head = "<head><title>T</title></head>") => `<?xml version="1.0" encoding="UTF-8"?>\n<opml version="2.0">${head}<body>${body}</body></opml>`;

function refusal(text: string): ValidationError {
  try {
    opmlToCards(text);
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error("expected a ValidationError");
}

describe("opml import", () => {
  it("makes a card of each outline, nested outlines its children, text and _note joined by a newline", () => {
    const cards = opmlToCards(opml('<outline text="Part one" _note="Some words&#10;more"><outline text="Scene"/></outline><outline text="Part two"/>'));
    expect(cards).toEqual([{ content: "Part one\nSome words\nmore", children: [{ content: "Scene" }] }, { content: "Part two" }]);
  });

  it("keeps an empty _note as a trailing newline, and an outline without text as an empty card", () => {
    expect(opmlToCards(opml('<outline text="a" _note=""/><outline/>'))).toEqual([{ content: "a\n" }, { content: "" }]);
  });

  it("reads Workflowy's shape: HTML-escaped text, notes, completed flags ignored", () => {
    const cards = opmlToCards(
      opml('<outline text="Buy &lt;b&gt;milk&lt;/b&gt; &amp;amp; bread" _complete="true" _note="from the &quot;corner&quot; shop"><outline text="Later"/></outline>', "<head><ownerEmail>a@b.c</ownerEmail></head>"),
    );
    expect(cards).toEqual([{ content: 'Buy <b>milk</b> &amp; bread\nfrom the "corner" shop', children: [{ content: "Later" }] }]);
  });

  it("reads Dynalist's and OmniOutliner's shapes: extra attributes and head fields ignored", () => {
    const head = "<head><title>Plan</title><dateCreated>Mon, 01 Jan 2024 00:00:00 GMT</dateCreated><expansionState>0,1</expansionState><ownerName>Ada</ownerName></head>";
    const body = '<outline text="Goals" colorLabel="2" checked="false" priority="1"><outline text="Ship" _status="checked"/></outline>';
    expect(opmlToCards(opml(body, head))).toEqual([{ content: "Goals", children: [{ content: "Ship" }] }]);
  });

  it("reads <br> (escaped or raw) and &#10; as line breaks, and keeps Gingko Writer's raw line breaks", () => {
    const body = '<outline text="one&lt;br&gt;two&lt;BR/&gt;three<br />four&#10;five"/><outline text="# Title\n\nA paragraph\twith a tab"/>';
    expect(opmlToCards(opml(body))).toEqual([{ content: "one\ntwo\nthree\nfour\nfive" }, { content: "# Title\n\nA paragraph\twith a tab" }]);
  });

  it("keeps HTML entities XML does not define as written: Markdown shows them the same", () => {
    expect(opmlToCards(opml('<outline text="caf&eacute;&nbsp;au lait"/>'))).toEqual([{ content: "caf&eacute;&nbsp;au lait" }]);
  });

  it("takes our own files' text as written: a <br> there is Markdown", () => {
    const ours = '<?xml version="1.0"?><opml version="2.0" xmlns:cardtree="urn:cardtree:opml"><head/><body><outline text="a&lt;br&gt;b"/></body></opml>';
    expect(opmlToCards(ours)).toEqual([{ content: "a<br>b" }]);
  });

  it("ignores elements other than outline, with what is inside them, and text between outlines", () => {
    const body = '\n  <outline text="a">x<note>n</note><ext:thing xmlns:ext="urn:x"><outline text="hidden"/></ext:thing></outline>';
    expect(opmlToCards(opml(body))).toEqual([{ content: "a" }]);
  });

  it("is an empty seed for an empty body", () => {
    expect(opmlToCards(opml(""))).toEqual([]);
  });

  it("refuses a DOCTYPE: external entities (XXE) and entity bombs never reach the parser's expansion", () => {
    const xxe = '<?xml version="1.0"?><!DOCTYPE opml [<!ENTITY x SYSTEM "file:///etc/passwd">]><opml version="2.0"><body><outline text="&x;"/></body></opml>';
    expect(refusal(xxe).message).toMatch(/DOCTYPE/);
    const lol = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">${Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i || ""};`.repeat(10)}">`).join("")}]><opml><body><outline text="&lol9;"/></body></opml>`;
    expect(refusal(lol).message).toMatch(/DOCTYPE/);
  });

  it("refuses malformed XML with the line and column", () => {
    const error = refusal(opml('<outline text="a">\n<outline text="b"></body></opml>'));
    expect(error.details?.[0].message).toMatch(/^line \d+, column \d+: /);
    expect(refusal(opml('<outline text="a" text="b"/>')).message).toMatch(/cannot be imported/);
    expect(refusal('<?xml version="1.0"?>').message).toMatch(/cannot be imported/);
  });

  it("refuses XML that is not OPML, and OPML without a body", () => {
    expect(refusal('<?xml version="1.0"?><svg/>').message).toMatch(/root element is <svg>/);
    expect(refusal('<opml version="2.0"><head/></opml>').message).toMatch(/no <body>/);
  });

  it("reads a 20,000-level outline without recursion", () => {
    const depth = 20_000;
    let node = opmlToCards(opml('<outline text="x">'.repeat(depth) + "</outline>".repeat(depth)))[0];
    let levels = 1;
    while (node.children) {
      node = node.children[0];
      levels++;
    }
    expect(levels).toBe(depth);
  });
});

describe("keepAttributeBreaks", () => {
  it("escapes breaks, tabs and < only inside attribute values, not in comments, CDATA or text", () => {
    const text = '<a x="1\n2" y=\'<\t\'>\ntext\n<!-- "\n" --><![CDATA[ "\n" ]]><?pi "\n"?></a>';
    expect(keepAttributeBreaks(text)).toBe('<a x="1&#10;2" y=\'&lt;&#9;\'>\ntext\n<!-- "\n" --><![CDATA[ "\n" ]]><?pi "\n"?></a>');
  });

  it("returns the very string when there is nothing to escape", () => {
    const text = '<a x="1"/>\n';
    expect(keepAttributeBreaks(text)).toBe(text);
  });
});

describe("seed format detection", () => {
  it("reads XML documents as OPML, whatever else they hold", () => {
    expect(looksLikeOpml('\uFEFF  <?xml version="1.0"?><opml/>')).toBe(true);
    expect(looksLikeOpml('<opml version="2.0">')).toBe(true);
    expect(looksLikeOpml("<!DOCTYPE opml>")).toBe(true);
    expect(looksLikeOpml("# <opml>")).toBe(false);
    expect(looksLikeOpml("<opmlish>")).toBe(false);
  });

  it("sends OPML, Gingko Writer files, JSON and Markdown each to its reader", () => {
    expect(parseSeed(opml('<outline text="o"/>'))).toEqual([{ content: "o" }]);
    expect(parseSeed('<gingko-card id="1">\n\ng\n\n</gingko-card>')).toEqual([{ content: "g", id: "1" }]);
    expect(parseSeed('[{"content":"j"}]')).toEqual([{ content: "j" }]);
    expect(parseSeed("# m")).toEqual([{ content: "# m" }]);
  });
});
