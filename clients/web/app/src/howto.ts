// "How to play": the text the terminal client shows too (clients/how_to_play.md, written for
// this engine from the rulebooks), in a dialog. A section whose heading names one set is shown
// only for games with that set, as in clients/how_to_play.py.
import text from "../../../how_to_play.md?raw";
import { h, type Child } from "./dom";
import { termList } from "./glossary";

const SET_OF_SECTION: [string, string][] = [
  ["(Skulls & Sails)", "ss"],
  ["(Curse of the Golden Isles)", "cotgi"],
];

/** **bold** and `code` within a line of the text. */
function inline(line: string): Child[] {
  return line.split(/(\*\*[^*]+\*\*|`[^`]+`)/).map((part) => {
    if (part.startsWith("**") && part.endsWith("**")) return h("strong", {}, part.slice(2, -2));
    if (part.startsWith("`") && part.endsWith("`")) return h("code", {}, part.slice(1, -1));
    return part;
  });
}

/** The text's blocks as elements: headings, paragraphs and "- " lists (all it uses). */
function blocks(markdown: string): HTMLElement[] {
  const out: HTMLElement[] = [];
  for (const block of markdown.split(/\n\s*\n/)) {
    const lines = block.trim().split("\n");
    if (!lines[0]) continue;
    if (lines[0].startsWith("## ")) out.push(h("h3", {}, lines[0].slice(3)));
    else if (lines[0].startsWith("# ")) continue; // the dialog has its own title
    else if (lines[0].startsWith("- ")) {
      const items = block.trim().split(/\n(?=- )/).map((item) => h("li", {}, inline(item.slice(2).replace(/\s*\n\s*/g, " "))));
      out.push(h("ul", {}, items));
    } else out.push(h("p", {}, inline(lines.join(" "))));
  }
  return out;
}

export function howToPlay(sets: string): string {
  return text
    .split(/\n(?=## )/)
    .filter((section) => {
      const heading = section.split("\n")[0];
      const only = SET_OF_SECTION.find(([tag]) => heading.endsWith(tag));
      return !only || sets === "both" || sets === only[1];
    })
    .join("\n");
}

let dialog: HTMLDialogElement | null = null;

/** Open the dialog for a game of `sets` ("both" in the lobby). */
export function openHowToPlay(sets: string): void {
  dialog?.remove();
  const close = h("button", { type: "button", class: "close", onclick: () => dialog?.close() }, "Close");
  dialog = h(
    "dialog",
    { class: "how-to-play", "aria-labelledby": "how-title" },
    h("div", { class: "dialog-head" }, h("h2", { id: "how-title" }, "How to play"), close),
    blocks(howToPlay(sets)),
    h("h3", {}, "The words on the cards"),
    h("p", {}, "Tap a word for what it means (in a card's text too)."),
    termList(sets),
  );
  document.body.append(dialog);
  dialog.showModal();
  close.focus();
}

export function howToPlayButton(sets: () => string): HTMLElement {
  return h("button", { type: "button", class: "how", "aria-haspopup": "dialog", onclick: () => openHowToPlay(sets()) }, "How to play");
}
