// The table drawn from one GameView: the ring of spaces, the piles, the seats, the actions.
// Pure functions of the view (and the catalog): the game screen redraws them on every change.
import type { Catalog } from "./catalog";
import { h, type Child } from "./dom";
import type { Coin, GameView, LegalAction, SeatState } from "./gen/ascension/v1/game_pb";
import {
  DEEP,
  RESOURCE_NAMES,
  SET_NAMES,
  TYPE_NAMES,
  cardWords,
  costShort,
  plural,
  roundOf,
  seatName,
  spaceLabel,
} from "./names";
import { withTerms } from "./glossary";
import { byTarget, targetOf, verbOf } from "./targets";

export interface Table {
  view: GameView;
  catalog: Catalog;
  me: number; // the viewing seat, -1 for a spectator
  meName?: string; // how the viewing seat is named on its own panel ("You" when not given)
  enabled: boolean; // the actions can be taken now
  act: (a: LegalAction) => void;
}

interface Ctx extends Table {
  targets: Map<string, LegalAction[]>;
  numbers: Map<number, number>; // action id -> its number in the list (keys 1-9)
}

function context(t: Table): Ctx {
  const actions = t.enabled ? t.view.legalActions : [];
  const numbers = new Map<number, number>();
  actions.forEach((a, i) => numbers.set(a.id, i + 1));
  return { ...t, targets: byTarget(actions), numbers };
}

// -- pieces ---------------------------------------------------------------------------------

/** A seat's name on this table: "You" for the viewing seat unless the table names it. */
function seatCalled(t: Table, seat: number): string {
  return seat === t.me && seat >= 0 && t.meName ? t.meName : seatName(t.view, seat, t.me);
}

function seatTag(ctx: Ctx, seat: number): HTMLElement {
  const you = seat === ctx.me && seat >= 0 && !ctx.meName;
  return h("span", { class: `ship seat-${seat}`, title: `${seatCalled(ctx, seat)}'s ship` }, you ? "You" : `S${seat + 1}`);
}

function coinTag(c: Coin): HTMLElement {
  const res = RESOURCE_NAMES[c.resource] ?? c.resource;
  const words = `${c.color} coin, ${res}${c.faceDown ? ", face down" : ""}`;
  return h(
    "span",
    { class: `coin coin-${c.color}${c.faceDown ? " down" : ""}`, title: words, "aria-label": words },
    h("span", { "aria-hidden": "true" }, "●"),
    ` ${res}`,
  );
}

function actionButtons(ctx: Ctx, target: string): HTMLElement | null {
  const list = ctx.targets.get(target);
  if (!list?.length) return null;
  return h(
    "div",
    { class: "card-actions" },
    list.map((a) => {
      const n = ctx.numbers.get(a.id);
      return h(
        "button",
        {
          type: "button",
          class: `act act-${a.kind}`,
          "data-key": `t-${a.id}`,
          "data-action": a.id,
          "aria-label": a.description + (n !== undefined && n <= 9 ? ` (key ${n})` : ""),
          title: a.description,
          onclick: () => ctx.act(a),
        },
        verbOf(a),
      );
    }),
  );
}

// Chips whose whole text is shown (tapped or clicked open), kept across redraws.
const opened = new Set<string>();

function toggle(chip: HTMLElement): void {
  const key = chip.dataset.chip ?? "";
  const open = !opened.has(key);
  if (open) opened.add(key);
  else opened.delete(key);
  chip.classList.toggle("open", open);
  chip.setAttribute("aria-expanded", String(open));
}

/**
 * A card: name, type, cost, Honor, and its text (a few lines, all of it once tapped or clicked:
 * a phone has no hover), with the actions that point at it.
 */
function cardChip(ctx: Ctx, id: number, count: number, target: string | null): HTMLElement {
  const card = ctx.catalog.get(id);
  if (!card) {
    return h("div", { class: "card unknown", role: "group", "aria-label": ctx.catalog.name(id) }, ctx.catalog.name(id));
  }
  const cost = costShort(card);
  const key = `${target ?? "card"}|${id}`;
  const open = opened.has(key);
  const chip: HTMLElement = h(
    "div",
    {
      class: `card type-${card.type} faction-${card.faction}${card.text ? " has-text" : ""}${open ? " open" : ""}`,
      role: "group",
      "aria-label": cardWords(card, count),
      "data-chip": key,
      tabindex: card.text ? 0 : null,
      "aria-expanded": card.text ? String(open) : null,
      onclick: (ev: Event) => {
        if (card.text && !(ev.target as HTMLElement).closest("button")) toggle(chip);
      },
      onkeydown: (ev: Event) => {
        const k = (ev as KeyboardEvent).key;
        if (card.text && ev.target === chip && (k === "Enter" || k === " ")) {
          ev.preventDefault();
          toggle(chip);
        }
      },
    },
    h(
      "div",
      { class: "card-head" },
      nameOf(card.name),
      count > 1 ? h("span", { class: "count" }, `×${count}`) : null,
    ),
    h(
      "div",
      { class: "card-meta", "aria-hidden": "true" },
      h("span", { class: "type" }, TYPE_NAMES[card.type] ?? card.type),
      cost ? h("span", { class: `cost ${card.type === "monster" ? "power" : "runes"}` }, cost) : null,
      card.honor && card.type !== "monster" ? h("span", { class: "honor" }, `${card.honor}H`) : null,
    ),
    card.text ? h("p", { class: "card-text" }, withTerms(card.text)) : null,
    target ? actionButtons(ctx, target) : null,
  );
  return chip;
}

/** A card's name, with the length of its longest word for the style sheet (--longest: on the
 * ring a long word makes the name smaller instead of breaking inside it). */
function nameOf(name: string): HTMLElement {
  const el = h("span", { class: "card-name" }, name);
  el.style.setProperty("--longest", String(Math.max(6, ...name.split(/\s+/).map((w) => w.length))));
  return el;
}

/** Cards grouped by id in first-seen order, each once with its count. */
function grouped(ids: readonly number[]): [number, number][] {
  const counts = new Map<number, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  return [...counts.entries()];
}

function cardRow(ctx: Ctx, label: string, ids: readonly number[], zone: string | null, empty = "none"): HTMLElement {
  return h(
    "div",
    { class: "zone", role: "group", "aria-label": `${label}: ${ids.length ? plural(ids.length, "card") : empty}` },
    h("h4", {}, label),
    ids.length
      ? h("div", { class: "cards" }, grouped(ids).map(([id, n]) => cardChip(ctx, id, n, zone ? `${zone}:${id}` : null)))
      : h("p", { class: "empty" }, empty),
  );
}

function treasureList(ctx: Ctx, ids: readonly number[], coins: readonly Coin[] = []): Child {
  if (!ids.length && !coins.length) return null;
  const names = ids.map((id) => ctx.catalog.name(id));
  return h(
    "div",
    { class: "under" },
    h("span", { class: "label" }, "Under: "),
    names.join(", "),
    coins.map((c) => [" ", coinTag(c)]),
  );
}

// -- the board ------------------------------------------------------------------------------

export function header(t: Table): HTMLElement {
  const { view, me } = t;
  const b = view.board;
  const parts: Child[] = [h("span", { class: "turn" }, `Round ${roundOf(view, b?.turn ?? 1)}`)];
  if (view.over) parts.push(h("strong", {}, "Game over"));
  else if (view.toMove === me && me >= 0 && !t.meName) parts.push(h("strong", { class: "your-move" }, "Your move"));
  else parts.push(h("span", {}, `${seatCalled(t, view.toMove)} to move`));
  if (b && !view.over && b.activeSeat >= 0) {
    parts.push(
      h(
        "span",
        { class: "resources", "aria-label": `${seatName(view, b.activeSeat, me)}: ${plural(b.runes, "Rune")}, ${b.power} Power` },
        h("span", { class: "runes" }, plural(b.runes, "Rune")),
        " ",
        h("span", { class: "power" }, `${b.power} Power`),
      ),
    );
  }
  if (b) parts.push(h("span", { class: "pool" }, `Honor pool ${b.honorPool}`));
  if (b?.finalRound) parts.push(h("strong", { class: "final" }, "Final round"));
  parts.push(h("span", { class: "sets" }, SET_NAMES[view.sets] ?? view.sets));
  return h("p", { class: "game-header" }, parts.map((p, i) => (i ? [h("span", { class: "sep", "aria-hidden": "true" }, " · "), p] : p)));
}

export function decisionLine(t: Table): HTMLElement | null {
  const d = t.view.board?.decision;
  if (!d || t.view.over) return null;
  const who = seatCalled(t, d.seat);
  const src = d.sourceCard >= 0 ? ` (${t.catalog.name(d.sourceCard)})` : "";
  return h("p", { class: "decision", role: "note" }, h("strong", {}, "Choice: "), `${who} must decide: ${d.kind.replace(/_/g, " ")}${src}`);
}

function here(ctx: Ctx, space: number): Child[] {
  const b = ctx.view.board;
  if (!b) return [];
  const out: Child[] = b.seats.filter((s) => s.shipSpace === space).map((s) => seatTag(ctx, s.seat));
  if (b.ghostPirateSpace === space) out.push(h("span", { class: "ghost", title: "The Ghost Pirate" }, "Ghost Pirate"));
  if (b.boardCoinSpace === space && b.boardCoin) out.push(coinTag(b.boardCoin));
  return out;
}

function hereWords(ctx: Ctx, space: number): string {
  const b = ctx.view.board;
  if (!b) return "";
  const words = b.seats.filter((s) => s.shipSpace === space).map((s) => `${seatName(ctx.view, s.seat, ctx.me)}'s ship`);
  if (b.ghostPirateSpace === space) words.push("The Ghost Pirate");
  if (b.boardCoinSpace === space && b.boardCoin) words.push(`a ${b.boardCoin.color} coin`);
  return words.length ? `; here: ${words.join(", ")}` : "";
}

/** The ring: center-row spaces 1-6, then The Deep (after which comes space 1 again). */
export function ring(t: Table): HTMLElement {
  const ctx = context(t);
  const b = ctx.view.board;
  const cells: HTMLElement[] = [];
  for (let sp = 0; sp < 6; sp++) {
    const cs = b?.center.find((c) => c.space === sp);
    const card = cs && cs.card >= 0 ? cs.card : -1;
    const name = card >= 0 ? ctx.catalog.name(card) : "empty";
    cells.push(
      h(
        "li",
        { class: "space", "aria-label": `${spaceLabel(sp)}: ${name}${hereWords(ctx, sp)}` },
        h("div", { class: "space-label" }, spaceLabel(sp)),
        card >= 0 ? cardChip(ctx, card, 1, `space:${sp}`) : h("div", { class: "card empty" }, "(empty)", actionButtons(ctx, `space:${sp}`)),
        treasureList(ctx, cs?.treasuresUnder ?? []),
        h("div", { class: "here" }, here(ctx, sp)),
      ),
    );
  }
  const k = b?.kraken;
  const thukal = ctx.catalog.byKey.get("thukal");
  let deep: Child;
  if (k?.inGame && k.inDeep && thukal) {
    deep = [cardChip(ctx, thukal.id, 1, `space:${DEEP}`), treasureList(ctx, k.treasuresUnder, k.coins)];
  } else if (k?.inGame && k.ownerSeat >= 0) {
    deep = [h("p", { class: "kraken-owner" }, `The Kraken: ${seatName(ctx.view, k.ownerSeat, ctx.me)}`), actionButtons(ctx, `space:${DEEP}`)];
  } else {
    deep = actionButtons(ctx, `space:${DEEP}`);
  }
  cells.push(
    h(
      "li",
      { class: "space deep", "aria-label": `The Deep${k?.inGame && k.inDeep ? ": Thukal, the Kraken" : ""}${hereWords(ctx, DEEP)}` },
      h("div", { class: "space-label" }, "The Deep", h("span", { class: "wrap", "aria-hidden": "true", title: "then Space 1 again" }, " ↻")),
      deep,
      h("div", { class: "here" }, here(ctx, DEEP)),
    ),
  );
  return h(
    "section",
    { class: "ring-wrap", "aria-labelledby": "ring-title" },
    h("h2", { id: "ring-title", class: "visually-hidden" }, "Center row and The Deep"),
    h("ol", { class: "ring" }, cells),
    piles(ctx),
  );
}

function piles(ctx: Ctx): HTMLElement {
  const b = ctx.view.board;
  const pile = (key: string, left: number | null): Child => {
    const card = ctx.catalog.byKey.get(key);
    if (!card) return null;
    const chip = cardChip(ctx, card.id, 1, `pile:${key}`);
    if (left !== null) chip.querySelector(".card-head")?.append(h("span", { class: "count", title: "left in the pile" }, `(${left})`));
    return chip;
  };
  return h(
    "div",
    { class: "piles", role: "group", "aria-label": "Always available" },
    pile("mystic", b?.mysticPile ?? 0),
    pile("heavy_infantry", b?.heavyInfantryPile ?? 0),
    pile("cultist", null),
    h(
      "p",
      { class: "counts" },
      `Center deck ${b?.centerDeckCount ?? 0} · The Void ${b?.theVoid.length ?? 0}`,
      ctx.view.sets !== "ss" ? ` · Treasure bag ${b?.treasureBagCount ?? 0}` : "",
    ),
    b && b.theVoid.length && ctx.targets.size
      ? grouped(b.theVoid)
          .filter(([id]) => ctx.targets.has(`void:${id}`))
          .map(([id, n]) => cardChip(ctx, id, n, `void:${id}`))
      : null,
  );
}

// -- seats ----------------------------------------------------------------------------------

function seatStats(ctx: Ctx, s: SeatState): HTMLElement {
  const b = ctx.view.board;
  const ship = s.shipSpace >= 0 ? spaceLabel(s.shipSpace) : "not placed";
  const items: Child[] = [
    h("span", { class: "crew" }, `Crew ${s.crew}`),
    h("span", { class: "honor" }, `Honor ${s.honorTokens}`),
    `Hand ${s.handCount}`,
    `Deck ${s.deckCount}`,
    `Discard ${s.discardCount}`,
    `Ship: ${ship}`,
  ];
  if (b && b.activeSeat === s.seat && !ctx.view.over) {
    items.unshift(h("span", { class: "runes" }, `Runes ${b.runes}`), h("span", { class: "power" }, `Power ${b.power}`));
  }
  return h("p", { class: "stats" }, items.map((x, i) => (i ? [" · ", x] : x)));
}

/** An AI seat's fallback moves: its bot failed and a legal move was played instead. */
function fallbackNote(ctx: Ctx, seat: number): HTMLElement | null {
  const info = ctx.view.seatInfo.find((x) => x.seat === seat);
  if (!info || info.fallbackMoves <= 0) return null;
  const text = `${plural(info.fallbackMoves, "fallback move")} (latest: ${info.lastFallbackReason})`;
  return h("p", { class: "fallbacks", title: "moves played because this seat's bot failed" }, text);
}

function seatPanel(ctx: Ctx, s: SeatState, mine: boolean): HTMLElement {
  const v = ctx.view;
  const active = v.board?.activeSeat === s.seat && !v.over;
  const title = mine ? `${ctx.meName ?? "You"} (seat ${s.seat + 1})` : seatCalled(ctx, s.seat);
  const inPlay = [...s.constructs, ...s.ongoing];
  return h(
    "section",
    { class: `seat seat-${s.seat}${active ? " active" : ""}${mine ? " mine" : ""}`, "aria-label": title, "data-seat": s.seat },
    h("h3", {}, h("span", { class: `dot seat-${s.seat}`, "aria-hidden": "true" }), title, active ? h("span", { class: "badge" }, "playing") : null),
    seatStats(ctx, s),
    fallbackNote(ctx, s.seat),
    mine ? cardRow(ctx, ctx.meName ? `${ctx.meName}'s hand` : "Your hand", s.hand, "hand", "empty") : null,
    // cards every seat knows to be in that hand (revealed and returned, or drawn as its deck ran out)
    !mine && s.handKnown.length ? cardRow(ctx, "Known in hand", s.handKnown, null) : null,
    s.played.length || mine ? cardRow(ctx, mine ? "Played this turn" : "Played", s.played, null) : null,
    inPlay.length || mine ? cardRow(ctx, "Constructs and Ongoing", inPlay, "construct") : null,
    s.treasures.length || s.coins.length
      ? h(
          "div",
          { class: "zone" },
          h("h4", {}, "Treasure"),
          h("p", {}, s.treasures.map((id) => ctx.catalog.name(id)).join(", "), s.coins.map((c) => [" ", coinTag(c)])),
        )
      : null,
  );
}

export function mySeat(t: Table): HTMLElement | null {
  const ctx = context(t);
  const s = ctx.view.board?.seats.find((x) => x.seat === ctx.me);
  return s ? seatPanel(ctx, s, true) : null;
}

export function otherSeats(t: Table): HTMLElement {
  const ctx = context(t);
  const seats = ctx.view.board?.seats.filter((x) => x.seat !== ctx.me) ?? [];
  return h("div", { class: "others" }, seats.map((s) => seatPanel(ctx, s, false)));
}

// -- actions and the end --------------------------------------------------------------------

export function actionList(t: Table, extra: Child = null): HTMLElement {
  const ctx = context(t);
  const actions = ctx.enabled ? ctx.view.legalActions : [];
  return h(
    "ol",
    { class: "action-list", "data-version": String(ctx.view.version), "aria-label": "Your legal actions" },
    actions.map((a, i) =>
      h(
        "li",
        // offered on its card or space too: a phone's docked list may leave it out
        { class: targetOf(a) ? "on-table" : null },
        h(
          "button",
          {
            type: "button",
            class: `act act-${a.kind}`,
            "data-key": `a-${a.id}`,
            "data-action": a.id,
            "aria-keyshortcuts": i < 9 ? String(i + 1) : null,
            onclick: () => ctx.act(a),
          },
          i < 9 ? h("kbd", { "aria-hidden": "true" }, String(i + 1)) : null,
          a.description,
        ),
      ),
    ),
    extra ? h("li", {}, extra) : null,
  );
}

export function scores(t: Table): HTMLElement {
  const { view, me } = t;
  const rows = [...view.scores].sort((a, b) => Number(a.seat !== view.winner) - Number(b.seat !== view.winner) || b.total - a.total || a.seat - b.seat);
  const coins = view.sets !== "ss"; // Cursed Treasure coins: Curse of the Golden Isles only
  const result =
    view.winner < 0 ? "The game is over." : view.winner === me ? "You win!" : `${seatName(view, view.winner, me)} wins.`;
  return h(
    "section",
    { class: "scores", "aria-labelledby": "scores-title" },
    h("h2", { id: "scores-title" }, result),
    h(
      "div",
      { class: "scores-table" },
      h(
        "table",
        {},
        h("caption", {}, "Final score (Honor by source)"),
        h("thead", {}, h("tr", {}, ["Player", "Cards", "Tokens", "Treasure", ...(coins ? ["Coins"] : []), "Card text", "Total"].map((c) => h("th", { scope: "col" }, c)))),
        h(
          "tbody",
          {},
          rows.map((s) =>
            h(
              "tr",
              { class: s.seat === view.winner ? "winner" : null },
              h("th", { scope: "row" }, (s.seat === view.winner ? "★ " : "") + seatName(view, s.seat, me)),
              [s.cards, s.tokens, s.treasure, ...(coins ? [s.coins] : []), s.cardText].map((n) => h("td", {}, String(n))),
              h("td", {}, h("strong", {}, String(s.total))),
            ),
          ),
        ),
      ),
    ),
  );
}
