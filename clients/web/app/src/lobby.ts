// The lobby: start a game against the bots, start a game with friends (one invitation link per
// seat, clocks to choose), start a bots-only game to watch, and the list of games on the engine
// (a spectator picks one to watch; your own games can be resumed).
import { errorText, type EngineClient } from "./api";
import { h, replaceKeepingFocus } from "./dom";
import { SeatInfo_Kind } from "./gen/ascension/v1/game_pb";
import type { SeatConfig } from "./gen/ascension/v1/engine_pb";
import { TimeoutPolicy, type ClockSettings } from "./gen/ascension/v1/game_pb";
import { howToPlayButton } from "./howto";
import { SET_NAMES } from "./names";

export interface PageConfig {
  sets: string;
  players: number;
  bots: string[];
  budget_ms: number;
  seed: number | null;
  name: string;
  engine: string;
  difficulty: string; // a named level, or "" for the bots and budget fields
}

export const DEFAULT_CONFIG: PageConfig = {
  sets: "ss",
  players: 2,
  bots: ["ismcts"],
  budget_ms: 300,
  seed: null,
  name: "You",
  engine: "",
  difficulty: "",
};

// The engine's named levels (BotSettings.difficulty), weakest first; docs/bots.md rates them.
const DIFFICULTIES: [string, string][] = [
  ["easy", "Easy"],
  ["normal", "Normal"],
  ["hard", "Hard"],
  ["expert", "Expert"],
];

const KNOWN_BOTS = ["ismcts", "heuristic", "random"];

// Clock presets for games with friends: [label, turn seconds, bank seconds, increment seconds]
const CLOCKS: [string, number, number, number][] = [
  ["1 minute a turn", 60, 0, 0],
  ["30 s a turn + 3 min bank", 30, 180, 0],
  ["5 min + 5 s a turn", 0, 300, 5],
  ["No clock", 0, 0, 0],
];

/** The link that gives its holder seat ``token`` of the game: the token in the fragment only. */
export function invitationLink(gameId: string, token: string): string {
  return `${location.origin}${location.pathname}#/join/${gameId}/${token}`;
}
const LIST_EVERY_MS = 3000;

export const tokens = {
  get(gameId: string): string | null {
    return sessionStorage.getItem(`ascension.token.${gameId}`);
  },
  set(gameId: string, token: string): void {
    sessionStorage.setItem(`ascension.token.${gameId}`, token);
  },
};

function botSeats(bots: string[], count: number, budgetMs: number, seed: number | null, first: number, difficulty: string): SeatConfig[] {
  const seats: SeatConfig[] = [];
  for (let i = 0; i < count; i++) {
    const name = difficulty ? "" : bots[i % bots.length];
    const botSeed = seed === null ? BigInt(Math.floor(Math.random() * 2 ** 40)) : BigInt(seed) * 8n + BigInt(first + i);
    seats.push({
      $typeName: "ascension.v1.SeatConfig",
      kind: SeatInfo_Kind.AI,
      name: "",
      bot: { $typeName: "ascension.v1.BotSettings", name, iterations: 0, timeMs: difficulty ? 0 : budgetMs, seed: botSeed, exploration: 0, difficulty },
    });
  }
  return seats;
}

export class Lobby {
  private timer: number | undefined;
  private readonly list = h("div", { class: "games-list" });
  private readonly message = h("p", { class: "message", role: "alert" });
  private readonly invites = h("div", { class: "invites", "aria-live": "polite" });

  constructor(
    private readonly root: HTMLElement,
    private readonly client: EngineClient,
    private readonly config: PageConfig,
  ) {}

  start(): void {
    document.title = "Ascension · Lobby";
    this.root.replaceChildren(this.page());
    this.custom();
    void this.refresh();
    this.timer = window.setInterval(() => void this.refresh(), LIST_EVERY_MS);
    this.root.querySelector<HTMLElement>("#start")?.focus();
  }

  stop(): void {
    window.clearInterval(this.timer);
  }

  private field(id: string, label: string, input: HTMLElement, hint = ""): HTMLElement {
    return h("div", { class: "field" }, h("label", { for: id }, label), input, hint ? h("small", { id: `${id}-hint` }, hint) : null);
  }

  private page(): HTMLElement {
    const c = this.config;
    const sets = h(
      "select",
      { id: "sets", name: "sets" },
      Object.entries(SET_NAMES).map(([k, v]) => h("option", { value: k, selected: k === c.sets }, v)),
    );
    const players = h("input", { id: "players", name: "players", type: "number", min: 2, max: 6, value: c.players, required: true });
    const bots = h("input", { id: "bots", name: "bots", list: "bot-names", value: c.bots.join(","), required: true, "aria-describedby": "bots-hint" });
    const budget = h("input", { id: "budget", name: "budget", type: "number", min: 0, max: 60000, step: 1, value: c.budget_ms, "aria-describedby": "budget-hint" });
    const seed = h("input", { id: "seed", name: "seed", type: "number", min: 0, value: c.seed ?? "", placeholder: "random", "aria-describedby": "seed-hint" });
    const name = h("input", { id: "name", name: "name", maxlength: 64, value: c.name });
    const difficulty = h(
      "select",
      { id: "difficulty", name: "difficulty", "aria-describedby": "difficulty-hint", onchange: () => this.custom() },
      DIFFICULTIES.map(([k, v]) => h("option", { value: k, selected: k === c.difficulty }, v)),
      h("option", { value: "", selected: !c.difficulty }, "Choose the bots and their time"),
    );
    const form = h(
      "form",
      {
        class: "new-game",
        "aria-labelledby": "new-title",
        onsubmit: (ev: Event) => {
          ev.preventDefault();
          void this.create(false);
        },
      },
      h("h2", { id: "new-title" }, "Play against the bots"),
      this.field("name", "Your name", name),
      this.field("sets", "Sets", sets),
      this.field("players", "Players (you included)", players),
      this.field("difficulty", "Difficulty", difficulty, "each level at least 100 Elo above the one before (docs/bots.md)"),
      this.field("bots", "Bots", bots, "comma-separated, used in turn: ismcts (the search, strongest), heuristic, expert (a scripted planner, weaker than Hard despite its name), random"),
      h("datalist", { id: "bot-names" }, [...new Set([...c.bots, ...KNOWN_BOTS])].map((b) => h("option", { value: b }))),
      this.field("budget", "Bot time per move (ms)", budget, "ISMCTS thinks this long"),
      this.field("seed", "Seed", seed, "the same seed deals the same game"),
      h(
        "div",
        { class: "buttons" },
        h("button", { id: "start", type: "submit", class: "primary" }, "Start a game"),
        h("button", { id: "watch-bots", type: "button", onclick: () => void this.create(true) }, "Watch the bots play"),
      ),
      this.message,
    );
    return h(
      "div",
      { class: "lobby" },
      h("div", { class: "lobby-head" }, h("h1", {}, "Ascension", h("small", {}, " · Skulls & Sails · Curse of the Golden Isles")), howToPlayButton(() => "both")),
      c.engine ? h("p", { class: "about" }, `Engine at ${c.engine}.`) : null,
      form,
      this.friendsForm(),
      h("section", { class: "games", "aria-labelledby": "games-title" }, h("h2", { id: "games-title" }, "Games on this engine"), this.list),
    );
  }

  /** A game with friends: several human seats (and bots), clocks, one invitation link each. */
  private friendsForm(): HTMLElement {
    const friends = h("input", { id: "friends", name: "friends", type: "number", min: 1, max: 5, value: 1, required: true });
    const fbots = h("input", { id: "friend-bots", name: "friend-bots", type: "number", min: 0, max: 4, value: 0 });
    const clock = h("select", { id: "clock", name: "clock" }, CLOCKS.map(([label], i) => h("option", { value: i }, label)));
    const onTimeout = h(
      "select",
      { id: "on-timeout", name: "on-timeout", "aria-describedby": "on-timeout-hint" },
      h("option", { value: TimeoutPolicy.FORCED_MOVE }, "the engine ends the turn"),
      h("option", { value: TimeoutPolicy.BOT }, "a Normal bot plays the turn"),
      h("option", { value: TimeoutPolicy.FORFEIT }, "the seat forfeits"),
    );
    return h(
      "form",
      {
        class: "new-game friends",
        "aria-labelledby": "friends-title",
        onsubmit: (ev: Event) => {
          ev.preventDefault();
          void this.createWithFriends();
        },
      },
      h("h2", { id: "friends-title" }, "Play with friends"),
      this.field("friends", "Friends (other people)", friends),
      this.field("friend-bots", "Bots", fbots),
      this.field("clock", "Clock", clock),
      this.field("on-timeout", "When time runs out", onTimeout, "a seat out of time is played for until its turn ends"),
      h("div", { class: "buttons" }, h("button", { id: "invite", type: "submit" }, "Create and invite")),
      this.invites,
    );
  }

  private async createWithFriends(): Promise<void> {
    const v = (id: string): string => (this.root.querySelector<HTMLInputElement>(`#${id}`)?.value ?? "").trim();
    const o = this.values();
    const friends = Math.min(5, Math.max(1, Number(v("friends")) || 1));
    const bots = Math.min(4, Math.max(0, Number(v("friend-bots")) || 0));
    const person = (name: string): SeatConfig => ({ $typeName: "ascension.v1.SeatConfig", kind: SeatInfo_Kind.HUMAN, name });
    const seats = [person(o.name), ...Array.from({ length: friends }, (_, i) => person(`Friend ${i + 1}`)), ...botSeats(["heuristic"], bots, 0, null, friends + 1, "normal")];
    const [, turn, bank, increment] = CLOCKS[Number(v("clock")) || 0];
    const policy = Number(v("on-timeout")) as TimeoutPolicy;
    const clock: ClockSettings | undefined =
      turn || bank || increment
        ? { $typeName: "ascension.v1.ClockSettings", turnSeconds: turn, bankSeconds: bank, incrementSeconds: increment, onTimeout: policy, botDifficulty: "" }
        : undefined;
    this.invites.textContent = "Dealing…";
    try {
      const r = await this.client.createGame({ sets: o.sets, seats, clock });
      tokens.set(r.gameId, r.seatTokens[0]);
      const links = r.seatTokens.slice(1, friends + 1).map((token, i) => {
        const link = invitationLink(r.gameId, token);
        const id = `invite-${i + 1}`;
        return h(
          "li",
          {},
          h("label", { for: id }, `Friend ${i + 1} (seat ${i + 2}): `),
          h("input", { id, class: "invite-link", readonly: true, value: link, size: 40 }),
          h("button", { type: "button", onclick: () => void navigator.clipboard?.writeText(link) }, "Copy"),
        );
      });
      replaceKeepingFocus(
        this.invites,
        h("p", {}, "Send each friend their own link (whoever opens it takes that seat):"),
        h("ul", { class: "invite-links" }, links),
        h("p", {}, h("a", { id: "to-table", href: `#/play/${r.gameId}` }, "Go to the table")),
      );
    } catch (e) {
      this.invites.textContent = `The engine refused: ${errorText(e)}`;
    }
  }

  /** The bots and budget fields count only without a difficulty: hidden with one (a level
   * picks its own bot, and the page must not show another beside it). */
  private custom(): void {
    const level = this.root.querySelector<HTMLSelectElement>("#difficulty")?.value ?? "";
    for (const id of ["bots", "budget"]) {
      const input = this.root.querySelector<HTMLInputElement>(`#${id}`);
      if (input) {
        input.disabled = level !== "";
        input.closest(".field")?.toggleAttribute("hidden", level !== "");
      }
    }
  }

  private values(): { sets: string; players: number; bots: string[]; budget: number; seed: number | null; name: string; difficulty: string } {
    const v = (id: string): string => (this.root.querySelector<HTMLInputElement>(`#${id}`)?.value ?? "").trim();
    const bots = v("bots").split(",").map((b) => b.trim()).filter(Boolean);
    return {
      sets: v("sets") || "ss",
      players: Number(v("players")) || 2,
      bots: bots.length ? bots : ["ismcts"],
      budget: Number(v("budget")) || 0,
      seed: v("seed") === "" ? null : Number(v("seed")),
      name: v("name"),
      difficulty: v("difficulty"),
    };
  }

  private async create(botsOnly: boolean): Promise<void> {
    const o = this.values();
    const human: SeatConfig = { $typeName: "ascension.v1.SeatConfig", kind: SeatInfo_Kind.HUMAN, name: o.name };
    const seats = botsOnly
      ? botSeats(o.bots.length > 1 ? o.bots : [o.bots[0], "heuristic"], Math.max(o.players, 2), o.budget, o.seed, 0, o.difficulty)
      : [human, ...botSeats(o.bots, o.players - 1, o.budget, o.seed, 1, o.difficulty)];
    this.message.textContent = "Dealing…";
    try {
      const r = await this.client.createGame({ sets: o.sets, seats, seed: o.seed === null ? undefined : BigInt(o.seed) });
      if (botsOnly) {
        location.hash = `#/watch/${r.gameId}`;
      } else {
        tokens.set(r.gameId, r.seatTokens[0]);
        location.hash = `#/play/${r.gameId}`;
      }
    } catch (e) {
      this.message.textContent = `The engine refused: ${errorText(e)}`;
    }
  }

  private async refresh(): Promise<void> {
    try {
      const r = await this.client.listGames({ pageSize: 50 });
      if (!r.games.length) {
        replaceKeepingFocus(this.list, h("p", { class: "empty" }, "No games yet."));
        return;
      }
      const rows = r.games.map((g) => {
        const mine = tokens.get(g.gameId) !== null;
        const seats = g.seats.map((s) => (s.kind === SeatInfo_Kind.AI ? s.botName || s.name || "bot" : s.name || "human")).join(", ");
        const state = g.over ? "over" : `seat ${g.toMove + 1} to move`;
        return h(
          "tr",
          { "data-game": g.gameId },
          h("th", { scope: "row" }, h("code", {}, g.gameId)),
          h("td", {}, SET_NAMES[g.sets] ?? g.sets),
          h("td", {}, seats),
          h("td", {}, String(g.version)),
          h("td", {}, state),
          h(
            "td",
            { class: "links" },
            h("a", { href: `#/watch/${g.gameId}`, "data-key": `w-${g.gameId}`, "aria-label": `Watch game ${g.gameId}` }, "Watch"),
            mine && !g.over ? [" ", h("a", { href: `#/play/${g.gameId}`, "data-key": `p-${g.gameId}`, "aria-label": `Resume game ${g.gameId}` }, "Resume")] : null,
          ),
        );
      });
      replaceKeepingFocus(
        this.list,
        h(
          "table",
          {},
          h("thead", {}, h("tr", {}, ["Game", "Sets", "Seats", "Version", "State", ""].map((c) => h("th", { scope: "col" }, c)))),
          h("tbody", {}, rows),
        ),
      );
    } catch (e) {
      replaceKeepingFocus(this.list, h("p", { class: "message" }, `Could not list the games: ${errorText(e)}`));
    }
  }
}
