// Talaria web page: a small markdown renderer for answers. It builds DOM
// nodes with createElement and text nodes only; model text never reaches
// an HTML parser, so raw HTML in an answer shows as text. Links are made
// only for literal http:// and https:// URLs. No images: an image URL in
// an answer would be fetched without a click (a way to leak the chat).
"use strict";

const MD_MAX_DEPTH = 12;    // nested lists/quotes deeper than this are text
const MD_INLINE_DEPTH = 8;  // nested emphasis deeper than this is text

const MD_FENCE = /^( {0,3})(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$/;
const MD_HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const MD_HR = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const MD_QUOTE = /^ {0,3}> ?/;
const MD_LIST = /^( *)([-*+]|\d{1,9}[.)])(?:( +)(.*)|)$/;
const MD_DELIM = /^ *\|? *:?-+:? *(?:\| *:?-+:? *)*\|? *$/;
const MD_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
const MD_LANG = /^[A-Za-z0-9_+#.-]{1,32}$/;

function mdEl(tag, cls) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  return e;
}

// mdSafeHref returns the normalised URL when it is http(s), else null. The
// scheme must be spelled out literally: entities, escapes, whitespace and
// control characters before it make it text.
function mdSafeHref(raw) {
  if (!/^https?:\/\/[^\s]/i.test(raw)) return null;
  let u;
  try { u = new URL(raw); } catch (e) { return null; }
  if (u.protocol !== "http:" && u.protocol !== "https:") return null;
  return u.href;
}

function mdLink(href) {
  const a = mdEl("a");
  a.href = href;
  a.rel = "noopener noreferrer";
  a.target = "_blank";
  return a;
}

// mdRender turns markdown source into a DocumentFragment.
function mdRender(src) {
  const frag = document.createDocumentFragment();
  const lines = String(src).replace(/\r\n?/g, "\n").split("\n");
  mdBlocks(frag, lines, 0);
  return frag;
}

function mdIndent(l) { return l.length - l.trimStart().length; }

function mdIsTable(lines, i) {
  const head = lines[i], delim = lines[i + 1];
  if (delim === undefined || !head.includes("|") || !MD_DELIM.test(delim) || !delim.includes("-")) return false;
  if (!delim.includes("|") && !/^\s*\|/.test(head)) return false;
  return mdCells(head).length === mdCells(delim).length;
}

// mdStarts says whether line i begins a block that ends a paragraph.
function mdStarts(lines, i, depth) {
  const l = lines[i];
  if (MD_FENCE.test(l) || MD_HR.test(l) || mdIsTable(lines, i)) return true;
  if (/^ {0,3}#{1,6}(?:[ \t]|$)/.test(l)) return true;
  if (depth < MD_MAX_DEPTH && (MD_QUOTE.test(l) || (MD_LIST.test(l) && mdIndent(l) < 4))) return true;
  return false;
}

function mdBlocks(parent, lines, depth) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i++; continue; }
    let m;
    if ((m = MD_FENCE.exec(line))) {
      const indent = m[1].length, fence = m[2];
      const body = [];
      i++;
      while (i < lines.length) {
        const c = lines[i].trim();
        if (c.length >= fence.length && c[0] === fence[0] && c === fence[0].repeat(c.length) && mdIndent(lines[i]) < 4) { i++; break; }
        body.push(lines[i].slice(Math.min(indent, mdIndent(lines[i]))));
        i++;
      }
      // An unclosed fence (an answer still streaming) runs to the end.
      while (i >= lines.length && body.length && !body[body.length - 1].trim()) body.pop();
      const pre = mdEl("pre"), code = mdEl("code");
      if (MD_LANG.test(m[3])) code.className = "language-" + m[3];
      code.textContent = body.join("\n");
      pre.append(code);
      parent.append(pre);
      continue;
    }
    if ((m = MD_HEADING.exec(line))) {
      const h = mdEl("h" + m[1].length);
      mdInline(h, m[2] || "", 0, false);
      parent.append(h);
      i++;
      continue;
    }
    if (MD_HR.test(line)) { parent.append(mdEl("hr")); i++; continue; }
    if (depth < MD_MAX_DEPTH && MD_QUOTE.test(line)) {
      const body = [];
      while (i < lines.length) {
        const l = lines[i];
        if (MD_QUOTE.test(l)) body.push(l.replace(MD_QUOTE, ""));
        else if (l.trim() && body.length && body[body.length - 1].trim() && !mdStarts(lines, i, depth)) body.push(l);
        else break;
        i++;
      }
      const q = mdEl("blockquote");
      mdBlocks(q, body, depth + 1);
      parent.append(q);
      continue;
    }
    if (depth < MD_MAX_DEPTH && MD_LIST.test(line) && mdIndent(line) < 4) {
      i = mdList(parent, lines, i, depth);
      continue;
    }
    if (mdIsTable(lines, i)) { i = mdTable(parent, lines, i); continue; }
    const para = [line.trim()];
    i++;
    while (i < lines.length && lines[i].trim() && !mdStarts(lines, i, depth)) { para.push(lines[i].trim()); i++; }
    const p = mdEl("p");
    mdInline(p, para.join("\n"), 0, false);
    parent.append(p);
  }
}

// mdList renders the list starting at line i and returns the next line.
// An item holds the lines indented past its marker (nested lists need only
// be indented past the parent's marker column), lazy continuation lines and
// blank lines inside it.
function mdList(parent, lines, i, depth) {
  const first = MD_LIST.exec(lines[i]);
  const ordered = /\d/.test(first[2]);
  const list = mdEl(ordered ? "ol" : "ul");
  if (ordered) {
    const n = parseInt(first[2], 10);
    if (n !== 1) list.start = n;
  }
  const items = [];
  let loose = false;
  let contentIndent = Infinity;
  while (i < lines.length) {
    const m = MD_LIST.exec(lines[i]);
    if (!m || /\d/.test(m[2]) !== ordered || mdIndent(lines[i]) >= contentIndent) break;
    const n = m[1].length;
    const spaces = m[3] ? m[3].length : 1;
    contentIndent = n + m[2].length + (spaces > 4 ? 1 : spaces);
    const body = [m[4] || ""];
    i++;
    while (i < lines.length) {
      const l = lines[i];
      if (!l.trim()) { body.push(""); i++; continue; }
      const ind = mdIndent(l);
      if (ind >= contentIndent || (ind > n && MD_LIST.test(l))) { body.push(l.slice(Math.min(ind, contentIndent))); i++; continue; }
      if (body[body.length - 1] !== "" && !mdStarts(lines, i, depth)) { body.push(l.trim()); i++; continue; }
      break;
    }
    let blanks = 0;
    while (body.length && body[body.length - 1] === "") { body.pop(); blanks++; }
    if (blanks && i < lines.length && MD_LIST.test(lines[i]) && mdIndent(lines[i]) < contentIndent) loose = true;
    items.push(body);
  }
  for (const body of items) {
    const li = mdEl("li");
    mdBlocks(li, body, depth + 1);
    const ps = Array.from(li.children).filter((c) => c.tagName === "P");
    if (!loose && ps.length === 1) ps[0].replaceWith(...ps[0].childNodes);
    list.append(li);
  }
  parent.append(list);
  return i;
}

// mdCells splits a table row on unescaped pipes (as GFM does, also inside
// code spans); "\|" is a literal pipe.
function mdCells(row) {
  let s = row.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  const cells = [];
  let cur = "";
  for (let k = 0; k < s.length; k++) {
    if (s[k] === "\\" && s[k + 1] === "|") { cur += "|"; k++; continue; }
    if (s[k] === "|") { cells.push(cur.trim()); cur = ""; continue; }
    cur += s[k];
  }
  cells.push(cur.trim());
  return cells;
}

function mdTable(parent, lines, i) {
  const head = mdCells(lines[i]);
  const align = mdCells(lines[i + 1]).map((d) => (d.startsWith(":") && d.endsWith(":") ? "center" : d.endsWith(":") ? "right" : ""));
  const table = mdEl("table"), thead = mdEl("thead"), tbody = mdEl("tbody");
  const row = (cells, tag) => {
    const tr = mdEl("tr");
    for (let k = 0; k < head.length; k++) {
      const c = mdEl(tag, align[k] ? "align-" + align[k] : "");
      mdInline(c, cells[k] || "", 0, false);
      tr.append(c);
    }
    return tr;
  };
  thead.append(row(head, "th"));
  i += 2;
  while (i < lines.length && lines[i].trim() && lines[i].includes("|") && !MD_FENCE.test(lines[i]) && !MD_QUOTE.test(lines[i])) {
    tbody.append(row(mdCells(lines[i]), "td"));
    i++;
  }
  table.append(thead);
  if (tbody.children.length) table.append(tbody);
  const wrap = mdEl("div", "table-wrap");
  wrap.append(table);
  parent.append(wrap);
  return i;
}

const MD_AUTOLINK = /<(https?:\/\/[^\s<>]+)>/iy;
const MD_BARE = /https?:\/\/[^\s<>"'`]+/iy;

// mdInline renders inline markdown of s into parent: code spans, strong,
// emphasis, strikethrough, links, autolinks, hard breaks for newlines.
// inLink forbids links inside a link's text.
function mdInline(parent, s, depth, inLink) {
  let buf = "";
  const flush = () => { if (buf) { parent.append(document.createTextNode(buf)); buf = ""; } };
  // noClose[d] = a position from which no closer of delimiter d exists,
  // so unmatched delimiters cost one scan, not one per opener.
  const noClose = {};
  let i = 0;
  while (i < s.length) {
    const ch = s[i];
    if (ch === "\\" && i + 1 < s.length && MD_PUNCT.includes(s[i + 1])) { buf += s[i + 1]; i += 2; continue; }
    if (ch === "\n") { flush(); parent.append(mdEl("br")); i++; continue; }
    if (ch === "`") {
      let k = 1;
      while (s[i + k] === "`") k++;
      const ticks = "`".repeat(k);
      let j = noClose[ticks] !== undefined && noClose[ticks] <= i ? -1 : s.indexOf(ticks, i + k);
      while (j >= 0 && s[j + k] === "`") {
        let e = j;
        while (s[e] === "`") e++;
        j = s.indexOf(ticks, e);
      }
      if (j < 0) { noClose[ticks] = i; buf += ticks; i += k; continue; }
      let code = s.slice(i + k, j).replace(/\n/g, " ");
      if (code.length > 2 && code[0] === " " && code[code.length - 1] === " " && code.trim()) code = code.slice(1, -1);
      flush();
      const c = mdEl("code");
      c.textContent = code;
      parent.append(c);
      i = j + k;
      continue;
    }
    if ((ch === "*" || ch === "_" || ch === "~") && depth < MD_INLINE_DEPTH) {
      const r = mdEmphasis(s, i, noClose);
      if (r) {
        flush();
        const e = mdEl(r.tag);
        mdInline(e, s.slice(r.start, r.end), depth + 1, inLink);
        parent.append(e);
        i = r.next;
        continue;
      }
      let k = 1;
      while (s[i + k] === ch) k++;
      buf += s.slice(i, i + k);
      i += k;
      continue;
    }
    if (!inLink && (ch === "[" || (ch === "!" && s[i + 1] === "["))) {
      const r = mdLinkAt(s, ch === "!" ? i + 1 : i);
      if (r) {
        flush();
        const href = mdSafeHref(r.dest);
        if (href) {
          const a = mdLink(href);
          // An image becomes a link to it, labelled with its alt text.
          mdInline(a, r.label || r.dest, depth + 1, true);
          parent.append(a);
        } else {
          parent.append(document.createTextNode(s.slice(i, r.next)));
        }
        i = r.next;
        continue;
      }
    }
    if (!inLink && ch === "<") {
      MD_AUTOLINK.lastIndex = i;
      const m = MD_AUTOLINK.exec(s);
      const href = m && mdSafeHref(m[1]);
      if (href) {
        flush();
        const a = mdLink(href);
        a.textContent = m[1];
        parent.append(a);
        i += m[0].length;
        continue;
      }
    }
    if (!inLink && (ch === "h" || ch === "H") && (i === 0 || !/[A-Za-z0-9]/.test(s[i - 1]))) {
      MD_BARE.lastIndex = i;
      const m = MD_BARE.exec(s);
      if (m) {
        let url = m[0].replace(/[.,:;!?*_~]+$/, "");
        // A closing parenthesis belongs to the URL only when it opened one.
        while (url.endsWith(")") && (url.match(/\(/g) || []).length < (url.match(/\)/g) || []).length) url = url.slice(0, -1);
        const href = mdSafeHref(url);
        if (href) {
          flush();
          const a = mdLink(href);
          a.textContent = url;
          parent.append(a);
          i += url.length;
          continue;
        }
      }
    }
    buf += ch;
    i++;
  }
  flush();
}

// mdEmphasis matches an emphasis run opening at i: ** or __ (strong), * or
// _ (em), ~~ (del). An opener must be followed by a non-space, a closer
// preceded by one; _ does not open or close inside a word.
function mdEmphasis(s, i, noClose) {
  const ch = s[i];
  let k = 1;
  while (s[i + k] === ch) k++;
  const after = s[i + k];
  if (after === undefined || /\s/.test(after)) return null;
  const word = /[A-Za-z0-9]/;
  if (ch === "_" && i > 0 && word.test(s[i - 1])) return null;
  const tries = ch === "~" ? (k === 2 ? [2] : []) : k >= 2 ? [2, 1] : [1];
  for (const n of tries) {
    const d = ch.repeat(n);
    if (noClose[d] !== undefined && noClose[d] <= i) continue;
    let from = i + n;
    for (;;) {
      let j = s.indexOf(d, from);
      if (j < 0) { noClose[d] = i; break; }
      let e = j;
      while (s[e] === ch) e++;
      const run = e - j;
      if (n === 1 && run > 1 && run !== 3) { from = e; continue; }
      // In a longer closing run the closer is its last n characters.
      const close = e - n;
      if (close > i + n && !/\s/.test(s[close - 1]) && !(ch === "_" && word.test(s[e] || ""))) {
        return { tag: ch === "~" ? "del" : n === 2 ? "strong" : "em", start: i + n, end: close, next: e };
      }
      from = e;
    }
  }
  return null;
}

// mdLinkAt parses [label](dest "title") at i, or returns null.
function mdLinkAt(s, i) {
  // Labels are short; the cap keeps a run of unmatched "[" linear.
  const end = Math.min(s.length, i + 1000);
  let depth = 0, j = i;
  for (; j < end; j++) {
    if (s[j] === "\\") { j++; continue; }
    if (s[j] === "[") depth++;
    else if (s[j] === "]" && --depth === 0) break;
  }
  if (j >= end || s[j + 1] !== "(") return null;
  const label = s.slice(i + 1, j);
  let k = j + 2;
  while (s[k] === " ") k++;
  let dest = "";
  if (s[k] === "<") {
    const e = s.indexOf(">", k);
    if (e < 0) return null;
    dest = s.slice(k + 1, e);
    k = e + 1;
  } else {
    let paren = 0;
    const start = k;
    for (; k < s.length; k++) {
      const c = s[k];
      if (c === "\\" && k + 1 < s.length) { k++; continue; }
      if (/\s/.test(c)) break;
      if (c === "(") paren++;
      else if (c === ")") { if (paren === 0) break; paren--; }
    }
    dest = s.slice(start, k);
  }
  while (s[k] === " ") k++;
  if (s[k] === '"' || s[k] === "'") {
    const e = s.indexOf(s[k], k + 1);
    if (e < 0) return null;
    k = e + 1;
    while (s[k] === " ") k++;
  }
  if (s[k] !== ")") return null;
  return { label, dest, next: k + 1 };
}

// mdUpdate renders src into el for an answer that is still streaming: the
// blocks before the last stable boundary are kept from the previous call
// and only the rest is rendered again, so each frame costs the tail, not
// the whole answer. The result equals mdRender(src).
function mdUpdate(el, src) {
  let s = el.mdState;
  if (!s || !src.startsWith(s.frozen) || el.childNodes.length < s.nodes) {
    s = el.mdState = { frozen: "", nodes: 0 };
    el.textContent = "";
  }
  while (el.childNodes.length > s.nodes) el.lastChild.remove();
  const cut = mdStableEnd(src, s.frozen.length);
  if (cut > s.frozen.length) {
    el.append(mdRender(src.slice(s.frozen.length, cut)));
    s.frozen = src.slice(0, cut);
    s.nodes = el.childNodes.length;
  }
  el.append(mdRender(src.slice(cut)));
}

// mdStableEnd returns the start of the last complete line after from that
// no later text can join to the blocks before it: it follows a blank line,
// outside a fence, starts in column 0 and is no list item (a list item
// could continue a list above it).
function mdStableEnd(src, from) {
  let cut = from, fence = "", prevBlank = false, pos = from;
  for (;;) {
    const nl = src.indexOf("\n", pos);
    if (nl < 0) return cut; // the last line may still grow
    const line = src.slice(pos, nl).replace(/\r$/, "");
    if (fence) {
      const c = line.trim();
      if (c.length >= fence.length && c[0] === fence[0] && c === fence[0].repeat(c.length) && mdIndent(line) < 4) fence = "";
      prevBlank = false;
    } else {
      if (prevBlank && line.trim() && !/^\s/.test(line) && !MD_LIST.test(line)) cut = pos;
      const m = MD_FENCE.exec(line);
      if (m) fence = m[2];
      prevBlank = !line.trim();
    }
    pos = nl + 1;
  }
}
