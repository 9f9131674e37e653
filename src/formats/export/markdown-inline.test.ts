import { describe, expect, it } from "vitest";
import { decodeEntities, documentProperties, frontMatter, htmlBlockText, inlineRuns, inlineText, lexCard, lexCards, listItems, safeLinkTarget, xmlSafe } from "./markdown-inline.js";
import type { Tokens } from "marked";

function runsOf(markdown: string, latex = false) {
  const { tokens, restore } = lexCard(markdown, latex);
  return inlineRuns((tokens[0] as Tokens.Paragraph).tokens, restore);
}

describe("inlineRuns", () => {
  it("flattens nested emphasis into styled runs", () => {
    expect(runsOf("a **b _c_** ~~d~~ `e`")).toEqual([
      { text: "a " },
      { text: "b ", bold: true },
      { text: "c", bold: true, italic: true },
      { text: " " },
      { text: "d", strike: true },
      { text: " " },
      { text: "e", code: true },
    ]);
  });

  it("links absolute http, https and mailto targets, relative ones and in-page ones; nothing else", () => {
    expect(runsOf("[x](https://a.example/p?q=1&amp;r=2)")).toEqual([{ text: "x", link: "https://a.example/p?q=1&r=2" }]);
    expect(runsOf("[m](mailto:me@example.com)")[0].link).toBe("mailto:me@example.com");
    expect(runsOf("[j](javascript:alert(1))")).toEqual([{ text: "j" }]);
    expect(runsOf("[d](data:text/html,x)")).toEqual([{ text: "d" }]);
    expect(runsOf("[h](//host.example/x)")).toEqual([{ text: "h" }]);
    expect(runsOf("[r](/relative)")).toEqual([{ text: "r", link: "/relative" }]);
    expect(runsOf("[r](notes%20two.md)")).toEqual([{ text: "r", link: "notes%20two.md" }]);
    expect(runsOf("[s](#installing-it)")).toEqual([{ text: "s", anchor: "installing-it" }]);
  });

  it("resolves reference links whose definition sits in another card of the export (issue 18)", () => {
    const [first, second] = lexCards(["See [the guide][guide] and [own][o].\n\n[o]: https://own.example", "[guide]: https://guide.example\n[o]: https://other.example"], false);
    const runs = inlineRuns((first.tokens[0] as Tokens.Paragraph).tokens);
    expect(runs.filter((run) => run.link)).toEqual([
      { text: "the guide", link: "https://guide.example/" },
      { text: "own", link: "https://own.example/" },
    ]);
    expect(second.tokens.filter((token) => token.type !== "space" && token.type !== "def")).toEqual([]);
  });

  it("turns soft breaks into spaces and hard breaks into breaks", () => {
    expect(runsOf("a\nb  \nc")).toEqual([{ text: "a b" }, { text: "", break: true }, { text: "c" }]);
  });

  it("keeps math as written in latex trees", () => {
    expect(runsOf("x $a_1*b*$ y", true)).toEqual([{ text: "x $a_1*b*$ y" }]);
  });
});

describe("inlineText", () => {
  it("joins runs into one string, hard breaks as newlines", () => {
    const tokens = (lexCard("**a** [b](https://x.example)  \nc", false).tokens[0] as Tokens.Paragraph).tokens;
    expect(inlineText(tokens)).toBe("a b\nc");
  });
});

describe("decodeEntities", () => {
  it("resolves named, decimal and hex references and leaves unknown ones", () => {
    expect(decodeEntities("&amp; &lt;&gt; &copy; &#233; &#xE9; &bogus; &#0; &#xD800;")).toBe("& <> \u00a9 \u00e9 \u00e9 &bogus; \uFFFD \uFFFD");
  });
});

describe("safeLinkTarget", () => {
  it.each(["javascript:alert(1)", "JaVaScRiPt:alert(1)", "java\tscript:alert(1)", " javascript:x", "data:text/html,x", "vbscript:x", "/relative", "#frag"])(
    "refuses %j",
    (href) => {
      expect(safeLinkTarget(href)).toBeUndefined();
    },
  );
});

describe("xmlSafe", () => {
  it("drops control characters, lone surrogates and U+FFFE but keeps tabs, newlines and astral characters", () => {
    expect(xmlSafe("a\u0000b\u0008c\td\ne\ud800f\udc00g\uFFFEh\u{1F600}")).toBe("abc\td\nefgh\u{1F600}");
  });
});

describe("listItems", () => {
  function itemsOf(markdown: string) {
    const list = lexCard(markdown, false).tokens.find((token) => token.type === "list") as Tokens.List;
    return listItems(list).map(({ number, marker, head, rest }) => ({
      number,
      marker,
      head: head && inlineText(head),
      rest: rest.map((token) => token.type),
    }));
  }

  it("numbers an ordered list from its start", () => {
    expect(itemsOf("3. three\n4. four").map((item) => [item.number, item.head])).toEqual([
      [3, "three"],
      [4, "four"],
    ]);
    expect(itemsOf("- a\n- b").map((item) => item.number)).toEqual([1, 2]);
  });

  it("puts the first text on the bullet line and the rest one level deeper, nested lists included", () => {
    const [first, second] = itemsOf("1. a\n\n   more\n\n   - nested\n2. b");
    expect(first).toMatchObject({ head: "a", rest: ["space", "paragraph", "space", "list"] });
    expect(second).toMatchObject({ head: "b", rest: [] });
    const nested = listItems(lexCard("- a\n  - b\n  - c", false).tokens[0] as Tokens.List)[0].rest[0] as Tokens.List;
    expect(listItems(nested).map((item) => inlineText(item.head!))).toEqual(["b", "c"]);
  });

  it("gives task items their box as a marker", () => {
    expect(itemsOf("- [ ] open\n- [x] done\n- plain").map(({ marker, head }) => [marker, head])).toEqual([
      [[{ text: "\u2610 " }], "open"],
      [[{ text: "\u2611 " }], "done"],
      [[], "plain"],
    ]);
  });

  it("leaves the head empty when an item opens with something other than text", () => {
    const [code, empty] = itemsOf("- ```\n  x\n  ```\n  after\n-");
    expect(code).toEqual({ number: 1, marker: [], head: undefined, rest: ["code", "text"] });
    expect(empty).toEqual({ number: 2, marker: [], head: undefined, rest: [] });
  });
});

describe("htmlBlockText", () => {
  it("keeps a raw HTML block's text: tags and comments dropped, entities resolved, lines joined", () => {
    expect(htmlBlockText("<div>raw <b>html</b> &amp; more<!-- note -->\n  <p>next</p></div>", (t) => t)).toBe("raw html & more next");
  });

  it("is empty when only tags and comments are there", () => {
    expect(htmlBlockText("<br/><!-- x -->", (t) => t)).toBe("");
  });

  it("puts protected math back and keeps the result XML-safe", () => {
    expect(htmlBlockText("<span>MATH0 \u0001</span>", (t) => t.replace("MATH0", "x<y"))).toBe(xmlSafe("x<y \u0001"));
  });
});

describe("frontMatter", () => {
  it("reads a card's YAML front matter as properties and leaves the rest", () => {
    const card = "---\ntitle: \"A: title\"\nauthor: Ada\ntags:\n  - one\n  - two\nkeywords: [x, 'y']\n---\n# Heading\n\nText";
    expect(frontMatter(card)).toEqual({
      body: "# Heading\n\nText",
      properties: { title: "A: title", author: "Ada", tags: "one, two", keywords: "x, y" },
    });
  });

  it("does not take a rule, a line of text and a setext underline for front matter", () => {
    expect(frontMatter("---\nJust text\n---\n")).toEqual({ body: "---\nJust text\n---\n" });
    expect(frontMatter("Text\n---\ntitle: x\n---")).toEqual({ body: "Text\n---\ntitle: x\n---" });
  });

  it("is never lexed as a heading or a rule", () => {
    const [card] = lexCards(["---\ntitle: T\n---\nBody"], false);
    expect(card.tokens.map((token) => token.type)).toEqual(["paragraph"]);
    expect(documentProperties([card]).title).toBe("T");
  });
});
