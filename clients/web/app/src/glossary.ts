// The words of the cards explained, and the questions asked before a risky move: one text for
// both clients (clients/glossary.json, read by the terminal's clients/terminal/glossary.py too),
// built into the page. Each term in a card's text is a button that opens its explanation.
import data from "../../../glossary.json";
import { h, type Child } from "./dom";

export interface Term {
  kind: string;
  words: string[]; // as card texts write it; the first is its name
  text: string;
}

export const TERMS: Term[] = data.terms;
const CONFIRM: Record<string, string> = data.confirm;
const byWord = new Map<string, Term>();
for (const t of TERMS) for (const w of t.words) byWord.set(w, t);
// A longer term wins over one it contains ("The Void" over "Void"): longest first.
const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const PATTERN = new RegExp(
  `\\b(${[...byWord.keys()].sort((a, b) => b.length - a.length).map(escape).join("|")})\\b`,
  "g",
);

/** A question (or part of one) asked before a move, with its blanks filled. */
export function confirmText(key: string, values: Record<string, string | number> = {}): string {
  return (CONFIRM[key] ?? key).replace(/\{(\w+)\}/g, (_, k: string) => String(values[k] ?? ""));
}

let dialog: HTMLDialogElement | null = null;

/** The explanation of a term, in a dialog (a phone has no hover). */
export function openTerm(term: Term): void {
  dialog?.remove();
  const close = h("button", { type: "button", class: "close", onclick: () => dialog?.close() }, "Close");
  dialog = h(
    "dialog",
    { class: "glossary", "aria-labelledby": "term-title" },
    h("div", { class: "dialog-head" }, h("h2", { id: "term-title" }, term.words[0]), close),
    h("p", {}, term.text),
  );
  document.body.append(dialog);
  dialog.showModal();
  close.focus();
}

const SET_TAGS: [string, string][] = [
  ["(Skulls & Sails)", "ss"],
  ["(Curse of the Golden Isles)", "cotgi"],
];

/** Whether a term belongs to a game of `sets`: one whose text names a set, only with it. */
function inGame(term: Term, sets: string): boolean {
  const named = SET_TAGS.filter(([tag]) => term.text.includes(tag));
  return named.length !== 1 || sets === "both" || sets === named[0][1];
}

/** Every term of a game of `sets` by kind, each a button that explains it (the terminal's
 * `?` lists the same). */
export function termList(sets: string): HTMLElement {
  const terms = TERMS.filter((t) => inGame(t, sets));
  const kinds = [...new Set(terms.map((t) => t.kind))];
  return h(
    "dl",
    { class: "term-list" },
    kinds.map((kind) => [
      h("dt", {}, `${kind[0].toUpperCase()}${kind.slice(1)}s`),
      h(
        "dd",
        {},
        terms.filter((t) => t.kind === kind).map((t) =>
          h("button", { type: "button", class: "term", "data-term": t.words[0], onclick: () => openTerm(t) }, t.words[0]),
        ),
      ),
    ]),
  );
}

/** A card's text with each term a button that explains it. */
export function withTerms(text: string): Child[] {
  const out: Child[] = [];
  let at = 0;
  for (const m of text.matchAll(PATTERN)) {
    const term = byWord.get(m[1]);
    if (!term || m.index === undefined) continue;
    out.push(text.slice(at, m.index));
    out.push(
      h(
        "button",
        {
          type: "button",
          class: "term",
          "data-term": term.words[0],
          "aria-label": `${m[1]}: what it means`,
          onclick: (ev: Event) => {
            ev.stopPropagation(); // not a tap on the card
            openTerm(term);
          },
        },
        m[1],
      ),
    );
    at = m.index + m[1].length;
  }
  out.push(text.slice(at));
  return out;
}

/** Ask a yes/no question in a dialog; resolves true only on yes (Escape: no). */
export function ask(question: string, yes: string): Promise<boolean> {
  return new Promise((resolve) => {
    const d: HTMLDialogElement = h("dialog", { class: "confirm", role: "alertdialog", "aria-labelledby": "confirm-text" });
    const answer = (value: boolean): void => {
      d.close();
      d.remove();
      resolve(value);
    };
    const no = h("button", { type: "button", class: "no", onclick: () => answer(false) }, "Not now");
    d.append(
      h("p", { id: "confirm-text" }, question),
      h("div", { class: "confirm-buttons" }, h("button", { type: "button", class: "yes", onclick: () => answer(true) }, yes), no),
    );
    d.addEventListener("cancel", (ev) => {
      ev.preventDefault();
      answer(false);
    });
    document.body.append(d);
    d.showModal();
    no.focus(); // Enter by habit does not end the turn
  });
}
