// Reads diagrams and Markdown as the renderers of GitHub and GitLab do, to prove that what
// flink-sql-runner prints renders: Mermaid's own parser (mermaid 11; its sanitiser needs a DOM,
// so it runs in a jsdom window) and marked's GitHub-flavoured Markdown lexer.
//
// stdin: a JSON list of {"kind": "mermaid" | "markdown", "text": "..."}.
// stdout: a JSON list, one result per document:
//   mermaid:  {"ok": true, "type", "vertices": [{id, text, shape, classes}],
//              "edges": [{start, end, stroke, text}], "classes": {name: [style, ...]}}
//             or {"ok": false, "error": "Parse error on line 2: ..."} (also past Mermaid's
//             limits on edges and text, with which it refuses to draw)
//   markdown: {"ok": true, "blocks": [{"type": "heading" | "table" | "code" | "html" |
//              "paragraph" | "list", ...}]}: tables' "rows" and lists' "items" as written,
//              "read" as rendered (code spans' text, escapes undone), "inline" the kinds of
//              inline token in it (`text`, `codespan`, `link`, `html`, ...); each `code` block
//              with lang "mermaid" checked as above under "diagram".
// Exit code 0 once every document was read (a parse error is a result, not a failure).
// With --serve: one such list a line, its results a line each, until stdin ends.
import { JSDOM } from "jsdom";

const { window } = new JSDOM("");
globalThis.window = window;
globalThis.document = window.document;
const { default: mermaid } = await import("mermaid");
const { marked } = await import("marked");
mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });

// Mermaid keeps entity codes (#quot;, #96;) as placeholders until it draws, and the browser
// then decodes the HTML entities: do both, so a label reads as a person would see it.
function decode(text) {
  const html = String(text ?? "")
    .replaceAll("ﬂ°°", "&#")
    .replaceAll("ﬂ°", "&")
    .replaceAll("¶ß", ";");
  const area = window.document.createElement("textarea");
  area.innerHTML = html;
  return area.value;
}

async function checkMermaid(text) {
  // mermaid.render() draws a diagram longer than this as "Maximum text size in diagram exceeded".
  const limit = mermaid.mermaidAPI.getConfig().maxTextSize;
  if (text.length > limit) {
    return { ok: false, error: `Maximum text size in diagram exceeded: ${text.length} > ${limit}` };
  }
  try {
    await mermaid.parse(text);
    const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
    const db = diagram.db;
    return {
      ok: true,
      type: diagram.type,
      vertices: [...db.getVertices().values()].map((v) => ({
        id: v.id,
        text: decode(v.text),
        shape: v.type,
        classes: v.classes,
      })),
      edges: db.getEdges().map((e) => ({
        start: e.start,
        end: e.end,
        stroke: e.stroke,
        text: decode(e.text),
      })),
      classes: Object.fromEntries([...db.getClasses().entries()].map(([k, c]) => [k, c.styles])),
    };
  } catch (error) {
    return { ok: false, error: String(error?.message ?? error) };
  }
}

// Inline Markdown as a person reads it once rendered: code spans' text, escapes undone, no
// emphasis marks; HTML stays as written (GitHub would show or drop it).
function plain(tokens) {
  return (tokens ?? [])
    .map((t) => (t.type === "codespan" || t.type === "escape" || !t.tokens ? t.text : plain(t.tokens)))
    .join("");
}

// Every kind of inline token in `tokens` and inside them (`link`, `html`, `codespan`, ...): what
// a document's text became (a test finds a link or HTML where only text should be).
function kinds(tokens, found = new Set()) {
  for (const t of tokens ?? []) {
    found.add(t.type);
    kinds(t.tokens, found);
  }
  return [...found].sort();
}

async function checkMarkdown(text) {
  const blocks = [];
  for (const token of marked.lexer(text, { gfm: true })) {
    if (token.type === "heading") {
      blocks.push({ type: "heading", depth: token.depth, text: token.text, inline: kinds(token.tokens) });
    } else if (token.type === "table") {
      blocks.push({
        type: "table",
        header: token.header.map((cell) => cell.text),
        rows: token.rows.map((row) => row.map((cell) => cell.text)),
        read: token.rows.map((row) => row.map((cell) => plain(cell.tokens))),
        inline: kinds([...token.header, ...token.rows.flat()].flatMap((cell) => cell.tokens)),
      });
    } else if (token.type === "code") {
      const block = { type: "code", lang: token.lang ?? "", text: token.text };
      if (block.lang === "mermaid") {
        block.diagram = await checkMermaid(token.text);
      }
      blocks.push(block);
    } else if (token.type === "html") {
      blocks.push({ type: "html", text: token.raw });
    } else if (token.type === "paragraph") {
      blocks.push({ type: "paragraph", text: token.text, read: plain(token.tokens), inline: kinds(token.tokens) });
    } else if (token.type === "list") {
      blocks.push({
        type: "list",
        ordered: token.ordered,
        items: token.items.map((i) => i.text),
        read: token.items.map((i) => plain(i.tokens)),
        inline: kinds(token.items.flatMap((i) => i.tokens)),
      });
    }
  }
  return { ok: true, blocks };
}

async function readAll(docs) {
  const results = [];
  for (const doc of docs) {
    results.push(doc.kind === "markdown" ? await checkMarkdown(doc.text) : await checkMermaid(doc.text));
  }
  return results;
}

if (process.argv.includes("--serve")) {
  // One JSON list a line on stdin, its results as a line on stdout, until stdin ends: the tests
  // keep one reader per worker (tests/support/diagrams.py), Mermaid loaded once.
  const { createInterface } = await import("node:readline");
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    process.stdout.write(JSON.stringify(await readAll(JSON.parse(line))) + "\n");
  }
} else {
  let input = "";
  for await (const chunk of process.stdin) {
    input += chunk;
  }
  process.stdout.write(JSON.stringify(await readAll(JSON.parse(input))));
}
